"""Checkpoint and adapter checks: checkpoint-reloads, resume-complete, artifacts-required,
adapter-pinned (R1, R5, R6, R8).

A file that is present but cannot be reloaded is not a verified output. Every checkpoint
and adapter is reloaded through ``Context.reload``: a ``pytest_itera_reload`` hook first,
else a fresh interpreter (``pytest_itera.reload.Reloader``, ``weights_only=True``, on CPU).
Paths are resolved inside the campaign before anything is loaded.

Evidence, not declarations: resume parts count by their content (the reload child judges
them and reports typed ``PartFault``s); accepted runs and the must resume check must ship
their artifacts; an adapter's base is identified by its hub commit and, when shipped, its
tree digest (``pytest_itera.files.tree``) and its own record of its revision; the diverged
weights of a run stopped by its non-finite rule are evidence of the stop (``informational``).

Registered as the plugin ``itera.artifacts``; it also checks, once at session start, that
the reload interpreter (``--itera-python``) is usable, so a wrong one is one usage error,
not one failure per checkpoint.
"""

from __future__ import annotations

import dataclasses
import os
import re
import stat
from collections.abc import Iterable, Iterator, Sequence
from pathlib import PurePosixPath
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar

from pytest_itera.checks.artifacts.bases import base_beside, hub_refs, unproven_revision
from pytest_itera.checks.artifacts.checkpoint_content import resume_content, run_weights
from pytest_itera.checks.common.paths import campaign_relative
from pytest_itera.checks.context import Check, Context
from pytest_itera.core.campaign import (
    BASE_RECORD,
    COMMIT_HEX,
    MANIFEST_FILE,
    PLAN_FILE,
    SHA256_HEX,
    AdapterRecord,
    Campaign,
    CheckpointRecord,
    Plan,
    locate,
    parse_json,
)
from pytest_itera.core.findings import Finding
from pytest_itera.core.findings import where as json_where
from pytest_itera.core.text import is_blank
from pytest_itera.files.tree import DigestRefused, os_reason, tree_digest_of
from pytest_itera.reload import PARTS, ReloadResult, formats

if TYPE_CHECKING:
    from pytest_itera.reload import PartFault

ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_CONFIG_CAP = 1 << 20  # PEFT writes ~1 KiB; anything this big is not a config
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
                      where=json_where(MANIFEST_FILE, "checkpoints", records[1][0]),
                      hint="list each checkpoint once",
                      code="checkpoint-reloads.listed-twice")
    for index, record in records:
        where = json_where(MANIFEST_FILE, "checkpoints", index)
        problem = _locate(ctx, record.path, where, "checkpoint", "checkpoint-reloads")
        if problem is not None:
            yield problem
            continue
        stop = _stop_evidence(ctx, record)
        yield from _reload_findings(ctx, record.path, record.format, where,
                                    "checkpoint-reloads", diverged_ok=stop is not None)
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
            code="checkpoint-reloads.no-weights",
        )


def _stop_evidence(ctx: Context, record: CheckpointRecord) -> tuple[str, str] | None:
    """(the stop rule, the step) when the checkpoint's run was stopped by a non_finite_loss
    rule of the plan: its diverged weights are then evidence of the stop, not a fault."""
    plan, man = ctx.campaign.plan, ctx.campaign.manifest
    run = man.run(record.run) if man is not None else None
    if plan is None or run is None or run.outcome != "stopped" or run.stop is None:
        return None
    rule = next((r for r in plan.stop_rules if r.id == run.stop.rule), None)
    if rule is None or rule.kind != "non_finite_loss":
        return None
    return rule.id, (f"step {run.stop.step}" if run.stop.step is not None
                     else "its recorded stop (no step recorded)")


def informational(ctx: Context, check_id: str, target: str | None) -> tuple[str, ...]:
    """What a passing item knows but does not fail on, one sentence each: today, the
    non-finite weights of a run stopped by its non-finite rule (evidence of the stop).
    The pytest layer shows them in the item's report (user property ``itera_evidence``)."""
    if check_id != "checkpoint-reloads" or target is None:
        return ()
    notes = []
    for _, record in _indexed(_checkpoints(ctx), target):
        stop = _stop_evidence(ctx, record)
        if stop is None or _locate(ctx, record.path, "", "") is not None:
            continue
        result = ctx.reload(record.path, record.format)
        if result.nonfinite:
            notes.append(f"evidence of the stop at {stop[1]}: {record.path} holds non-finite "
                         f"model weights ({nonfinite_counts(result)}), as run {record.run}, "
                         f"stopped by its rule {stop[0]!r}, diverged; informational, not a "
                         "failure")
    return tuple(notes)


