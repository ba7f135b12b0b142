"""A DeepSpeed ZeRO checkpoint: ``save_checkpoint``'s ``global_step<N>/`` folder (or the
folder above it, whose ``latest`` file names the tag).

Every rank's file must be there: the world size is read from the files themselves (the
model states' ``dp_world_size``, the optimizer states' ``partition_count``), and a missing
rank's file is named.  Each file loads with ``weights_only=True``; the three classes
DeepSpeed pickles into its optimizer states (its loss scaler, its ZeRO stage enum, its
fragment addresses) are admitted by name as plain-data stand-ins, never DeepSpeed's code.
Parts are judged by content (``reload/formats.py``'s ``deepspeed`` column); the client state
passed to ``save_checkpoint`` is read like a ``torch.save`` dict.
"""

from __future__ import annotations

import os
import re
from typing import Any

import torch

from .finite import check_weight, count_nonfinite, tensor_finite, walk_tensors
from .folder_formats import files_of, inspect_members, load_member
from .parts import inspect_dict, judge_part
from .siblings import formats
from .verdict import Findings, Refused

MODEL_STATES = re.compile(r"(?:zero_pp_rank_(\d+)_)?mp_rank_(\d+)_model_states\.pt")
OPTIM_STATES = re.compile(r"(bf16_)?zero_pp_rank_(\d+)_mp_rank_(\d+)_optim_states\.pt")
MAX_RANKS = 65_536
TAG_BYTES = 4096
# What the engine itself writes into the model states (engine._save_checkpoint); every
# other top-level key is the client state.
ENGINE_KEYS = frozenset({
    "module", "buffer_names", "optimizer", "param_shapes", "frozen_param_shapes",
    "shared_params", "frozen_param_fragments", "lr_scheduler", "data_sampler", "random_ltd",
    "sparse_tensor_module_names", "skipped_steps", "global_steps", "global_samples",
    "dp_world_size", "mp_world_size", "checkpoint_parallel_dimensions", "ds_config",
    "ds_version", "moe_state_dict"})
RNG_FILES = tuple(p for p, part, _ in formats.files("deepspeed") if part == "rng")


class DeepSpeedObject:
    """The pickled attributes of one of DeepSpeed's objects, kept as data (its LossScaler's
    ``cur_scale``, a fragment_address's ``start``/``numel``)."""


class LossScaler(DeepSpeedObject):
    pass


class FragmentAddress(DeepSpeedObject):
    pass


class ZeroStage(int):
    """DeepSpeed's ZeroStageEnum, pickled as a call with the stage number."""


STAND_INS = ((LossScaler, "deepspeed.runtime.fp16.loss_scaler.LossScaler"),
             (FragmentAddress, "deepspeed.utils.tensor_fragment.fragment_address"),
             (ZeroStage, "deepspeed.runtime.zero.config.ZeroStageEnum"))


def tag_folder(path: str, names: set[str]) -> str | None:
    """The tag folder a save directory's ``latest`` file names; None when there is none."""
    if "latest" not in names:
        return None
    with open(os.path.join(path, "latest"), "rb") as fh:
        raw = fh.read(TAG_BYTES + 1)
    try:
        tag = raw.decode("utf-8").strip()
    except UnicodeDecodeError as exc:
        raise Refused("not a DeepSpeed tag (not UTF-8 text)", "latest") from exc
    if len(raw) > TAG_BYTES or not tag or tag in (".", "..") or "/" in tag or "\\" in tag:
        raise Refused(f"names {tag[:80]!r}, which is not a folder of this checkpoint", "latest")
    if not os.path.isdir(os.path.join(path, tag)):
        raise Refused(f"names the tag folder {tag}/, which is missing", "latest")
    return tag


def is_deepspeed(path: str, names: set[str]) -> bool:
    return any(MODEL_STATES.fullmatch(n) or OPTIM_STATES.fullmatch(n) for n in names) or (
        "latest" in names and any(os.path.isdir(os.path.join(path, n)) for n in os.listdir(path)))


