"""expected-ids (R2, R9): every planned run accounted for, no unplanned or repeated id, the
must category complete (:func:`pytest_itera.checks.common.documents.must_roles`, which the
plan gate applies too), and the manifest's drops, rejections and artifacts consistent with its
runs and decisions: a campaign's outcome is read from these records."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence

from pytest_itera.checks.common import documents
from pytest_itera.checks.context import Check, Context
from pytest_itera.checks.model import Kind
from pytest_itera.core.campaign import (
    MANIFEST_FILE,
    PLAN_FILE,
    AdapterRecord,
    CheckpointRecord,
    DecisionRecord,
    Manifest,
    Plan,
)
from pytest_itera.core.findings import Finding
from pytest_itera.core.findings import where as json_where
from pytest_itera.core.text import says_nothing


def expected_ids(ctx: Context, _target: str | None) -> Iterator[Finding]:
    """Every planned run accounted for, no unplanned or repeated IDs, the must-category complete."""
    plan, man = ctx.documents()
    yield from _repeated(PLAN_FILE, "$.runs", [r.id for r in plan.runs])
    yield from _repeated(MANIFEST_FILE, "$.runs", [r.id for r in man.runs])
    recorded = {r.id for r in man.runs}
    planned = {r.id for r in plan.runs}
    for planned_run in plan.runs:
        if planned_run.id not in recorded:
            yield Finding(
                f"planned run {planned_run.id} is unaccounted for",
                where=json_where(MANIFEST_FILE, "runs"),
                hint="record it as accepted, stopped, rejected or dropped (with the decision)",
                code="expected-ids.unaccounted",
            )
    added = {rid for d in man.schedule.decisions for rid in d.adds}
    for i, run in enumerate(man.runs):
        if run.id not in planned and run.id not in added:
            yield Finding(
                f"run {run.id} is not in the plan",
                where=json_where(MANIFEST_FILE, "runs", i, "id"),
                hint="a run added after freezing needs a decision that adds it "
                "(schedule.decisions[].adds)",
                code="expected-ids.unplanned",
            )
    yield from documents.must_roles(plan)
    yield from _dangling_runs(man, recorded)
    yield from _outcome_records(plan, man)
    yield from _decisions_agree(man)


def _repeated(file: str, where: str, ids: list[str]) -> Iterator[Finding]:
    for run_id, count in sorted(Counter(ids).items()):
        if count > 1:
            yield Finding(
                f"run id {run_id} appears {count} times",
                where=f"{file} {where}",
                hint="each run has its own id; a new configuration gets a new id",
                code="expected-ids.repeated",
            )


def _dangling_runs(man: Manifest, recorded: set[str]) -> Iterator[Finding]:
    records: list[tuple[str, Sequence[CheckpointRecord | AdapterRecord]]] = [
        ("checkpoints", man.checkpoints),
        ("adapters", man.adapters),
    ]
    for field_name, items in records:
        for i, record in enumerate(items):
            if record.run not in recorded:
                yield Finding(
                    f"{field_name[:-1]} {record.path} belongs to unknown run {record.run}",
                    where=json_where(MANIFEST_FILE, field_name, i, "run"),
                    code="expected-ids.unknown-run",
                )


def _outcome_records(plan: Plan, man: Manifest) -> Iterator[Finding]:
    """A dropped run names the decision that dropped it; a rejected run says why (R2, R9)."""
    decisions = {d.id: d for d in man.schedule.decisions}
    for i, run in enumerate(man.runs):
        where = json_where(MANIFEST_FILE, "runs", i)
        if run.outcome == "dropped":
            yield from _dropped(plan, run.id, run.decision, decisions, where)
        elif run.outcome == "rejected" and says_nothing(run.rejection):
            yield Finding(
                f"rejected run {run.id} does not say why",
                where=f"{where}.rejection",
                hint="record the cause of the rejection (it is shown with the cost)",
                code="expected-ids.rejection-unexplained",
            )


def _dropped(
    plan: Plan,
    run_id: str,
    decision: str | None,
    decisions: Mapping[str, DecisionRecord],
    where: str,
) -> Iterator[Finding]:
    if decision is None:
        yield Finding(
            f"dropped run {run_id} names no decision",
            where=f"{where}.decision",
            hint="a run is dropped at a decision point: record the decision "
            "(schedule.decisions, with drops) and name it here",
            code="expected-ids.drop-without-decision",
        )
    elif decision not in decisions:
        yield Finding(
            f"dropped run {run_id} names decision {decision!r}, which is not recorded",
            where=f"{where}.decision",
            expected=f"one of {sorted(decisions)}",
            hint="record the decision in manifest.json schedule.decisions",
            code="expected-ids.drop-decision-unknown",
        )
    elif run_id not in decisions[decision].drops:
        yield Finding(
            f"dropped run {run_id} names decision {decision!r}, which does not drop it",
            where=f"{where}.decision",
            found=f"drops {list(decisions[decision].drops)}",
            hint=f"list {run_id} in that decision's drops",
            code="expected-ids.drop-decision-disagrees",
        )
    planned = plan.run(run_id)
    if planned is not None and planned.category == "must":
        yield Finding(
            f"must-category run {run_id} was dropped",
            where=f"{where}.outcome",
            hint="only optional (useful or exploratory) runs are dropped at a decision "
            "point; without the must runs the question cannot be concluded",
            code="expected-ids.must-dropped",
        )


def _decisions_agree(man: Manifest) -> Iterator[Finding]:
    for i, decision in enumerate(man.schedule.decisions):
        for run_id in decision.drops:
            run = man.run(run_id)
            if run is not None and run.outcome != "dropped":
                yield Finding(
                    f"decision {decision.id} drops run {run_id}, recorded as {run.outcome}",
                    where=json_where(MANIFEST_FILE, "schedule", "decisions", i, "drops"),
                    hint="a dropped run has outcome 'dropped'; correct the run or the decision",
                    code="expected-ids.drop-decision-disagrees",
                )


_OWN_KINDS: dict[str, Kind] = {
    "expected-ids.unaccounted": Kind(
        rule="a planned run is unaccounted for in manifest.json",
        fix="record it as accepted, stopped, rejected or dropped (with the decision)"),
    "expected-ids.unplanned": Kind(
        rule="a recorded run is not in the plan, and no decision adds it",
        fix="a run added after freezing needs a decision that adds it "
        "(schedule.decisions[].adds)"),
    "expected-ids.repeated": Kind(
        rule="a run id appears more than once in plan.json or manifest.json",
        fix="each run has its own id; a new configuration gets a new id"),
    "expected-ids.unknown-run": Kind(
        rule="a checkpoint or adapter belongs to a run manifest.json does not record",
        fix="name a recorded run, or record the run"),
    "expected-ids.rejection-unexplained": Kind(
        rule="a rejected run does not say why",
        fix="record the cause of the rejection (it is shown with the cost)"),
    "expected-ids.drop-without-decision": Kind(
        rule="a dropped run names no decision",
        fix="record the decision (schedule.decisions, with drops) and name it in the run"),
    "expected-ids.drop-decision-unknown": Kind(
        rule="a dropped run names a decision that manifest.json does not record",
        fix="record the decision in manifest.json schedule.decisions"),
    "expected-ids.drop-decision-disagrees": Kind(
        rule="a dropped run and its decision disagree: the decision does not drop it, or drops "
        "a run not recorded as dropped",
        fix="list the run in that decision's drops, or correct the run's outcome"),
    "expected-ids.must-dropped": Kind(
        rule="a must-category run was dropped",
        fix="drop only optional (useful or exploratory) runs, at a decision point"),
}
KINDS: dict[str, Kind] = {
    **_OWN_KINDS,
    **{code: kind for code, kind in documents.KINDS.items() if code.startswith("expected-ids.")},
}

CHECK = Check(
    "expected-ids",
    "planned runs accounted for, no unplanned or repeated ids",
    expected_ids,
    fast=True,
    kinds=KINDS,
)