def _locate(ctx: Context, relpath: str, where: str, what: str,
            check: str = "located") -> Finding | None:
    """Why ``relpath`` cannot be handed to a loader, or None: inside, present, file or folder.
    ``check``: the id of the check that reports it (the codes' prefix)."""
    inside = ctx.inside(relpath)
    if isinstance(inside, str):
        return Finding(f"{what} path {relpath!r} {inside}: it is not loaded",
                       where=f"{where}.path",
                       hint="copy the file itself into the campaign folder"
                       if inside.kind == "link-leaves" else
                       "record paths relative to the campaign folder, and keep the files "
                       "inside it",
                       code=f"{check}.outside")
    if ctx.stored is not None and ctx.stored.over_cap(relpath) is not None:
        return None  # in the store, over the cache cap: ctx.reload says it cannot be proven
    try:
        mode = os.lstat(inside).st_mode  # a real path: no link left to follow
    except FileNotFoundError:
        return Finding(f"{what} {relpath} is missing", where=f"{where}.path",
                       hint="retrieve it before the rental ends, or correct the manifest",
                       code=f"{check}.missing")
    except OSError as exc:
        return Finding(f"{what} {relpath} cannot be read: {os_reason(exc)}", where=f"{where}.path",
                       code=f"{check}.unreadable")
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        # A FIFO or device would block a loader: it is never opened.
        return Finding(f"{what} {relpath} is neither a regular file nor a folder",
                       where=f"{where}.path",
                       code=f"{check}.not-a-file")
    return None


def load_error(result: ReloadResult) -> str | None:
    """The cause when the checkpoint did not load at all; None when it loaded (even if its
    weights are non-finite: judged apart, as its format against the claim)."""
    if result.ok:
        return None
    if result.failure == "nonfinite":
        return None
    return result.cause or f"{result.path}: not loaded (the loader gave no cause)"


def _reload_findings(
    ctx: Context, relpath: str, claimed: str | None, where: str, check: str, *,
    diverged_ok: bool = False
) -> Iterator[Finding]:
    """``diverged_ok``: non-finite weights are the expected evidence of a stop (the
    checkpoint must still reload; see :func:`informational`)."""
    result = ctx.reload(relpath, claimed)
    error = load_error(result)
    if result.failure == "not-copied":  # it may reload: that is not proven, so not passed
        yield Finding(error or relpath, where=where, code=f"{check}.not-copied")
        return
    if error is not None:
        # Typed, not parsed: a file that holds code never gets a load or re-save hint.
        yield Finding(f"does not reload in a fresh process with weights_only=True: {error}",
                      where=where,
                      hint=MODULE_OBJECTS_HINT if result.failure == "whole-module"
                      else code_hint(result.holds_code, claimed) if result.holds_code
                      else _load_hint(result.failure),
                      code=f"{check}.no-reload")
    if not result.ok and result.nonfinite and not diverged_ok:
        yield _nonfinite_finding(result, where, check)
    if claimed is not None and not _agrees(claimed, result.format, loaded=error is None):
        yield Finding(
            f"{relpath} holds {result.format!r} content, but the manifest declares format "
            f"{claimed!r}",
            where=f"{where}.format", expected=claimed, found=result.format,
            hint=_format_hint(result.format),
            code=f"{check}.format",
        )


def _agrees(claimed: str, found: str | None, *, loaded: bool) -> bool:
    """A Lightning .ckpt is a torch.save file: declaring it 'torch' is not wrong; and only its
    loaded keys tell it from another torch.save file, so one that did not load is not said
    to be plain 'torch'."""
    return found is None or found == claimed or (claimed, found) == ("torch", "lightning") \
        or (not loaded and (claimed, found) == ("lightning", "torch"))