def inspect_deepspeed(found: Findings, path: str, names: set[str]) -> None:
    tag = tag_folder(path, names)
    if tag is None:
        inspect_tag(found, path, names)
    else:
        folder = os.path.join(path, tag)
        try:
            inspect_tag(found, folder, files_of(folder), f"{tag}/")
        except Refused as exc:
            raise Refused(exc.reason, f"{tag}/{exc.file}" if exc.file else tag, exc.code,
                          exc.kind) from exc
        # The HF Trainer saves its RNG states beside the tag folder.
        inspect_members(found, path, {n for n in names if n != "latest"},
                        tuple((p, "rng", False) for p in RNG_FILES))


def inspect_tag(found: Findings, folder: str, names: set[str], tag: str = "") -> None:
    """One tag folder (``tag``: its name and a slash, as weights are named): every rank's
    model and optimizer states, judged by content."""
    models = sorted(n for n in names if MODEL_STATES.fullmatch(n))
    optims = sorted(n for n in names if OPTIM_STATES.fullmatch(n))
    if not models:
        raise Refused("no mp_rank_<mp>_model_states.pt: not a DeepSpeed checkpoint folder "
                      "(save_checkpoint writes one per model-parallel rank)")
    first = load(found, folder, models[0], tag)
    world = ranks(first, models[0], "dp_world_size")
    mp_world = ranks(first, models[0], "mp_world_size")
    stage3 = models[0].startswith("zero_pp_rank_")
    states = {models[0]: first}
    for mp in range(mp_world):
        for dp in range(world if stage3 else 1):
            name = f"zero_pp_rank_{dp}_mp_rank_{mp:02d}_model_states.pt" if stage3 else \
                f"mp_rank_{mp:02d}_model_states.pt"
            require(name, names, f"rank {dp}" if stage3 else f"model-parallel rank {mp}",
                    world, models[0], "model states")
            if name not in states:
                states[name] = load(found, folder, name, tag)
    for name, state in states.items():
        inspect_model_states(found, name, state, stage3)
    if not optims and zero_stage(first) == 0:
        # Without ZeRO the engine keeps the optimizer in the model states.
        if first.get("optimizer") is not None:
            judge_part(found, "optimizer", first["optimizer"], f"{tag}{models[0]}:optimizer")
        return
    bf16 = "bf16_" if any(n.startswith("bf16_") for n in optims) else ""
    partitions = 0
    for mp in range(mp_world):
        for dp in range(world):
            name = f"{bf16}zero_pp_rank_{dp}_mp_rank_{mp:02d}_optim_states.pt"
            require(name, names, f"rank {dp}", world, models[0], "optimizer states")
            held = inspect_optim(found, name, load(found, folder, name, tag), world, tag)
            partitions += held if mp == 0 else 0
    judge_model(found, models[0], first, partitions, stage3)


def zero_stage(state: dict[str, Any]) -> int:
    """The ZeRO stage the model states' config names (0: no ZeRO, or none said)."""
    config = state.get("ds_config")
    zero = config.get("zero_optimization") if isinstance(config, dict) else None
    stage = zero.get("stage") if isinstance(zero, dict) else None
    return stage if isinstance(stage, int) else 0


def load(found: Findings, folder: str, name: str, tag: str = "") -> dict[str, Any]:
    """One rank's file; the tensors of ``module`` are the model's weights (by their names
    in the model), except under ZeRO-3 (a model states file per rank: ``module`` holds
    empty placeholders)."""
    obj = load_member(found, folder, name, weights=False, stand_ins=STAND_INS)
    if not isinstance(obj, dict):
        raise Refused(f"holds a {type(obj).__name__}, not the dict DeepSpeed saves", name)
    model = MODEL_STATES.fullmatch(name)
    if model and model.group(1) is None and isinstance(obj.get("module"), dict):
        for rel, tensor in walk_tensors(obj["module"], ""):
            check_weight(found, f"{tag}{name}:module.{rel}", tensor, True, rel)
    return obj


