"""Contract checks: manifest, plan-frozen, expected-ids, analysis-present (R2, R5, R8, R9)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence

from pytest_itera.campaign import (
    MANIFEST_FILE,
    PLAN_FILE,
    AdapterRecord,
    CheckpointRecord,
    DecisionRecord,
    Manifest,
    Plan,
)
from pytest_itera.checks import Check, Context
from pytest_itera.findings import Finding

MUST_ROLES = ("control", "data_check", "resume_check")


def manifest(ctx: Context, _target: str | None) -> Iterator[Finding]:
    """Both documents present, JSON, schema-valid, and about the same campaign."""
    for error in ctx.campaign.errors:
        yield Finding(
            error.message,
            where=error.where(),
            hint=_contract_hint(error.file, error.json_path),
        )
    plan, man = ctx.campaign.plan, ctx.campaign.manifest
    if plan is not None and man is not None and plan.campaign != man.campaign:
        yield Finding(
            "plan.json and manifest.json name different campaigns",
            where=f"{MANIFEST_FILE} $.campaign",
            expected=repr(plan.campaign),
            found=repr(man.campaign),
            hint="a manifest closes the campaign its plan opened: check the folder",
        )


def _contract_hint(file: str, json_path: str) -> str:
    if json_path == "$":
        return f"write {file} with pytest_itera.record (see README: the campaign format)"
    schema = f"pytest_itera/schemas/{file.split('.')[0]}.schema.json"
    return f"fix {file} at {json_path}; the schema is {schema}"


def plan_frozen(ctx: Context, _target: str | None) -> Iterator[Finding]:
    """The plan is byte-identical to what the manifest recorded, and predates every run."""
    plan, man = _docs(ctx)
    if man.plan.path != PLAN_FILE:
        yield Finding(
            f"the manifest records the plan as {man.plan.path!r}",
            where=f"{MANIFEST_FILE} $.plan.path",
            expected=repr(PLAN_FILE),
            found=repr(man.plan.path),
        )
    facts = ctx.facts(PLAN_FILE)
    if facts.error is not None or facts.sha256 is None:
        yield Finding(f"cannot hash {PLAN_FILE}: {facts.error}", where=PLAN_FILE)
        return
    if facts.sha256 != man.plan.sha256:
        yield Finding(
            "plan.json changed after it was frozen (its sha256 differs from the manifest's record)",
            where=f"{MANIFEST_FILE} $.plan.sha256",
            expected=man.plan.sha256,
            found=facts.sha256,
            hint="restore the plan as frozen; "
            "record changes as deviations and decisions in the manifest",
        )
    pinned = ctx.options.plan_sha256
    if pinned is not None and facts.sha256 != pinned:
        yield Finding(
            "plan.json is not the plan given by --itera-plan-sha256",
            where=PLAN_FILE,
            expected=pinned,
            found=facts.sha256,
        )
    yield from _runs_before_freeze(plan, man)


def _runs_before_freeze(plan: Plan, man: Manifest) -> Iterator[Finding]:
    for i, run in enumerate(man.runs):
        if run.started_at is not None and run.started_at < plan.frozen_at:
            yield Finding(
                f"run {run.id} started before the plan (and its stop rules) was frozen",
                where=f"{MANIFEST_FILE} $.runs[{i}].started_at",
                expected=f"at or after {plan.frozen_at.isoformat()}",
                found=run.started_at.isoformat(),
                hint="stop rules are written before any run starts: freeze the plan first",
            )


def expected_ids(ctx: Context, _target: str | None) -> Iterator[Finding]:
    """Every planned run accounted for, no unplanned or repeated IDs, the must-category complete."""
    plan, man = _docs(ctx)
    yield from _repeated(PLAN_FILE, "$.runs", [r.id for r in plan.runs])
    yield from _repeated(MANIFEST_FILE, "$.runs", [r.id for r in man.runs])
    recorded = {r.id for r in man.runs}
    planned = {r.id for r in plan.runs}
    for planned_run in plan.runs:
        if planned_run.id not in recorded:
            yield Finding(
                f"planned run {planned_run.id} is unaccounted for",
                where=f"{MANIFEST_FILE} $.runs",
                hint="record it as accepted, stopped, rejected or dropped (with the decision)",
            )
    added = {rid for d in man.schedule.decisions for rid in d.adds}
    for i, run in enumerate(man.runs):
        if run.id not in planned and run.id not in added:
            yield Finding(
                f"run {run.id} is not in the plan",
                where=f"{MANIFEST_FILE} $.runs[{i}].id",
                hint="a run added after freezing needs a decision that adds it "
                "(schedule.decisions[].adds)",
            )
    yield from _must_roles(plan)
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
            )


def _must_roles(plan: Plan) -> Iterator[Finding]:
    if not any(r.role == "control" for r in plan.runs):
        yield Finding(
            "the plan has no control run",
            where=f"{PLAN_FILE} $.runs",
            hint="a campaign compares variants with a control",
        )
    for role in MUST_ROLES:
        if not any(r.role == role and r.category == "must" for r in plan.runs):
            yield Finding(
                f"the must category has no {role.replace('_', ' ')} run",
                where=f"{PLAN_FILE} $.runs",
                expected=f"a run with role {role!r} and category 'must'",
                hint="the control, the data check and the resume check are needed to conclude",
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
                    where=f"{MANIFEST_FILE} $.{field_name}[{i}].run",
                )


def _outcome_records(plan: Plan, man: Manifest) -> Iterator[Finding]:
    """A dropped run names the decision that dropped it; a rejected run says why (R2, R9)."""
    decisions = {d.id: d for d in man.schedule.decisions}
    for i, run in enumerate(man.runs):
        where = f"{MANIFEST_FILE} $.runs[{i}]"
        if run.outcome == "dropped":
            yield from _dropped(plan, run.id, run.decision, decisions, where)
        elif run.outcome == "rejected" and not (run.rejection or "").strip():
            yield Finding(
                f"rejected run {run.id} does not say why",
                where=f"{where}.rejection",
                hint="record the cause of the rejection (it is shown with the cost)",
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
        )
    elif decision not in decisions:
        yield Finding(
            f"dropped run {run_id} names decision {decision!r}, which is not recorded",
            where=f"{where}.decision",
            expected=f"one of {sorted(decisions)}",
            hint="record the decision in manifest.json schedule.decisions",
        )
    elif run_id not in decisions[decision].drops:
        yield Finding(
            f"dropped run {run_id} names decision {decision!r}, which does not drop it",
            where=f"{where}.decision",
            found=f"drops {list(decisions[decision].drops)}",
            hint=f"list {run_id} in that decision's drops",
        )
    planned = plan.run(run_id)
    if planned is not None and planned.category == "must":
        yield Finding(
            f"must-category run {run_id} was dropped",
            where=f"{where}.outcome",
            hint="only optional (useful or exploratory) runs are dropped at a decision "
            "point; without the must runs the question cannot be concluded",
        )


def _decisions_agree(man: Manifest) -> Iterator[Finding]:
    for i, decision in enumerate(man.schedule.decisions):
        for run_id in decision.drops:
            run = man.run(run_id)
            if run is not None and run.outcome != "dropped":
                yield Finding(
                    f"decision {decision.id} drops run {run_id}, recorded as {run.outcome}",
                    where=f"{MANIFEST_FILE} $.schedule.decisions[{i}].drops",
                    hint="a dropped run has outcome 'dropped'; correct the run or the decision",
                )


def analysis_present(ctx: Context, _target: str | None) -> Iterator[Finding]:
    """An error analysis and reload instructions, each present and not empty."""
    man = ctx.campaign.manifest
    assert man is not None
    for field_name, label in (
        ("analysis", "error analysis"),
        ("reload_instructions", "reload instructions"),
    ):
        relpath = getattr(man, field_name)
        problem = _text_problem(ctx, relpath)
        if problem is not None:
            yield Finding(
                f"the {label} {relpath} {problem}",
                where=f"{MANIFEST_FILE} $.{field_name}",
                hint=f"write the {label} into the campaign folder and list it in the manifest",
            )


def _text_problem(ctx: Context, relpath: str) -> str | None:
    resolved = ctx.regular_file(relpath)
    if isinstance(resolved, str):
        return resolved
    try:
        size = resolved.stat().st_size
    except OSError as exc:
        return f"cannot be read: {exc.strerror or exc}"
    if size == 0:
        return "is empty"
    if not ctx.options.fast and _blank(resolved):
        return "holds only whitespace"
    return None


def _blank(path: object) -> bool:
    from pathlib import Path

    assert isinstance(path, Path)
    try:
        with path.open("rb") as handle:
            head = handle.read(1 << 16)
    except OSError:
        return False  # unreadable: files-intact reports it
    return not head.strip()


def _docs(ctx: Context) -> tuple[Plan, Manifest]:
    plan, man = ctx.campaign.plan, ctx.campaign.manifest
    assert plan is not None  # guaranteed by Check.needs
    assert man is not None
    return plan, man


CHECKS = (
    Check(
        "manifest",
        "plan.json and manifest.json present, JSON, schema-valid",
        manifest,
        needs=frozenset(),
        fast=True,
        order=0,
    ),
    Check("plan-frozen", "the plan is unchanged since it was frozen", plan_frozen, order=1),
    Check(
        "expected-ids",
        "planned runs accounted for, no unplanned or repeated ids",
        expected_ids,
        fast=True,
        order=2,
    ),
    Check(
        "analysis-present",
        "error analysis and reload instructions present",
        analysis_present,
        needs=frozenset({"manifest"}),
        fast=True,
        order=40,
    ),
)


def pytest_itera_checks(config: object) -> tuple[Check, ...]:
    return CHECKS
