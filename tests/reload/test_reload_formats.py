"""Every checkpoint format, built by the real library: a passing case and failing cases."""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from pytest_itera.reload import PARTS, Reloader, ReloadResult
from tests import checkpoints

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def reload_as(reloader: Reloader, path: Path, display: str, fmt: str) -> ReloadResult:
    """A reload of a checkpoint whose format is ``fmt``: the reloader reports what it found
    (checkpoint-reloads judges a manifest's claim against it)."""
    res = reloader.reload(path, display)
    assert res.format == fmt, (res.format, res.cause)
    return res


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Expensive real artifacts, built once per session (per xdist worker)."""
    root = tmp_path_factory.mktemp("built")
    return {
        "lightning": checkpoints.lightning_checkpoint(root / "pl"),
        "hf": checkpoints.hf_trainer_checkpoint(root),
        "accelerate": checkpoints.accelerate_checkpoint(root),
        "dcp": checkpoints.dcp_checkpoint(root),
        "peft": checkpoints.peft_adapter(root),
    }


def private(built: dict[str, Path], key: str, tmp_path: Path) -> Path:
    return checkpoints.copy_artifact(built[key], tmp_path)


# ----------------------------------------------------------------------------- plain torch

def test_general_checkpoint_has_every_part(reloader: Reloader, tmp_path: Path) -> None:
    res = reload_as(reloader, checkpoints.general_checkpoint(tmp_path), "runs/c/resume.pt", "torch")
    assert res.ok, res.cause
    assert (res.format, res.parts, res.cause) == ("torch", PARTS, None)
    assert res.tensors > 4


def test_missing_scaler_and_rng_are_not_claimed(reloader: Reloader, tmp_path: Path) -> None:
    path = checkpoints.general_checkpoint(tmp_path, scaler=True, rng=True)
    res = reloader.reload(path, "resume.pt")
    assert res.ok
    assert res.parts == ("model", "optimizer", "progress", "scheduler", "data")


def test_bare_state_dict_is_model_only(reloader: Reloader, tmp_path: Path) -> None:
    res = reloader.reload(checkpoints.state_dict_file(tmp_path), "w.pt")
    assert (res.ok, res.format, res.parts) == (True, "torch", ("model",))


def test_legacy_torch_format_loads_without_mmap(reloader: Reloader, tmp_path: Path) -> None:
    res = reloader.reload(checkpoints.state_dict_file(tmp_path, legacy=True), "w.pt")
    assert (res.ok, res.parts) == (True, ("model",))
    assert any("legacy" in note for note in res.notes)


def test_nonfinite_model_weights_are_named(reloader: Reloader, tmp_path: Path) -> None:
    state = checkpoints.tiny_model().state_dict()
    state["2.bias"][1] = float("inf")
    state["0.weight"][3, 3] = float("nan")
    torch.save({"model": state, "epoch": 3}, tmp_path / "x.pt")
    res = reloader.reload(tmp_path / "x.pt", "runs/x.pt")
    assert not res.ok
    assert set(res.nonfinite) == {"model.0.weight", "model.2.bias"}
    assert res.cause is not None
    assert res.cause == ("runs/x.pt: non-finite model weights in 2 tensor(s) (1 NaN and 1 inf "
                         "values): model.0.weight, model.2.bias")
    assert (res.nonfinite_tensors, res.nan_values, res.inf_values) == (2, 1, 1)


def test_nonfinite_outside_the_model_is_allowed(reloader: Reloader, tmp_path: Path) -> None:
    state = checkpoints.tiny_model().state_dict()
    torch.save({"model": state, "best_score": torch.tensor(float("inf"))}, tmp_path / "x.pt")
    res = reloader.reload(tmp_path / "x.pt", "x.pt")
    assert (res.ok, res.nonfinite) == (True, ())


def test_large_tensor_finite_check_sees_a_late_nan(reloader: Reloader, tmp_path: Path) -> None:
    weight = torch.zeros(6_000_000)  # 24 MB: several chunks, checked after fork
    weight[-1] = float("nan")
    torch.save({"big": weight}, tmp_path / "big.pt")
    res = reloader.reload(tmp_path / "big.pt", "big.pt")
    assert (res.ok, res.nonfinite) == (False, ("big",))


def test_the_reloader_reports_the_format_it_found_not_a_judgement_of_the_claim(
    reloader: Reloader, tmp_path: Path
) -> None:
    # The claim ('safetensors' in the manifest) is judged by checkpoint-reloads, on this fact.
    res = reloader.reload(checkpoints.state_dict_file(tmp_path), "w.pt")
    assert (res.ok, res.format, res.cause) == (True, "torch", None)


# ----------------------------------------------------------------------------- safetensors

def test_safetensors_passes(reloader: Reloader, tmp_path: Path) -> None:
    res = reload_as(reloader, checkpoints.safetensors_file(tmp_path), "m.safetensors",
                    "safetensors")
    assert (res.ok, res.format, res.parts, res.tensors) == (True, "safetensors", ("model",), 4)
    assert res.missing_reasons["optimizer"] == "a safetensors file holds a flat map of tensors only"


def test_safetensors_nan_fails(reloader: Reloader, tmp_path: Path) -> None:
    path = checkpoints.safetensors_file(tmp_path, tensors={"w": torch.tensor([1.0, float("nan")])})
    res = reloader.reload(path, "m.safetensors")
    assert (res.ok, res.nonfinite) == (False, ("w",))


def _lie(path: Path, edit: dict[str, object]) -> None:
    raw = path.read_bytes()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    header["w"].update(edit)
    new = json.dumps(header).encode()
    path.write_bytes(len(new).to_bytes(8, "little") + new + raw[8 + n:])


ST_REFUSED = "m.safetensors: safetensors header refused by the safetensors parser: "


@pytest.mark.parametrize(("edit", "expected"), [
    ({"data_offsets": [0, 4000]}, "invalid offset for tensor `w` (truncated or lying header)"),
    ({"shape": [3, 2]}, "invalid shape, data type, or offset for tensor (truncated or lying "
     "header)"),
])
def test_safetensors_lying_header_fails(reloader: Reloader, tmp_path: Path,
                                        edit: dict[str, object], expected: str) -> None:
    tensors = {"w": torch.ones(2), "v": torch.ones(2)}
    path = checkpoints.safetensors_file(tmp_path, tensors=tensors)
    _lie(path, edit)
    res = reloader.reload(path, "m.safetensors")
    assert not res.ok
    assert res.cause is not None
    assert res.cause == ST_REFUSED + expected  # its own parser (safe_open), not Python json


def test_safetensors_overlap_fails(reloader: Reloader, tmp_path: Path) -> None:
    path = checkpoints.safetensors_file(tmp_path, tensors={"w": torch.ones(2), "v": torch.ones(2)})
    raw = path.read_bytes()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    header["w"]["data_offsets"] = header["v"]["data_offsets"]
    new = json.dumps(header).encode()
    path.write_bytes(len(new).to_bytes(8, "little") + new + raw[8 + n:])
    res = reloader.reload(path, "m.safetensors")
    # The parser names whichever of the two overlapping tensors it checks second (its map's
    # order, not the file's): either is the right cause.
    assert res.cause in {ST_REFUSED + f"invalid offset for tensor `{name}` (truncated or lying "
                                      "header)" for name in "vw"}


def test_safetensors_truncated_fails(reloader: Reloader, tmp_path: Path) -> None:
    path = checkpoints.safetensors_file(tmp_path)
    path.write_bytes(path.read_bytes()[:-10])
    res = reloader.reload(path, "m.safetensors")
    assert not res.ok
    assert res.cause == ST_REFUSED + ("incomplete metadata, file not fully covered (truncated "
                                      "or lying header)")


# ----------------------------------------------------------------------------- Lightning

def test_lightning_passes_despite_callback_inf(reloader: Reloader, built: dict[str, Path]) -> None:
    res = reload_as(reloader, built["lightning"], "last.ckpt", "lightning")
    assert res.ok, res.cause
    assert res.format == "lightning"
    assert res.parts == ("model", "optimizer", "progress", "scheduler")
    assert res.missing_reasons == {"rng": "Lightning checkpoints store no RNG state by design"}


def test_lightning_nan_weight_fails(reloader: Reloader, built: dict[str, Path],
                                    tmp_path: Path) -> None:
    ckpt = torch.load(built["lightning"], weights_only=True)
    ckpt["state_dict"]["layer.bias"][0] = float("nan")
    torch.save(ckpt, tmp_path / "bad.ckpt")
    res = reloader.reload(tmp_path / "bad.ckpt", "bad.ckpt")
    assert (res.ok, res.format, res.nonfinite) == (False, "lightning", ("state_dict.layer.bias",))


def test_a_lightning_checkpoint_is_found_lightning(
    reloader: Reloader, built: dict[str, Path]
) -> None:
    res = reloader.reload(built["lightning"], "last.ckpt")
    assert (res.ok, res.format, res.cause) == (True, "lightning", None)


# ----------------------------------------------------------------------------- HF Trainer

def test_hf_trainer_folder_passes(reloader: Reloader, built: dict[str, Path]) -> None:
    res = reload_as(reloader, built["hf"], "runs/c/checkpoint-2", "hf-trainer")
    assert res.ok, res.cause
    assert res.parts == ("model", "optimizer", "progress", "scheduler", "rng", "data")
    assert "training_args.bin kept as opaque metadata (never unpickled)" in res.notes


def test_hf_trainer_checkpoint_of_a_lora_run_is_a_trainer_checkpoint(
        reloader: Reloader, built: dict[str, Path], tmp_path: Path) -> None:
    """Trainer + PEFT writes adapter weights and adapter_config.json beside the training state."""
    folder = private(built, "hf", tmp_path)
    (folder / "model.safetensors").rename(folder / "adapter_model.safetensors")
    (folder / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "r": 4}))
    res = reload_as(reloader, folder, "runs/c/checkpoint-2", "hf-trainer")
    assert res.ok, res.cause
    assert (res.format, res.parts) == (
        "hf-trainer", ("model", "optimizer", "progress", "scheduler", "rng", "data"))


def test_hf_trainer_hostile_training_args_is_never_unpickled(
        reloader: Reloader, built: dict[str, Path], tmp_path: Path) -> None:
    folder = private(built, "hf", tmp_path)
    marker = tmp_path / "pwned"
    torch.save(checkpoints.hostile_payloads(marker)["os.system"], folder / "training_args.bin")
    res = reloader.reload(folder, "checkpoint-2")
    assert res.ok, res.cause
    assert not marker.exists()


@pytest.mark.parametrize(("tool", "file", "wrap", "call"), [
    pytest.param("hf", "rng_state.pth", lambda payload: {"python": payload}, "builtins.exec",
                 id="hf-trainer-rng-state"),
    pytest.param("accelerate", "random_states_0.pkl", lambda payload: [payload],
                 "subprocess.Popen", id="accelerate-random-states"),
])
def test_a_hostile_training_state_file_fails(
    reloader: Reloader, built: dict[str, Path], tmp_path: Path, tool: str, file: str,
    wrap: Callable[[object], object], call: str,
) -> None:
    """A tool's own training-state file (its RNG states) that holds code is refused before
    any load, naming the file and the call: the weights beside it do not make it pass."""
    folder = private(built, tool, tmp_path)
    marker = tmp_path / "pwned"
    torch.save(wrap(checkpoints.hostile_payloads(marker)[call]), folder / file)
    res = reloader.reload(folder, "ckpt")
    assert res.cause == (f"ckpt/{file}: holds code: unpickling it would call {call}, outside "
                         "the weights-only allowlist (loading it would import and call "
                         "arbitrary code); refused before any load")
    assert not marker.exists()


def test_hf_trainer_without_rng_and_scheduler(reloader: Reloader, built: dict[str, Path],
                                              tmp_path: Path) -> None:
    folder = private(built, "hf", tmp_path)
    (folder / "rng_state.pth").unlink()
    (folder / "scheduler.pt").unlink()
    res = reloader.reload(folder, "checkpoint-2")
    assert res.ok
    assert res.parts == ("model", "optimizer", "progress", "data")


@pytest.mark.parametrize(("name", "damage", "expected"), [
    ("optimizer.pt", b"", "checkpoint-2/optimizer.pt: empty file (0 bytes)"),
    ("training_args.bin", b"", "checkpoint-2/training_args.bin: empty file (0 bytes)"),
    ("trainer_state.json", b"{not json", "checkpoint-2/trainer_state.json: not valid JSON"),
])
def test_hf_trainer_damaged_member_fails(reloader: Reloader, built: dict[str, Path],
                                         tmp_path: Path, name: str, damage: bytes,
                                         expected: str) -> None:
    folder = private(built, "hf", tmp_path)
    (folder / name).write_bytes(damage)
    res = reloader.reload(folder, "checkpoint-2")
    assert not res.ok
    assert res.cause is not None
    assert res.cause.startswith(expected)


def test_hf_trainer_nan_weights_fail(reloader: Reloader, built: dict[str, Path],
                                     tmp_path: Path) -> None:
    from safetensors.torch import load_file, save_file

    folder = private(built, "hf", tmp_path)
    weights = load_file(str(folder / "model.safetensors"))
    weights["classifier.bias"][0] = float("nan")
    save_file(weights, str(folder / "model.safetensors"))
    res = reloader.reload(folder, "checkpoint-2")
    assert (res.ok, res.nonfinite) == (False, ("classifier.bias",))


def _shard(folder: Path) -> dict[str, str]:
    """Split the folder's model.safetensors into two shards with an index, as HF does."""
    from safetensors.torch import load_file, save_file

    weights = load_file(str(folder / "model.safetensors"))
    names = sorted(weights)
    halves = {"model-00001-of-00002.safetensors": names[::2],
              "model-00002-of-00002.safetensors": names[1::2]}
    weight_map = {}
    for shard, keys in halves.items():
        save_file({k: weights[k] for k in keys}, str(folder / shard))
        weight_map.update(dict.fromkeys(keys, shard))
    (folder / "model.safetensors").unlink()
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": 0}, "weight_map": weight_map}))
    return weight_map


