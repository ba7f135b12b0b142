"""Where an adapter's base ships, and what in it proves the base's revision (adapter-pinned).

A base folder shipped in the campaign *beside* an adapter (a folder next to the adapter's
folder) is that adapter's base unless the manifest says otherwise (it is another adapter,
or another adapter's ``base_path``): adapter-pinned hashes and compares it whether or not
the adapter's record declares ``base_path``, so that dropping ``base_path``/``base_digest``
from the manifest does not hide the base that ships.

A folder beside an adapter is a base when it says so: it holds ``itera-base.json`` (what
``CampaignRecorder.record_base`` writes when the base is fetched), it is a hub cache folder
(``models--org--name`` with ``snapshots/`` or ``refs/``, or a ``snapshots/<commit>``
folder), or it is named ``base…`` and holds a model (``config.json``). A folder holding
``adapter_config.json`` is an adapter, never a base.

What proves the revision of a shipped base: ``itera-base.json``, the ``snapshots/<commit>``
folder of a hub cache in its path, or the ``refs/`` of a hub cache folder (each ref file holds
the commit it points at). A shipped base with none of them cannot prove a 40-hex
``base_revision``: the revision is then only what the manifest says.

A shipped base is verified here: under itera-manifest/2 a folder whose files hash to
``base_digest`` (its tree digest, from the file hashes every check shares) and whose own
revision record agrees with ``base_revision``; under itera-manifest/1 one file pinned by its
sha256, verified and reported as what that cannot prove.
"""

from __future__ import annotations

import dataclasses
import posixpath
import re
from collections.abc import Iterator, Sequence

from pytest_itera.checks.artifacts.adapter_config import (
    agreeing_names,
    clip,
    key_where,
    read_small_json,
    shown,
)
from pytest_itera.checks.artifacts.reloading import locate_problem
from pytest_itera.checks.context import Context
from pytest_itera.checks.model import Kind
from pytest_itera.core.campaign import (
    BASE_RECORD,
    COMMIT_HEX,
    SHA256_HEX,
    AdapterRecord,
    parse_json,
)
from pytest_itera.core.findings import Finding
from pytest_itera.files.tree import DigestRefused, tree_digest_of

_HUB_REPO = re.compile(r"(?:^|/)models--[^/]+$")
_REF_CAP = 4096  # a ref file holds one commit id


def base_beside(ctx: Context, adapter: AdapterRecord,
                adapters: Sequence[AdapterRecord]) -> str | None:
    """The base folder shipped next to ``adapter``'s folder, or None (see the module)."""
    folder = adapter.path.rstrip("/")
    parent = posixpath.dirname(folder)
    claimed = {a.path.rstrip("/") for a in adapters}
    claimed |= {a.base_path.rstrip("/") for a in adapters if a.base_path is not None}
    prefix = f"{parent}/" if parent else ""
    for entry in ctx.entries():
        rest = entry.path[len(prefix):] if entry.path.startswith(prefix) else None
        if entry.kind != "dir" or not rest or "/" in rest or entry.path in claimed:
            continue
        if _is_base(ctx, entry.path, rest):
            return entry.path
    return None


def _is_base(ctx: Context, folder: str, name: str) -> bool:
    if ctx.entry(f"{folder}/adapter_config.json") is not None:
        return False
    if ctx.entry(f"{folder}/{BASE_RECORD}") is not None:
        return True
    if _HUB_REPO.search(folder) and any(ctx.entry(f"{folder}/{sub}") is not None
                                        for sub in ("snapshots", "refs")):
        return True
    return name.lower().startswith("base") and ctx.entry(f"{folder}/config.json") is not None


def hub_refs(ctx: Context, base: str) -> Iterator[tuple[str, str | None]]:
    """(where, commit) for each ``refs/<name>`` file of a shipped hub cache folder."""
    prefix = f"{base.rstrip('/')}/refs/"
    for entry in ctx.entries():
        if entry.kind != "file" or not entry.path.startswith(prefix):
            continue
        resolved = ctx.regular_file(entry.path)
        text = None
        if not isinstance(resolved, str) and entry.size <= _REF_CAP:
            try:
                text = resolved.read_text("utf-8").strip()
            except (OSError, UnicodeDecodeError):
                text = None
        if text and COMMIT_HEX.fullmatch(text):  # a ref that holds no commit proves nothing
            yield f"its hub cache ref {entry.path}", text


