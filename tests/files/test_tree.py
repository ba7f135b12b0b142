"""walk() and resolve_inside() on real trees in tmp_path."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from pytest_itera.files.tree import Entry, entry_at, resolve_inside, walk


def _write(path: Path, data: bytes = b"x") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def _by_path(entries: tuple[Entry, ...]) -> dict[str, Entry]:
    return {e.path: e for e in entries}


def _access_is_denied(path: Path) -> bool:
    """chmod 000 denies nothing to root or with CAP_DAC_OVERRIDE: check, don't guess."""
    try:
        os.listdir(path)
    except PermissionError:
        return True
    return False


@pytest.fixture
def campaign(tmp_path: Path) -> Path:
    root = tmp_path / "out"
    _write(root / "runs" / "control" / "last.pt", b"12345")
    _write(root / "runs" / "b.json")
    _write(root / ".hidden")
    _write(root / "a.txt")
    (root / "empty").mkdir()
    return root


def test_walk_is_sorted_with_dirs_and_dotfiles(campaign: Path) -> None:
    entries = walk(campaign)

    assert [(e.path, e.kind) for e in entries] == [
        (".hidden", "file"),
        ("a.txt", "file"),
        ("empty", "dir"),
        ("runs", "dir"),
        ("runs/b.json", "file"),
        ("runs/control", "dir"),
        ("runs/control/last.pt", "file"),
    ]
    last = _by_path(entries)["runs/control/last.pt"]
    assert last.size == 5
    assert last.mtime_ns == os.lstat(campaign / "runs/control/last.pt").st_mtime_ns
    assert _by_path(entries)["runs"].size == 0
    assert all(e.error is None and e.target is None and not e.escapes for e in entries)


def test_walk_is_deterministic(campaign: Path) -> None:
    assert walk(campaign) == walk(campaign)


def test_walk_symlinks_are_described_not_followed(tmp_path: Path, campaign: Path) -> None:
    outside = _write(tmp_path / "secret" / "passwd")
    os.symlink("control/last.pt", campaign / "runs" / "latest.pt")
    os.symlink("control", campaign / "runs" / "ctl")
    os.symlink(str(outside.parent), campaign / "leak")
    os.symlink("nowhere", campaign / "dangling")
    os.symlink("loop_b", campaign / "loop_a")
    os.symlink("loop_a", campaign / "loop_b")

    found = _by_path(walk(campaign))

    assert found["runs/latest.pt"] == Entry(
        "runs/latest.pt", "symlink", 0, found["runs/latest.pt"].mtime_ns, "control/last.pt"
    )
    assert found["runs/ctl"].kind == "symlink"
    assert not found["runs/ctl"].escapes
    assert "runs/ctl/last.pt" not in found  # a symlink to a dir is never descended
    assert "leak/passwd" not in found
    assert (found["leak"].target, found["leak"].escapes) == (str(outside.parent), True)
    assert (found["dangling"].target, found["dangling"].escapes) == ("nowhere", True)
    assert found["loop_a"].escapes
    assert found["loop_b"].escapes


def test_walk_lists_a_fifo_without_opening_it(campaign: Path) -> None:
    os.mkfifo(campaign / "pipe")  # opening it for reading would block: the walk must not

    pipe = _by_path(walk(campaign))["pipe"]

    assert (pipe.kind, pipe.size, pipe.error) == ("fifo", 0, None)


def test_walk_lists_a_socket(tmp_path: Path) -> None:
    root = tmp_path / "s"
    root.mkdir()
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(root / "sock"))
        assert _by_path(walk(root))["sock"].kind == "socket"
    finally:
        sock.close()


def test_walk_reports_unreadable_dir_and_continues(campaign: Path) -> None:
    locked = campaign / "locked"
    _write(locked / "inner.txt")
    locked.chmod(0)
    try:
        if not _access_is_denied(locked):
            pytest.skip("chmod 000 does not deny access here (root or CAP_DAC_OVERRIDE)")
        found = _by_path(walk(campaign))
    finally:
        locked.chmod(0o755)

    assert found["locked"].kind == "dir"
    assert found["locked"].error == "permission denied"
    assert "locked/inner.txt" not in found
    assert found["runs/control/last.pt"].error is None  # the walk went on


def test_walk_reports_a_listing_error_as_the_os_says_it(
    campaign: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Runs even as root (where chmod 000 denies nothing): the OS refusal is injected.
    real_scandir = os.scandir
    refused = str(campaign / "runs")

    def scandir(path: str) -> object:
        if str(path) == refused:
            raise PermissionError(13, "Permission denied", path)
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)

    found = _by_path(walk(campaign))

    assert found["runs"].error == "permission denied"
    assert "runs/b.json" not in found
    assert found["a.txt"].error is None


def test_walk_keeps_odd_names(tmp_path: Path) -> None:
    root = tmp_path / "odd"
    names = ["with space.txt", "new\nline.txt", "ünïcødé-日本.json", "tab\there"]
    for name in names:
        _write(root / "d" / name)
    undecodable = os.fsencode(root / "d") + b"/bad-\xff.bin"
    with open(undecodable, "wb") as f:
        f.write(b"x")

    paths = [e.path for e in walk(root)]

    assert paths == sorted(["d", *(f"d/{n}" for n in names), "d/" + os.fsdecode(b"bad-\xff.bin")])