def test_hf_trainer_sharded_model_passes(reloader: Reloader, built: dict[str, Path],
                                         tmp_path: Path) -> None:
    folder = private(built, "hf", tmp_path)
    _shard(folder)
    res = reload_as(reloader, folder, "checkpoint-2", "hf-trainer")
    assert res.ok, res.cause
    assert "model" in res.parts


def test_hf_trainer_sharded_model_missing_a_shard_fails(
        reloader: Reloader, built: dict[str, Path], tmp_path: Path) -> None:
    folder = private(built, "hf", tmp_path)
    _shard(folder)
    (folder / "model-00002-of-00002.safetensors").unlink()
    res = reload_as(reloader, folder, "checkpoint-2", "hf-trainer")
    assert not res.ok
    assert res.cause == ("checkpoint-2/model-00001-of-00002.safetensors: shard "
                         "model-00002-of-00002.safetensors of this 00002-shard model is missing")


def test_hf_trainer_shard_index_naming_a_missing_file_fails(
        reloader: Reloader, built: dict[str, Path], tmp_path: Path) -> None:
    folder = private(built, "hf", tmp_path)
    weight_map = _shard(folder)
    weight_map[next(iter(weight_map))] = "model-extra.safetensors"
    (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    res = reload_as(reloader, folder, "checkpoint-2", "hf-trainer")
    assert not res.ok
    assert res.cause == ("checkpoint-2/model.safetensors.index.json: the index lists shard "
                         "model-extra.safetensors, which is missing")


@pytest.fixture(scope="module")
def saved_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """transformers' save_pretrained of a tiny config-built model: whole and sharded."""
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    model = BertModel(BertConfig(vocab_size=50, hidden_size=8, num_hidden_layers=1,
                                 num_attention_heads=2, intermediate_size=16,
                                 max_position_embeddings=16))
    root = tmp_path_factory.mktemp("saved")
    model.save_pretrained(root / "whole")
    model.save_pretrained(root / "sharded", max_shard_size="2KB")
    # from_pretrained(variant="fp16") reads these: model.fp16.safetensors, and shards
    # model.fp16-0000k-of-0000n.safetensors with model.safetensors.index.fp16.json.
    model.save_pretrained(root / "variant", variant="fp16")
    model.save_pretrained(root / "variant-sharded", variant="fp16", max_shard_size="2KB")
    return {key: root / key for key in ("whole", "sharded", "variant", "variant-sharded")}


@pytest.mark.parametrize("key", ["whole", "sharded", "variant", "variant-sharded"])
def test_saved_model_folder_passes_as_safetensors(
        reloader: Reloader, saved_models: dict[str, Path], key: str) -> None:
    res = reload_as(reloader, saved_models[key], "runs/c/final", "safetensors")
    assert res.ok, res.cause
    assert (res.format, res.parts) == ("safetensors", ("model",))


@pytest.mark.parametrize(("key", "pattern"), [("sharded", "model-*-of-*.safetensors"),
                                              ("variant-sharded", "model.fp16-*-of-*.safetensors")])
def test_saved_model_folder_missing_a_shard_fails(
        reloader: Reloader, saved_models: dict[str, Path], tmp_path: Path, key: str,
        pattern: str) -> None:
    import shutil

    folder = tmp_path / "final"
    shutil.copytree(saved_models[key], folder)
    shards = sorted(folder.glob(pattern))
    assert len(shards) > 1
    shards[-1].unlink()
    res = reload_as(reloader, folder, "final", "safetensors")
    assert not res.ok
    assert res.format == "safetensors"  # the manifest's word for it, also on failure
    assert res.cause is not None
    assert f"shard {shards[-1].name} of this" in res.cause


# ----------------------------------------------------------------------------- accelerate

def test_accelerate_folder_passes(reloader: Reloader, built: dict[str, Path]) -> None:
    res = reload_as(reloader, built["accelerate"], "runs/c/acc", "accelerate")
    assert res.ok, res.cause
    # Progress comes from the registered custom object; no sampler state without a
    # seedable sampler, so no data part.
    assert res.parts == ("model", "optimizer", "progress", "scheduler", "rng")


@pytest.mark.parametrize(("key", "claim"), [("hf", "hf-trainer"), ("accelerate", "accelerate")])
def test_training_state_folder_without_model_weights_fails(
        reloader: Reloader, built: dict[str, Path], tmp_path: Path, key: str, claim: str) -> None:
    """Optimizer, scheduler and RNG alone cannot restore a model."""
    folder = private(built, key, tmp_path)
    for weights in [*folder.glob("model*.safetensors"), *folder.glob("pytorch_model*.bin")]:
        weights.unlink()
    res = reload_as(reloader, folder, "ckpt", claim)
    assert not res.ok
    assert res.cause == ("ckpt: holds no model weights (model.safetensors, pytorch_model.bin or "
                         "their shards): it cannot restore the model")


def test_accelerate_without_custom_progress(reloader: Reloader, built: dict[str, Path],
                                            tmp_path: Path) -> None:
    folder = private(built, "accelerate", tmp_path)
    (folder / "custom_checkpoint_0.pkl").unlink()
    res = reloader.reload(folder, "acc")
    assert res.ok
    assert "progress" not in res.parts
    assert any("register_for_checkpointing" in note for note in res.notes)


def test_accelerate_truncated_optimizer_fails(reloader: Reloader, built: dict[str, Path],
                                              tmp_path: Path) -> None:
    folder = private(built, "accelerate", tmp_path)
    raw = (folder / "optimizer.bin").read_bytes()
    (folder / "optimizer.bin").write_bytes(raw[: len(raw) // 2])
    res = reloader.reload(folder, "acc")
    assert res.cause is not None
    assert res.cause.startswith("acc/optimizer.bin: ")
    assert "truncated" in res.cause


# ----------------------------------------------------------------------------- DCP

def test_dcp_folder_passes(reloader: Reloader, built: dict[str, Path]) -> None:
    res = reload_as(reloader, built["dcp"], "runs/c/dcp", "dcp")
    assert res.ok, res.cause
    assert (res.format, res.parts, res.tensors) == ("dcp", ("model", "progress"), 4)


def test_dcp_nan_fails(reloader: Reloader, tmp_path: Path) -> None:
    res = reloader.reload(checkpoints.dcp_checkpoint(tmp_path, nan=True), "dcp")
    assert (res.ok, res.nonfinite) == (False, ("model.0.weight",))


def test_dcp_hostile_metadata_fails(reloader: Reloader, built: dict[str, Path],
                                    tmp_path: Path) -> None:
    folder = private(built, "dcp", tmp_path)
    marker = tmp_path / "pwned"
    (folder / ".metadata").write_bytes(
        checkpoints.raw_pickle({"x": [checkpoints.hostile_payloads(marker)["os.system"]]}))
    res = reloader.reload(folder, "dcp")
    assert res.cause == ("dcp/.metadata: refers to posix.system (os.system), which is not a "
                         "DCP metadata type (loading it would import and call arbitrary code)")
    assert not marker.exists()


def _metadata_pickled_by_name(folder: Path, *,
                              instead: tuple[object, str] | None = None) -> None:
    """Pickle the folder's .metadata again as Python 3.11.0-3.11.4 do: each enum member as
    ``getattr(EnumClass, name)``; ``instead``: every member replaced by that (cls, name)."""
    import enum
    import io
    import pickle

    with (folder / ".metadata").open("rb") as fh:
        meta = pickle.load(fh)  # our own test file: trusted

    class ByName(pickle.Pickler):
        def reducer_override(self, obj: object) -> Any:
            if isinstance(obj, enum.Enum):
                return getattr, instead if instead is not None else (type(obj), obj.name)
            return NotImplemented

    out = io.BytesIO()
    ByName(out, protocol=2).dump(meta)
    assert b"getattr" in out.getvalue()
    (folder / ".metadata").write_bytes(out.getvalue())


def test_dcp_metadata_of_python_3_11_early_releases_passes(
    reloader: Reloader, built: dict[str, Path], tmp_path: Path
) -> None:
    """Debian 12's Python 3.11.2 pickles DCP's _MEM_FORMAT_ENCODING member by name."""
    folder = private(built, "dcp", tmp_path)
    _metadata_pickled_by_name(folder)
    res = reloader.reload(folder, "dcp")
    assert res.ok, res.cause


def test_dcp_metadata_getattr_on_anything_but_an_enum_fails(
    reloader: Reloader, built: dict[str, Path], tmp_path: Path
) -> None:
    folder = private(built, "dcp", tmp_path)
    _metadata_pickled_by_name(folder, instead=(torch.Size, "__subclasses__"))
    res = reloader.reload(folder, "dcp")
    assert res.cause == ("dcp/.metadata: calls builtins.getattr on type '__subclasses__', which "
                         "is not a member of a DCP metadata enum (loading it would import and "
                         "call arbitrary code)")


def test_dcp_truncated_data_fails(reloader: Reloader, built: dict[str, Path],
                                  tmp_path: Path) -> None:
    folder = private(built, "dcp", tmp_path)
    data = next(folder.glob("*.distcp"))
    data.write_bytes(data.read_bytes()[:100])
    res = reloader.reload(folder, "dcp")
    assert not res.ok
    assert res.cause is not None
    assert res.cause.startswith("dcp")


# ----------------------------------------------------------------------------- PEFT

def test_peft_adapter_passes(reloader: Reloader, built: dict[str, Path]) -> None:
    res = reloader.reload(built["peft"], "adapters/lora")
    assert res.ok, res.cause
    assert (res.format, res.parts, res.tensors) == ("peft", ("model",), 2)
    assert res.missing_reasons["rng"] == "a PEFT adapter folder holds adapter weights only"


def test_peft_adapter_saved_as_bin_and_the_format_fix_for_it(reloader: Reloader,
                                                             tmp_path: Path) -> None:
    """save_pretrained(safe_serialization=False) writes adapter_model.bin: the folder reloads
    as a PEFT adapter; listed as a checkpoint, the fix line names both weights files and
    their formats, and the .bin file itself reloads as 'torch'."""
    from peft import LoraConfig, get_peft_model
    from transformers import GPT2Config, GPT2LMHeadModel

    from pytest_itera.checks.artifacts.reloading import reload_findings

    torch.manual_seed(0)
    base = GPT2LMHeadModel(GPT2Config(vocab_size=50, n_embd=8, n_layer=1, n_head=2,
                                      n_positions=16))
    with warnings.catch_warnings():  # PEFT's note on GPT-2's Conv1D layers
        warnings.simplefilter("ignore")
        model = get_peft_model(base, LoraConfig(r=2, target_modules=["c_attn"],
                                                task_type="CAUSAL_LM"))
        model.save_pretrained(str(tmp_path / "adapter"), safe_serialization=False)
    assert (tmp_path / "adapter" / "adapter_model.bin").is_file()
    res = reloader.reload(tmp_path / "adapter", "runs/c/adapter")
    assert res.ok, res.cause
    assert (res.format, res.parts) == ("peft", ("model",))

    class Ctx:
        def reload(self, relpath: str, claimed: str | None) -> ReloadResult:
            return res

    (finding,) = reload_findings(Ctx(), "runs/c/adapter", "safetensors",  # type: ignore[arg-type]
                                  "here", "checkpoint-reloads")
    assert finding.message == ("runs/c/adapter holds 'peft' content, but the manifest declares "
                               "format 'safetensors'")
    assert finding.hint == (
        "a PEFT adapter folder belongs in adapters (adapter-pinned reloads it); or list its "
        "weights file here: adapter_model.safetensors with format 'safetensors', "
        "adapter_model.bin (save_pretrained(safe_serialization=False)) with format 'torch'")
    weights = reloader.reload(tmp_path / "adapter" / "adapter_model.bin", "adapter_model.bin")
    assert (weights.ok, weights.format) == (True, "torch")


def test_peft_without_weights_fails(reloader: Reloader, built: dict[str, Path],
                                    tmp_path: Path) -> None:
    folder = private(built, "peft", tmp_path)
    (folder / "adapter_model.safetensors").unlink()
    res = reloader.reload(folder, "lora")
    assert res.cause == ("lora: PEFT folder without adapter_model.safetensors or "
                         "adapter_model.bin")


def test_peft_bad_config_fails(reloader: Reloader, built: dict[str, Path],
                               tmp_path: Path) -> None:
    folder = private(built, "peft", tmp_path)
    (folder / "adapter_config.json").write_text('{"r": 2}')
    res = reloader.reload(folder, "lora")
    assert res.cause == "lora/adapter_config.json: no peft_type: not a PEFT adapter config"


def test_unrecognised_folder_fails(reloader: Reloader, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    res = reloader.reload(tmp_path, "runs/c/ckpt")
    assert res.cause is not None
    assert res.cause.startswith("runs/c/ckpt: not a recognised checkpoint folder")


# ------------------------------------------------------- what real state_dicts also hold


def test_a_buffer_named_like_a_checkpoint_key_is_still_a_weight(
        reloader: Reloader, tmp_path: Path) -> None:
    """A model with a buffer called "step" saves a state_dict with a root "step" key: it is
    still a model's weights, and a NaN among them is found."""
    model = torch.nn.Module()
    model.lin = torch.nn.Linear(3, 2)
    model.register_buffer("step", torch.tensor(7))
    with torch.no_grad():
        model.lin.weight[0, 0] = float("nan")
    torch.save(model.state_dict(), tmp_path / "w.pt")
    res = reload_as(reloader, tmp_path / "w.pt", "w.pt", "torch")
    assert res.parts == ("model",)
    assert (res.ok, res.nonfinite) == (False, ("lin.weight",))


def test_dynamically_quantized_weights_are_model_weights(
        reloader: Reloader, tmp_path: Path) -> None:
    """quantize_dynamic's state_dict keeps a dtype and packed params (a tuple) per layer."""
    import warnings

    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quantized = torch.ao.quantization.quantize_dynamic(  # type: ignore[no-untyped-call]
            model, {torch.nn.Linear}, dtype=torch.qint8)
    torch.save(quantized.state_dict(), tmp_path / "q.pt")
    res = reload_as(reloader, tmp_path / "q.pt", "q.pt", "torch")
    assert res.ok, res.cause
    assert res.parts == ("model",)


def test_a_safetensors_file_of_no_tensors_restores_no_model(
        reloader: Reloader, tmp_path: Path) -> None:
    from safetensors.torch import save_file

    save_file({}, tmp_path / "empty.safetensors", metadata={"format": "pt"})
    res = reload_as(reloader, tmp_path / "empty.safetensors", "empty.safetensors", "safetensors")
    assert (res.ok, res.tensors, res.parts) == (True, 0, ())


def test_a_peft_adapter_of_no_tensors_fails(reloader: Reloader, built: dict[str, Path],
                                           tmp_path: Path) -> None:
    from safetensors.torch import save_file

    folder = private(built, "peft", tmp_path)
    save_file({}, folder / "adapter_model.safetensors")
    res = reload_as(reloader, folder, "adapters/lora", "peft")
    assert not res.ok
    assert res.cause == ("adapters/lora/adapter_model.safetensors: holds no tensors: an "
                         "adapter of no weights changes nothing")


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_sparse_and_nested_weights_are_checked_by_their_stored_values(
        reloader: Reloader, tmp_path: Path) -> None:
    dense = torch.randn(4, 4)
    nan = dense.clone()
    nan[1, 2] = float("nan")
    cases = {
        "csr.pt": {"w": dense.to_sparse_csr()},
        "coo.pt": {"w": dense.to_sparse()},
        "nested.pt": {"w": torch.nested.nested_tensor([torch.randn(2), torch.randn(3)])},
        "coo_nan.pt": {"w": nan.to_sparse()},
        "csr_nan.pt": {"w": nan.to_sparse_csr()},
    }
    for name, state in cases.items():
        torch.save(state, tmp_path / name)
    verdicts = {name: reload_as(reloader, tmp_path / name, name, "torch") for name in cases}
    assert [n for n, r in verdicts.items() if r.ok] == ["csr.pt", "coo.pt", "nested.pt"]
    for name in ("coo_nan.pt", "csr_nan.pt"):
        assert verdicts[name].nonfinite == ("w",), verdicts[name].cause


def test_a_dtype_without_kernels_loads_with_a_note(reloader: Reloader, tmp_path: Path) -> None:
    fp4 = getattr(torch, "float4_e2m1fn_x2", None)
    if fp4 is None:
        pytest.skip("this torch has no float4")
    torch.save({"w": torch.zeros(4, dtype=torch.uint8).view(fp4)}, tmp_path / "fp4.pt")
    res = reload_as(reloader, tmp_path / "fp4.pt", "fp4.pt", "torch")
    assert res.ok, res.cause
    assert any(n.startswith("1 model tensor(s) not checked for non-finite values") and
               "w (float4_e2m1fn_x2, strided)" in n for n in res.notes), res.notes


def test_meta_weights_hold_no_data(reloader: Reloader, tmp_path: Path) -> None:
    torch.save({"w": torch.empty(4, 4, device="meta")}, tmp_path / "meta.pt")
    res = reload_as(reloader, tmp_path / "meta.pt", "meta.pt", "torch")
    assert (res.ok, res.cause) == (False, "meta.pt: model weight w is a meta tensor: it holds "
                                   "no data (saved before the weights were materialised)")


def test_a_protocol_4_pickle_is_refused_with_the_reason(
        reloader: Reloader, tmp_path: Path) -> None:
    torch.save({"w": torch.ones(2)}, tmp_path / "p4.pt", pickle_protocol=4)
    res = reload_as(reloader, tmp_path / "p4.pt", "p4.pt", "torch")
    assert not res.ok
    assert res.cause == ("p4.pt: refused by weights_only=True: the pickle uses protocol 4/5 "
                         "opcodes (FRAME), which torch.load(weights_only=True) cannot read: "
                         "save with torch.save's default pickle_protocol")


# ----------------------------------------------------------------------------- parts by content

def _resume_dict(**changes: object) -> dict[str, object]:
    import random

    import numpy as np

    model = checkpoints.tiny_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)  # stateless: its state is {}
    sched = torch.optim.lr_scheduler.StepLR(opt, 1)
    state: dict[str, object] = {
        "model": model.state_dict(), "optimizer": opt.state_dict(),
        "scheduler": sched.state_dict(), "scaler": torch.amp.GradScaler("cpu").state_dict(),
        "progress": {"step": 3}, "data": {"index": 3},
        "rng": {"torch": torch.get_rng_state(), "numpy": np.random.get_state(),
                "python": random.getstate()}}
    state.update(changes)
    return state


def test_parts_are_judged_by_content_with_typed_faults(reloader: Reloader,
                                                       tmp_path: Path) -> None:
    from pytest_itera.reload import PartFault

    path = tmp_path / "x.pt"
    torch.save(_resume_dict(optimizer={}, rng={"seed": 7}, progress="ten"), path)
    res = reloader.reload(path, "x.pt")
    assert res.ok
    assert res.parts == ("model", "scheduler", "scaler", "data")
    assert [(f.part, f.kind, f.key) for f in res.part_faults] == [
        ("optimizer", "empty", "optimizer"), ("progress", "not_state", "progress"),
        ("rng", "not_state", "rng")]
    fault = res.fault("rng")
    assert isinstance(fault, PartFault)
    assert fault.detail.startswith("holds {'seed': 7}, which is no random generator state")
    assert res.fault("model") is None


def test_generator_states_of_every_library(reloader: Reloader, tmp_path: Path) -> None:
    """numpy's Generator state, a CUDA-shaped state list (what torch.cuda.get_rng_state_all()
    returns: 16-byte uint8 tensors), and what pytest_itera.record.campaign saves."""
    import numpy as np

    from pytest_itera.record.resume import save_resume_checkpoint

    states = {
        "generator": {"numpy": np.random.default_rng(0).bit_generator.state},
        "cuda": {"cuda": [torch.zeros(16, dtype=torch.uint8)]},
        "legacy-dict": {"numpy": np.random.get_state(legacy=False)},
    }
    for name, rng in states.items():
        torch.save(_resume_dict(rng=rng), tmp_path / f"{name}.pt")
        res = reloader.reload(tmp_path / f"{name}.pt", name)
        assert res.parts == PARTS, (name, res.part_faults)
    model = checkpoints.tiny_model()
    opt = torch.optim.AdamW(model.parameters())
    save_resume_checkpoint(tmp_path / "rec.pt", model=model, optimizer=opt,
                           scheduler=torch.optim.lr_scheduler.StepLR(opt, 1),
                           scaler=torch.amp.GradScaler("cpu"), step=4, data_state={"batch": 4})
    res = reloader.reload(tmp_path / "rec.pt", "rec.pt")
    assert (res.parts, res.part_faults) == (PARTS, ())


def test_folder_members_are_judged_by_content(reloader: Reloader, built: dict[str, Path],
                                              tmp_path: Path) -> None:
    folder = private(built, "hf", tmp_path)
    torch.save({}, folder / "optimizer.pt")
    res = reloader.reload(folder, "ckpt")
    assert "optimizer" not in res.parts
    assert [(f.part, f.kind, f.key, f.detail) for f in res.part_faults] == [
        ("optimizer", "empty", "optimizer.pt", "{}")]


def test_dcp_nested_progress_and_a_stateless_optimizer(reloader: Reloader,
                                                       tmp_path: Path) -> None:
    """torchtitan keeps its step in train_state; DCP drops a stateless SGD's empty state."""
    from torch.distributed.checkpoint import state_dict_saver

    model = checkpoints.tiny_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    state = {"model": model.state_dict(), "optimizer": opt.state_dict(),
             "train_state": {"step": 3, "epoch": 0}}
    with checkpoints._quiet():
        state_dict_saver.save(state, checkpoint_id=str(tmp_path / "titan"), no_dist=True)
    res = reload_as(reloader, tmp_path / "titan", "titan", "dcp")
    assert res.ok, res.cause
    assert (res.parts, res.part_faults) == (("model", "optimizer", "progress"), ())


def test_a_safetensors_header_of_128_bytes_is_not_a_pickle(reloader: Reloader,
                                                          tmp_path: Path) -> None:
    """Its first byte is 0x80, like a pickle's: the header decides."""
    nan = torch.ones(2, 2)
    nan[1, 1] = float("nan")
    path = checkpoints.safetensors_file(tmp_path, "n.safetensors",
                                      {"head.weight": nan, "head.bias": torch.zeros(2)})
    assert path.read_bytes()[:1] == b"\x80"
    res = reload_as(reloader, path, "n.safetensors", "safetensors")
    assert (res.format, res.nonfinite, res.nan_values, res.inf_values) == (
        "safetensors", ("head.weight",), 1, 0)