def nonfinite_counts(result: ReloadResult) -> str:
    """``1 NaN value in 1 tensor``, ``3 NaN and 2 inf values in 2 tensors``; a hook's verdict
    without counts: ``NaN or inf values in 2 tensors``."""
    tensors = max(result.nonfinite_tensors, len(result.nonfinite))
    nan, inf = result.nan_values, result.inf_values
    counted = " and ".join(f"{n} {what}" for n, what in ((nan, "NaN"), (inf, "inf")) if n)
    values = f"{counted} value{'s' if nan + inf != 1 else ''}" if counted else \
        "NaN or inf values"
    return f"{values} in {tensors} tensor{'s' if tensors != 1 else ''}"


def _nonfinite_finding(result: ReloadResult, where: str, check: str) -> Finding:
    total = max(result.nonfinite_tensors, len(result.nonfinite))
    shown = ", ".join(result.nonfinite)
    more = f" (and {total - len(result.nonfinite)} more)" if total > len(result.nonfinite) else ""
    return Finding(
        f"{result.path} holds non-finite model weights: {nonfinite_counts(result)}",
        where=where, found=shown + more,
        hint="training diverged before this save: resume from the last finite checkpoint, "
        "or record the run as stopped by its non-finite stop rule (its last checkpoint is "
        "then evidence of the stop)",
        code=f"{check}.non-finite",
    )


CODE_HINT = ("the file holds code that runs when it is unpickled: treat it as hostile; do "
             "not load, convert or re-save it in any way (no weights_only=False, no "
             "allowlisting); remove it, find out how it got into the campaign, and deliver "
             "the weights the training run itself wrote as plain tensors")
MODULE_OBJECTS_HINT = (
    "the file pickles whole torch.nn module objects (torch.save(model)), which "
    "weights_only=True cannot load: do not load this file; from the training environment, "
    "deliver torch.save(model.state_dict(), ...) (plain tensors) instead")


def data_objects_hint(names: tuple[str, ...], fmt: str | None = None) -> str:
    """The fix for standard-library data pickled as objects (formats.DATA_OBJECTS); the
    word on Lightning's hyperparameters only where the file may be Lightning's (``fmt``:
    the format the manifest declares, None when unknown)."""
    fixes = "; ".join(dict.fromkeys(formats.DATA_OBJECTS[n][1] for n in names))
    lightning = ("Lightning's save_hyperparameters() keeps its arguments as given (or leave "
                 "one out: save_hyperparameters(ignore=[...])); " if fmt in (None, "lightning")
                 else "")
    return (f"save plain data instead ({fixes}): {lightning}then save the checkpoint again "
            "from the run; do not load this file with weights_only=False to convert it")


def code_hint(names: tuple[str, ...], fmt: str | None = None) -> str:
    """What to do about a file whose pickles would call ``names``: torch's own nn module
    classes are a whole-module save, standard-library data objects (a pathlib path, an
    argparse.Namespace) plain data saved as objects: format mistakes; anything else is
    hostile. ``fmt``: the format the manifest declares."""
    if names and all(n.startswith("torch.nn.modules.") for n in names):
        return MODULE_OBJECTS_HINT
    if names and all(n in formats.DATA_OBJECTS for n in names):
        return data_objects_hint(names, fmt)
    return CODE_HINT


_LOAD_HINTS = {
    "weights-only": "loading it needs weights_only=False, which runs code from the file: never "
                    "do that; save tensors and plain containers only (state_dict()s, numbers, "
                    "strings) or safetensors, from a trusted process",
    "timeout": "raise --itera-timeout (ini itera_timeout) if the checkpoint is that large; a "
               "load that never ends is a broken file",
    "interpreter": "pass --itera-python with the training environment's Python (torch >= 2.10)",
    "missing-package": "install it in the reload interpreter (--itera-python)",
    "memory": "the checkpoint needs more memory than the reload allows: check its size",
}


def _load_hint(failure: str | None) -> str:
    """The fix line for a checkpoint that did not load, by the typed kind of its failure."""
    return _LOAD_HINTS.get(failure or "", "the file is truncated, corrupt or not a checkpoint: "
                           "retrieve it again, or save it again from the run")


def _format_hint(found: str | None) -> str:
    if found == "peft":
        return ("a PEFT adapter folder belongs in adapters (adapter-pinned reloads it); or list "
                "its weights file here: adapter_model.safetensors with format 'safetensors', "
                "adapter_model.bin (save_pretrained(safe_serialization=False)) with format "
                "'torch'")
    return "correct the manifest's format: the content decides, not the file name"


