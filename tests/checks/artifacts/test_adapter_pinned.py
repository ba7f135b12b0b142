"""The rules of ``adapter-pinned`` (pytest_itera/checks/artifacts/adapter_pinned.py): each break
refused, with its honest twin.

Where the cases come from (the files they were first written in):

Issue 24, point 12: a shipped base proves its revision or says it cannot (adapter-pinned).

On the example campaign (its control ships runs/control/adapter beside runs/control/base,
which holds itera-base.json), changed in one way with every hash and digest kept
consistent, judged in-process (tests/checks/judging.py's ``judge``):

- the manifest drops base_path/base_digest while the base still ships beside the adapter:
  the base is hashed and compared all the same, so a made-up 40-hex revision is refused;
- a shipped base with no itera-base.json, no snapshots/<commit> path and no hub refs/
  cannot prove a 40-hex revision ("not proven by the shipped base"), declared or not;
- the example as built, and a base whose hub refs/ record the revision, pass.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_itera.checks.artifacts.adapter_config import ADAPTER_CONFIG_CAP
from pytest_itera.files.tree import tree_digest
from pytest_itera.report.verify import check_campaign
from tests.checks.judging import expect_finding, expect_no_finding, judge

CHECK = "adapter-pinned"
ADAPTER = "runs/control/adapter"
BASE = "runs/control/base"
CONFIG = f"{ADAPTER}/adapter_config.json"
BASE_RECORD = f"{BASE}/itera-base.json"
MADE_UP = "c0ffee" + "0" * 34
WHERE = "manifest.json $.adapters[0]"


@pytest.fixture(scope="module")
def example(example_campaign: Path) -> Path:
    return example_campaign  # tests/conftest.py: built once per session, read here


@pytest.fixture
def campaign(example: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(example, tmp_path / "campaign"))


def _json(path: Path) -> dict[str, object]:
    data = json.loads(path.read_text())
    assert isinstance(data, dict)
    return data


def change(root: Path, *, drop: tuple[str, ...] = (), revision: str | None = None,
           remove: tuple[str, ...] = (), add: dict[str, bytes] | None = None,
           fields: dict[str, object] | None = None) -> None:
    """Change the control's adapter record and files, keeping every hash consistent: the
    manifest's file list, the base's tree digest and adapter_config.json's revision."""
    for rel in remove:
        (root / rel).unlink()
    for rel, data in (add or {}).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    manifest = _json(root / "manifest.json")
    adapters = manifest["adapters"]
    assert isinstance(adapters, list)
    record = adapters[0]
    if revision is not None:
        record["base_revision"] = revision
        config = _json(root / ADAPTER / "adapter_config.json")
        config["revision"] = revision
        (root / ADAPTER / "adapter_config.json").write_text(json.dumps(config, indent=2))
    for key in drop:
        del record[key]
    record.update(fields or {})
    if "base_path" in record:
        record["base_digest"] = tree_digest(root / record["base_path"])
    listed = manifest["files"]
    assert isinstance(listed, list)
    paths = [e["path"] for e in listed if (root / e["path"]).exists()] + list(add or {})
    manifest["files"] = [{"path": p, "bytes": (root / p).stat().st_size,
                          "sha256": hashlib.sha256((root / p).read_bytes()).hexdigest()}
                         for p in sorted(set(paths))]
    (root / "manifest.json").write_text(json.dumps(manifest, indent=1))


def test_the_example_s_shipped_base_proves_its_revision(example: Path) -> None:
    verdict = check_campaign(example)
    # every check passes; the example is recorded on a played clock (example_campaign/)
    assert (verdict.verdict, verdict.findings) == ("played clock", ())


