"""A hostile or broken file system gets clear failing items: no crash, no hang, folder untouched."""

from __future__ import annotations

import importlib
import json
import os
import socket
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.factory import CampaignBuilder, expect, expect_each, sha256
from tests.runner import Itera, only_xdist


def run_clean(itera: Itera, *args: str) -> pytest.RunResult:
    """A run on a hostile folder: failing items, never a crash of pytest or of the plugin."""
    result = itera(*args)
    result.stdout.no_fnmatch_line("*INTERNALERROR*")
    result.stdout.no_fnmatch_line("*Traceback*")
    return result


def add_listed(root: Path, relpath: str, size: int = 1, digest: str = "0" * 64) -> None:
    manifest = json.loads((root / "manifest.json").read_text())
    manifest["files"].append({"path": relpath, "bytes": size, "sha256": digest})
    (root / "manifest.json").write_text(json.dumps(manifest, indent=2))


def _loop(root: Path) -> None:
    os.symlink("b", root / "a")
    os.symlink("a", root / "b")


def _pipes(root: Path) -> None:
    os.mkfifo(root / "runs/control/pipe")
    os.mkfifo(root / "stray-pipe")


# (what the folder gets, the paths listed in the manifest, the run's arguments, the lines
# said: each its own item, in either order under xdist, the failed items).
SPECIAL = [
    pytest.param(_loop, ("a",), ("-k", "files-intact and (a or b) and not analysis"), (
        "manifest.json $.files[*]: listed file 'a': symlink a -> b loops",
        "b: b (a symbolic link) is in the campaign folder but not listed in the manifest"),
        2, id="symlink-loop"),
    pytest.param(lambda root: os.symlink("/dev/zero", root / "runs/control/weights.bin"),
                 ("runs/control/weights.bin",), ("--itera-timeout", "5"), (
        "manifest.json $.files[*]: listed file 'runs/control/weights.bin': symlink "
        "runs/control/weights.bin -> /dev/zero leaves the campaign folder",),
        1, id="link-to-dev-zero"),
    pytest.param(_pipes, ("runs/control/pipe",), ("-k", "pipe"), (
        "manifest.json $.files[*]: runs/control/pipe is a FIFO (named pipe)",
        "stray-pipe: stray-pipe (a FIFO (named pipe)) is in the campaign folder but not listed*"),
        2, id="fifo"),
]


@pytest.mark.parametrize(("make", "listed", "args", "lines", "failed"), SPECIAL)
def test_a_special_file_is_reported_never_followed_or_opened(
    itera: Itera, campaign: CampaignBuilder, make: Callable[[Path], None],
    listed: tuple[str, ...], args: tuple[str, ...], lines: tuple[str, ...], failed: int,
) -> None:
    """A symlink loop, a link to /dev/zero (never followed: it would never end), a FIFO
    (never opened: it would block), listed or stray: each a failing item saying what it is."""
    campaign.write()
    make(campaign.root)
    for relpath in listed:
        add_listed(campaign.root, relpath)
    campaign.seal()
    result = run_clean(itera, *args)
    expect_each(result, *lines)
    assert result.parseoutcomes()["failed"] == failed, result.stdout.str()


def test_socket_is_reported(itera: Itera, campaign: CampaignBuilder) -> None:
    campaign.write()
    path = campaign.root / "s.sock"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))
        campaign.seal()
        result = run_clean(itera, "-k", "sock")
    expect(result, "s.sock: s.sock (a socket) is in the campaign folder but not listed*")


