"""A checkpoint folder: HF Trainer, accelerate, a saved model, a PEFT adapter (and their shards);
DCP folders are ``dcp``'s.  Members are judged by content; which member holds which part is
``reload/formats.py``'s table."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from typing import Any

from .dcp import inspect_dcp
from .file_formats import inspect_safetensors
from .finite import check
from .loading import StandIns, describe_unknown, sniff, torch_load
from .parts import inspect_dict, judge_part
from .pickles import refuse_code
from .siblings import formats
from .verdict import Findings, Refused

# Members of each folder format: (pattern, part, is model weights), reload/formats.py's table.
HF_FILES = formats.files("hf-trainer")
ACCELERATE_FILES = formats.files("accelerate")
# accelerate's FSDP sharded state: DCP sub-folders (pytorch_model_fsdp_0/, optimizer_0/).
ACCELERATE_FOLDERS = formats.folders("accelerate")
HF_MODEL_FILES = formats.files("hf-model")
PEFT_FILES = formats.files("peft")
MODEL_WEIGHTS = HF_MODEL_FILES[0][0]
# What only accelerate writes: its RNG states and its optimizer files.
ACCELERATE_SIGNS = tuple(p for p, part, _ in ACCELERATE_FILES if part in ("optimizer", "rng"))
# accelerate's registered objects (register_for_checkpointing): read like a torch.save dict.
REGISTERED = tuple(p for p, part, _ in ACCELERATE_FILES if not part)
OPAQUE = {"training_args.bin": "training_args.bin kept as opaque metadata (never unpickled)"}


def folder_format(path: str, names: set[str]) -> str:
    if ".metadata" in names and any(n.endswith(".distcp") for n in names):
        return "dcp"
    if "trainer_state.json" in names:
        # Before PEFT: a Trainer checkpoint of a LoRA run holds adapter_model.* and
        # adapter_config.json beside the optimizer, scheduler and RNG states.
        return "hf-trainer"
    if "adapter_config.json" in names:
        return "peft"
    if any(re.fullmatch(sign, n) for sign in ACCELERATE_SIGNS for n in names):
        return "accelerate"
    if any(re.fullmatch(MODEL_WEIGHTS, n) for n in names):
        # A saved model (transformers' save_pretrained): weights, their shards and config.
        return "hf-model"
    raise Refused("not a recognised checkpoint folder (no .metadata + .distcp, "
                  "adapter_config.json, trainer_state.json, accelerate random_states_*.pkl, "
                  "or model weights)")


def load_member(found: Findings, folder: str, name: str, weights: bool,
                stand_ins: StandIns = (), namespace: str = "") -> Any:
    """Load one tensor file of a folder; failures name the file. ``namespace`` prefixes its
    model tensors' names."""
    path = os.path.join(folder, name)
    try:
        kind = sniff(path)
        if kind == "empty":
            raise Refused("empty file (0 bytes)")
        if kind == "unknown":
            refuse_code(path, kind)
            raise Refused(describe_unknown(path))
        if kind == "safetensors":
            found.member_keys[name] = inspect_safetensors(found, path, weights, namespace)
            return None
        obj = torch_load(path, kind, stand_ins)
        check(found, obj, name, weights, mapped=(kind == "zip"), namespace=namespace)
        if isinstance(obj, dict):
            found.member_keys[name] = [str(k) for k in obj]
        return obj
    except Refused as exc:
        raise Refused(exc.reason, exc.file or name, exc.code, exc.kind) from exc


def inspect_members(found: Findings, folder: str, names: set[str],
                    table: tuple[tuple[str, str, bool], ...],
                    namespace: Callable[[str], str] = lambda name: "") -> dict[str, Any]:
    """Load the members ``table`` names; ``namespace(name)`` prefixes a member's model
    tensor names."""
    loaded: dict[str, Any] = {}
    for name in sorted(names):
        if name in OPAQUE:
            if os.path.getsize(os.path.join(folder, name)) == 0:
                raise Refused("empty file (0 bytes)", name)
            found.notes.append(OPAQUE[name])
            continue
        for pattern, part, weights in table:
            if re.fullmatch(pattern, name):
                before = found.tensors
                loaded[name] = load_member(found, folder, name, weights,
                                           namespace=namespace(name) if weights else "")
                if part == "model" and found.tensors > before:
                    found.parts.add(part)  # weights files of no tensors restore nothing
                elif part and part != "model":
                    judge_part(found, part, loaded[name], name)  # by content, not by name
                break
    return loaded


SHARD = re.compile(r"(.+)-(\d+)-of-(\d+)\.(safetensors|bin)")
SHARD_INDEX = re.compile(rf".+\.(safetensors|bin)\.index{formats.VARIANT}\.json")
MAX_SHARDS = 100_000
MAX_INDEX_BYTES = 64 << 20