def test_a_base_shipped_beside_the_adapter_is_compared_without_base_path(
    campaign: Path,
) -> None:
    change(campaign, drop=("base_path", "base_digest"), revision=MADE_UP)
    judged = judge(campaign, CHECK)
    expect_finding(judged, "adapter-pinned.base-revision-differs", where=f"{WHERE}.base_revision",
                   says="it ships beside the adapter")
    found = [f.render() for f in judged]
    recorded = _json(campaign / BASE / "itera-base.json")["revision"]
    assert found[0].splitlines() == [
        f"{WHERE}.base_revision: shipped base {BASE} records revision '{recorded}' "
        f"({BASE}/itera-base.json), the manifest records base_revision '{MADE_UP}' (it ships "
        "beside the adapter: the manifest names no base_path, but a base shipped next to an "
        "adapter is its base)",
        f"    expected: '{recorded}'",
        f"    found:    '{MADE_UP}'",
        "    fix:      the adapter must name the base it was trained on: its commit is the one "
        "the shipped base was fetched at (or null for a base that is on no hub)",
    ]


def test_a_base_beside_the_adapter_without_a_revision_record_proves_nothing(
    campaign: Path,
) -> None:
    change(campaign, drop=("base_path", "base_digest"), revision=MADE_UP,
           remove=(f"{BASE}/itera-base.json",))
    judged = judge(campaign, CHECK)
    expect_finding(judged, "adapter-pinned.revision-not-proven", where=f"{WHERE}.base_revision",
                   says="the base carries no revision record")
    found = [f.render() for f in judged]
    assert found[0].splitlines() == [
        f"{WHERE}.base_revision: the base revision '{MADE_UP}' of adapter {ADAPTER} is not "
        f"proven by the shipped base {BASE} (it ships beside the adapter: the manifest names "
        "no base_path, but a base shipped next to an adapter is its base): the base carries "
        "no revision record",
        f"    expected: {BASE}/itera-base.json (or a hub cache snapshots/<commit> folder, or its "
        f"refs/) recording '{MADE_UP}'",
        "    found:    no itera-base.json, no snapshots/<commit> in its path, no refs/",
        "    fix:      write itera-base.json with CampaignRecorder.record_base(<base folder>, "
        "model=..., revision=...) when the base is fetched (or ship the hub cache's "
        "snapshots/<commit> folder); a base trained in the campaign records revision null",
    ]


def test_a_declared_base_without_a_revision_record_proves_nothing(campaign: Path) -> None:
    change(campaign, remove=(f"{BASE}/itera-base.json",))
    found = [f.render() for f in judge(campaign, CHECK)]
    assert len(found) == 1
    assert found[0].startswith(
        f"{WHERE}.base_revision: the base revision '{_revision(campaign)}' of adapter "
        f"{ADAPTER} is not proven by the shipped base {BASE}: the base carries no revision "
        "record\n")


def test_a_hub_cache_s_refs_prove_the_revision(campaign: Path) -> None:
    revision = _revision(campaign)
    change(campaign, remove=(f"{BASE}/itera-base.json",),
           add={f"{BASE}/refs/main": revision.encode()})
    expect_no_finding(judge(campaign, CHECK))


def test_refs_naming_another_commit_are_refused(campaign: Path) -> None:
    change(campaign, remove=(f"{BASE}/itera-base.json",),
           add={f"{BASE}/refs/main": b"b" * 40})
    found = [f.render() for f in judge(campaign, CHECK)]
    assert found[0].startswith(
        f"{WHERE}.base_revision: shipped base {BASE} records revision '{'b' * 40}' (its hub "
        f"cache ref {BASE}/refs/main), the manifest records base_revision '{_revision(campaign)}'")


def _revision(root: Path) -> str:
    adapters = _json(root / "manifest.json")["adapters"]
    assert isinstance(adapters, list)
    revision = adapters[0]["base_revision"]
    assert isinstance(revision, str)
    return revision



def _config(root: Path, **fields: object) -> bytes:
    """The adapter's adapter_config.json with ``fields`` set (None: removed)."""
    config = _json(root / ADAPTER / "adapter_config.json")
    config.update(fields)
    return json.dumps({k: v for k, v in config.items() if v is not None}).encode()


def _base_record(root: Path, **fields: object) -> bytes:
    """The shipped base's itera-base.json with ``fields`` set (None: removed)."""
    record = _json(root / BASE / "itera-base.json")
    record.update(fields)
    return json.dumps({k: v for k, v in record.items() if v is not None}).encode()


def _fifo(root: Path, rel: str) -> dict[str, object]:
    os.mkfifo(root / rel)
    return {"path": rel}