# ------------------------------------------------------------- resume-complete

# Where each resume part lives, per format: the fix line's words, from reload/formats.py's table.
_PART_HOME: dict[str, dict[str, str]] = {
    fmt.name: hints for fmt in formats.FORMATS if (hints := formats.hints(fmt.name))}


def resume_complete(ctx: Context, target: str | None) -> Iterator[Finding]:
    """A resume checkpoint holds every part the plan requires of its run (by content: a key
    that holds no restorable state does not count), and what the manifest claims."""
    plan = ctx.campaign.plan
    assert plan is not None  # needs={"plan", "manifest"}
    for index, record in _indexed(_checkpoints(ctx), target):
        if record.kind != "resume":
            continue
        where = json_where(MANIFEST_FILE, "checkpoints", index)
        problem = _locate(ctx, record.path, where, "resume checkpoint", "resume-complete")
        if problem is not None:
            yield problem
            continue
        result = ctx.reload(record.path, record.format)
        error = load_error(result)
        if error is not None:
            yield Finding(f"the resume parts of {record.path} are unknown: it does not reload "
                          f"({error})", where=where,
                          hint=f"fix checkpoint-reloads[{record.path}] first",
                          code="resume-complete.no-reload")
            continue
        required = [p for p in PARTS if p in plan.resume_state_of(record.run)]
        yield from _missing_parts(record, result, required, where,
                                  _required_by(ctx, record.run))
        yield from _overclaimed(record, result, where)
        yield from resume_content(ctx, record, result, where)


def _required_by(ctx: Context, run_id: str) -> str:
    """Where the plan states the resume parts of a run's checkpoints."""
    return _required_in(ctx.campaign.plan, run_id)


def _required_in(plan: Plan | None, run_id: str) -> str:
    planned = plan.run(run_id) if plan is not None else None
    if planned is not None and planned.resume_state is not None:
        return f"the plan's resume_state for run {run_id}"
    return "the plan's checkpoint_policy.resume_state"


def parts_problems(plan: Plan, record: CheckpointRecord, parts: Sequence[str], *,
                   label: str | None = None) -> list[Finding]:
    """``resume-complete``'s rule on a resume checkpoint of ``record``'s format said to hold
    ``parts``: the required parts it lacks, and those its format cannot hold by design. The
    recorder refuses at once with these findings (``add_checkpoint``: the parts it claims;
    the Lightning callback at creation: every part a ``.ckpt`` can hold, ``label`` naming
    them, as no file exists yet). The file's content is judged at closure."""
    known = {fmt.name for fmt in formats.FORMATS}
    absent = formats.absent(record.format) if record.format in known else {}
    result = ReloadResult(record.path, True, record.format, None,
                          parts=tuple(p for p in parts if p not in absent),
                          missing_reasons=MappingProxyType(absent))
    required = [p for p in PARTS if p in plan.resume_state_of(record.run)]
    planned = plan.run(record.run)
    where = (json_where(PLAN_FILE, "runs", plan.runs.index(planned), "resume_state")
             if planned is not None and planned.resume_state is not None
             else json_where(PLAN_FILE, "checkpoint_policy", "resume_state"))
    return list(_missing_parts(record, result, required, where,
                               _required_in(plan, record.run), label=label))


# What restores each part, for the fix line of a part whose key holds no such state.
_STATE_OF = {
    "model": "model.state_dict()",
    "optimizer": "optimizer.state_dict() ('state' and 'param_groups'; a stateless SGD's "
                 "'state' is {})",
    "progress": "the step and epoch counts as numbers (e.g. {'step': 140, 'epoch': 2})",
    "scheduler": "scheduler.state_dict() (it holds 'last_epoch')",
    "scaler": "scaler.state_dict() of the GradScaler in use (it holds 'scale'); a disabled "
              "scaler saves {}: then do not require scaler",
    "rng": "the generators' states: torch.get_rng_state() (and torch.cuda.get_rng_state_all()), "
           "numpy.random.get_state(), random.getstate()",
    "data": "the data position (the sampler's state, the batches consumed)",
}