def check_shards(folder: str, names: set[str]) -> None:
    """A sharded model is complete: every shard its numbering or its index names is there.

    Loading the shards that are present would otherwise accept a model with a
    missing piece (a subtly broken campaign: a shard lost before the manifest).
    """
    for name in sorted(names):
        numbered = SHARD.fullmatch(name)
        if numbered:
            check_numbered_shards(numbered, name, names)
        if SHARD_INDEX.fullmatch(name):
            check_shard_index(folder, name, names)


def check_numbered_shards(match: re.Match[str], name: str, names: set[str]) -> None:
    prefix, number, total, ext = match.groups()
    count = int(total)
    if not 1 <= int(number) <= count <= MAX_SHARDS:
        raise Refused(f"shard number {number} of {total} is impossible", name)
    for k in range(1, count + 1):
        expected = f"{prefix}-{k:0{len(number)}d}-of-{total}.{ext}"
        if expected not in names:
            raise Refused(f"shard {expected} of this {total}-shard model is missing", name)


def check_shard_index(folder: str, name: str, names: set[str]) -> None:
    path = os.path.join(folder, name)
    if os.path.getsize(path) > MAX_INDEX_BYTES:
        raise Refused(f"shard index over {MAX_INDEX_BYTES >> 20} MiB", name)
    try:
        with open(path, encoding="utf-8") as fh:
            index = json.load(fh)
    except (OSError, ValueError) as exc:
        raise Refused(f"not valid JSON ({exc})", name) from exc
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(weight_map, dict):
        raise Refused("no weight_map: not a shard index", name)
    for shard in index_shards(weight_map):
        if "/" in shard or "\\" in shard or shard in (".", ".."):
            raise Refused(f"the index names {shard!r}, which is not a file of this folder", name)
        if shard not in names:
            raise Refused(f"the index lists shard {shard}, which is missing", name)


def index_shards(weight_map: dict[Any, Any]) -> list[str]:
    return sorted({v for v in weight_map.values() if isinstance(v, str)})


def check_shard_contents(found: Findings, folder: str, names: set[str]) -> None:
    """Each shard holds exactly the tensors its index places in it (read from the shards as
    they were loaded: no second read).  A shard overwritten by another of the same size
    passes every size and hash of the manifest, and from_pretrained would fill the tensors
    it lacks with random weights."""
    for name in sorted(n for n in names if SHARD_INDEX.fullmatch(n)):
        with open(os.path.join(folder, name), encoding="utf-8") as fh:
            weight_map = json.load(fh)["weight_map"]  # check_shard_index read it already
        placed = {str(k): v for k, v in weight_map.items()}
        for shard in index_shards(weight_map):
            held = found.member_keys.get(shard)
            if held is not None:
                check_shard(name, shard, set(held), placed)


def check_shard(index: str, shard: str, held: set[str], placed: dict[str, Any]) -> None:
    expected = {k for k, v in placed.items() if v == shard}
    missing, extra = sorted(expected - held), sorted(held - expected)
    if not missing and not extra:
        return
    elsewhere = sorted({placed[k] for k in extra if k in placed})
    said = []
    if extra:
        owners = f" (the index places them in {', '.join(elsewhere)})" if elsewhere else \
            " (the index lists them nowhere)"
        said.append(f"holds {len(extra)} tensor(s) {index} does not place in it{owners}: "
                    f"{shown(extra)}")
    if missing:
        said.append(f"lacks {len(missing)} tensor(s) {index} places in it: {shown(missing)}; "
                    "from_pretrained would fill them with random weights")
    raise Refused(" and ".join(said), shard)


def shown(names: list[str], limit: int = 6) -> str:
    more = f", ... ({len(names) - limit} more)" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def inspect_hf_trainer(found: Findings, folder: str, names: set[str]) -> None:
    check_shards(folder, names)
    inspect_members(found, folder, names, HF_FILES)
    check_shard_contents(found, folder, names)
    try:
        with open(os.path.join(folder, "trainer_state.json"), encoding="utf-8") as fh:
            state = json.load(fh)
    except (OSError, ValueError) as exc:
        raise Refused(f"not valid JSON ({exc})", "trainer_state.json") from exc
    if isinstance(state, dict) and isinstance(state.get("global_step"), int):
        # The Trainer resumes the data position by replaying the sampler to global_step.
        found.parts |= {"progress", "data"}
        found.steps.append(("trainer_state.json:global_step", state["global_step"]))


def subfolders(path: str) -> list[str]:
    return sorted(n for n in os.listdir(path) if os.path.isdir(os.path.join(path, n)))


