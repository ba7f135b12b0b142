"""artifacts-required (R1, R6): the runs whose result is compared ship their evidence.

An accepted control or variant ships a reloadable artifact, and its weights are its own (not
another deliverable run's, of one shape, of its config's sizes: ``checkpoint_content``); the
must resume check ships a resume checkpoint covering its resume state. Whether each artifact
reloads is its own checkpoint-reloads / adapter-pinned item.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from pytest_itera.checks.artifacts.checkpoint_content import run_weights
from pytest_itera.checks.artifacts.reloading import load_error, locate_problem
from pytest_itera.checks.artifacts.resume_parts import required_by, why_absent
from pytest_itera.checks.context import Check, Context
from pytest_itera.checks.model import Kind
from pytest_itera.core.campaign import (
    MANIFEST_FILE,
    CheckpointRecord,
)
from pytest_itera.core.findings import Finding
from pytest_itera.reload import PARTS, ReloadResult

if TYPE_CHECKING:
    pass


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
    if locate_problem(ctx, record.path, "", "") is not None:
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
        if locate_problem(ctx, record.path, "", "") is not None:
            why.append(f"{record.path} is not in the campaign")
            continue
        result = ctx.reload(record.path, record.format)
        error = load_error(result)
        if error is not None:
            why.append(f"{record.path} does not reload")
            continue
        lacking = [why_absent(result, p) for p in required if p not in result.parts]
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
        f"({', '.join(required)}; required by {required_by(ctx, run_id)})",
        where=where, expected=expected, found="; ".join(why), hint=fix,
        code="artifacts-required.resume-state-uncovered")


KINDS: dict[str, Kind] = {
    "artifacts-required.no-artifact": Kind(
        rule="an accepted control or variant lists no checkpoint or adapter of its own in the "
        "manifest",
        fix="save its weights into the campaign and list them in checkpoints (or its adapter "
        "in adapters)"),
    "artifacts-required.no-resume-checkpoint": Kind(
        rule="the must resume-check run lists no resume checkpoint (declaring every checkpoint "
        "'weights' does not dodge it)",
        fix="save a complete resume checkpoint (save_resume_checkpoint), resume from it in a "
        "new process, list it with kind 'resume'"),
    "artifacts-required.resume-state-uncovered": Kind(
        rule="no resume checkpoint of the must resume-check run (its own, or its "
        "resumed_from's) holds every part of its resume state",
        fix="save a complete resume checkpoint (pytest_itera.record.save_resume_checkpoint) "
        "and list it with kind 'resume'"),
    "artifacts-required.same-weights": Kind(
        rule="two deliverable runs ship the same weights (the same bytes, or the same model "
        "tensors in other bytes)",
        fix="ship the weights each run trained itself; a run that trained nothing of its own "
        "is not a deliverable"),
    "artifacts-required.shapes-differ": Kind(
        rule="two checkpoints of one run hold a tensor they share at different shapes: they "
        "are not checkpoints of one model",
        fix="one of them belongs to another run or configuration: ship this run's own "
        "checkpoints"),
    "artifacts-required.config-shapes": Kind(
        rule="a checkpoint of the run holds no tensor with a layer size its config states "
        "(width, hidden_size, d_model, ...)",
        fix="ship the weights this run trained with its own config"),
}


CHECK = Check("artifacts-required", "each accepted control and variant ships an artifact; the must "
              "resume check ships a resume checkpoint covering its resume state",
              # Not reloads=True: its targets are run ids, not paths to hand the reload server
              # ahead; the resume check's checkpoints are reloaded when it asks (memoised).
              artifacts_required, scope="run", targets=required_targets,
              kinds=KINDS)