@pytest.mark.parametrize(("break_", "code", "where", "says"), [
    # A document proves nothing: the files a break writes.
    pytest.param(lambda root: {f"{ADAPTER}/adapter_config.json": b"{not json"},
                 "adapter-pinned.config-json", f"{ADAPTER}/adapter_config.json",
                 "adapter_config.json", id="config-not-json"),
    pytest.param(lambda root: {f"{ADAPTER}/adapter_config.json": b"\xff\xfe{}"},
                 "adapter-pinned.document-not-utf8", f"{ADAPTER}/adapter_config.json",
                 "adapter_config.json", id="config-not-utf8"),
    pytest.param(lambda root: {f"{ADAPTER}/adapter_config.json": _config(
                     root, base_model_name_or_path=None)},
                 "adapter-pinned.config-no-base", f"{ADAPTER}/adapter_config.json",
                 "base_model_name_or_path", id="config-without-base"),
    # Valid JSON all the same: the whitespace PEFT would parse takes it over the cap.
    pytest.param(lambda root: {CONFIG: _config(root) + b" " * ADAPTER_CONFIG_CAP},
                 "adapter-pinned.document-too-large", CONFIG,
                 f"is over {ADAPTER_CONFIG_CAP} bytes", id="config-over-the-cap"),
    pytest.param(lambda root: {f"{BASE}/itera-base.json": b"{"},
                 "adapter-pinned.base-record-json", f"{BASE}/itera-base.json",
                 "itera-base.json", id="base-record-not-json"),
    pytest.param(lambda root: {f"{BASE}/itera-base.json": _base_record(root, revision=None)},
                 "adapter-pinned.base-record-revision", f"{BASE}/itera-base.json",
                 "revision", id="base-record-without-revision"),
    pytest.param(lambda root: {f"{BASE}/itera-base.json": _base_record(root, model="org/other")},
                 "adapter-pinned.base-record-model", f"{BASE}/itera-base.json",
                 "org/other", id="base-record-of-another-model"),
    # The record names no adapter: the fields a break sets.
    pytest.param(lambda root: {"path": "runs/control/gone"}, "adapter-pinned.missing", WHERE,
                 "runs/control/gone", id="missing"),
    pytest.param(lambda root: {"path": "../adapter"}, "adapter-pinned.outside", WHERE,
                 "../adapter", id="outside"),
    pytest.param(lambda root: {"path": CONFIG}, "adapter-pinned.not-a-folder",
                 WHERE, "adapter_config.json", id="a-file"),
    # A FIFO is never opened: it would block the loader.
    pytest.param(lambda root: _fifo(root, "runs/control/adapter.fifo"),
                 "adapter-pinned.not-a-file", f"{WHERE}.path",
                 "is neither a regular file nor a folder", id="a-fifo"),
    # Through a regular file: its lstat fails with ENOTDIR, not FileNotFoundError.
    pytest.param(lambda root: {"path": f"{CONFIG}/adapter"}, "adapter-pinned.unreadable",
                 f"{WHERE}.path", "cannot be read: not a directory", id="through-a-file"),
    # The shipped base is a saved model: it reloads, as safetensors, not as an adapter.
    pytest.param(lambda root: {"path": BASE}, "adapter-pinned.not-an-adapter",
                 f"{WHERE}.path", "holds 'safetensors' content, not a PEFT adapter",
                 id="a-saved-model"),
])
def test_an_adapter_that_proves_nothing_is_refused(
    campaign: Path, break_: Callable[[Path], dict[str, Any]], code: str, where: str, says: str,
) -> None:
    """A document of the adapter that proves nothing (a break gives the files it writes, as
    bytes), or a record that names no adapter (it gives the record's fields): each refused,
    every hash kept consistent."""
    given = break_(campaign)
    if all(isinstance(value, bytes) for value in given.values()):
        change(campaign, add=given)
    else:
        change(campaign, fields=given)
    expect_finding(judge(campaign, CHECK), code, where=where, says=says)