def unproven_revision(adapter: AdapterRecord, base: str, where: str,
                      declared: bool) -> Finding:
    """A 40-hex base_revision that the shipped base cannot confirm: it records no revision."""
    how = "" if declared else (" (it ships beside the adapter: the manifest names no "
                               "base_path, but a base shipped next to an adapter is its base)")
    return Finding(
        f"the base revision {adapter.base_revision!r} of adapter {adapter.path} is not proven "
        f"by the shipped base {base}{how}: the base carries no revision record",
        where=f"{where}.base_revision",
        expected=f"{base}/{BASE_RECORD} (or a hub cache snapshots/<commit> folder, or its "
        f"refs/) recording {adapter.base_revision!r}",
        found=f"no {BASE_RECORD}, no snapshots/<commit> in its path, no refs/",
        hint="write itera-base.json with CampaignRecorder.record_base(<base folder>, model=..., "
        "revision=...) when the base is fetched (or ship the hub cache's snapshots/<commit> "
        "folder); a base trained in the campaign records revision null",
        code="adapter-pinned.revision-not-proven",
    )


BASE_RECORD_CAP = 1 << 20


_SNAPSHOT = re.compile(r"(?:^|/)snapshots/([0-9a-f]{40})(?:/|$)")


def _base_missing(ctx: Context, base: str, where: str) -> Finding | None:
    """Why a shipped base cannot be read where base_path says (any manifest version)."""
    # Hashed and read as documents, never loaded: its links are the tree digest's to refuse.
    problem = locate_problem(ctx, base, f"{where}.base_path", "shipped base", "adapter-pinned",
                             loaded=False)
    if problem is None:
        return None
    return Finding(problem.message, where=f"{where}.base_path", hint="ship the base the adapter "
                   "was trained on, or record its hub id and 40-hex commit without base_path",
                   code=problem.code)


def shipped_base_findings(ctx: Context, record: AdapterRecord, base: str,
                          where: str) -> Iterator[Finding]:
    """A shipped base (a folder) is identified by its tree digest and its recorded revision."""
    missing = _base_missing(ctx, base, where)
    if missing is not None:
        yield missing
        return
    if not (ctx.root / base).is_dir():
        yield Finding(
            f"shipped base {base} is a file: itera-manifest/2 ships a base as a folder "
            "(what save_pretrained wrote, or a hub snapshot) pinned by its tree digest",
            where=f"{where}.base_path",
            hint="set base_path to the folder holding the base's config and weights, and "
            "base_digest to its tree digest (pytest_itera.files.tree.tree_digest)",
            code="adapter-pinned.base-not-a-folder",
        )
        return
    yield from _base_digest_findings(ctx, record, base, where)
    yield from _recorded_revision(ctx, record, base, where)


def _base_digest_findings(ctx: Context, record: AdapterRecord, base: str,
                          where: str) -> Iterator[Finding]:
    try:
        actual: str | None = base_tree_digest(ctx, base)
        refused = None
    except DigestRefused as exc:
        actual, refused = None, str(exc)
    if refused is not None:
        yield Finding(f"shipped base {base} has no tree digest: {refused}",
                      where=f"{where}.base_path",
                      hint="ship the base's files themselves (regular files, no links: cp -rL)",
                      code="adapter-pinned.base-no-digest")
    if record.base_digest is None:
        yield Finding(
            f"shipped base {base} has no base_digest: a base named by a local path without a "
            "digest is unpinned",
            where=f"{where}.base_digest", expected=f"the tree digest of {base}",
            found="no base_digest" if actual is None else f"no base_digest (the folder's "
            f"tree digest is {actual})",
            hint="record base_digest = pytest_itera.files.tree.tree_digest("
            f"<campaign>/{base}) when the base is fetched (docs/contract-v2.md)",
            code="adapter-pinned.base-digest-missing",
        )
    elif actual is not None and actual != record.base_digest:
        yield Finding(
            f"the files of shipped base {base} do not hash to the base_digest recorded for "
            f"adapter {record.path}",
            where=f"{where}.base_digest", expected=record.base_digest, found=actual,
            hint="the base changed, or the adapter was trained on another base: ship the exact "
            "base it was trained on, or record that base's tree digest",
            code="adapter-pinned.base-digest",
        )


def base_tree_digest(ctx: Context, base: str) -> str:
    """The tree digest of a folder of the campaign, from the campaign's walk and the file
    hashes every other check shares (each byte is read once)."""
    prefix = base.rstrip("/") + "/"
    entries = [dataclasses.replace(e, path=e.path[len(prefix):])
               for e in ctx.entries() if e.path.startswith(prefix)]
    if not any(e.kind == "file" for e in entries):
        raise DigestRefused("it holds no file")

    def sha256_of(relpath: str) -> str:
        facts = ctx.facts(prefix + relpath)
        if facts.error is not None or facts.sha256 is None:
            raise DigestRefused(f"{relpath} cannot be hashed: {facts.error or 'not hashed'}")
        return facts.sha256

    return tree_digest_of(entries, sha256_of)