def ranks(state: dict[str, Any], name: str, key: str) -> int:
    count = state.get(key, 1)
    if not isinstance(count, int) or not 1 <= count <= MAX_RANKS:
        raise Refused(f"{key} {count!r} is not a rank count", name)
    return count


def require(name: str, names: set[str], rank: str, world: int, source: str, what: str) -> None:
    if name not in names:
        raise Refused(f"{rank}'s {what} file is missing: the checkpoint was saved by "
                      f"{world} data-parallel rank(s) ({source}'s dp_world_size)", name)


def inspect_optim(found: Findings, name: str, obj: dict[str, Any], world: int,
                  tag: str = "") -> int:
    """Judge one rank's optimizer states; the number of fp32 master values it holds."""
    osd = obj.get("optimizer_state_dict")
    if not isinstance(osd, dict):
        raise Refused("no optimizer_state_dict: not DeepSpeed's optimizer states", name)
    counts = osd.get("partition_count")
    counts = counts if isinstance(counts, list) else [counts]
    if any(isinstance(c, int) and c != world for c in counts):
        raise Refused(f"partition_count {osd.get('partition_count')!r} disagrees with the "
                      f"{world} data-parallel rank(s) of the model states", name)
    key = "base_optimizer_state" if "base_optimizer_state" in osd else "optimizer_state_dict"
    where = f"{tag}{name}:optimizer_state_dict.{key}"
    judge_part(found, "optimizer", osd.get(key), where)
    # ZeRO's optimizer steps flat partitions of the parameters, not the model's tensors: its
    # fit is the partitions covering param_shapes (judge_model), not a match by shape.
    found.optimizers = [(k, v) for k, v in found.optimizers if k != where]
    master = "single_partition_of_fp32_groups" if key == "base_optimizer_state" else \
        "fp32_flat_groups"
    flat = osd.get(master, [])
    flat = [t for t in flat if isinstance(t, torch.Tensor)] if isinstance(flat, list) else []
    for index, tensor in enumerate(flat):  # the fp32 master weights: finite, or no resume
        if not tensor_finite(tensor, True, []):
            found.nonfinite.append(f"{tag}{name}:optimizer_state_dict.{master}.{index}")
            nan, inf = count_nonfinite(tensor)
            found.nan_values += nan
            found.inf_values += inf
    return sum(t.numel() for t in flat)


def inspect_model_states(found: Findings, name: str, state: dict[str, Any],
                         stage3: bool) -> None:
    """The engine's own keys by content, then the client state like a torch.save dict."""
    prefix = f"{name}:"
    for key in ("global_steps", "lr_scheduler", "data_sampler"):
        if key in state and (key != "data_sampler" or state[key] is not None):
            part = formats.key_parts("deepspeed")[key]
            judge_part(found, part, state[key], prefix + key)
    client = {k: v for k, v in state.items() if k not in ENGINE_KEYS}
    inspect_dict(found, client, prefix, None, skip=frozenset({"model"}))
    if not stage3 and isinstance(state.get("module"), dict) and any(
            isinstance(t, torch.Tensor) and t.numel() for t in state["module"].values()):
        found.parts.add("model")


def judge_model(found: Findings, name: str, state: dict[str, Any], partitions: int,
                stage3: bool) -> None:
    """The ranks' fp32 master partitions (of model-parallel rank 0) must together cover
    every parameter its model states list: zero_to_fp32 rebuilds the model from them, and
    ZeRO-3 keeps the weights nowhere else."""
    shapes = state.get("param_shapes")
    groups = shapes if isinstance(shapes, list) else [shapes]
    total = sum(int(torch.Size(s).numel()) for g in groups if isinstance(g, dict)
                for s in g.values() if isinstance(s, (torch.Size, list, tuple)))
    if partitions < total:
        raise Refused(f"the ranks' fp32 partitions hold {partitions} values, fewer than the "
                      f"{total} parameters param_shapes lists: a partition is incomplete", name)
    if stage3 and total:
        found.parts.add("model")
        found.notes.append("ZeRO-3: the model is the ranks' fp32 partitions, which cover "
                           "param_shapes; they are not rebuilt into named weights")