def _fault_finding(record: CheckpointRecord, fault: PartFault, where: str, expected: str,
                   found: str) -> Finding:
    if fault.kind == "empty":
        message = (f"resume checkpoint {record.path}: {fault.part} is present but empty "
                   f"({fault.key!r} holds {fault.detail}): it restores nothing")
    else:
        message = (f"resume checkpoint {record.path} holds no restorable {fault.part}: "
                   f"{fault.key!r} {fault.detail}")
    return Finding(message, where=where, expected=expected, found=found,
                   hint=f"save {_STATE_OF[fault.part]} under {fault.key!r}; "
                   "pytest_itera.record.save_resume_checkpoint writes every part",
                   code="resume-complete.part-unrestorable")


def _missing_parts(
    record: CheckpointRecord, result: ReloadResult, required: list[str], where: str,
    required_by: str, *, label: str | None = None,
) -> Iterator[Finding]:
    subject = label if label is not None else f"resume checkpoint {record.path}"
    missing = [p for p in required if p not in result.parts]
    expected = ", ".join(required)
    found = ", ".join(result.parts) or "no part"
    by_design: dict[str, list[str]] = {}
    faults = [f for p in missing if (f := result.fault(p)) is not None]
    for part in missing:
        reason = result.missing_reasons.get(part)
        if reason and result.fault(part) is None:
            by_design.setdefault(reason, []).append(part)
    lacking = [p for p in missing
               if not result.missing_reasons.get(p) and result.fault(p) is None]
    if lacking:
        only = (" (it holds model weights only: a state dict is not a resume checkpoint)"
                if result.parts == ("model",) else "")
        yield Finding(
            f"{subject} lacks {', '.join(lacking)}, required by "
            f"{required_by}{only}",
            where=where, expected=expected, found=found,
            hint=_save_hint(result.format, lacking),
            code="resume-complete.parts-missing",
        )
    for fault in faults:
        yield _fault_finding(record, fault, where, expected, found)
    for reason, parts in by_design.items():
        yield Finding(
            f"{subject} cannot hold {', '.join(parts)}, required by "
            f"{required_by}: {reason}",
            where=where, expected=expected, found=found,
            hint=f"save {', '.join(parts)} in a format that holds it (e.g. a torch.save dict, "
            "or pytest_itera.record.save_resume_checkpoint) next to it, and list that file as "
            "the resume checkpoint; or, if this run cannot hold it by design, say so in the "
            "plan: runs[].resume_state for this run",
            code="resume-complete.format-cannot-hold",
        )


def _save_hint(fmt: str | None, parts: list[str]) -> str:
    homes = _PART_HOME.get(fmt or "", {})
    placed = [f"{p} in {homes[p]}" if p in homes else p for p in parts]
    where = f" ({fmt}: {'; '.join(placed)})" if homes else ""
    return (f"save every required part{where}; pytest_itera.record.save_resume_checkpoint "
            "writes them all. If this file is not meant for resuming, list it as kind 'weights'")


def _why_absent(result: ReloadResult, part: str) -> str:
    """``rng (not restorable)``, ``optimizer (present but empty)``, ``rng (<by design>)``."""
    fault = result.fault(part)
    if fault is not None:
        return f"{part} ({'present but empty' if fault.kind == 'empty' else 'not restorable'})"
    reason = result.missing_reasons.get(part)
    return f"{part} ({reason})" if reason else part


def _overclaimed(record: CheckpointRecord, result: ReloadResult, where: str) -> Iterator[Finding]:
    absent = [p for p in record.claims if p not in result.parts]
    if not absent:
        return
    why = [_why_absent(result, p) for p in absent]
    yield Finding(
        f"the manifest claims {', '.join(why)} for {record.path}, which does not hold it",
        where=f"{where}.claims", expected=", ".join(record.claims),
        found=", ".join(result.parts) or "no part",
        hint="claims must say what the file holds: correct the manifest, or save those parts",
        code="resume-complete.overclaimed",
    )


# ------------------------------------------------------------ artifacts-required

_DELIVERING = ("control", "variant")