def _recorded_revision(ctx: Context, record: AdapterRecord, base: str,
                       where: str) -> Iterator[Finding]:
    """The revision the shipped base records itself (its hub cache folder
    ``snapshots/<commit>``, or ``itera-base.json`` beside its files) equals base_revision."""
    recorded: list[tuple[str, str | None]] = []
    snapshot = _SNAPSHOT.search(base)
    if snapshot:
        recorded.append((f"its hub cache folder snapshots/{snapshot.group(1)}", snapshot.group(1)))
    rel = f"{base.rstrip('/')}/{BASE_RECORD}"
    if ctx.entry(rel) is not None:
        text, problem = read_small_json(ctx, rel, BASE_RECORD_CAP)
        data = None
        if problem is None and text is not None:
            try:
                data = parse_json(text)
            except (ValueError, RecursionError) as exc:
                problem = Finding(f"{rel} is not valid JSON: {exc}", where=rel,
                                  code="adapter-pinned.base-record-json")
        if problem is None and not (isinstance(data, dict) and "revision" in data and (
                data["revision"] is None or isinstance(data["revision"], str))):
            problem = Finding(f"{rel} does not record the base's revision",
                              where=rel, expected='{"model": "<hub id>", "revision": '
                              '"<40-hex commit>" or null}', found=clip(text),
                              code="adapter-pinned.base-record-revision")
        if problem is not None:
            yield problem
        elif isinstance(data, dict):
            recorded.append((rel, data["revision"]))
            model = data.get("model")
            if isinstance(model, str) and model.rstrip("/") not in agreeing_names(record):
                yield Finding(
                    f"{rel} records model {model!r}, the manifest's base_model is "
                    f"{record.base_model!r}", where=key_where(rel, text or "", "model"),
                    expected=repr(record.base_model), found=repr(model),
                    hint="the shipped base is another model: ship the base the adapter was "
                    "trained on, or correct the manifest",
                    code="adapter-pinned.base-record-model")
    recorded += hub_refs(ctx, base)
    if not recorded and record.base_revision and COMMIT_HEX.fullmatch(record.base_revision):
        yield unproven_revision(record, base, where, declared=record.base_path is not None)
    for source, revision in recorded:
        if revision != record.base_revision:
            yield Finding(
                f"shipped base {base} records revision {shown(revision)} ({source}), the "
                f"manifest records base_revision {shown(record.base_revision)}",
                where=f"{where}.base_revision", expected=shown(revision),
                found=shown(record.base_revision),
                hint="the adapter must name the base it was trained on: its commit is the one "
                "the shipped base was fetched at (or null for a base that is on no hub)",
                code="adapter-pinned.base-revision-differs",
            )


def base_beside_findings(ctx: Context, record: AdapterRecord, base: str,
                         where: str) -> Iterator[Finding]:
    """A base shipped next to the adapter without base_path is its base all the same: its
    tree digest (when base_digest is recorded) and its revision record are compared."""
    if record.base_digest is not None:
        try:
            actual: str | None = base_tree_digest(ctx, base)
        except DigestRefused:
            actual = None
        if actual is not None and actual != record.base_digest:
            yield Finding(
                f"the files of base {base}, shipped beside adapter {record.path}, do not hash to "
                "its base_digest (the manifest names no base_path, but a base shipped next to "
                "an adapter is its base)", where=f"{where}.base_digest",
                expected=record.base_digest, found=actual,
                hint=f"record base_path {base!r} and the tree digest of the base the adapter "
                "was trained on, and ship that base", code="adapter-pinned.base-digest")
    for finding in _recorded_revision(ctx, record, base, where):
        if finding.code == "adapter-pinned.revision-not-proven":
            yield finding
        else:
            yield dataclasses.replace(finding, message=f"{finding.message} (it ships beside the "
                                      "adapter: the manifest names no base_path, but a base "
                                      "shipped next to an adapter is its base)")


