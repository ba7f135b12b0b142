"""The loader child's sandbox, layer by layer (pytest_itera/reload/sandbox.py).

Each layer is proven by making the sandboxed child try the forbidden thing through the
server's test-only ``"debug": "escape"`` request (open sockets, reach the network, write a
file beside the checkpoint, fork) with only that layer on (``"layers"``), and asserting the
kernel denied it.  A layer the kernel or the account cannot provide is skipped with its
named reason, never silently.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_itera.reload import Reloader
from tests import checkpoints

ALL = ("no_new_privs", "user_namespace", "network_namespace", "read_only_mounts", "seccomp",
       "rlimit_fsize", "rlimit_nproc", "rlimit_cpu")


@pytest.fixture(scope="module")
def weights(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return checkpoints.state_dict_file(tmp_path_factory.mktemp("sandbox"))


def escape(reloader: Reloader, path: Path, layers: list[str] | None = None,
           **extra: Any) -> dict[str, Any]:
    request: dict[str, Any] = {"path": str(path), "debug": "escape", **extra}
    if layers is not None:
        request["layers"] = layers
    reply = reloader._ask(request)
    assert "error" not in reply, reply
    return reply


def needs(reply: dict[str, Any], *layers: str) -> None:
    """Skip, naming the kernel feature or account property that is missing."""
    missing = reply["sandbox"]["missing"]
    for layer in layers:
        if layer in missing:
            pytest.skip(f"sandbox layer {layer} unavailable here: {missing[layer]}")


def test_every_layer_is_reported_active_or_missing_with_its_reason(
    reloader: Reloader, weights: Path,
) -> None:
    result = reloader.reload(weights, "w.pt")
    assert result.ok, result.cause
    assert result.sandbox is not None
    assert set(result.sandbox.active) | set(result.sandbox.missing) == set(ALL)
    assert not set(result.sandbox.active) & set(result.sandbox.missing)
    assert all(result.sandbox.missing.values())  # each missing layer says why
    assert "no_new_privs" in result.sandbox.active
    assert "rlimit_fsize" in result.sandbox.active
    assert "rlimit_cpu" in result.sandbox.active


def test_all_layers_together_deny_every_escape(reloader: Reloader, weights: Path) -> None:
    reply = escape(reloader, weights)
    needs(reply, "seccomp", "read_only_mounts")
    assert reply["escape"] == {"socket": "denied: EPERM", "unix_socket": "denied: EPERM",
                               "network": "denied: EPERM", "write": "denied: EROFS",
                               "fork": "denied: EPERM"}
    assert not (weights.parent / "itera-escape.txt").exists()


def test_a_good_checkpoint_still_loads_inside_the_full_sandbox(
    reloader: Reloader, tmp_path: Path,
) -> None:
    for path in (checkpoints.general_checkpoint(tmp_path),
                 checkpoints.state_dict_file(tmp_path, "legacy.pt", legacy=True),
                 checkpoints.safetensors_file(tmp_path)):
        result = reloader.reload(path, path.name)
        assert result.ok, result.cause


def test_seccomp_denies_sockets_and_processes(reloader: Reloader, weights: Path) -> None:
    reply = escape(reloader, weights, ["seccomp"], attempts=["socket", "unix_socket", "fork"])
    needs(reply, "seccomp")
    assert reply["sandbox"]["active"] == ["seccomp"]
    assert reply["escape"] == {"socket": "denied: EPERM", "unix_socket": "denied: EPERM",
                               "fork": "denied: EPERM"}


def test_network_namespace_has_no_route(reloader: Reloader, weights: Path) -> None:
    reply = escape(reloader, weights, ["user_namespace", "network_namespace"],
                   attempts=["network"])
    needs(reply, "user_namespace", "network_namespace")
    assert reply["escape"] == {"network": "denied: ENETUNREACH"}


def test_read_only_mounts_deny_a_write_beside_the_checkpoint(
    reloader: Reloader, weights: Path,
) -> None:
    reply = escape(reloader, weights, ["user_namespace", "read_only_mounts"],
                   attempts=["write"])
    needs(reply, "user_namespace", "read_only_mounts")
    assert reply["escape"] == {"write": "denied: EROFS"}
    assert not (weights.parent / "itera-escape.txt").exists()


def test_rlimit_fsize_denies_writing_a_byte(reloader: Reloader, tmp_path: Path) -> None:
    path = checkpoints.state_dict_file(tmp_path)
    reply = escape(reloader, path, ["rlimit_fsize"], attempts=["write"])
    assert reply["sandbox"]["active"] == ["rlimit_fsize"]
    assert reply["escape"] == {"write": "denied: EFBIG"}
    assert (tmp_path / "itera-escape.txt").read_bytes() == b""  # created, never written


def test_rlimit_nproc_bounds_processes(reloader: Reloader, weights: Path) -> None:
    reply = escape(reloader, weights, ["user_namespace", "rlimit_nproc"], attempts=["fork"],
                   forks=64)
    needs(reply, "user_namespace", "rlimit_nproc")
    assert reply["escape"] == {"fork": "denied: EAGAIN"}


def test_rlimit_cpu_ends_a_cpu_hog_before_the_wall_clock(reloader: Reloader,
                                                         weights: Path) -> None:
    reply = reloader._ask({"path": str(weights), "debug": "spin", "cpu_seconds": 1,
                           "layers": ["rlimit_cpu"]})
    assert reply["reason"] == ("the loading process died from SIGXCPU (over its CPU time "
                               "limit, the reload timeout) before giving a verdict")
    assert reply["seconds"] < 30  # the wall-clock timeout is 60 s
    assert reloader.reload(weights, "w.pt").ok  # the server kept serving
