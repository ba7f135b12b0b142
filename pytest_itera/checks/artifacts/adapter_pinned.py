"""adapter-pinned: each adapter's base is identified for good, and the adapter reloads.

itera-manifest/2 pins a base by its immutable hub commit (a 40-hex ``base_revision``) and,
when the base ships in the campaign, by its tree digest (``base_digest``, verified in
``bases``); itera-manifest/1 by one ``base_revision`` (a commit, or the sha256 of a shipped
base file, which cannot tell two bases of one architecture apart: it says so). A branch, a
tag, a short hash or a local path without a digest is not a pin: it can change.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from pytest_itera.checks.artifacts.adapter_config import (
    CONFIG_KINDS,
    config_findings,
    name_in_campaign,
    temp_name,
)
from pytest_itera.checks.artifacts.bases import (
    BASE_KINDS,
    base_beside,
    base_beside_findings,
    shipped_base_findings,
    shipped_base_v1_findings,
)
from pytest_itera.checks.artifacts.reloading import (
    adapters,
    indexed,
    locate_problem,
    located_kinds,
    reload_findings,
    reload_kinds,
)
from pytest_itera.checks.context import Check, Context
from pytest_itera.checks.model import Kind
from pytest_itera.core.campaign import (
    COMMIT_HEX,
    MANIFEST_FILE,
    SHA256_HEX,
    AdapterRecord,
)
from pytest_itera.core.findings import Finding
from pytest_itera.core.findings import where as json_where
from pytest_itera.core.text import is_blank

if TYPE_CHECKING:
    pass


_SHORT_HASH = re.compile(r"[0-9a-f]{4,39}")


_BRANCHES = frozenset(
    {"main", "master", "dev", "develop", "development", "trunk", "head", "latest", "stable"}
)


_REVISION_EXPECTED = (
    "the full 40-hex commit id of the base (or, with base_path, the sha256 of the shipped base)"
)


_REVISION_HINT = (
    "record the exact commit the adapter was trained on: HfApi().model_info(base).sha at "
    "training time, or the snapshots/<commit> folder name in the Hugging Face cache"
)


def adapter_targets(ctx: Context) -> Iterable[str]:
    return {a.path for a in adapters(ctx)}


def adapter_pinned(ctx: Context, target: str | None) -> Iterator[Finding]:
    """The base is identified by revision and content: an immutable hub commit (or, for a
    base shipped in the campaign, null) that adapter_config.json and the shipped base's own
    record agree with, the shipped base's files hashing to base_digest; weights that reload."""
    man = ctx.campaign.manifest
    assert man is not None  # needs={"manifest"}
    for index, record in indexed(adapters(ctx), target):
        where = json_where(MANIFEST_FILE, "adapters", index)
        if man.version >= 2:
            yield from _identity(ctx, record, where)
        else:
            yield from _identity_v1(ctx, record, where)
        yield from temp_name(ctx, record.base_model, f"{where}.base_model", "the manifest's "
                             "base_model")
        problem = locate_problem(ctx, record.path, where, "adapter", "adapter-pinned")
        if problem is None and not (ctx.root / record.path).is_dir():
            problem = Finding(f"adapter {record.path} is a file, not an adapter folder",
                              where=f"{where}.path",
                              hint="list the folder that save_pretrained wrote "
                              "(adapter_config.json + adapter_model.safetensors)",
                              code="adapter-pinned.not-a-folder")
        if problem is not None:
            yield problem
            if ctx.links_out(record.path):  # not loaded; its documents are judged all the same
                yield from config_findings(ctx, record)
            continue
        yield from config_findings(ctx, record)
        yield from reload_findings(ctx, record.path, None, where, "adapter-pinned")
        result = ctx.reload(record.path, None)
        # A Trainer checkpoint of a LoRA run holds the adapter beside the training state.
        if result.ok and result.format not in ("peft", "hf-trainer"):
            yield Finding(f"adapter {record.path} holds {result.format!r} content, not a PEFT "
                          "adapter", where=f"{where}.path", expected="peft",
                          found=str(result.format),
                          code="adapter-pinned.not-an-adapter")