def required_targets(ctx: Context) -> Iterable[str]:
    """The runs that must ship artifacts: every accepted control and variant, and every must
    resume check that ran (not dropped)."""
    plan, man = ctx.campaign.plan, ctx.campaign.manifest
    if plan is None or man is None:
        return set()
    out = set()
    for run in man.runs:
        planned = plan.run(run.id)
        if planned is None:
            continue
        delivers = planned.role in _DELIVERING and run.outcome == "accepted"
        resumes = planned.role == "resume_check" and planned.category == "must" and \
            run.outcome != "dropped"
        if delivers or resumes:
            out.add(run.id)
    return out


def artifacts_required(ctx: Context, target: str | None) -> Iterator[Finding]:
    """An accepted control or variant ships a reloadable artifact (R1); the must resume check
    ships a resume checkpoint whose parts cover its resume state (R6). Whether each artifact
    reloads is its own checkpoint-reloads / adapter-pinned item (both count for the run)."""
    plan, man = ctx.campaign.plan, ctx.campaign.manifest
    assert plan is not None
    assert man is not None
    assert target is not None
    run, planned = man.run(target), plan.run(target)
    if run is None or planned is None:
        return
    where = f"{MANIFEST_FILE} $.runs[{man.run_position(target)}]"
    if planned.role == "resume_check":
        yield from _resume_evidence(ctx, target, where)
        return
    if any(c.run == target for c in man.checkpoints) or any(a.run == target for a in man.adapters):
        yield from run_weights(ctx, target, where, lambda c: reloaded(ctx, c))
        return
    yield Finding(
        f"accepted {planned.role} run {target} ships no artifact: no checkpoint or adapter of "
        "it is listed in the manifest",
        where=where, expected="at least one checkpoint or adapter with run "
        f"{target!r}", found="none",
        hint="a compared run delivers a reloadable artifact (R1): save its weights "
        "(torch.save(model.state_dict()), safetensors, save_pretrained) into the campaign and "
        "list them in checkpoints (kind 'weights' or 'resume'), or its adapter in adapters",
        code="artifacts-required.no-artifact",
    )


def reloaded(ctx: Context, record: CheckpointRecord) -> ReloadResult | None:
    """The verdict on a listed checkpoint when it reloads (memoised), else None: whether it
    reloads is its own checkpoint-reloads item."""
    if _locate(ctx, record.path, "", "") is not None:
        return None
    result = ctx.reload(record.path, record.format)
    return result if load_error(result) is None else None


def _resume_evidence(ctx: Context, run_id: str, where: str) -> Iterator[Finding]:
    plan, man = ctx.campaign.plan, ctx.campaign.manifest
    assert plan is not None
    assert man is not None
    run = man.run(run_id)
    assert run is not None
    required = [p for p in PARTS if p in plan.resume_state_of(run_id)]
    own = [c for c in man.checkpoints if c.run == run_id]
    candidates = [c for c in own if c.kind == "resume"]
    if run.resumed_from is not None:
        candidates += [c for c in man.checkpoints if c.path == run.resumed_from.checkpoint
                       and c.kind == "resume" and c not in candidates]
    why = []
    for record in candidates:
        if _locate(ctx, record.path, "", "") is not None:
            why.append(f"{record.path} is not in the campaign")
            continue
        result = ctx.reload(record.path, record.format)
        error = load_error(result)
        if error is not None:
            why.append(f"{record.path} does not reload")
            continue
        lacking = [_why_absent(result, p) for p in required if p not in result.parts]
        if not lacking:
            return
        why.append(f"{record.path} lacks {', '.join(lacking)}")
    expected = (f"a listed resume checkpoint of run {run_id} (or the one its resumed_from "
                f"names) holding {', '.join(required)}")
    fix = ("save a complete resume checkpoint (pytest_itera.record.save_resume_checkpoint), "
           "reload it in a new process to resume, and list it with kind 'resume' (or record "
           "runs[].resumed_from naming the listed resume checkpoint it resumed from)")
    if not candidates:
        weights = [c.path for c in own]
        dodge = (f": its checkpoints are all declared 'weights' ({', '.join(weights)}), which "
                 "proves nothing about resuming") if weights else ""
        yield Finding(
            f"must resume-check run {run_id} ships no resume checkpoint{dodge}",
            where=where, expected=expected, found="no resume checkpoint", hint=fix,
            code="artifacts-required.no-resume-checkpoint")
        return
    yield Finding(
        f"no resume checkpoint of must resume-check run {run_id} covers its resume state "
        f"({', '.join(required)}; required by {_required_by(ctx, run_id)})",
        where=where, expected=expected, found="; ".join(why), hint=fix,
        code="artifacts-required.resume-state-uncovered")


