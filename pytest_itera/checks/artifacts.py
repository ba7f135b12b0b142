"""Checkpoint and adapter checks: checkpoint-reloads, resume-complete, adapter-pinned (R6, R8).

A file that is present but cannot be reloaded is not a verified output. Every checkpoint
and adapter is reloaded through ``Context.reload``: a ``pytest_itera_reload`` hook first,
else a fresh interpreter (``pytest_itera.reload.Reloader``, ``weights_only=True``, on CPU).
Paths are resolved inside the campaign before anything is loaded.

Registered as the plugin ``itera.artifacts``; it also checks, once at session start, that
the reload interpreter (``--itera-python``) is usable, so a wrong one is one usage error,
not one failure per checkpoint.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Iterator, Sequence
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, TypeVar

from pytest_itera.campaign import (
    MANIFEST_FILE,
    AdapterRecord,
    Campaign,
    CheckpointRecord,
    locate,
    parse_json,
)
from pytest_itera.checks import Check, Context
from pytest_itera.checks.files import campaign_relative
from pytest_itera.findings import Finding
from pytest_itera.reload import PARTS
from pytest_itera.tree import os_reason

if TYPE_CHECKING:
    from pytest_itera.reload import ReloadResult

ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_CONFIG_CAP = 1 << 20  # PEFT writes ~1 KiB; anything this big is not a config
_COMMIT = re.compile(r"[0-9a-f]{40}")
_SHA256 = re.compile(r"[0-9a-f]{64}")
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

R = TypeVar("R", CheckpointRecord, AdapterRecord)


# ------------------------------------------------------------------- targets


def _checkpoints(ctx: Context) -> tuple[CheckpointRecord, ...]:
    man = ctx.campaign.manifest
    return man.checkpoints if man is not None else ()


def _adapters(ctx: Context) -> tuple[AdapterRecord, ...]:
    man = ctx.campaign.manifest
    return man.adapters if man is not None else ()


def checkpoint_targets(ctx: Context) -> Iterable[str]:
    return {c.path for c in _checkpoints(ctx)}


def resume_targets(ctx: Context) -> Iterable[str]:
    return {c.path for c in _checkpoints(ctx) if c.kind == "resume"}


def adapter_targets(ctx: Context) -> Iterable[str]:
    return {a.path for a in _adapters(ctx)}


def _indexed(records: Sequence[R], target: str | None) -> list[tuple[int, R]]:
    return [(i, r) for i, r in enumerate(records) if r.path == target]


# ---------------------------------------------------------- checkpoint-reloads


def checkpoint_reloads(ctx: Context, target: str | None) -> Iterator[Finding]:
    """Each listed checkpoint loads in a fresh interpreter, finite, in its claimed format."""
    records = _indexed(_checkpoints(ctx), target)
    if len(records) > 1:
        yield Finding(f"{target} is listed {len(records)} times in checkpoints",
                      where=f"{MANIFEST_FILE} $.checkpoints[{records[1][0]}]",
                      hint="list each checkpoint once")
    for index, record in records:
        where = f"{MANIFEST_FILE} $.checkpoints[{index}]"
        problem = _locate(ctx, record.path, where, "checkpoint")
        if problem is not None:
            yield problem
            continue
        yield from _reload_findings(ctx, record.path, record.format, where)
        if record.kind == "weights":
            yield from _weights_present(ctx, record.path, record.format, where)


def _weights_present(
    ctx: Context, relpath: str, claimed: str | None, where: str
) -> Iterator[Finding]:
    """A checkpoint declared as weights must hold model weights (an optimizer alone is none)."""
    result = ctx.reload(relpath, claimed)
    if load_error(result) is None and "model" not in result.parts:
        yield Finding(
            f"{relpath} is declared as weights but holds no model weights "
            f"(it holds: {', '.join(result.parts) or 'nothing the loader recognises'})",
            where=f"{where}.kind",
            hint="point the manifest at the file that holds the model's state_dict",
        )


def _locate(ctx: Context, relpath: str, where: str, what: str) -> Finding | None:
    """Why ``relpath`` cannot be handed to a loader, or None: inside, present, file or folder."""
    inside = ctx.inside(relpath)
    if isinstance(inside, str):
        return Finding(f"{what} path {relpath!r} {inside}: it is not loaded",
                       where=f"{where}.path",
                       hint="record paths relative to the campaign folder, and keep the "
                       "files inside it")
    try:
        mode = os.lstat(inside).st_mode  # a real path: no link left to follow
    except FileNotFoundError:
        return Finding(f"{what} {relpath} is missing", where=f"{where}.path",
                       hint="retrieve it before the rental ends, or correct the manifest")
    except OSError as exc:
        return Finding(f"{what} {relpath} cannot be read: {os_reason(exc)}", where=f"{where}.path")
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        # A FIFO or device would block a loader: it is never opened.
        return Finding(f"{what} {relpath} is neither a regular file nor a folder",
                       where=f"{where}.path")
    return None


def load_error(result: ReloadResult) -> str | None:
    """The cause when the checkpoint did not load at all; None when it loaded (even if its
    weights are non-finite or its format is not the claimed one: those are judged apart)."""
    if result.ok:
        return None
    cause = result.cause or f"{result.path}: not loaded (the loader gave no cause)"
    if result.nonfinite and "non-finite" in cause:
        return None
    if cause.startswith(f"{result.path}: the manifest declares format"):
        return None
    return cause


def _reload_findings(
    ctx: Context, relpath: str, claimed: str | None, where: str
) -> Iterator[Finding]:
    result = ctx.reload(relpath, claimed)
    if result.ok:
        return
    error = load_error(result)
    if error is not None:
        yield Finding(f"does not reload in a fresh process with weights_only=True: {error}",
                      where=where, hint=_load_hint(error))
    if result.nonfinite:
        yield _nonfinite_finding(result, where)
    if claimed is not None and not _agrees(claimed, result.format):
        yield Finding(
            f"{relpath} holds {result.format!r} content, but the manifest declares format "
            f"{claimed!r}",
            where=f"{where}.format", expected=claimed, found=result.format,
            hint=_format_hint(result.format),
        )


def _agrees(claimed: str, found: str | None) -> bool:
    """A Lightning .ckpt is a torch.save file: declaring it 'torch' is not wrong."""
    return found is None or found == claimed or (claimed, found) == ("torch", "lightning")


def _nonfinite_finding(result: ReloadResult, where: str) -> Finding:
    counted = re.search(r"in (\d+) tensor", result.cause or "")
    total = int(counted.group(1)) if counted else len(result.nonfinite)
    shown = ", ".join(result.nonfinite)
    more = f" (and {total - len(result.nonfinite)} more)" if total > len(result.nonfinite) else ""
    return Finding(
        f"{result.path} holds non-finite model weights (NaN or inf) in {total} tensor(s)",
        where=where, found=shown + more,
        hint="training diverged before this save: resume from the last finite checkpoint, "
        "or record the run as stopped by its non-finite stop rule",
    )


def _load_hint(cause: str) -> str:
    if "weights_only" in cause:
        return ("loading it needs weights_only=False, which runs code from the file: never do "
                "that; save tensors and plain containers only (state_dict()s, numbers, "
                "strings) or safetensors, from a trusted process")
    if "timed out" in cause:
        return ("raise --itera-timeout (ini itera_timeout) if the checkpoint is that large; "
                "a load that never ends is a broken file")
    if "--itera-python" in cause:
        return "pass --itera-python with the training environment's Python (torch >= 2.10)"
    if "not installed" in cause:
        return "install it in the reload interpreter (--itera-python)"
    if "memory" in cause:
        return "the checkpoint needs more memory than the reload allows: check its size"
    return ("the file is truncated, corrupt or not a checkpoint: retrieve it again, or save it "
            "again from the run")


def _format_hint(found: str | None) -> str:
    if found == "peft":
        return ("a PEFT adapter folder belongs in adapters (adapter-pinned reloads it); or list "
                "its adapter_model.safetensors here with format 'safetensors'")
    return "correct the manifest's format: the content decides, not the file name"


# ------------------------------------------------------------- resume-complete

# Where each resume part lives, per format (the README's parts table, in short).
_PART_HOME: dict[str, dict[str, str]] = {
    "torch": {
        "model": "a 'model_state_dict' key", "optimizer": "an 'optimizer_state_dict' key",
        "progress": "a 'progress' (or 'epoch' / 'global_step') key",
        "scheduler": "a 'scheduler' key",
        "scaler": "a 'scaler' key (GradScaler.state_dict())",
        "rng": "an 'rng_state' key (torch, numpy and python RNG states)",
        "data": "a 'sampler' key (the data position)",
    },
    "lightning": {
        "model": "state_dict", "optimizer": "optimizer_states (not save_weights_only=True)",
        "progress": "epoch / global_step", "scheduler": "lr_schedulers",
        "scaler": "the precision plugin's state (mixed precision)",
        "data": "a stateful dataloader (loops.fit_loop ... combined_loader)",
    },
    "hf-trainer": {
        "model": "model.safetensors or pytorch_model.bin", "optimizer": "optimizer.pt",
        "progress": "trainer_state.json with global_step", "scheduler": "scheduler.pt",
        "scaler": "scaler.pt (mixed precision)", "rng": "rng_state.pth or rng_state_<rank>.pth",
        "data": "trainer_state.json with global_step",
    },
    "accelerate": {
        "model": "model.safetensors", "optimizer": "optimizer.bin", "scheduler": "scheduler.bin",
        "progress": "a registered object holding step/epoch (register_for_checkpointing)",
        "scaler": "scaler.pt (mixed precision)", "rng": "random_states_<rank>.pkl",
        # accelerate writes sampler.bin only for an iterable-dataset shard, and
        # dl_state_dict.bin only for a torchdata StatefulDataLoader.
        "data": "an object registered with register_for_checkpointing whose state_dict holds "
                "the data position (a 'data_position' key: the batches to skip_first_batches "
                "past), or dl_state_dict.bin (a StatefulDataLoader)",
    },
}
_PART_HOME["dcp"] = _PART_HOME["torch"]


def resume_complete(ctx: Context, target: str | None) -> Iterator[Finding]:
    """A resume checkpoint holds every part the plan requires, and what the manifest claims."""
    plan = ctx.campaign.plan
    assert plan is not None  # needs={"plan", "manifest"}
    required = [p for p in PARTS if p in plan.checkpoint_policy.resume_state]
    for index, record in _indexed(_checkpoints(ctx), target):
        if record.kind != "resume":
            continue
        where = f"{MANIFEST_FILE} $.checkpoints[{index}]"
        problem = _locate(ctx, record.path, where, "resume checkpoint")
        if problem is not None:
            yield problem
            continue
        result = ctx.reload(record.path, record.format)
        error = load_error(result)
        if error is not None:
            yield Finding(f"the resume parts of {record.path} are unknown: it does not reload "
                          f"({error})", where=where,
                          hint=f"fix checkpoint-reloads[{record.path}] first")
            continue
        yield from _missing_parts(record, result, required, where)
        yield from _overclaimed(record, result, where)


def _missing_parts(
    record: CheckpointRecord, result: ReloadResult, required: list[str], where: str
) -> Iterator[Finding]:
    missing = [p for p in required if p not in result.parts]
    expected = ", ".join(required)
    found = ", ".join(result.parts) or "no part"
    by_design: dict[str, list[str]] = {}
    for part in missing:
        reason = result.missing_reasons.get(part)
        if reason:
            by_design.setdefault(reason, []).append(part)
    lacking = [p for p in missing if not result.missing_reasons.get(p)]
    if lacking:
        only = (" (it holds model weights only: a state dict is not a resume checkpoint)"
                if result.parts == ("model",) else "")
        yield Finding(
            f"resume checkpoint {record.path} lacks {', '.join(lacking)}, required by the plan's "
            f"checkpoint_policy.resume_state{only}",
            where=where, expected=expected, found=found,
            hint=_save_hint(result.format, lacking),
        )
    for reason, parts in by_design.items():
        yield Finding(
            f"resume checkpoint {record.path} cannot hold {', '.join(parts)}, required by the "
            f"plan: {reason}",
            where=where, expected=expected, found=found,
            hint=f"save {', '.join(parts)} in a format that holds it (e.g. a torch.save dict, "
            "or pytest_itera.record.save_resume_checkpoint) next to it, and list that file as "
            "the resume checkpoint",
        )


def _save_hint(fmt: str | None, parts: list[str]) -> str:
    homes = _PART_HOME.get(fmt or "", {})
    placed = [f"{p} in {homes[p]}" if p in homes else p for p in parts]
    where = f" ({fmt}: {'; '.join(placed)})" if homes else ""
    return (f"save every required part{where}; pytest_itera.record.save_resume_checkpoint "
            "writes them all. If this file is not meant for resuming, list it as kind 'weights'")


def _overclaimed(record: CheckpointRecord, result: ReloadResult, where: str) -> Iterator[Finding]:
    absent = [p for p in record.claims if p not in result.parts]
    if not absent:
        return
    why = [f"{p} ({result.missing_reasons[p]})" if result.missing_reasons.get(p) else p
           for p in absent]
    yield Finding(
        f"the manifest claims {', '.join(why)} for {record.path}, which does not hold it",
        where=f"{where}.claims", expected=", ".join(record.claims),
        found=", ".join(result.parts) or "no part",
        hint="claims must say what the file holds: correct the manifest, or save those parts",
    )


# -------------------------------------------------------------- adapter-pinned


def adapter_pinned(ctx: Context, target: str | None) -> Iterator[Finding]:
    """An immutable base revision that adapter_config.json agrees with; weights that reload."""
    for index, record in _indexed(_adapters(ctx), target):
        where = f"{MANIFEST_FILE} $.adapters[{index}]"
        yield from _revision_findings(record, where)
        if record.base_path is not None:
            yield from _shipped_base(ctx, record, record.base_path, where)
        yield from _temp_name(ctx, record.base_model, f"{where}.base_model", "the manifest's "
                              "base_model")
        problem = _locate(ctx, record.path, where, "adapter")
        if problem is None and not (ctx.root / record.path).is_dir():
            problem = Finding(f"adapter {record.path} is a file, not an adapter folder",
                              where=f"{where}.path",
                              hint="list the folder that save_pretrained wrote "
                              "(adapter_config.json + adapter_model.safetensors)")
        if problem is not None:
            yield problem
            continue
        yield from _config_findings(ctx, record)
        yield from _reload_findings(ctx, record.path, None, where)
        result = ctx.reload(record.path, None)
        # A Trainer checkpoint of a LoRA run holds the adapter beside the training state.
        if result.ok and result.format not in ("peft", "hf-trainer"):
            yield Finding(f"adapter {record.path} holds {result.format!r} content, not a PEFT "
                          "adapter", where=f"{where}.path", expected="peft",
                          found=str(result.format))


def revision_problem(revision: str | None, shipped: bool) -> str | None:
    """Why a base revision does not pin the base forever, or None when it does."""
    if revision is None or not revision.strip():
        return "is missing (null)" if revision is None else "is empty"
    if shipped:
        if _SHA256.fullmatch(revision):
            return None
        return f"{revision!r} is not a sha256 (64 lowercase hex digits) of the shipped base"
    if _COMMIT.fullmatch(revision):
        return None
    if _SHA256.fullmatch(revision):
        return (f"{revision!r} is a sha256, which pins a base shipped in the campaign, but "
                "base_path is not set")
    if re.fullmatch(r"[0-9a-fA-F]{40}", revision):
        return f"{revision!r} is a commit id in upper case: write it in lower case"
    if _SHORT_HASH.fullmatch(revision):
        return (f"{revision!r} is a short commit hash ({len(revision)} hex digits): a prefix "
                "is not an id and can become ambiguous")
    name = revision.lower().removeprefix("refs/heads/")
    if name in _BRANCHES or revision.startswith("refs/heads/"):
        return f"{revision!r} is a branch: it moves with every push"
    return f"{revision!r} is a tag or branch name, not an immutable commit id: it can be moved"


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
    )


def _shipped_base(ctx: Context, record: AdapterRecord, base: str, where: str) -> Iterator[Finding]:
    """A base shipped in the campaign is pinned by its sha256: verify it byte for byte."""
    problem = _locate(ctx, base, f"{where}.base_path", "shipped base")
    if problem is not None:
        yield Finding(problem.message, where=f"{where}.base_path", hint="ship the base the adapter "
                      "was trained on, or record its hub id and 40-hex commit without base_path")
        return
    if not (ctx.root / base).is_file():
        yield Finding(f"shipped base {base} is a folder: base_revision pins one file's sha256",
                      where=f"{where}.base_path",
                      hint="set base_path to the base's weights file (e.g. model.safetensors)")
        return
    facts = ctx.facts(base)
    if facts.error is not None or facts.sha256 is None:
        yield Finding(f"shipped base {base} cannot be hashed: {facts.error}",
                      where=f"{where}.base_path")
        return
    pinned = record.base_revision or ""
    if _SHA256.fullmatch(pinned) and facts.sha256 != pinned:  # else revision_problem said why
        yield Finding(
            f"the shipped base {base} does not have the sha256 recorded as base_revision",
            where=f"{where}.base_revision", expected=pinned, found=facts.sha256,
            hint="the adapter was trained on another base, or the base changed: ship the "
            "exact base, or correct base_revision",
        )


def _config_findings(ctx: Context, record: AdapterRecord) -> Iterator[Finding]:
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
                      hint="save the adapter again with save_pretrained")
        return
    if not isinstance(config, dict):
        yield Finding(f"{rel} is not a JSON object", where=rel)
        return
    yield from _config_revision(record, rel, text, config)
    yield from _config_base(ctx, record, rel, text, config)


def _read_config(ctx: Context, rel: str) -> tuple[str | None, Finding | None]:
    """adapter_config.json as text: a regular file inside the folder, under the size cap."""
    inside = ctx.inside(rel)
    if isinstance(inside, str):
        return None, Finding(f"{rel} {inside}", where=rel)
    try:
        # O_NONBLOCK: a FIFO planted under that name must not block the session.
        fd = os.open(inside, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None, Finding(f"{rel} is missing: an adapter folder without its config cannot be "
                             "loaded", where=rel,
                             hint="save the adapter with save_pretrained, which writes it")
    except OSError as exc:
        return None, Finding(f"{rel} cannot be read: {os_reason(exc)}", where=rel)
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None, Finding(f"{rel} is not a regular file", where=rel)
        data = handle.read(ADAPTER_CONFIG_CAP + 1)
    if len(data) > ADAPTER_CONFIG_CAP:
        return None, Finding(f"{rel} is over {ADAPTER_CONFIG_CAP} bytes: not an adapter config",
                             where=rel)
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return None, Finding(f"{rel} is not UTF-8 (byte {exc.start})", where=rel)


def _json_where(rel: str, text: str, key: str) -> str:
    line, column = locate(text, [key])
    return f"{rel}:{line}:{column} $.{key}" if line is not None else f"{rel} $.{key}"


def _config_revision(
    record: AdapterRecord, rel: str, text: str, config: dict[str, Any]
) -> Iterator[Finding]:
    revision = config.get("revision")
    if revision == record.base_revision:
        return
    yield Finding(
        f"{rel} records revision {_shown(revision)}, the manifest records base_revision "
        f"{_shown(record.base_revision)}",
        where=_json_where(rel, text, "revision"),
        expected=_shown(record.base_revision), found=_shown(revision),
        hint="both must name the same base: PEFT loads the base at adapter_config.json's "
        "revision (null means whatever main is then); pass revision= to get_peft_model / "
        "LoraConfig when training, or correct the manifest",
    )


def _config_base(
    ctx: Context, record: AdapterRecord, rel: str, text: str, config: dict[str, Any]
) -> Iterator[Finding]:
    name = config.get("base_model_name_or_path")
    where = _json_where(rel, text, "base_model_name_or_path")
    if not isinstance(name, str) or not name:
        yield Finding(f"{rel} names no base model (base_model_name_or_path is {_shown(name)})",
                      where=where, expected=repr(record.base_model), found=_shown(name),
                      hint="save the adapter from a base loaded with from_pretrained(<hub id>), "
                      "or set base_model_name_or_path to the manifest's base_model")
        return
    inside = _name_in_campaign(ctx, name)
    temp = [] if inside is not None else list(
        _temp_name(ctx, name, where, "base_model_name_or_path"))
    if temp:
        yield from temp
        return
    agreeing = _agreeing_names(record)
    if (inside if inside is not None else name.rstrip("/")) not in agreeing:
        yield Finding(
            f"{rel} names base model {name!r}, the manifest's base_model is "
            f"{record.base_model!r}",
            where=where, expected=" or ".join(repr(n) for n in sorted(agreeing)),
            found=repr(name),
            hint="the adapter must name the base it was trained on: correct the manifest or "
            "adapter_config.json",
        )


def _name_in_campaign(ctx: Context, name: str) -> str | None:
    """The campaign-relative path a base name points at, when it points into the campaign.

    PEFT records the path the base was loaded from: an absolute path into the campaign
    folder (wherever it lived then; also under /tmp), or a relative one from the training
    script's directory that runs through the campaign folder ("out/camp/base")."""
    if os.path.isabs(name):
        return campaign_relative(ctx, name)  # the rule no-temp-paths applies to file text
    parts = PurePosixPath(name.replace("\\", "/")).parts
    if ctx.root.name in parts and ".." not in parts:
        last = len(parts) - 1 - parts[::-1].index(ctx.root.name)
        return "/".join(parts[last + 1:]) or "."
    return None


