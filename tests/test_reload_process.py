"""The process side: fresh interpreter checks, hangs, crashes and the memory limit.

A hang and a crash are provoked by the server's documented test-only ``debug`` request
field (the child sleeps or aborts before loading); the memory limit is exercised for real
with a legacy-format file that cannot be mmap'ed.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_itera.reload import SERVER, Reloader, ReloadResult
from tests import artifacts


@pytest.fixture
def reloader() -> Iterator[Reloader]:
    with Reloader(timeout=60) as r:
        yield r


def debug(r: Reloader, kind: str, path: Path) -> ReloadResult:
    return r._run({"path": str(path), "debug": kind}, "runs/x.pt", None)


def test_hang_times_out_and_the_next_checkpoint_still_loads(tmp_path: Path) -> None:
    path = artifacts.state_dict_file(tmp_path)
    with Reloader(timeout=1.0) as r:
        hung = debug(r, "hang", path)
        after = r.reload(path, "w.pt")
    assert (hung.ok, hung.cause) == (
        False, "runs/x.pt: timed out after 1 s (the loading process was killed)")
    assert after.ok, after.cause


def test_crash_gives_a_verdict_and_the_server_survives(reloader: Reloader,
                                                       tmp_path: Path) -> None:
    path = artifacts.state_dict_file(tmp_path)
    crashed = debug(reloader, "crash", path)
    after = reloader.reload(path, "w.pt")
    assert crashed.cause == ("runs/x.pt: the loading process died from SIGABRT before giving "
                             "a verdict")
    assert after.ok


def test_memory_limit_stops_a_large_load(tmp_path: Path) -> None:
    path = artifacts.big_legacy_file(tmp_path, mib=64)
    with Reloader(timeout=60, memory_limit=16 << 20) as r:
        res = r.reload(path, "big.pt")
    assert not res.ok
    assert res.cause is not None
    assert res.cause.startswith("big.pt: ")
    assert "memory" in res.cause


def test_same_file_passes_with_the_default_limit(reloader: Reloader, tmp_path: Path) -> None:
    res = reloader.reload(artifacts.big_legacy_file(tmp_path, mib=64), "big.pt")
    assert res.ok, res.cause


def test_current_interpreter_is_usable(reloader: Reloader) -> None:
    assert reloader.check_interpreter() is None


def _wrapper(tmp_path: Path, body: str) -> str:
    """A fake --itera-python: a real Python whose torch is absent or reports an old version."""
    script = tmp_path / "python"
    script.write_text(f"#!/bin/sh\nexec {sys.executable} -I -B -u -c '{body}'\n")
    script.chmod(0o755)
    return str(script)


def test_old_torch_is_refused(tmp_path: Path) -> None:
    body = (f"import runpy, torch; torch.__version__ = \"2.9.1\"; "
            f"runpy.run_path(\"{SERVER}\", run_name=\"__main__\")")
    python = _wrapper(tmp_path, body)
    with Reloader(python) as r:
        reason = r.check_interpreter()
        res = r.reload(artifacts.state_dict_file(tmp_path), "w.pt")
    assert reason == (f"--itera-python {python}: torch 2.9.1 is older than 2.10: "
                      "weights_only=True can be bypassed there (CVE-2025-32434, "
                      "CVE-2026-24747); upgrade torch in the training interpreter")
    assert (res.ok, res.cause) == (False, f"w.pt: {reason}")


def test_interpreter_without_torch(tmp_path: Path) -> None:
    body = (f"import sys, runpy; sys.modules[\"torch\"] = None; "
            f"runpy.run_path(\"{SERVER}\", run_name=\"__main__\")")
    python = _wrapper(tmp_path, body)
    with Reloader(python) as r:
        reason = r.check_interpreter()
    assert reason is not None
    assert reason.startswith(f"--itera-python {python}: not a usable Python with torch "
                             "(server exited with status 1")
    assert "torch" in reason.split("(server", 1)[1]


@pytest.mark.parametrize("python", ["/bin/true", "/bin/echo"])
def test_not_python(python: str) -> None:
    with Reloader(python) as r:
        reason = r.check_interpreter()
    assert reason is not None
    assert reason.startswith(f"--itera-python {python}: not a usable Python with torch")


def test_not_executable(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope")
    with Reloader(missing) as r:
        assert r.check_interpreter() == f"--itera-python {missing}: not an executable file"


def test_server_environment_is_minimal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Secrets of the caller never reach the reload process; it runs outside the campaign."""
    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    out = tmp_path / "env.txt"
    body = (f"import os; open(\"{out}\", \"w\").write(repr(sorted(os.environ)) + os.getcwd()); "
            f"import runpy; runpy.run_path(\"{SERVER}\", run_name=\"__main__\")")
    with Reloader(_wrapper(tmp_path, body)) as r:
        assert r.check_interpreter() is None
    text = out.read_text()
    assert "HF_TOKEN" not in text
    assert "AWS_SECRET_ACCESS_KEY" not in text
    assert "'HF_HUB_OFFLINE'" in text
    assert not text.endswith(os.getcwd())


def test_close_stops_the_server(tmp_path: Path) -> None:
    r = Reloader()
    assert r.check_interpreter() is None
    proc = r._holder[0].proc
    r.close()
    assert proc.poll() is not None