# -------------------------------------------------------------- adapter-pinned


def adapter_pinned(ctx: Context, target: str | None) -> Iterator[Finding]:
    """The base is identified by revision and content: an immutable hub commit (or, for a
    base shipped in the campaign, null) that adapter_config.json and the shipped base's own
    record agree with, the shipped base's files hashing to base_digest; weights that reload."""
    man = ctx.campaign.manifest
    assert man is not None  # needs={"manifest"}
    raw = ctx.campaign.manifest_data.get("adapters") \
        if isinstance(ctx.campaign.manifest_data, dict) else None
    for index, record in _indexed(_adapters(ctx), target):
        where = json_where(MANIFEST_FILE, "adapters", index)
        entry = raw[index] if isinstance(raw, list) and index < len(raw) else None
        if man.version >= 2:
            yield from _identity(ctx, record, where, entry)
        else:
            yield from _identity_v1(ctx, record, where)
        yield from _temp_name(ctx, record.base_model, f"{where}.base_model", "the manifest's "
                              "base_model")
        problem = _locate(ctx, record.path, where, "adapter", "adapter-pinned")
        if problem is None and not (ctx.root / record.path).is_dir():
            problem = Finding(f"adapter {record.path} is a file, not an adapter folder",
                              where=f"{where}.path",
                              hint="list the folder that save_pretrained wrote "
                              "(adapter_config.json + adapter_model.safetensors)",
                              code="adapter-pinned.not-a-folder")
        if problem is not None:
            yield problem
            continue
        yield from _config_findings(ctx, record)
        yield from _reload_findings(ctx, record.path, None, where, "adapter-pinned")
        result = ctx.reload(record.path, None)
        # A Trainer checkpoint of a LoRA run holds the adapter beside the training state.
        if result.ok and result.format not in ("peft", "hf-trainer"):
            yield Finding(f"adapter {record.path} holds {result.format!r} content, not a PEFT "
                          "adapter", where=f"{where}.path", expected="peft",
                          found=str(result.format),
                          code="adapter-pinned.not-an-adapter")


# ---- itera-manifest/2: a hub commit, and for a shipped base its tree digest

BASE_RECORD_CAP = 1 << 20
_SNAPSHOT = re.compile(r"(?:^|/)snapshots/([0-9a-f]{40})(?:/|$)")
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


def _identity(ctx: Context, record: AdapterRecord, where: str,
              entry: Any) -> Iterator[Finding]:
    base = record.base_path
    if isinstance(entry, dict) and "base_revision" not in entry:
        yield Finding(
            f"adapter {record.path} records no base_revision (the key is missing)",
            where=where, expected=_COMMIT_EXPECTED, found="no base_revision key",
            hint="write base_revision explicitly: the base's 40-hex hub commit, or null for a "
            "base shipped in the campaign and pinned by base_path and base_digest",
            code="adapter-pinned.no-revision",
        )
    elif record.base_revision is None:
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
        yield from _shipped_base(ctx, record, base, where)
        return
    beside = base_beside(ctx, record, _adapters(ctx))
    if beside is not None:
        yield from _base_beside(ctx, record, beside, where)
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
    return ctx.entry(name.rstrip("/")) is not None or _name_in_campaign(ctx, name) is not None


def _base_missing(ctx: Context, base: str, where: str) -> Finding | None:
    """Why a shipped base cannot be read where base_path says (any manifest version)."""
    problem = _locate(ctx, base, f"{where}.base_path", "shipped base", "adapter-pinned")
    if problem is None:
        return None
    return Finding(problem.message, where=f"{where}.base_path", hint="ship the base the adapter "
                   "was trained on, or record its hub id and 40-hex commit without base_path",
                   code=problem.code)