def shipped_base_v1_findings(ctx: Context, record: AdapterRecord, base: str,
                             where: str) -> Iterator[Finding]:
    """/1: a base shipped in the campaign is pinned by one file's sha256: verify it byte for
    byte, and say what that cannot prove."""
    missing = _base_missing(ctx, base, where)
    if missing is not None:
        yield missing
        return
    if not (ctx.root / base).is_file():
        yield Finding(f"shipped base {base} is a folder: base_revision pins one file's sha256",
                      where=f"{where}.base_path",
                      hint="set base_path to the base's weights file (e.g. model.safetensors)",
                      code="adapter-pinned.base-not-a-file")
        return
    facts = ctx.facts(base)
    if facts.error is not None or facts.sha256 is None:
        yield Finding(f"shipped base {base} cannot be hashed: {facts.error}",
                      where=f"{where}.base_path",
                      code="adapter-pinned.base-unreadable")
        return
    pinned = record.base_revision or ""
    if SHA256_HEX.fullmatch(pinned) and facts.sha256 != pinned:  # else revision_problem said why
        yield Finding(
            f"the shipped base {base} does not have the sha256 recorded as base_revision",
            where=f"{where}.base_revision", expected=pinned, found=facts.sha256,
            hint="the adapter was trained on another base, or the base changed: ship the "
            "exact base, or correct base_revision",
            code="adapter-pinned.base-sha256",
        )
    yield Finding(
        f"itera-manifest/1 cannot prove the identity of the shipped base {base}: the sha256 of "
        "one file cannot tell two bases of the same architecture apart",
        where=f"{where}.base_path",
        hint="re-close the campaign with itera-manifest/2: base_path = the base folder, "
        "base_digest = its tree digest (pytest_itera.files.tree.tree_digest), base_revision = its "
        "hub commit or null",
        code="adapter-pinned.v1-base-unproven",
    )


# The kinds of the findings above, for adapter-pinned's KINDS.
BASE_KINDS: dict[str, Kind] = {
    "adapter-pinned.base-not-a-folder": Kind(
        rule="under itera-manifest/2 the shipped base (base_path) is a file, not a folder "
        "pinned by its tree digest",
        fix="set base_path to the folder holding the base's config and weights, base_digest "
        "to its tree digest"),
    "adapter-pinned.base-no-digest": Kind(
        rule="the shipped base has no tree digest: it holds no file, or links, or a file that "
        "cannot be hashed",
        fix="ship the base's files themselves (regular files, no links: cp -rL)"),
    "adapter-pinned.base-digest-missing": Kind(
        rule="a base shipped in the campaign has no base_digest: a base named by a local path "
        "without a digest is unpinned",
        fix="record base_digest = pytest_itera.files.tree.tree_digest(<campaign>/<base>) when "
        "the base is fetched"),
    "adapter-pinned.base-digest": Kind(
        rule="the files of the shipped base (declared, or beside the adapter) do not hash to "
        "the base_digest recorded for the adapter",
        fix="ship the exact base the adapter was trained on, or record that base's tree "
        "digest"),
    "adapter-pinned.base-record-json": Kind(
        rule="the shipped base's itera-base.json is not valid JSON",
        fix="write it again with CampaignRecorder.record_base"),
    "adapter-pinned.base-record-revision": Kind(
        rule="the shipped base's itera-base.json does not record the base's revision (a "
        "commit or null)",
        fix='record {"model": "<hub id>", "revision": "<40-hex commit>" or null} '
        "(CampaignRecorder.record_base)"),
    "adapter-pinned.base-record-model": Kind(
        rule="the shipped base's itera-base.json names another model than the manifest's "
        "base_model",
        fix="ship the base the adapter was trained on, or correct the manifest"),
    "adapter-pinned.base-revision-differs": Kind(
        rule="the shipped base records another revision (snapshots/<commit>, itera-base.json, "
        "refs/) than the manifest's base_revision",
        fix="record the commit the shipped base was fetched at (or null for a base on no "
        "hub)"),
    "adapter-pinned.revision-not-proven": Kind(
        rule="a 40-hex base_revision that the shipped base cannot confirm: it carries no "
        "revision record",
        fix="write itera-base.json with CampaignRecorder.record_base when the base is fetched, "
        "or ship the snapshots/<commit> folder"),
    "adapter-pinned.base-not-a-file": Kind(
        rule="under itera-manifest/1 the shipped base is a folder: its base_revision pins one "
        "file's sha256",
        fix="set base_path to the base's weights file (e.g. model.safetensors)"),
    "adapter-pinned.base-unreadable": Kind(
        rule="under itera-manifest/1 the shipped base file cannot be hashed",
        fix="make the base file readable, or ship it again"),
    "adapter-pinned.base-sha256": Kind(
        rule="under itera-manifest/1 the shipped base file does not have the sha256 recorded "
        "as base_revision",
        fix="ship the exact base the adapter was trained on, or correct base_revision"),
    "adapter-pinned.v1-base-unproven": Kind(
        rule="an itera-manifest/1 shipped base is pinned by one file's sha256, which cannot "
        "tell two bases of one architecture apart",
        fix="re-close the campaign with itera-manifest/2: base_path the base folder, "
        "base_digest its tree digest"),
}
