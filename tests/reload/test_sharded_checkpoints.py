"""Checkpoints written by several ranks, read by content: FSDP2 through torch's DCP and
accelerate's FSDP layout (2 CPU processes, gloo), every rank's file required."""

from __future__ import annotations

import pickle
import zipfile
from pathlib import Path
from typing import Any

import pytest
import torch

from pytest_itera.reload import Reloader
from tests import checkpoints


@pytest.fixture
def fsdp(fsdp_checkpoints: dict[str, Path]) -> dict[str, Path]:
    return fsdp_checkpoints


def private(fsdp: dict[str, Path], key: str, tmp_path: Path) -> Path:
    return checkpoints.copy_artifact(fsdp[key], tmp_path)


def test_fsdp2_dcp_folder_of_two_ranks_passes(reloader: Reloader, fsdp: dict[str, Path]) -> None:
    assert sorted(p.name for p in fsdp["dcp"].glob("*.distcp")) == ["__0_0.distcp",
                                                                     "__1_0.distcp"]
    res = reloader.reload(fsdp["dcp"], "runs/c/dcp")
    assert res.ok, res.cause
    assert (res.format, res.parts, res.tensors) == (
        "dcp", ("model", "optimizer", "progress", "scheduler"), 16)


def test_a_missing_rank_file_is_named(reloader: Reloader, fsdp: dict[str, Path],
                                      tmp_path: Path) -> None:
    folder = private(fsdp, "dcp", tmp_path)
    (folder / "__1_0.distcp").unlink()
    res = reloader.reload(folder, "runs/c/dcp")
    assert (res.ok, res.format) == (False, "dcp")
    assert res.cause == ("runs/c/dcp/__1_0.distcp: rank 1's data file is missing: .metadata "
                         "places 38 entries in it")


