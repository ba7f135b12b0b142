"""stop-records: a stopped run cites a planned stop rule, says why and when, and delivers nothing.

R5: stop rules are written before the runs; a run a rule stopped keeps its ID and its
reason, is no accepted deliverable (never listed as meeting the threshold) and stays an
expense. Its one allowed checkpoint is the evidence of where it stopped.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from pytest_itera.checks.context import Check, Context
from pytest_itera.checks.model import Kind
from pytest_itera.core.campaign import MANIFEST_FILE, PLAN_FILE, Manifest, Plan, RunRecord
from pytest_itera.core.findings import Finding
from pytest_itera.core.findings import where as json_where
from pytest_itera.core.text import is_blank, says_nothing

# The rule a stopped run is held to, in the words every refusal of it uses (the checks here,
# the recorder's refusal of a stopped run's predictions).
STOPPED_DELIVERS_NOTHING = "a stopped run delivers nothing (it stays an expense)"


KINDS: dict[str, Kind] = {
    "stop-records.no-stop-record": Kind(
        rule="a run recorded as stopped has no stop record (rule, reason, step or time)",
        fix="record the stop rule that fired, why, and at which step or time"),
    "stop-records.stopped-but-accepted": Kind(
        rule="a run carrying a stop record is counted as accepted",
        fix="record its outcome as 'stopped': a stopped run keeps its ID and reason, is not an "
        "accepted deliverable, and still counts as an expense"),
    "stop-records.stop-record-on-unstopped": Kind(
        rule="a run carries a stop record but its outcome is neither 'stopped' nor 'accepted'",
        fix="give a run stopped by a rule the outcome 'stopped'; otherwise remove the stop record"),
    "stop-records.no-rule": Kind(
        rule="a stopped run does not name the stop rule that fired",
        fix="cite the id of a stop rule declared in plan.json"),
    "stop-records.undeclared-rule": Kind(
        rule="a stopped run cites a stop rule the plan does not declare",
        fix="cite a rule written in the plan before any run started, or record the run as "
        "rejected"),
    "stop-records.no-reason": Kind(
        rule="a stopped run has no stop reason",
        fix="say what was observed (e.g. 'training loss was nan at step 14')"),
    "stop-records.no-time": Kind(
        rule="a stopped run gives neither the step nor the time at which it was stopped",
        fix="record the step (or the time) at which the rule fired"),
    "stop-records.rule-after-start": Kind(
        rule="a stopped run's rule was declared after the runs began: the plan was frozen after "
        "the first run started",
        fix="write stop rules before any run starts (see the plan-frozen item)"),
    "stop-records.stop-before-start": Kind(
        rule="a run's stop time (stop.at) is before its start",
        fix="record the moment the rule fired, at or after the run's started_at"),
    "stop-records.stop-after-end": Kind(
        rule="a run's stop time (stop.at) is after its recorded end (ended_at)",
        fix="record the moment the rule fired as stop.at and the run's end at or after it "
        "(the recorder's stop() writes both)"),
    "stop-records.meets-threshold": Kind(
        rule="a stopped run is listed in the conclusion's meets_threshold",
        fix="remove it from the conclusion: a stopped run is no accepted deliverable (it stays "
        "an expense)"),
    "stop-records.deliverable": Kind(
        rule="a stopped run records a deliverable",
        fix=f"remove its deliverable: {STOPPED_DELIVERS_NOTHING}"),
    "stop-records.delivers": Kind(
        rule="a stopped run records predictions or a corpus, ships an adapter, or lists more "
        "than one checkpoint",
        fix="remove the extra from the manifest (and the folder), or, if the rule did not fire, "
        "record the run as accepted"),
}


def stop_targets(ctx: Context) -> Iterable[str]:
    """Stopped runs, and any run carrying a stop record (an accepted one must fail)."""
    _, man = ctx.documents()
    return {r.id for r in man.runs if r.outcome == "stopped" or r.stop is not None}


def stop_records(ctx: Context, target: str | None) -> Iterator[Finding]:
    """A stopped run cites a planned rule, says why and when, and is not counted as accepted."""
    assert target is not None
    plan, man = ctx.documents()
    index, run = ctx.recorded(target)
    where = json_where(MANIFEST_FILE, "runs", index)
    if run.outcome != "stopped":
        yield _not_stopped(run, where)
        return
    if run.stop is None:
        yield Finding(f"stopped run {run.id} has no stop record", where=f"{where}.stop",
                      expected="{rule, reason, step or at}",
                      hint="record the stop rule that fired, why, and at which step or time",
                      code="stop-records.no-stop-record")
        return
    yield from _stop_fields(plan, run, where)
    yield from _stop_timing(plan, man, run, where)
    yield from _counted_as_accepted(man, run, where)
    yield from stopped_delivers(man, index, run)


def _not_stopped(run: RunRecord, where: str) -> Finding:
    assert run.stop is not None
    if run.outcome == "accepted":
        return Finding(
            f"run {run.id} was stopped by rule {run.stop.rule!r} but is counted as accepted",
            where=f"{where}.outcome", expected="'stopped'", found="'accepted'",
            hint="a stopped run keeps its ID and reason, is not an accepted deliverable, "
            "and still counts as an expense: record its outcome as 'stopped'",
            code="stop-records.stopped-but-accepted")
    return Finding(
        f"run {run.id} carries a stop record but its outcome is {run.outcome!r}",
        where=f"{where}.outcome", expected="'stopped'", found=repr(run.outcome),
        hint="a run stopped by a rule has outcome 'stopped'; otherwise remove the stop record",
        code="stop-records.stop-record-on-unstopped")


def _stop_fields(plan: Plan, run: RunRecord, where: str) -> Iterator[Finding]:
    assert run.stop is not None
    declared = [r.id for r in plan.stop_rules]
    if is_blank(run.stop.rule):
        yield Finding(f"stopped run {run.id} does not name the stop rule that fired",
                      where=f"{where}.stop.rule", expected=f"one of {declared}",
                      hint="cite the id of a stop rule declared in plan.json",
                      code="stop-records.no-rule")
    elif run.stop.rule not in declared:
        yield Finding(f"stopped run {run.id} cites stop rule {run.stop.rule!r}, "
                      "which the plan does not declare",
                      where=f"{where}.stop.rule", expected=f"one of {declared}",
                      found=repr(run.stop.rule),
                      hint="stop rules are written in the plan before any run starts; a rule "
                      "invented afterwards is not a stop rule: record the run as rejected instead",
                      code="stop-records.undeclared-rule")
    if says_nothing(run.stop.reason):
        yield Finding(f"stopped run {run.id} has no stop reason", where=f"{where}.stop.reason",
                      hint="say what was observed (e.g. 'training loss was nan at step 14')",
                      code="stop-records.no-reason")
    if run.stop.step is None and run.stop.at is None:
        yield Finding(f"stopped run {run.id} does not say when it was stopped",
                      where=f"{where}.stop", expected="a step or an 'at' timestamp",
                      hint="record the step (or the time) at which the rule fired",
                      code="stop-records.no-time")


def _stop_timing(plan: Plan, man: Manifest, run: RunRecord, where: str) -> Iterator[Finding]:
    """The rule predates the first run (plan-frozen says so too), and the stop follows the start."""
    assert run.stop is not None
    started = [(r.started_at, r.id) for r in man.runs if r.started_at is not None]
    if started and plan.frozen_at is not None and min(started)[0] < plan.frozen_at:
        first_at, first_id = min(started)
        yield Finding(
            f"stop rule {run.stop.rule!r} of run {run.id} was declared after the runs began: "
            f"the plan was frozen at {plan.frozen_at.isoformat()}, run {first_id} started at "
            f"{first_at.isoformat()}",
            where=json_where(PLAN_FILE, "frozen_at"),
            hint="stop rules are written before any run starts (see the plan-frozen item)",
            code="stop-records.rule-after-start")
    if run.stop.at is not None and run.started_at is not None and run.stop.at < run.started_at:
        yield Finding(f"run {run.id} was stopped before it started", where=f"{where}.stop.at",
                      expected=f"at or after {run.started_at.isoformat()}",
                      found=run.stop.at.isoformat(),
                      code="stop-records.stop-before-start")
    if run.stop.at is not None and run.ended_at is not None and run.stop.at > run.ended_at:
        yield Finding(
            f"run {run.id} was stopped at {run.stop.at.isoformat()}, after it ended at "
            f"{run.ended_at.isoformat()}", where=f"{where}.stop.at",
            expected=f"at or before {run.ended_at.isoformat()} (ended_at)",
            found=run.stop.at.isoformat(),
            hint="a run ends when its stop rule fires: record the moment the rule fired as "
            "stop.at and the run's end at or after it (the recorder's stop() writes both)",
            code="stop-records.stop-after-end")


def _counted_as_accepted(man: Manifest, run: RunRecord, where: str) -> Iterator[Finding]:
    if run.id in man.conclusion.meets_threshold:
        yield Finding(f"stopped run {run.id} is listed as meeting the threshold",
                      where=json_where(MANIFEST_FILE, "conclusion", "meets_threshold"),
                      hint="a stopped run is not an accepted deliverable: remove it from the "
                      "conclusion (it stays an expense)",
                      code="stop-records.meets-threshold")
    if run.deliverable is not None:
        yield Finding(f"stopped run {run.id} records a deliverable ({run.deliverable!r})",
                      where=f"{where}.deliverable",
                      hint=f"{STOPPED_DELIVERS_NOTHING}: remove its deliverable",
                      code="stop-records.deliverable")


def stopped_delivers(man: Manifest, index: int, run: RunRecord) -> Iterator[Finding]:
    """A stopped run delivers nothing: no predictions, no corpus, no adapter, and no
    checkpoint but one, the evidence of where it stopped (issue 24, point 6)."""
    where = json_where(MANIFEST_FILE, "runs", index)
    fix = (STOPPED_DELIVERS_NOTHING + ": remove its {what} from the manifest (and the folder), "
           "or, if the rule did not fire, record the run as accepted")
    if run.predictions is not None:
        yield Finding(f"stopped run {run.id} records predictions ({run.predictions})",
                      where=f"{where}.predictions", expected="no predictions",
                      hint=fix.format(what="predictions"), code="stop-records.delivers")
    if run.corpus is not None:
        yield Finding(f"stopped run {run.id} records the corpus its predictions cover "
                      f"({run.corpus!r})", where=f"{where}.corpus", expected="no corpus",
                      hint=fix.format(what="corpus"), code="stop-records.delivers")
    for i, adapter in enumerate(man.adapters):
        if adapter.run == run.id:
            yield Finding(f"stopped run {run.id} ships adapter {adapter.path}",
                          where=json_where(MANIFEST_FILE, "adapters", i),
                          expected="no adapter of a stopped run",
                          hint=fix.format(what="adapter"), code="stop-records.delivers")
    mine = [(i, c) for i, c in enumerate(man.checkpoints) if c.run == run.id]
    if len(mine) > 1:
        # One checkpoint may stay: the evidence of where the run stopped (its last save).
        extra = mine[:-1]
        yield Finding(
            f"stopped run {run.id} ships {len(mine)} checkpoints "
            f"({', '.join(c.path for _, c in mine)}): only one, the evidence of where it "
            "stopped, may stay",
            where=json_where(MANIFEST_FILE, "checkpoints", extra[0][0]),
            expected=f"at most one checkpoint of run {run.id}", found=str(len(mine)),
            hint=fix.format(what=f"other checkpoint{'s' if len(extra) > 1 else ''} ("
                            + ", ".join(c.path for _, c in extra) + ")"),
            code="stop-records.delivers")


CHECK = Check("stop-records",
              "a stopped run cites a planned rule, a reason and when; never accepted",
              stop_records, scope="run", targets=stop_targets, kinds=KINDS)
