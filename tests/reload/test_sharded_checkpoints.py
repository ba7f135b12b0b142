"""Checkpoints written by several ranks, read by content: FSDP2 through torch's DCP and
accelerate's FSDP layout (2 CPU processes, gloo), every rank's file required."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_itera.reload import Reloader
from tests import checkpoints, sharded


@pytest.fixture(scope="session")
def fsdp(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Written once per session: a 2-process run costs tens of seconds."""
    return sharded.fsdp_checkpoints(tmp_path_factory.mktemp("fsdp"))


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
