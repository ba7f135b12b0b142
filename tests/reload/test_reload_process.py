"""The process side: fresh interpreter checks, hangs, crashes and the memory limit.

A hang and a crash are provoked by the server's documented test-only ``debug`` request
field (the child sleeps or aborts before loading); the memory limit is exercised for real
with a legacy-format file that cannot be mmap'ed.
"""

from __future__ import annotations

import contextlib
import fnmatch
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_itera.reload import SERVER, Reloader, ReloadResult, _Server
from tests import checkpoints
from tests.runner import REPO


@pytest.fixture
def reloader() -> Iterator[Reloader]:
    """A server of its own for each test (not conftest's module one): these hang, crash and
    kill it."""
    with Reloader(timeout=60) as r:
        yield r


def debug(r: Reloader, kind: str, path: Path) -> ReloadResult:
    return r._run({"path": str(path), "debug": kind}, "runs/x.pt")


def test_hang_times_out_and_the_next_checkpoint_still_loads(tmp_path: Path) -> None:
    path = checkpoints.state_dict_file(tmp_path)
    with Reloader(timeout=1.0) as r:
        hung = debug(r, "hang", path)
        after = r.reload(path, "w.pt")
    assert (hung.ok, hung.cause, hung.failure) == (
        False, "runs/x.pt: timed out after 1 s (the loading process was killed)", "timeout")
    assert after.ok, after.cause
    assert after.failure is None


def test_crash_gives_a_verdict_and_the_server_survives(reloader: Reloader,
                                                       tmp_path: Path) -> None:
    path = checkpoints.state_dict_file(tmp_path)
    crashed = debug(reloader, "crash", path)
    after = reloader.reload(path, "w.pt")
    assert crashed.cause == ("runs/x.pt: the loading process died from SIGABRT before giving "
                             "a verdict")
    assert crashed.failure == "unreadable"
    assert after.ok


def test_memory_limit_stops_a_large_load(tmp_path: Path) -> None:
    path = checkpoints.big_legacy_file(tmp_path, mib=64)
    with Reloader(timeout=60, memory_limit=16 << 20) as r:
        res = r.reload(path, "big.pt")
    assert not res.ok
    assert res.cause is not None
    assert res.cause.startswith("big.pt: ")
    assert "memory" in res.cause
    assert res.failure == "memory"  # typed: the fix line is chosen from it, not from the words


def test_same_file_passes_with_the_default_limit(reloader: Reloader, tmp_path: Path) -> None:
    res = reloader.reload(checkpoints.big_legacy_file(tmp_path, mib=64), "big.pt")
    assert res.ok, res.cause


def test_current_interpreter_is_usable(reloader: Reloader) -> None:
    assert reloader.check_interpreter() is None


def _wrapper(tmp_path: Path, prelude: str) -> str:
    """A fake --itera-python: a real Python that runs ``prelude`` (its torch made absent or
    old, its environment written down), then the reload server."""
    body = f"{prelude}; import runpy; runpy.run_path(\"{SERVER}\", run_name=\"__main__\")"
    script = tmp_path / "python"
    script.write_text(f"#!/bin/sh\nexec {sys.executable} -I -B -u -c '{body}'\n")
    script.chmod(0o755)
    return str(script)


def test_old_torch_is_refused(tmp_path: Path) -> None:
    python = _wrapper(tmp_path, 'import torch; torch.__version__ = "2.9.1"')
    with Reloader(python) as r:
        reason = r.check_interpreter()
        res = r.reload(checkpoints.state_dict_file(tmp_path), "w.pt")
    assert reason == (f"--itera-python {python}: torch 2.9.1 is older than 2.10: "
                      "weights_only=True can be bypassed there (CVE-2025-32434, "
                      "CVE-2026-24747); upgrade torch in the training interpreter")
    assert (res.ok, res.cause) == (False, f"w.pt: {reason}")


def test_interpreter_without_torch(tmp_path: Path) -> None:
    python = _wrapper(tmp_path, 'import sys; sys.modules["torch"] = None')
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
        result = r.reload(checkpoints.state_dict_file(tmp_path), "w.pt")
    assert (result.ok, result.failure) == (False, "interpreter")