def inspect_dcp_subfolders(found: Findings, folder: str) -> None:
    """accelerate's FSDP sharded state: each DCP sub-folder is read like a DCP folder (its
    ``{"model": ...}`` / ``{"optimizer": ...}`` state judged by content); failures name the
    sub-folder's file."""
    for sub in subfolders(folder):
        if not any(re.fullmatch(pattern, sub) for pattern, _ in ACCELERATE_FOLDERS):
            continue
        path = os.path.join(folder, sub)
        names = files_of(path)
        try:
            if ".metadata" not in names:
                raise Refused("no .metadata: not the DCP folder accelerate's FSDP save writes")
            inspect_dcp(found, path, names)
        except Refused as exc:
            raise Refused(exc.reason, f"{sub}/{exc.file}" if exc.file else sub, exc.code,
                          exc.kind) from exc


# accelerate's i-th prepared model (i >= 1): model_<i>.safetensors, pytorch_model_<i>.bin, their
# shards, pytorch_model_fsdp_<i>.bin.
NTH_MODEL = re.compile(r"(?:model|pytorch_model|pytorch_model_fsdp)_(\d+)(?:-\d+-of-\d+)?"
                       r"\.(?:safetensors|bin)")


def accelerate_namespace(name: str) -> str:
    """Each model of a save_state keeps its own tensor names: the second model's (a GAN's
    discriminator beside its generator, both nn.Sequential) are ``model_1.<name>``, never
    mistaken for the first model's tensors of the same name."""
    nth = NTH_MODEL.fullmatch(name)
    return f"model_{int(nth.group(1))}." if nth and int(nth.group(1)) else ""


def inspect_accelerate(found: Findings, folder: str, names: set[str]) -> None:
    check_shards(folder, names)
    inspect_dcp_subfolders(found, folder)
    loaded = inspect_members(found, folder, names, ACCELERATE_FILES, accelerate_namespace)
    check_shard_contents(found, folder, names)
    for name, obj in loaded.items():
        if any(re.fullmatch(p, name) for p in REGISTERED) and isinstance(obj, dict):
            inspect_dict(found, obj, f"{name}:", None, skip=frozenset({"model"}))
    if "progress" not in found.parts:
        found.notes.append("accelerate saves no training progress by itself: register an "
                           "object whose state_dict holds step/epoch (register_for_checkpointing)")


def inspect_hf_model(found: Findings, folder: str, names: set[str]) -> None:
    """A saved model folder: its weights files (every shard) load; it is declared by the
    format of those files, safetensors or torch."""
    safetensors = any(n.endswith(".safetensors") for n in names if re.fullmatch(MODEL_WEIGHTS, n))
    found.format = "safetensors" if safetensors else "torch"  # also when a shard is missing
    check_shards(folder, names)
    inspect_members(found, folder, names, HF_MODEL_FILES)
    check_shard_contents(found, folder, names)
    found.missing_reasons.update(formats.absent("hf-model"))


def inspect_peft(found: Findings, folder: str, names: set[str]) -> None:
    try:
        with open(os.path.join(folder, "adapter_config.json"), encoding="utf-8") as fh:
            config = json.load(fh)
    except (OSError, ValueError) as exc:
        raise Refused(f"not valid JSON ({exc})", "adapter_config.json") from exc
    if not isinstance(config, dict) or "peft_type" not in config:
        raise Refused("no peft_type: not a PEFT adapter config", "adapter_config.json")
    weights = [n for pattern, _, _ in PEFT_FILES for n in sorted(names) if re.fullmatch(pattern, n)]
    if not weights:
        raise Refused("PEFT folder without adapter_model.safetensors or adapter_model.bin")
    for name in weights:
        load_member(found, folder, name, weights=True)
        if not found.tensors:
            raise Refused("holds no tensors: an adapter of no weights changes nothing", name)
    found.parts.add("model")
    found.missing_reasons.update(formats.absent("peft"))


def files_of(path: str) -> set[str]:
    return {n for n in os.listdir(path) if os.path.isfile(os.path.join(path, n))}


def inspect_folder(found: Findings, path: str) -> None:
    names = files_of(path)
    found.format = folder_format(path, names)
    handler = {"dcp": inspect_dcp, "peft": inspect_peft, "hf-trainer": inspect_hf_trainer,
               "accelerate": inspect_accelerate, "hf-model": inspect_hf_model}[found.format]
    subs = set(subfolders(path))
    if found.format == "accelerate":
        subs -= {s for s in subs if any(re.fullmatch(p, s) for p, _ in ACCELERATE_FOLDERS)}
    if subs:
        found.notes.append("subfolders are not inspected")
    handler(found, path, names)
    if found.format in ("hf-trainer", "accelerate") and "model" not in found.parts:
        if not subs:  # DeepSpeed/FSDP keep the weights in sub-folders we do not inspect
            raise Refused("holds no model weights (model.safetensors, pytorch_model.bin or "
                          "their shards): it cannot restore the model")
        found.notes.append("no model weights at the top of the folder")