def _shipped_base(ctx: Context, record: AdapterRecord, base: str, where: str) -> Iterator[Finding]:
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
        text, problem = _read_small_json(ctx, rel, BASE_RECORD_CAP)
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
                              '"<40-hex commit>" or null}', found=_clip(text),
                              code="adapter-pinned.base-record-revision")
        if problem is not None:
            yield problem
        elif isinstance(data, dict):
            recorded.append((rel, data["revision"]))
            model = data.get("model")
            if isinstance(model, str) and model.rstrip("/") not in _agreeing_names(record):
                yield Finding(
                    f"{rel} records model {model!r}, the manifest's base_model is "
                    f"{record.base_model!r}", where=_json_where(rel, text or "", "model"),
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
                f"shipped base {base} records revision {_shown(revision)} ({source}), the "
                f"manifest records base_revision {_shown(record.base_revision)}",
                where=f"{where}.base_revision", expected=_shown(revision),
                found=_shown(record.base_revision),
                hint="the adapter must name the base it was trained on: its commit is the one "
                "the shipped base was fetched at (or null for a base that is on no hub)",
                code="adapter-pinned.base-revision-differs",
            )


def _base_beside(ctx: Context, record: AdapterRecord, base: str,
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


def _clip(text: str | None, limit: int = 80) -> str:
    text = (text or "").strip()
    return text if len(text) <= limit else text[:limit - 1] + "…"


# ---- itera-manifest/1: the sha256 of one file (read, and told what it cannot prove)


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
        yield from _shipped_base_v1(ctx, record, record.base_path, where)


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


def _shipped_base_v1(ctx: Context, record: AdapterRecord, base: str,
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
    return _read_small_json(ctx, rel, ADAPTER_CONFIG_CAP, missing=Finding(
        f"{rel} is missing: an adapter folder without its config cannot be loaded", where=rel,
        hint="save the adapter with save_pretrained, which writes it",
        code="adapter-pinned.config-missing"))


def _read_small_json(ctx: Context, rel: str, cap: int,
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
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None, Finding(f"{rel} is not a regular file", where=rel,
                                 code="adapter-pinned.document-not-a-file")
        data = handle.read(cap + 1)
    if len(data) > cap:
        return None, Finding(f"{rel} is over {cap} bytes: not what it should hold", where=rel,
                             code="adapter-pinned.document-too-large")
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return None, Finding(f"{rel} is not UTF-8 (byte {exc.start})", where=rel,
                             code="adapter-pinned.document-not-utf8")


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
        code="adapter-pinned.config-revision",
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
                      "or set base_model_name_or_path to the manifest's base_model",
                      code="adapter-pinned.config-no-base")
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
            code="adapter-pinned.config-base-differs",
        )


def _name_in_campaign(ctx: Context, name: str) -> str | None:
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


def _agreeing_names(record: AdapterRecord) -> set[str]:
    """Names that designate the base: the manifest's base_model; with a shipped base, also its
    path in the campaign and the folder holding it (a Hugging Face model folder)."""
    names = {record.base_model}
    if record.base_path is not None:
        names |= {record.base_path, record.base_path.rpartition("/")[0]}
    return {n.rstrip("/") for n in names if n}


def _temp_name(ctx: Context, name: str, where: str, what: str) -> Iterator[Finding]:
    from pytest_itera.files.scan import temp_pattern_of

    pattern = temp_pattern_of(name, ctx.matcher())
    if pattern is not None:
        yield Finding(
            f"{what} {name!r} is a path into a temporary folder ({pattern})", where=where,
            hint="it will not exist after the rental: name the base by its hub id (pinned by "
            "its commit) or ship it in the campaign (base_path, pinned by its sha256)",
            code="adapter-pinned.temp-path",
        )


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
    Check("adapter-pinned", "each adapter's base is identified by an immutable revision and, "
          "when shipped, its tree digest, which adapter_config.json and the base agree with; "
          "the adapter reloads", adapter_pinned, scope="adapter",
          targets=adapter_targets, needs=frozenset({"manifest"}), order=22, reloads=True),
    Check("artifacts-required", "each accepted control and variant ships an artifact; the must "
          "resume check ships a resume checkpoint covering its resume state",
          # Not reloads=True: its targets are run ids, not paths to hand the reload server
          # ahead; the resume check's checkpoints are reloaded when it asks (memoised).
          artifacts_required, scope="run", targets=required_targets, order=23),
)


def pytest_itera_checks(config: object) -> tuple[Check, ...]:
    return CHECKS
