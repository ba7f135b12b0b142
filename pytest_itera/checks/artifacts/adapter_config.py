"""What an adapter folder says of its base: ``adapter_config.json`` (adapter-pinned).

PEFT loads the base that adapter_config.json names (``base_model_name_or_path``) at its
``revision``: both must be the base the manifest records, or the adapter is applied to
another model. Also here: reading the small JSON documents of the campaign safely (a regular
file, under a size cap, UTF-8, never a FIFO that blocks) and the names that designate a base.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from pytest_itera.checks.common.paths import campaign_relative
from pytest_itera.checks.context import Context
from pytest_itera.checks.model import Kind
from pytest_itera.core.campaign import (
    AdapterRecord,
    locate,
    parse_json,
)
from pytest_itera.core.findings import Finding
from pytest_itera.files.tree import os_reason

if TYPE_CHECKING:
    pass


ADAPTER_CONFIG = "adapter_config.json"


ADAPTER_CONFIG_CAP = 1 << 20  # PEFT writes ~1 KiB; anything this big is not a config


def clip(text: str | None, limit: int = 80) -> str:
    text = (text or "").strip()
    return text if len(text) <= limit else text[:limit - 1] + "…"


def config_findings(ctx: Context, record: AdapterRecord) -> Iterator[Finding]:
    rel = f"{record.path}/{ADAPTER_CONFIG}"
    text, problem = _read_config(ctx, rel)
    if problem is not None:
        yield problem
        return
    assert text is not None
    try:
        config = parse_json(text)
    except (ValueError, RecursionError) as exc:
        yield Finding(f"{rel} is not valid JSON: {exc}", where=rel,
                      hint="save the adapter again with save_pretrained",
                      code="adapter-pinned.config-json")
        return
    if not isinstance(config, dict):
        yield Finding(f"{rel} is not a JSON object", where=rel, code="adapter-pinned.config-json")
        return
    yield from _config_revision(record, rel, text, config)
    yield from _config_base(ctx, record, rel, text, config)


def _read_config(ctx: Context, rel: str) -> tuple[str | None, Finding | None]:
    """adapter_config.json as text: a regular file inside the folder, under the size cap."""
    return read_small_json(ctx, rel, ADAPTER_CONFIG_CAP, missing=Finding(
        f"{rel} is missing: an adapter folder without its config cannot be loaded", where=rel,
        hint="save the adapter with save_pretrained, which writes it",
        code="adapter-pinned.config-missing"))


def read_small_json(ctx: Context, rel: str, cap: int,
                    missing: Finding | None = None) -> tuple[str | None, Finding | None]:
    """A small JSON document of the campaign as text: a regular file inside the folder,
    under ``cap`` bytes, UTF-8."""
    inside = ctx.inside(rel)
    if isinstance(inside, str):
        return None, Finding(f"{rel} {inside}", where=rel, code="adapter-pinned.document-outside")
    try:
        # O_NONBLOCK: a FIFO planted under that name must not block the session.
        fd = os.open(inside, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None, missing or Finding(f"{rel} is missing", where=rel,
                                        code="adapter-pinned.document-missing")
    except OSError as exc:
        return None, Finding(f"{rel} cannot be read: {os_reason(exc)}", where=rel,
                             code="adapter-pinned.document-unreadable")
    # Told before any read: a folder under that name cannot be read as a file (fdopen
    # refuses one), and a FIFO or a socket is never read at all.
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None, Finding(f"{rel} is not a regular file", where=rel,
                             code="adapter-pinned.document-not-a-file")
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(cap + 1)
    if len(data) > cap:
        return None, Finding(f"{rel} is over {cap} bytes: not what it should hold", where=rel,
                             code="adapter-pinned.document-too-large")
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return None, Finding(f"{rel} is not UTF-8 (byte {exc.start})", where=rel,
                             code="adapter-pinned.document-not-utf8")


def key_where(rel: str, text: str, key: str) -> str:
    line, column = locate(text, [key])
    return f"{rel}:{line}:{column} $.{key}" if line is not None else f"{rel} $.{key}"


def _config_revision(
    record: AdapterRecord, rel: str, text: str, config: dict[str, Any]
) -> Iterator[Finding]:
    revision = config.get("revision")
    if revision == record.base_revision:
        return
    yield Finding(
        f"{rel} records revision {shown(revision)}, the manifest records base_revision "
        f"{shown(record.base_revision)}",
        where=key_where(rel, text, "revision"),
        expected=shown(record.base_revision), found=shown(revision),
        hint="both must name the same base: PEFT loads the base at adapter_config.json's "
        "revision (null means whatever main is then); pass revision= to get_peft_model / "
        "LoraConfig when training, or correct the manifest",
        code="adapter-pinned.config-revision",
    )


def _config_base(
    ctx: Context, record: AdapterRecord, rel: str, text: str, config: dict[str, Any]
) -> Iterator[Finding]:
    name = config.get("base_model_name_or_path")
    where = key_where(rel, text, "base_model_name_or_path")
    if not isinstance(name, str) or not name:
        yield Finding(f"{rel} names no base model (base_model_name_or_path is {shown(name)})",
                      where=where, expected=repr(record.base_model), found=shown(name),
                      hint="save the adapter from a base loaded with from_pretrained(<hub id>), "
                      "or set base_model_name_or_path to the manifest's base_model",
                      code="adapter-pinned.config-no-base")
        return
    inside = name_in_campaign(ctx, name)
    temp = [] if inside is not None else list(
        temp_name(ctx, name, where, "base_model_name_or_path"))
    if temp:
        yield from temp
        return
    agreeing = agreeing_names(record)
    if (inside if inside is not None else name.rstrip("/")) not in agreeing:
        yield Finding(
            f"{rel} names base model {name!r}, the manifest's base_model is "
            f"{record.base_model!r}",
            where=where, expected=" or ".join(repr(n) for n in sorted(agreeing)),
            found=repr(name),
            hint="the adapter must name the base it was trained on: correct the manifest or "
            "adapter_config.json",
            code="adapter-pinned.config-base-differs",
        )


def name_in_campaign(ctx: Context, name: str) -> str | None:
    """The campaign-relative path a base name points at, when it points into the campaign.

    PEFT records the path the base was loaded from: an absolute path into the campaign
    folder (wherever it lived then; also under /tmp), or a relative one from the training
    script's directory that runs through the campaign folder ("out/camp/base")."""
    if os.path.isabs(name):
        return campaign_relative(ctx, name)  # the rule no-temp-paths applies to file text
    parts = PurePosixPath(name.replace("\\", "/")).parts
    if ctx.root.name not in parts or ".." in parts:
        return None
    # Where the campaign folder's own name is also a folder of the path ("runs/control/base"
    # in a campaign folder named "base"), the reading that names something in the campaign
    # wins: the whole name first, then a cut at each occurrence, the last one first;
    # the folder itself (a cut at the end) only when nothing named exists.
    cuts = ["/".join(parts[i + 1:]) or "." for i in reversed(range(len(parts)))
            if parts[i] == ctx.root.name]
    for reading in ("/".join(parts), *cuts):
        if reading != "." and ctx.entry(reading) is not None:
            return reading
    return cuts[0]  # nothing it names exists: the campaign-relative reading of old