def test_a_base_digest_of_a_base_that_no_longer_ships_is_refused(campaign: Path) -> None:
    """The base's files and base_path gone, its base_digest kept: it verifies nothing."""
    change(campaign, drop=("base_path",),
           remove=(f"{BASE}/config.json", f"{BASE}/model.safetensors", BASE_RECORD))
    expect_finding(judge(campaign, CHECK), "adapter-pinned.digest-without-base",
                   where=f"{WHERE}.base_digest", says="records a base_digest but no base_path")


def _socket(path: Path) -> None:
    """A Unix socket at ``path`` (bound from its folder: a socket's path is short)."""
    with contextlib.chdir(path.parent), socket.socket(socket.AF_UNIX) as sock:
        sock.bind(path.name)


def _link_out(root: Path, rel: str) -> None:
    """``rel`` a symlink to its copy just outside the campaign folder."""
    (root / rel).symlink_to(os.path.relpath(root.parent / Path(rel).name, (root / rel).parent))


@pytest.mark.parametrize(("rel", "plant", "code", "where", "says"), [
    pytest.param(CONFIG, lambda root: os.mkfifo(root / CONFIG),
                 "adapter-pinned.document-not-a-file", CONFIG, "is not a regular file",
                 id="config-a-fifo"),
    # A folder under the document's name: told, not a crash (fdopen refuses a folder).
    pytest.param(CONFIG, lambda root: (root / CONFIG).mkdir(),
                 "adapter-pinned.document-not-a-file", CONFIG, "is not a regular file",
                 id="config-a-folder"),
    # open(2) of a socket fails with ENXIO: present, and no file to read.
    pytest.param(CONFIG, lambda root: _socket(root / CONFIG),
                 "adapter-pinned.document-unreadable", CONFIG,
                 "cannot be read: no such device or address", id="config-a-socket"),
    pytest.param(CONFIG, lambda root: _link_out(root, CONFIG),
                 "adapter-pinned.document-outside", CONFIG, "leaves the campaign folder",
                 id="config-a-link-out"),
    # The adapter's weights a link to a file outside: never handed to the loader.
    pytest.param(f"{ADAPTER}/adapter_model.safetensors",
                 lambda root: _link_out(root, f"{ADAPTER}/adapter_model.safetensors"),
                 "adapter-pinned.outside", f"{WHERE}.path",
                 "holds a link that does not stay inside the campaign folder",
                 id="weights-a-link-out"),
    # The walk lists the link; what it names is not there.
    pytest.param(BASE_RECORD, lambda root: (root / BASE_RECORD).symlink_to("gone.json"),
                 "adapter-pinned.document-missing", BASE_RECORD, "itera-base.json is missing",
                 id="base-record-a-dangling-link"),
    # A hub cache's snapshot links its files to blobs/: the tree digest refuses links.
    pytest.param(f"{BASE}/weights.safetensors",
                 lambda root: (root / BASE / "weights.safetensors").symlink_to(
                     "model.safetensors"),
                 "adapter-pinned.base-no-digest", f"{WHERE}.base_path",
                 "weights.safetensors is a symbolic link", id="base-holds-a-link"),
])
def test_an_adapter_file_that_is_no_regular_file_is_refused(
    campaign: Path, rel: str, plant: Callable[[Path], None], code: str, where: str, says: str,
) -> None:
    """The file at ``rel``, if any, is copied just outside the campaign folder (where a link
    out points) and leaves the campaign and its manifest's file list (every hash kept
    consistent); then a FIFO, a socket or a link is planted in its place."""
    if (campaign / rel).is_file():
        shutil.copyfile(campaign / rel, campaign.parent / Path(rel).name)
        change(campaign, remove=(rel,))
    plant(campaign)
    expect_finding(judge(campaign, CHECK), code, where=where, says=says)


def test_adapter_weights_with_a_nan_are_refused(campaign: Path) -> None:
    from safetensors.torch import load_file, save

    weights = f"{ADAPTER}/adapter_model.safetensors"
    tensors = load_file(campaign / weights)
    name = sorted(tensors)[0]
    tensors[name].view(-1)[0] = float("nan")
    change(campaign, add={weights: save(tensors)})
    problem = expect_finding(judge(campaign, CHECK), "adapter-pinned.non-finite", where=WHERE,
                             says=f"{ADAPTER} holds non-finite model weights: 1 NaN value in "
                             "1 tensor")
    assert problem.found == name