def _agreeing_names(record: AdapterRecord) -> set[str]:
    """Names that designate the base: the manifest's base_model; with a shipped base, also its
    path in the campaign and the folder holding it (a Hugging Face model folder)."""
    names = {record.base_model}
    if record.base_path is not None:
        names |= {record.base_path, record.base_path.rpartition("/")[0]}
    return {n.rstrip("/") for n in names if n}


def _temp_name(ctx: Context, name: str, where: str, what: str) -> Iterator[Finding]:
    from pytest_itera.scan import DEFAULT_TEMP_PATTERNS

    pattern = temp_pattern(name, (*DEFAULT_TEMP_PATTERNS, *ctx.options.temp_patterns))
    if pattern is not None:
        yield Finding(
            f"{what} {name!r} is a path into a temporary folder ({pattern})", where=where,
            hint="it will not exist after the rental: name the base by its hub id (pinned by "
            "its commit) or ship it in the campaign (base_path, pinned by its sha256)",
        )


def temp_pattern(name: str, patterns: Iterable[str]) -> str | None:
    """The temp pattern a path string falls under (directory patterns match as a prefix)."""
    value = name.replace("\\", "/")
    for pattern in patterns:
        folded = re.sub(r"\\+", "/", pattern)
        if folded.startswith("/") and folded.endswith("/"):
            if value == folded[:-1] or value.startswith(folded):
                return pattern
        elif folded.lower() in value.lower():
            return pattern
    return None