def agreeing_names(record: AdapterRecord) -> set[str]:
    """Names that designate the base: the manifest's base_model; with a shipped base, also its
    path in the campaign and the folder holding it (a Hugging Face model folder)."""
    names = {record.base_model}
    if record.base_path is not None:
        names |= {record.base_path, record.base_path.rpartition("/")[0]}
    return {n.rstrip("/") for n in names if n}


def temp_name(ctx: Context, name: str, where: str, what: str) -> Iterator[Finding]:
    from pytest_itera.files.scan import temp_pattern_of

    pattern = temp_pattern_of(name, ctx.matcher())
    if pattern is not None:
        yield Finding(
            f"{what} {name!r} is a path into a temporary folder ({pattern})", where=where,
            hint="it will not exist after the rental: name the base by its hub id (pinned by "
            "its commit) or ship it in the campaign (base_path, pinned by its sha256)",
            code="adapter-pinned.temp-path",
        )


def shown(value: object) -> str:
    return "null" if value is None else repr(value)


# The kinds of the findings above, for adapter-pinned's KINDS.
CONFIG_KINDS: dict[str, Kind] = {
    "adapter-pinned.config-missing": Kind(
        rule="the adapter folder has no adapter_config.json: it cannot be loaded",
        fix="save the adapter with save_pretrained, which writes it"),
    "adapter-pinned.config-json": Kind(
        rule="the adapter's adapter_config.json is not a valid JSON object",
        fix="save the adapter again with save_pretrained"),
    "adapter-pinned.config-revision": Kind(
        rule="adapter_config.json's revision is not the manifest's base_revision (PEFT loads "
        "the base at the config's revision)",
        fix="pass revision= to get_peft_model / LoraConfig when training, or correct the "
        "manifest"),
    "adapter-pinned.config-no-base": Kind(
        rule="adapter_config.json names no base model (base_model_name_or_path is missing or "
        "empty)",
        fix="save the adapter from a base loaded with from_pretrained(<hub id>), or set "
        "base_model_name_or_path"),
    "adapter-pinned.config-base-differs": Kind(
        rule="adapter_config.json's base_model_name_or_path names another base than the "
        "manifest's base_model (or its shipped base)",
        fix="the adapter must name the base it was trained on: correct the manifest or "
        "adapter_config.json"),
    "adapter-pinned.document-outside": Kind(
        rule="an adapter or base JSON document (adapter_config.json, itera-base.json) is not "
        "inside the campaign folder",
        fix="keep the document itself inside the campaign folder, not a link out"),
    "adapter-pinned.document-missing": Kind(
        rule="an adapter or base JSON document vanished while it was read",
        fix="retrieve the folder again"),
    "adapter-pinned.document-unreadable": Kind(
        rule="an adapter or base JSON document cannot be read (permissions, an I/O error)",
        fix="make it readable, or retrieve it again"),
    "adapter-pinned.document-not-a-file": Kind(
        rule="an adapter or base JSON document is not a regular file (a FIFO, a folder)",
        fix="ship the document itself, as a regular file"),
    "adapter-pinned.document-too-large": Kind(
        rule="an adapter or base JSON document is over its size cap (1 MiB): not what it "
        "should hold",
        fix="ship the document save_pretrained or record_base wrote"),
    "adapter-pinned.document-not-utf8": Kind(
        rule="an adapter or base JSON document is not UTF-8 text",
        fix="ship the document save_pretrained or record_base wrote"),
}