def test_walk_deep_tree_is_iterative(tmp_path: Path) -> None:
    root = tmp_path / "deep"
    deep = root.joinpath(*["d"] * 300)  # deeper than any sane recursion budget per frame
    _write(deep / "leaf.txt")

    entries = walk(root)

    assert len(entries) == 301
    assert entries[-1].path == "/".join(["d"] * 300) + "/leaf.txt"


def test_walk_truncates_past_the_limit(tmp_path: Path) -> None:
    root = tmp_path / "many"
    for i in range(10):
        _write(root / f"f{i}")

    entries = walk(root, limit=4)

    assert [e.path for e in entries[:4]] == ["f0", "f1", "f2", "f3"]
    assert len(entries) == 5
    assert entries[4].path == "."
    assert entries[4].error == "walk truncated: more than 4 entries, the rest were not listed"
    assert len(walk(root, limit=10)) == 10  # exactly at the limit: no marker


def test_walk_refuses_a_root_that_is_not_a_directory(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        walk(tmp_path / "missing")
    with pytest.raises(NotADirectoryError):
        walk(_write(tmp_path / "file"))


# resolve_inside ------------------------------------------------------------------------


def test_entry_at_is_the_walks_entry_for_one_path(tmp_path: Path, campaign: Path) -> None:
    (campaign / "link").symlink_to("runs")
    (campaign / "out-link").symlink_to(tmp_path)
    walked = _by_path(walk(campaign))
    for relpath, entry in walked.items():
        assert entry_at(campaign, relpath) == entry
    # What the walk does not list: missing, through a link, unnormalised, another case.
    for relpath in ("nope", "runs/nope", "link/b.json", "out-link/out/a.txt", "runs//b.json",
                    "./a.txt", "runs/control/..", "A.txt", "a.txt/x", "", "."):
        assert relpath not in walked
        assert entry_at(campaign, relpath) is None


def test_resolve_inside_accepts_plain_relative_paths(campaign: Path) -> None:
    assert (
        resolve_inside(campaign, "runs/control/last.pt")
        == (campaign / "runs/control/last.pt").resolve()
    )
    missing = resolve_inside(campaign, "runs/not-yet.json")  # absence is the caller's finding
    assert missing == Path(os.path.realpath(campaign / "runs/not-yet.json"))


def test_resolve_inside_resolves_symlinks_that_stay_inside(campaign: Path) -> None:
    os.symlink("control/last.pt", campaign / "runs" / "latest.pt")
    os.symlink("runs/control", campaign / "ctl")

    assert resolve_inside(campaign, "runs/latest.pt") == campaign / "runs/control/last.pt"
    assert resolve_inside(campaign, "ctl/last.pt") == campaign / "runs/control/last.pt"


@pytest.mark.parametrize(
    ("relpath", "reason"),
    [
        ("", "is empty"),
        ("runs/a\0b", "contains a NUL byte"),
        ("/etc/passwd", "is absolute"),
        ("C:\\Users\\x\\out.json", "is absolute"),
        ("c:/data/out.json", "is absolute"),
        ("\\\\server\\share\\x", "is absolute"),
        ("../outside.json", "'..' leaves the campaign folder"),
        ("runs/../../outside.json", "'..' leaves the campaign folder"),
        ("runs/../a.txt", "contains '..' (write the normalized path)"),
        ("./a.txt", "is not normalized (no '.', empty or trailing components: write 'a/b')"),
        ("runs//b.json", "is not normalized (no '.', empty or trailing components: write 'a/b')"),
        ("runs/", "is not normalized (no '.', empty or trailing components: write 'a/b')"),
    ],
)
def test_resolve_inside_refuses_with_a_reason(campaign: Path, relpath: str, reason: str) -> None:
    assert resolve_inside(campaign, relpath) == reason


def test_resolve_inside_refuses_symlinks_that_leave(tmp_path: Path, campaign: Path) -> None:
    _write(tmp_path / "elsewhere" / "x")
    os.symlink("/etc/passwd", campaign / "runs" / "x")
    os.symlink(str(tmp_path / "elsewhere"), campaign / "ext")
    os.symlink("../../gone", campaign / "runs" / "dangling_out")
    os.symlink("lb", campaign / "la")
    os.symlink("la", campaign / "lb")

    assert resolve_inside(campaign, "runs/x") == (
        "symlink runs/x -> /etc/passwd leaves the campaign folder"
    )
    assert resolve_inside(campaign, "ext/x") == (
        f"symlink ext -> {tmp_path / 'elsewhere'} leaves the campaign folder"
    )
    assert resolve_inside(campaign, "runs/dangling_out") == (
        "symlink runs/dangling_out -> ../../gone leaves the campaign folder"
    )
    assert resolve_inside(campaign, "la/file") == "symlink la -> lb loops"


def test_resolve_inside_accepts_a_root_behind_a_symlink(tmp_path: Path, campaign: Path) -> None:
    alias = tmp_path / "alias"
    os.symlink(campaign, alias)

    assert resolve_inside(alias, "runs/b.json") == (campaign / "runs/b.json").resolve()