def _shown(value: object) -> str:
    return "null" if value is None else repr(value)


def has_artifacts(campaign: Campaign) -> bool:
    """The campaign lists checkpoints or adapters: something to reload."""
    man = campaign.manifest
    return man is not None and bool(man.checkpoints or man.adapters)


def located(ctx: Context, relpath: str) -> bool:
    """The path resolves to something a loader may be handed (inside the folder, present)."""
    return _locate(ctx, relpath, "", "") is None


CHECKS = (
    Check("checkpoint-reloads", "each checkpoint reloads in a fresh process, weights_only=True, "
          "finite, in its declared format", checkpoint_reloads, scope="checkpoint",
          targets=checkpoint_targets, needs=frozenset({"manifest"}), order=20, reloads=True),
    Check("resume-complete", "each resume checkpoint holds every part the plan requires and "
          "what the manifest claims", resume_complete, scope="checkpoint",
          targets=resume_targets, order=21, reloads=True),
    Check("adapter-pinned", "each adapter is pinned to an immutable base revision that its "
          "adapter_config.json agrees with, and reloads", adapter_pinned, scope="adapter",
          targets=adapter_targets, needs=frozenset({"manifest"}), order=22, reloads=True),
)


def pytest_itera_checks(config: object) -> tuple[Check, ...]:
    return CHECKS
