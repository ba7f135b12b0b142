"""The reload server's start-up and its loader child's own failures (reload/server/)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from pytest_itera.reload import Reloader, sandbox
from tests import checkpoints


def test_the_server_warms_up_without_importing_torchs_compiler(tmp_path: Path) -> None:
    """Building an optimizer to warm up imported torch._dynamo: as long as torch's own import,
    on every server start. The warm-up checkpoint still holds an optimizer state."""
    code = textwrap.dedent(f"""
        import sys
        from pytest_itera.reload.server import serve
        path = serve.warm_up({str(tmp_path)!r})
        print(path is not None, "torch._dynamo" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout.split() == ["True", "False"], out.stderr
    saved = torch.load(tmp_path / "warm.pt", weights_only=True)
    assert set(saved["optimizer"]) == {"state", "param_groups"}


def test_a_server_folder_it_cannot_write_leaves_the_server_cold_not_dead(tmp_path: Path) -> None:
    from pytest_itera.reload.server import serve

    # torch.save reports a folder it cannot write to as a RuntimeError, not an OSError.
    assert serve.warm_up(str(tmp_path / "no-such-folder")) is None


def test_a_loader_child_that_fails_outside_the_checkpoint_says_what_failed(
    tmp_path: Path,
) -> None:
    """A child's own failure (here a malformed test-seam value, before any load) is told with
    its exception, not as a guess about memory."""
    path = checkpoints.state_dict_file(tmp_path)
    with Reloader(timeout=60) as reloader:
        reply = reloader._ask({"path": str(path), "cpu_seconds": "soon"})
        assert reply["ok"] is False
        assert reply["reason"] == ("the loading process failed before giving a verdict "
                                   "(ValueError: could not convert string to float: 'soon')")
        assert reloader.reload(path, path.name).ok  # the server kept serving


@pytest.mark.parametrize(("field", "point"), [
    ("/", "/"), (r"/mnt/my\040disk", "/mnt/my disk"), (r"/a\011b\012c\134d", "/a\tb\nc\\d"),
])
def test_mount_points_are_unescaped_without_a_codec(field: str, point: str) -> None:
    """mountinfo's octal escapes; the unicode_escape codec it used is imported on first use,
    which failed inside the namespace when the interpreter's files were out of the child's
    reach (an unprivileged account), and the child died without a verdict."""
    assert sandbox._unescape(field) == point


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox is Linux only")
def test_rlimit_nproc_bounds_the_processes_of_an_unprivileged_account(tmp_path: Path) -> None:
    """The kernel exempts real root from RLIMIT_NPROC, so tests/reload/test_sandbox.py can only
    prove the layer when run unprivileged. As root, run the reload interpreter as 'nobody'
    (setpriv; CAP_DAC_READ_SEARCH lets it read this interpreter's files) and make the child
    fork 64 times with only the user namespace and the limit on."""
    if not sandbox._real_root():  # the sandbox's own test of it
        pytest.skip("not root: tests/reload/test_sandbox.py proves the limit as this account")
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv (util-linux) is not installed: cannot drop to an unprivileged uid")
    wrapper = tmp_path / "python-as-nobody"
    wrapper.write_text(f"#!/bin/sh\nexec {setpriv} --reuid=65534 --regid=65534 --clear-groups "
                       "--inh-caps=+dac_read_search --ambient-caps=+dac_read_search "
                       f"{sys.executable} \"$@\"\n")
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    path = checkpoints.state_dict_file(tmp_path)
    with Reloader(str(wrapper), timeout=60) as reloader:
        reply = reloader._ask({"path": str(path), "debug": "escape", "attempts": ["fork"],
                               "forks": 64, "layers": ["user_namespace", "rlimit_nproc"]})
    assert "error" not in reply, reply
    missing = reply["sandbox"]["missing"]
    if missing:
        pytest.skip(f"sandbox layers unavailable to an unprivileged account here: {missing}")
    assert reply["sandbox"]["active"] == ["user_namespace", "rlimit_nproc"]
    assert reply["escape"] == {"fork": "denied: EAGAIN"}
    assert os.getuid() == 0  # the test process itself stayed root