_COMMIT_EXPECTED = ("a full 40-hex commit id of the base on the hub, or null for a base shipped "
                    "in the campaign (base_path) and pinned by its tree digest (base_digest)")


def commit_problem(revision: str) -> str | None:
    """Why a base revision string is not an immutable hub commit, or None."""
    if COMMIT_HEX.fullmatch(revision):
        return None
    if is_blank(revision):
        return "is empty"
    if SHA256_HEX.fullmatch(revision):
        return (f"{revision!r} is a sha256 (64 hex digits), not a hub commit: "
                "itera-manifest/2 pins a shipped base by base_digest, its tree digest over every "
                "file (a sha256 of one file cannot tell two bases of one architecture apart)")
    if re.fullmatch(r"[0-9a-fA-F]{40}", revision):
        return f"{revision!r} is a commit id in upper case: write it in lower case"
    if _SHORT_HASH.fullmatch(revision):
        return (f"{revision!r} is a short commit hash ({len(revision)} hex digits): a prefix "
                "is not an id and can become ambiguous")
    name = revision.lower().removeprefix("refs/heads/")
    if name in _BRANCHES or revision.startswith("refs/heads/"):
        return f"{revision!r} is a branch: it moves with every push"
    return f"{revision!r} is a tag or branch name, not an immutable commit id: it can be moved"


def _identity(ctx: Context, record: AdapterRecord, where: str) -> Iterator[Finding]:
    base = record.base_path
    # base_revision is a required key (the schema): null or a string, never absent.
    if record.base_revision is None:
        if base is None:
            yield Finding(
                f"the base revision of adapter {record.path} is null: base "
                f"{record.base_model!r} is not pinned (PEFT then loads whatever its main "
                "branch is)",
                where=f"{where}.base_revision", expected=_COMMIT_EXPECTED, found="null",
                hint=f"{_REVISION_HINT}; or ship the base in the campaign (base_path, pinned "
                "by base_digest)",
                code="adapter-pinned.null-revision",
            )
    else:
        problem = commit_problem(record.base_revision)
        if problem is not None:
            yield Finding(
                f"the base revision of adapter {record.path} {problem}",
                where=f"{where}.base_revision", expected=_COMMIT_EXPECTED,
                found=repr(record.base_revision), hint=_REVISION_HINT,
                code="adapter-pinned.revision",
            )
    if base is not None:
        yield from shipped_base_findings(ctx, record, base, where)
        return
    beside = base_beside(ctx, record, adapters(ctx))
    if beside is not None:
        yield from base_beside_findings(ctx, record, beside, where)
        return
    if record.base_digest is not None:
        yield Finding(f"adapter {record.path} records a base_digest but no base_path: there is "
                      "no shipped base to verify it against", where=f"{where}.base_digest",
                      hint="set base_path to the shipped base folder, or remove base_digest",
                      code="adapter-pinned.digest-without-base")
    if _local_name(ctx, record.base_model):
        yield Finding(
            f"the base of adapter {record.path} is named by a local path "
            f"({record.base_model!r}) without a digest: it is unpinned (a local folder has no "
            "revision, and its files can change)",
            where=f"{where}.base_model",
            hint="ship the base folder in the campaign and record base_path and base_digest "
            "(pytest_itera.files.tree.tree_digest of the folder), or name the hub id with its "
            "40-hex commit",
            code="adapter-pinned.local-base-unpinned",
        )


def _local_name(ctx: Context, name: str) -> bool:
    """A base name that is a path on some machine, not a hub id (``org/name``)."""
    if os.path.isabs(name) or name.startswith(("./", "../", "~", ".\\")) or "\\" in name:
        return True
    if re.match(r"^[A-Za-z]:[\\/]", name) or name.count("/") > 1:
        return True
    return ctx.entry(name.rstrip("/")) is not None or name_in_campaign(ctx, name) is not None