def test_device_file_is_reported(itera: Itera, campaign: CampaignBuilder) -> None:
    campaign.write()
    try:
        os.mknod(campaign.root / "null-dev", 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("creating a device file needs CAP_MKNOD")
    campaign.seal()
    result = run_clean(itera, "-k", "null-dev")
    expect(result, "null-dev: null-dev (a device file) is in the campaign folder but not listed*")


def test_file_that_vanishes_during_the_run(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    campaign.write()
    target = "runs/control/measurements.jsonl"
    pytester.makeconftest(
        f"""
        import os
        def pytest_runtest_setup(item):
            if item.name == "files-intact[{target}]":
                os.unlink(os.path.join("out", "{target}"))
        """
    )
    result = run_clean(itera, "-k", "files-intact and control/measurements")
    result.assert_outcomes(failed=1)
    expect(result, f"manifest.json $.files[*]: {target} cannot be read: *")
    campaign.written_digest = None  # the test itself removed a file


@only_xdist("absent")  # the swap is patched into this process: workers would not see it
def test_checkpoint_saved_over_while_it_is_hashed(
    itera: Itera, campaign: CampaignBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Training still running: an atomic save renames a new file over the one being hashed.
    The old bytes match the manifest, but the path now holds other bytes: not intact."""
    # The module the inner session will use: pytester drops modules first imported in a
    # test, so `from pytest_itera import scan` may give a stale one.
    scan = importlib.import_module("pytest_itera.files.scan")
    target = "runs/control/last.pt"
    campaign.files[target] = b"A" * 300_000
    campaign.write()
    path = campaign.root / target
    real_read: Callable[[int, int], bytes] = scan._read
    state = {"swapped": False}

    def read(fd: int, size: int) -> bytes:
        if not state["swapped"] and os.fstat(fd).st_ino == path.stat().st_ino:
            state["swapped"] = True
            newer = path.with_name("last.pt.partial")
            newer.write_bytes(b"B" * 300_000)
            os.replace(newer, path)
        return real_read(fd, size)

    monkeypatch.setattr(scan, "_read", read)
    result = run_clean(itera, "-k", "files-intact and control/last")
    result.assert_outcomes(failed=1)
    expect(result,
           f"manifest.json $.files[*]: {target} cannot be read: was replaced during the scan "
           "(another file now has its name)",
           "    fix:      something is still writing into the campaign folder: let it finish, "
           "then run again")
    campaign.written_digest = None  # the test itself replaced a file


def test_odd_names_are_checked_and_shown_readably(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    campaign.files["notes/with space é.txt"] = b"ok\n"
    campaign.files["notes/line\nbreak.txt"] = b"ok\n"
    campaign.write()
    result = run_clean(itera, "-k", "files-intact and notes/", "-rA")
    result.assert_outcomes(passed=2)
    expect_each(  # two items: under xdist they finish in either order
        result,
        "PASSED *files-intact[notes/line\\nbreak.txt]",
        "PASSED *files-intact[notes/with space é.txt]",
    )


def test_non_utf8_and_binary_files_among_text(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    campaign.files["logs/latin1.log"] = b"\xe9t\xe9 \xff\nsaved to /tmp/run7/out\n"
    campaign.files["logs/blob.bin"] = bytes(range(256)) * 64
    campaign.write()
    result = run_clean(itera, "-k", "no-temp-paths and logs/")
    result.assert_outcomes(passed=1, failed=1)
    expect(result, "logs/latin1.log:2:10: path into a temporary folder: /tmp/run7/out")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\xff\xfe{}", "manifest.json $: is not UTF-8 (byte 0: b'\\xff')"),
        (
            b"[" * 100_000 + b"]" * 100_000,
            "manifest.json $: not acceptable JSON: nested too deeply",
        ),
        (b'{"format": NaN}', "manifest.json $: not acceptable JSON: NaN is not JSON*"),
        (b'{"n": 1' + b"0" * 5000 + b"}", "manifest.json $: not acceptable JSON: *"),
        (b"", "manifest.json:1:1 $: not JSON: Expecting value"),
    ],
)
def test_hostile_manifest_documents(
    itera: Itera, campaign: CampaignBuilder, content: bytes, message: str
) -> None:
    campaign.write()
    (campaign.root / "manifest.json").write_bytes(content)
    campaign.seal()
    result = run_clean(itera, "-k", "manifest and not files and not temp")
    result.assert_outcomes(failed=1)
    expect(result, message)


def test_manifest_symlink_out_of_the_folder(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    campaign.write()
    real = pytester.path / "elsewhere.json"
    (campaign.root / "manifest.json").rename(real)
    os.symlink(real, campaign.root / "manifest.json")
    campaign.seal()
    result = run_clean(itera, "-k", "manifest and not files and not temp")
    expect(
        result, "manifest.json $: is a symbolic link: the contract documents must be regular files"
    )


def test_unreadable_file(itera: Itera, campaign: CampaignBuilder) -> None:
    campaign.write()
    path = campaign.root / "RELOAD.md"
    path.chmod(0)
    try:
        if os.access(path, os.R_OK):
            pytest.skip("running as root: chmod 000 does not deny reading")
        campaign.seal()
        result = run_clean(itera, "-k", "RELOAD")
        expect(result, "*RELOAD.md cannot be read: permission denied*")
    finally:
        path.chmod(0o644)


def test_listed_directory_instead_of_file(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    campaign.write()
    add_listed(campaign.root, "runs", 0, sha256(b""))
    campaign.seal()
    result = run_clean(itera, "-k", "files-intact and runs and not runs/")
    expect(result, "manifest.json $.files[*]: runs is a directory")
