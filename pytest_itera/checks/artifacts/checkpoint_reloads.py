"""checkpoint-reloads: each listed checkpoint loads in a fresh interpreter,
``weights_only=True``, finite, in the format the manifest declares.

A file that is present but cannot be reloaded is not a verified output. The diverged weights
of a run stopped by its non-finite stop rule are the evidence of that stop, not a fault: the
item passes and says so (``informational``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from pytest_itera.checks.artifacts.reloading import (
    checkpoints,
    indexed,
    load_error,
    locate_problem,
    located_kinds,
    nonfinite_counts,
    reload_findings,
    reload_kinds,
)
from pytest_itera.checks.context import Check, Context
from pytest_itera.checks.model import Kind
from pytest_itera.core.campaign import (
    MANIFEST_FILE,
    CheckpointRecord,
)
from pytest_itera.core.findings import Finding
from pytest_itera.core.findings import where as json_where

if TYPE_CHECKING:
    pass


def checkpoint_targets(ctx: Context) -> Iterable[str]:
    return {c.path for c in checkpoints(ctx)}


def checkpoint_reloads(ctx: Context, target: str | None) -> Iterator[Finding]:
    """Each listed checkpoint loads in a fresh interpreter, finite, in its claimed format."""
    records = indexed(checkpoints(ctx), target)
    if len(records) > 1:
        yield Finding(f"{target} is listed {len(records)} times in checkpoints",
                      where=json_where(MANIFEST_FILE, "checkpoints", records[1][0]),
                      hint="list each checkpoint once",
                      code="checkpoint-reloads.listed-twice")
    for index, record in records:
        where = json_where(MANIFEST_FILE, "checkpoints", index)
        problem = locate_problem(ctx, record.path, where, "checkpoint", "checkpoint-reloads")
        if problem is not None:
            yield problem
            continue
        stop = _stop_evidence(ctx, record)
        yield from reload_findings(ctx, record.path, record.format, where,
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
    for _, record in indexed(checkpoints(ctx), target):
        stop = _stop_evidence(ctx, record)
        if stop is None or locate_problem(ctx, record.path, "", "") is not None:
            continue
        result = ctx.reload(record.path, record.format)
        if result.nonfinite:
            notes.append(f"evidence of the stop at {stop[1]}: {record.path} holds non-finite "
                         f"model weights ({nonfinite_counts(result)}), as run {record.run}, "
                         f"stopped by its rule {stop[0]!r}, diverged; informational, not a "
                         "failure")
    return tuple(notes)


KINDS: dict[str, Kind] = {
    **located_kinds("checkpoint-reloads", "checkpoint"),
    **reload_kinds("checkpoint-reloads", "checkpoint"),
    "checkpoint-reloads.listed-twice": Kind(
        rule="the manifest lists the same checkpoint path more than once in checkpoints",
        fix="list each checkpoint once"),
    "checkpoint-reloads.format": Kind(
        rule="the checkpoint's content is another format than the format the manifest declares",
        fix="correct the manifest's format: the content decides, not the file name (a PEFT "
        "adapter folder belongs in adapters)"),
    "checkpoint-reloads.no-weights": Kind(
        rule="a checkpoint declared as kind 'weights' holds no model weights (an optimizer "
        "state alone, say)",
        fix="point the manifest at the file that holds the model's state_dict"),
}


CHECK = Check("checkpoint-reloads", "each checkpoint reloads in a fresh process, "
              "weights_only=True, finite, in its declared format", checkpoint_reloads,
              scope="checkpoint", targets=checkpoint_targets, needs=frozenset({"manifest"}),
              reloads=True,
              kinds=KINDS)