def test_a_truncated_rank_file_is_named(reloader: Reloader, fsdp: dict[str, Path],
                                        tmp_path: Path) -> None:
    folder = private(fsdp, "dcp", tmp_path)
    data = folder / "__0_0.distcp"
    size = data.stat().st_size
    data.write_bytes(data.read_bytes()[:size // 2])
    res = reloader.reload(folder, "runs/c/dcp")
    assert not res.ok
    assert res.cause == (f"runs/c/dcp/__0_0.distcp: rank 0's data file is truncated: "
                         f".metadata places entries up to byte {size} in it, it holds "
                         f"{size // 2}")


def test_accelerate_fsdp_layout_passes(reloader: Reloader, fsdp: dict[str, Path]) -> None:
    assert {p.name for p in fsdp["accelerate"].iterdir()} == {
        "pytorch_model_fsdp_0", "optimizer_0", "scheduler.bin", "random_states_0.pkl",
        "random_states_1.pkl"}
    res = reloader.reload(fsdp["accelerate"], "runs/c/acc")
    assert res.ok, res.cause
    assert (res.format, res.parts, res.tensors) == (
        "accelerate", ("model", "optimizer", "scheduler", "rng"), 18)
    assert "subfolders are not inspected" not in res.notes


def test_accelerate_fsdp_full_state_dict_layout_passes(reloader: Reloader,
                                                       fsdp: dict[str, Path]) -> None:
    """FULL_STATE_DICT: rank 0 writes pytorch_model_fsdp.bin and optimizer.bin."""
    assert {p.name for p in fsdp["accelerate-full"].iterdir()} == {
        "pytorch_model_fsdp.bin", "optimizer.bin", "scheduler.bin", "random_states_0.pkl",
        "random_states_1.pkl"}
    res = reloader.reload(fsdp["accelerate-full"], "runs/c/acc-full")
    assert res.ok, res.cause
    assert (res.format, res.parts) == ("accelerate", ("model", "optimizer", "scheduler", "rng"))
    assert dict(res.model_shapes) == {"0.weight": (8, 4), "0.bias": (8,), "2.weight": (2, 8),
                                      "2.bias": (2,)}


@pytest.mark.parametrize("sub", ["pytorch_model_fsdp_0", "optimizer_0"])
def test_accelerate_fsdp_missing_rank_is_named(reloader: Reloader, fsdp: dict[str, Path],
                                               tmp_path: Path, sub: str) -> None:
    folder = private(fsdp, "accelerate", tmp_path)
    (folder / sub / "__1_0.distcp").unlink()
    res = reloader.reload(folder, "runs/c/acc")
    assert not res.ok
    assert res.cause is not None
    assert res.cause.startswith(f"runs/c/acc/{sub}/__1_0.distcp: rank 1's data file is "
                                "missing: .metadata places ")


# ----------------------------------------------------------------------------- DeepSpeed

# Made by DeepSpeed itself (2 ranks, CPU): see deepspeed_made/make.py.
DEEPSPEED = Path(__file__).parent / "deepspeed_made"
# What zero_to_fp32's reader rebuilds from each of them (the oracle, run by make.py).
ORACLE_SHAPES = {"0.weight": (8, 4), "0.bias": (8,), "2.weight": (2, 8), "2.bias": (2,)}


def deepspeed_copy(kind: str, tmp_path: Path) -> Path:
    return checkpoints.copy_artifact(DEEPSPEED / kind, tmp_path)


@pytest.mark.parametrize(("kind", "tensors"), [("zero2", 12), ("zero2-bf16", 12),
                                               ("zero3", 16)])
def test_deepspeed_checkpoint_passes(reloader: Reloader, kind: str, tensors: int) -> None:
    res = reloader.reload(DEEPSPEED / kind, f"runs/c/{kind}")
    assert res.ok, res.cause
    assert (res.format, res.parts, res.tensors) == (
        "deepspeed", ("model", "optimizer", "progress", "scheduler"), tensors)
    assert res.step == 3
    if kind != "zero3":  # zero_to_fp32 rebuilds these 4 weights, 58 values (make.py)
        assert dict(res.model_shapes) == ORACLE_SHAPES


def test_the_tag_folder_alone_is_a_deepspeed_checkpoint(reloader: Reloader) -> None:
    res = reloader.reload(DEEPSPEED / "zero2" / "global_step3", "runs/c/global_step3")
    assert (res.ok, res.format, res.parts) == (
        True, "deepspeed", ("model", "optimizer", "progress", "scheduler"))


@pytest.mark.parametrize(("kind", "name", "what"), [
    ("zero2", "zero_pp_rank_1_mp_rank_00_optim_states.pt", "optimizer states"),
    ("zero2-bf16", "bf16_zero_pp_rank_1_mp_rank_00_optim_states.pt", "optimizer states"),
    ("zero3", "zero_pp_rank_1_mp_rank_00_model_states.pt", "model states"),
])
def test_a_missing_deepspeed_rank_is_named(reloader: Reloader, tmp_path: Path, kind: str,
                                           name: str, what: str) -> None:
    folder = deepspeed_copy(kind, tmp_path)
    (folder / "global_step3" / name).unlink()
    res = reloader.reload(folder, "ds")
    assert (res.ok, res.format) == (False, "deepspeed")
    model_states = ("zero_pp_rank_0_mp_rank_00_model_states.pt" if kind == "zero3"
                    else "mp_rank_00_model_states.pt")
    assert res.cause == (f"ds/global_step3/{name}: rank 1's {what} file is missing: the "
                         f"checkpoint was saved by 2 data-parallel rank(s) ({model_states}'s "
                         "dp_world_size)")


def test_a_truncated_deepspeed_rank_file_is_named(reloader: Reloader, tmp_path: Path) -> None:
    folder = deepspeed_copy("zero2", tmp_path)
    data = folder / "global_step3" / "zero_pp_rank_1_mp_rank_00_optim_states.pt"
    data.write_bytes(data.read_bytes()[:2000])
    res = reloader.reload(folder, "ds")
    assert not res.ok
    assert res.cause is not None
    assert res.cause.startswith("ds/global_step3/zero_pp_rank_1_mp_rank_00_optim_states.pt: ")
    assert "truncated" in res.cause


def test_a_latest_tag_naming_no_folder_is_refused(reloader: Reloader, tmp_path: Path) -> None:
    folder = deepspeed_copy("zero2", tmp_path)
    (folder / "latest").write_text("global_step9")
    res = reloader.reload(folder, "ds")
    assert res.cause == "ds/latest: names the tag folder global_step9/, which is missing"


class _DeepSpeedCode:
    """Pickles as DeepSpeed's DynamicLossScaler class called with no argument (deepspeed
    need not be installed: the global is written by name)."""


class _NamingPickler(pickle._Pickler):  # the Python pickler: its save_global is overridable
    def save_global(self, obj: Any, name: str | None = None) -> None:
        if obj is _DeepSpeedCode:
            name_line = b"deepspeed.runtime.fp16.loss_scaler\nDynamicLossScaler\n"
            self.write(pickle.GLOBAL + name_line)  # type: ignore[attr-defined]
            return
        super().save_global(obj, name)  # type: ignore[misc]


class _NamingPickle:
    Pickler = _NamingPickler
    Unpickler = pickle.Unpickler
    __name__ = "pickle"


def test_deepspeed_classes_are_stand_ins_and_other_deepspeed_code_is_refused(
        reloader: Reloader, tmp_path: Path) -> None:
    """Its LossScaler, ZeroStageEnum and fragment_address load as plain data (the passing
    cases); any other global of DeepSpeed's is code, refused before any load."""
    folder = deepspeed_copy("zero2", tmp_path)
    states = folder / "global_step3" / "mp_rank_00_model_states.pt"
    state = torch.load(states, weights_only=True)
    state["scaler"] = checkpoints.Payload(_DeepSpeedCode)
    torch.save(state, states, pickle_module=_NamingPickle)
    res = reloader.reload(folder, "ds")
    assert not res.ok
    assert res.cause == (
        "ds/global_step3/mp_rank_00_model_states.pt: holds code: unpickling it would call "
        "deepspeed.runtime.fp16.loss_scaler.DynamicLossScaler, outside the weights-only "
        "allowlist (loading it would import and call arbitrary code); refused before any load")


def test_nonfinite_deepspeed_weights_are_named(reloader: Reloader, tmp_path: Path) -> None:
    folder = deepspeed_copy("zero2", tmp_path)
    states = folder / "global_step3" / "mp_rank_00_model_states.pt"
    state = torch.load(states, weights_only=True)
    state["module"]["2.bias"][0] = float("nan")
    torch.save(state, states)
    res = reloader.reload(folder, "ds")
    assert (res.ok, res.nonfinite) == (
        False, ("global_step3/mp_rank_00_model_states.pt:module.2.bias",))


@pytest.mark.parametrize(("kind", "master"), [("zero2", "single_partition_of_fp32_groups"),
                                              ("zero3", "fp32_flat_groups")])
def test_nonfinite_fp32_master_partitions_are_named(reloader: Reloader, tmp_path: Path,
                                                    kind: str, master: str) -> None:
    """The ranks' fp32 master weights (all ZeRO-3 has of the model): a NaN there is named."""
    from pytest_itera.reload.server.deepspeed import STAND_INS

    folder = deepspeed_copy(kind, tmp_path)
    path = folder / "global_step3" / "zero_pp_rank_1_mp_rank_00_optim_states.pt"
    with torch.serialization.safe_globals(list(STAND_INS)):
        state = torch.load(path, weights_only=True)
    target = state["optimizer_state_dict"][master][0].detach().numpy().tobytes()
    with zipfile.ZipFile(path) as zf:
        members = [(info, zf.read(info)) for info in zf.infolist()]
    holders = [info.filename for info, data in members if target in data]
    assert len(holders) == 1, holders
    with zipfile.ZipFile(path, "w") as zf:  # the same archive, that one storage NaN
        for info, data in members:
            nan = torch.full((len(data) // 4,), float("nan")).numpy().tobytes()
            zf.writestr(info, nan if info.filename in holders else data)
    res = reloader.reload(folder, "ds")
    assert (res.ok, res.nonfinite) == (False, (
        f"global_step3/zero_pp_rank_1_mp_rank_00_optim_states.pt:optimizer_state_dict."
        f"{master}.0",))


def _without_zero(tmp_path: Path, stage: int) -> Path:
    """The ZeRO-2 checkpoint made a stage-``stage`` one: no optimizer states files, the
    optimizer (a real AdamW state of that model) in the model states, as the engine saves
    it without ZeRO (written here: DeepSpeed is no test dependency)."""
    folder = deepspeed_copy("zero2", tmp_path)
    for path in (folder / "global_step3").glob("*optim_states.pt"):
        path.unlink()
    states = folder / "global_step3" / "mp_rank_00_model_states.pt"
    state = torch.load(states, weights_only=True)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    model.load_state_dict(state["module"])
    opt = torch.optim.AdamW(model.parameters())
    model(torch.randn(2, 4)).pow(2).mean().backward()
    opt.step()
    state["optimizer"] = opt.state_dict()
    state["ds_config"]["zero_optimization"]["stage"] = stage
    torch.save(state, states)
    return folder


def test_without_zero_the_optimizer_is_in_the_model_states(reloader: Reloader,
                                                           tmp_path: Path) -> None:
    res = reloader.reload(_without_zero(tmp_path, 0), "ds")
    assert (res.ok, res.format, res.parts) == (
        True, "deepspeed", ("model", "optimizer", "progress", "scheduler"))


def test_zero_optimizer_states_all_lost_are_named(reloader: Reloader, tmp_path: Path) -> None:
    res = reloader.reload(_without_zero(tmp_path, 2), "ds")
    assert res.cause == ("ds/global_step3/zero_pp_rank_0_mp_rank_00_optim_states.pt: rank 0's "
                         "optimizer states file is missing: the checkpoint was saved by 2 "
                         "data-parallel rank(s) (mp_rank_00_model_states.pt's dp_world_size)")
