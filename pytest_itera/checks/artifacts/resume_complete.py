"""resume-complete: each resume checkpoint holds every part the plan requires of its
run, counted by content (a key that restores nothing does not count), and every part the
manifest claims for it; its content agrees with itself and its run (``checkpoint_content``).

``parts_problems`` is the same rule on a claimed list of parts: the recorder refuses at once
with its findings, before any file exists to reload.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING

from pytest_itera.checks.artifacts.checkpoint_content import resume_content
from pytest_itera.checks.artifacts.reloading import (
    checkpoints,
    indexed,
    load_error,
    locate_problem,
    located_kinds,
)
from pytest_itera.checks.artifacts.resume_parts import required_by, required_in, why_absent
from pytest_itera.checks.context import Check, Context
from pytest_itera.checks.model import Kind
from pytest_itera.core.campaign import (
    MANIFEST_FILE,
    PLAN_FILE,
    CheckpointRecord,
    Plan,
)
from pytest_itera.core.findings import Finding
from pytest_itera.core.findings import where as json_where
from pytest_itera.reload import PARTS, ReloadResult, formats

if TYPE_CHECKING:
    from pytest_itera.reload import PartFault


def resume_targets(ctx: Context) -> Iterable[str]:
    return {c.path for c in checkpoints(ctx) if c.kind == "resume"}


# Where each resume part lives, per format: the fix line's words, from reload/formats.py's table.
PART_HOME: dict[str, dict[str, str]] = {
    fmt.name: hints for fmt in formats.FORMATS if (hints := formats.hints(fmt.name))}


def resume_complete(ctx: Context, target: str | None) -> Iterator[Finding]:
    """A resume checkpoint holds every part the plan requires of its run (by content: a key
    that holds no restorable state does not count), and what the manifest claims."""
    plan = ctx.campaign.plan
    assert plan is not None  # needs={"plan", "manifest"}
    for index, record in indexed(checkpoints(ctx), target):
        if record.kind != "resume":
            continue
        where = json_where(MANIFEST_FILE, "checkpoints", index)
        problem = locate_problem(ctx, record.path, where, "resume checkpoint", "resume-complete")
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
                                  required_by(ctx, record.run))
        yield from _overclaimed(record, result, where)
        yield from resume_content(ctx, record, result, where)


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
                               required_in(plan, record.run), label=label))


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
    homes = PART_HOME.get(fmt or "", {})
    placed = [f"{p} in {homes[p]}" if p in homes else p for p in parts]
    where = f" ({fmt}: {'; '.join(placed)})" if homes else ""
    return (f"save every required part{where}; pytest_itera.record.save_resume_checkpoint "
            "writes them all. If this file is not meant for resuming, list it as kind 'weights'")


def _overclaimed(record: CheckpointRecord, result: ReloadResult, where: str) -> Iterator[Finding]:
    absent = [p for p in record.claims if p not in result.parts]
    if not absent:
        return
    why = [why_absent(result, p) for p in absent]
    yield Finding(
        f"the manifest claims {', '.join(why)} for {record.path}, which does not hold it",
        where=f"{where}.claims", expected=", ".join(record.claims),
        found=", ".join(result.parts) or "no part",
        hint="claims must say what the file holds: correct the manifest, or save those parts",
        code="resume-complete.overclaimed",
    )


KINDS: dict[str, Kind] = {
    **located_kinds("resume-complete", "resume checkpoint"),
    "resume-complete.no-reload": Kind(
        rule="the resume checkpoint does not reload, so which resume parts it holds is unknown",
        fix="fix its checkpoint-reloads item first"),
    "resume-complete.parts-missing": Kind(
        rule="the resume checkpoint lacks a part the plan's resume_state requires of its run "
        "(model weights only are no resume checkpoint)",
        fix="save every required part (pytest_itera.record.save_resume_checkpoint writes them "
        "all), or list the file as kind 'weights'"),
    "resume-complete.part-unrestorable": Kind(
        rule="a required resume part is present but empty, or its key holds no restorable "
        "state (a seed is no RNG state)",
        fix="save that part's state under the key the format reads; save_resume_checkpoint "
        "writes every part"),
    "resume-complete.format-cannot-hold": Kind(
        rule="the resume checkpoint's format cannot hold a part its run requires, by design "
        "(safetensors, or a Lightning .ckpt and RNG)",
        fix="save those parts next to it in a format that holds them and list that file, or "
        "drop them from the run's runs[].resume_state"),
    "resume-complete.overclaimed": Kind(
        rule="the manifest's claims for the checkpoint name a part the file does not hold",
        fix="claims must say what the file holds: correct the manifest, or save those parts"),
    "resume-complete.optimizer-mismatch": Kind(
        rule="the resume checkpoint's optimizer state does not fit its model (its tensors' "
        "shapes or count)",
        fix="save optimizer.state_dict() of the optimizer that trains this model, in the same "
        "checkpoint as model.state_dict()"),
    "resume-complete.optimizer-unproven": Kind(
        rule="whether the resume checkpoint's optimizer state fits its model cannot be proven "
        "(its parameters are not named)",
        fix="build the optimizer from model.named_parameters(), so that its state names them"),
    "resume-complete.optimizer-nonfinite": Kind(
        rule="the resume checkpoint's optimizer state holds NaN or inf values: a resumed step "
        "would turn the weights non-finite",
        fix="resume from the last checkpoint whose optimizer state is finite, or record the "
        "run as stopped by its non-finite rule"),
    "resume-complete.lr-disagrees": Kind(
        rule="the optimizer's per-group lr (initial_lr) is not its LR scheduler's _last_lr "
        "(base_lrs), exactly: it cannot resume as saved",
        fix="save the optimizer and the LR scheduler state together, after scheduler.step(); "
        "do not set a group's lr by hand"),
    "resume-complete.step-unproven": Kind(
        rule="a resumed_from names the checkpoint at a step, and the checkpoint stores no "
        "training step (or steps that disagree)",
        fix="save the step in the checkpoint's progress ({'step': N}); save_resume_checkpoint "
        "does"),
    "resume-complete.step-mismatch": Kind(
        rule="the step the checkpoint stores is not the resumed_from.step a run records for it",
        fix="list the checkpoint the run actually resumed from, with the step that checkpoint "
        "holds"),
    "resume-complete.never-trained": Kind(
        rule="a resumed run's own resume checkpoints are all still the checkpoint it resumed "
        "from (bytes, tensors, or step): no resume proven",
        fix="resume in a new process, train on, and save the resumed run's own checkpoint at "
        "its later step"),
}


CHECK = Check("resume-complete", "each resume checkpoint holds every part the plan requires and "
              "what the manifest claims", resume_complete, scope="checkpoint",
              targets=resume_targets, reloads=True,
              kinds=KINDS)