def test_server_environment_is_minimal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Secrets of the caller never reach the reload process; it runs outside the campaign."""
    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    out = tmp_path / "env.txt"
    prelude = f'import os; open("{out}", "w").write(repr(sorted(os.environ)) + os.getcwd())'
    with Reloader(_wrapper(tmp_path, prelude)) as r:
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


# ------------------------------------------------------------ many checkpoints at once


def test_prefetched_checkpoints_each_get_their_own_verdict(tmp_path: Path) -> None:
    """Handed over at once and loaded two at a time, each checkpoint still gets its own
    verdict, whatever the order the children finish in; a hostile one among them fails
    alone and its payload never runs."""
    marker = tmp_path / "pwned"
    for name in ("g0", "g1", "g2", "g3", "evil"):
        (tmp_path / name).mkdir()
    good = [checkpoints.state_dict_file(tmp_path / f"g{i}") for i in range(4)]
    evil = checkpoints.hostile_checkpoint(tmp_path / "evil", marker)
    with Reloader(timeout=60, jobs=2) as r:
        r.prefetch([good[0], evil, *good[1:]])
        results = {p: r.reload(p, p.parent.name) for p in [*reversed(good), evil]}
        again = r.reload(good[0], "g0")  # collected once: asking again loads again
    assert all(results[p].ok for p in good), [results[p].cause for p in good]
    assert not results[evil].ok
    cause = results[evil].cause
    assert cause is not None
    assert "holds code: unpickling it would call posix.system" in cause
    assert again.ok
    assert not marker.exists()


@contextlib.contextmanager
def _raw_server(home: Path, jobs: int) -> Iterator[_Server]:
    """The server itself, spoken to line by line."""
    home.mkdir()
    server = _Server(sys.executable, str(home), jobs=jobs)
    try:
        assert server.hello()["hello"] == 1
        yield server
    finally:
        server.stop()


def test_a_hung_child_does_not_hold_up_the_others(tmp_path: Path) -> None:
    """With two jobs, the verdict on a good checkpoint comes while a hung one waits for its
    own deadline; the hung one then times out with its own id."""
    path = str(checkpoints.state_dict_file(tmp_path))
    with _raw_server(tmp_path / "home", jobs=2) as server:
        server.send({"id": 1, "path": path, "timeout": 3, "debug": "hang"})
        server.send({"id": 2, "path": path, "timeout": 30})
        first = server.read(30)
        second = server.read(30)
    assert (first["id"], first["ok"]) == (2, True)
    assert second["id"] == 1
    assert second["reason"] == "timed out after 3 s (the loading process was killed)"


def test_ready_says_whether_a_verdict_handed_over_ahead_is_in(tmp_path: Path) -> None:
    """Without waiting: while the server imports torch a prefetched checkpoint is not ready,
    then it is and reload() answers from the reply already read; one never handed over is
    always ready (asking is what starts it)."""
    path = checkpoints.state_dict_file(tmp_path)
    other = checkpoints.state_dict_file(tmp_path, "other.pt")
    with Reloader(timeout=60) as r:
        assert r.ready(path)
        r.prefetch([path])
        assert not r.ready(path)  # torch takes about a second to import
        deadline = time.monotonic() + 60
        while not r.ready(path):
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert r.reload(path, "weights.pt").ok
        assert r.ready(other)


def test_the_largest_waiting_checkpoint_starts_first(tmp_path: Path) -> None:
    """Queued checkpoints start largest first: a big one left for the end would load alone
    while the other cores idle. Three requests in one write queue up together; with one job,
    the big one, sent last, is answered first, then the small ones in the order they came."""
    small = str(checkpoints.state_dict_file(tmp_path, "small.pt"))
    big = str(checkpoints.big_legacy_file(tmp_path, 1))  # 1 MiB against the tiny model's KiB
    with _raw_server(tmp_path / "home", jobs=1) as server:
        assert server.proc.stdin is not None
        server.proc.stdin.write("".join(json.dumps({"id": i, "path": p, "timeout": 30}) + "\n"
                                        for i, p in ((1, small), (2, small), (3, big))).encode())
        server.proc.stdin.flush()
        replies = [server.read(30) for _ in range(3)]
    assert [(r["id"], r["ok"]) for r in replies] == [(3, True), (1, True), (2, True)]


def test_a_bad_request_line_gets_an_answer(tmp_path: Path) -> None:
    with _raw_server(tmp_path / "home", jobs=1) as server:
        assert server.proc.stdin is not None
        server.proc.stdin.write(b"{not json\n[1, 2]\n")
        server.proc.stdin.flush()
        replies = [server.read(30), server.read(30)]
    assert [(r["id"], r["ok"]) for r in replies] == [(None, False), (None, False)]
    assert all(r["reason"].startswith("reload server error: ") for r in replies)


def test_a_server_with_old_torch_loads_nothing_even_when_asked_before_its_hello(
    tmp_path: Path,
) -> None:
    """prefetch() does not wait for the hello: the server itself refuses to load with a torch
    whose weights_only can be bypassed, and says why for each request."""
    python = _wrapper(tmp_path, 'import torch; torch.__version__ = "2.9.1"')
    marker = tmp_path / "pwned"
    evil = checkpoints.hostile_checkpoint(tmp_path, marker)
    with Reloader(python, jobs=2) as r:
        r.prefetch([evil])
        server = r._holder[0]
        reply = server.wait(1, 60)  # the raw reply to the request prefetch() sent
    assert reply["ok"] is False
    assert reply["reason"].startswith("torch 2.9.1 is older than 2.10")
    assert not marker.exists()


# ------------------------------------------------------------------- the quick probe


def _fake_torch(folder: Path, version: str, marker: Path) -> Path:
    """A torch package whose import would leave a marker: the probe must never import it."""
    package = folder / "torch"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    (package / "version.py").write_text(f"__version__ = {version!r}\n")
    return folder


@pytest.mark.parametrize(("version", "expected"), [
    ("2.9.1", "torch 2.9.1 is older than 2.10: weights_only=True can be bypassed there*"),
    ("2.10.0+cu128", None),
    ("nightly", "cannot parse the torch version 'nightly'"),
])
def test_quick_check_reads_the_version_without_importing_torch(
    tmp_path: Path, version: str, expected: str | None,
) -> None:
    marker = tmp_path / "imported"
    fake = _fake_torch(tmp_path / "site", version, marker)
    script = tmp_path / "python"
    script.write_text(f"#!/bin/sh\nshift 3\nexec {sys.executable} -I -B -u -c 'import sys, runpy; "
                      f"sys.path.insert(0, \"{fake}\"); sys.argv = sys.argv[1:]; "
                      f"runpy.run_path(sys.argv[0], run_name=\"__main__\")' \"$@\"\n")
    script.chmod(0o755)
    with Reloader(str(script)) as r:
        reason = r.quick_check()
    if expected is None:
        assert reason is None
    else:
        assert reason is not None
        assert fnmatch.fnmatch(reason, f"--itera-python {script}: {expected}")
    assert not marker.exists()


def test_quick_check_agrees_with_the_server(tmp_path: Path) -> None:
    with Reloader() as r:
        assert r.quick_check() is None
        assert r.check_interpreter() is None
    body = "import sys; sys.modules[\"torch\"] = None; sys.argv = sys.argv[1:]; " \
           "import runpy; runpy.run_path(sys.argv[0], run_name=\"__main__\")"
    script = tmp_path / "python"
    script.write_text(f"#!/bin/sh\nshift 3\nexec {sys.executable} -I -B -u -c '{body}' \"$@\"\n")
    script.chmod(0o755)
    with Reloader(str(script)) as r:
        quick = r.quick_check()
    assert quick == f"--itera-python {script}: not a Python interpreter with torch"
    for python in ("/bin/true", str(tmp_path / "missing")):
        with Reloader(python) as r:
            quick, full = r.quick_check(), r.check_interpreter()
        assert quick is not None
        assert full is not None
        assert quick.split(" (")[0] == full.split(" (")[0]


def _children(pid: int) -> set[int]:
    out = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.add(int(entry))
    return out


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for a reaper that is not ours counts as dead)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_ending_the_server_kills_what_is_still_loading(tmp_path: Path) -> None:
    """When the client closes (end of session, -x, Ctrl-C), queued requests are dropped and a
    hung loader is killed: no process outlives the session."""
    path = str(checkpoints.state_dict_file(tmp_path))
    with _raw_server(tmp_path / "home", jobs=1) as server:
        for n in (1, 2, 3):
            server.send({"id": n, "path": path, "timeout": 3600, "debug": "hang"})
        pid = server.proc.pid
        deadline = time.monotonic() + 30
        while not _children(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        loaders = _children(pid)
        assert loaders
        assert server.proc.stdin is not None
        server.proc.stdin.close()
        assert server.proc.wait(timeout=10) == 0  # it ended by itself, not killed
    assert not [child for child in loaders if _alive(child)]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG, /proc")
def test_a_killed_server_takes_its_loaders_with_it(tmp_path: Path) -> None:
    path = str(checkpoints.state_dict_file(tmp_path))
    with _raw_server(tmp_path / "home", jobs=1) as server:
        server.send({"id": 1, "path": path, "timeout": 3600, "debug": "hang"})
        deadline = time.monotonic() + 30
        while not _children(server.proc.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        loaders = _children(server.proc.pid)
        assert loaders
        server.proc.kill()
        server.proc.wait()
        deadline = time.monotonic() + 10
        while any(map(_alive, loaders)) and time.monotonic() < deadline:
            time.sleep(0.05)
    assert not [child for child in loaders if _alive(child)]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_server_whose_client_is_killed_stops_while_importing_torch(tmp_path: Path) -> None:
    """SIGTERM or SIGKILL of pytest closes no pipe politely: the server, still importing
    torch, sees its parent gone and quits; it never gets to write its warm-up checkpoint."""
    client = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom pytest_itera.reload import Reloader\n"
         "r = Reloader()\nr.start()\nprint(r._holder[0].proc.pid, r._home, flush=True)\n"
         "time.sleep(600)\n"],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert client.stdout is not None
    pid, home = client.stdout.readline().split()
    client.kill()
    client.wait()
    client.stdout.close()
    deadline = time.monotonic() + 60
    while _alive(int(pid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        assert not _alive(int(pid))
        assert not (Path(home) / "warm.pt").exists()
    finally:
        shutil.rmtree(home, ignore_errors=True)