def revision_problem(revision: str | None, shipped: bool) -> str | None:
    """/1: why a base revision does not pin the base forever, or None when it does."""
    if revision is None or is_blank(revision):
        return "is missing (null)" if revision is None else "is empty"
    if shipped:
        if SHA256_HEX.fullmatch(revision):
            return None
        return f"{revision!r} is not a sha256 (64 lowercase hex digits) of the shipped base"
    if SHA256_HEX.fullmatch(revision):
        return (f"{revision!r} is a sha256, which pins a base shipped in the campaign, but "
                "base_path is not set")
    return commit_problem(revision)


def _identity_v1(ctx: Context, record: AdapterRecord, where: str) -> Iterator[Finding]:
    yield from _revision_findings(record, where)
    if record.base_path is not None:
        yield from shipped_base_v1_findings(ctx, record, record.base_path, where)


def _revision_findings(record: AdapterRecord, where: str) -> Iterator[Finding]:
    problem = revision_problem(record.base_revision, record.base_path is not None)
    if problem is None:
        return
    yield Finding(
        f"the base revision of adapter {record.path} {problem}",
        where=f"{where}.base_revision", expected=_REVISION_EXPECTED,
        found="null" if record.base_revision is None else repr(record.base_revision),
        hint=_REVISION_HINT if record.base_path is None else
        "record the sha256 of the shipped base file (pytest_itera.record.sha256_file)",
        code="adapter-pinned.revision",
    )


KINDS: dict[str, Kind] = {
    **located_kinds("adapter-pinned", "adapter folder (or its shipped base)"),
    **reload_kinds("adapter-pinned", "adapter"),
    "adapter-pinned.not-a-folder": Kind(
        rule="the adapter path is a file, not the adapter folder save_pretrained wrote",
        fix="list the folder that save_pretrained wrote (adapter_config.json + "
        "adapter_model.safetensors)"),
    "adapter-pinned.not-an-adapter": Kind(
        rule="the adapter folder reloads, but its content is not a PEFT adapter (nor a Trainer "
        "checkpoint holding one)",
        fix="list the folder that save_pretrained wrote for the adapter"),
    "adapter-pinned.null-revision": Kind(
        rule="base_revision is null for a base that is not shipped in the campaign: PEFT loads "
        "whatever its main branch is then",
        fix="record the exact 40-hex commit the adapter was trained on, or ship the base "
        "(base_path, base_digest)"),
    "adapter-pinned.revision": Kind(
        rule="base_revision is not an immutable pin: a branch, a tag, a short or upper-case "
        "hash, or a sha256 where a commit is due",
        fix="record the exact commit the adapter was trained on: HfApi().model_info(base).sha "
        "at training time"),
    "adapter-pinned.digest-without-base": Kind(
        rule="the adapter records a base_digest but no base_path: there is no shipped base to "
        "verify it against",
        fix="set base_path to the shipped base folder, or remove base_digest"),
    "adapter-pinned.local-base-unpinned": Kind(
        rule="the base is named by a local path without a digest: a local folder has no "
        "revision, and its files can change",
        fix="ship the base folder and record base_path and base_digest, or name the hub id "
        "with its 40-hex commit"),
    "adapter-pinned.temp-path": Kind(
        rule="the base's name (the manifest's base_model or adapter_config.json's) is a path "
        "into a temporary folder",
        fix="name the base by its hub id, pinned by its commit, or ship it in the campaign "
        "(base_path)"),
    **BASE_KINDS,
    **CONFIG_KINDS,
}


CHECK = Check("adapter-pinned", "each adapter's base is identified by an immutable revision and, "
              "when shipped, its tree digest, which adapter_config.json and the base agree with; "
              "the adapter reloads", adapter_pinned, scope="adapter",
              targets=adapter_targets, needs=frozenset({"manifest"}), reloads=True,
              kinds=KINDS)
