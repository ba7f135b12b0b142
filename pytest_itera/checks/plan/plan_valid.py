"""plan-valid: the plan is JSON, schema-valid and its schedule computable (R3).

The first item of the plan gate: the closure's ``manifest`` rule (re-coded under
plan-valid), a schedule without a dependency cycle, and no ``input_truncated`` stop rule
that its corpus entry contradicts (the recorder's rule too). Each problem is told with its
JSON path and line:column in the plan file, which may have another name than plan.json.
"""

from __future__ import annotations

from collections.abc import Iterator

from pytest_itera.checks.common import documents
from pytest_itera.checks.common.documents import manifest
from pytest_itera.checks.context import Check, Context
from pytest_itera.checks.model import Kind, recoded_kinds
from pytest_itera.checks.plan.gate import plan_path
from pytest_itera.checks.stop_rules import contradicts_corpus
from pytest_itera.core import schedule as sched
from pytest_itera.core.campaign import Plan, locate
from pytest_itera.core.findings import Finding, recoded
from pytest_itera.core.findings import where as json_where


def plan_valid(ctx: Context, _target: str | None) -> Iterator[Finding]:
    """JSON, schema-valid, and a schedule that can be computed."""
    yield from recoded(manifest(ctx, None), "plan-valid")
    plan = ctx.campaign.plan
    if plan is None:
        return
    try:
        sched.makespan(plan.schedule.steps)
    except sched.ScheduleError as exc:
        path: list[str | int] = ["schedule", "steps"]
        index = _culprit(plan)
        if index is not None:
            path += [index, "after"]
        yield Finding(f"the schedule cannot be computed: {exc}", where=_where(ctx, path),
                      hint="fix the steps' 'after' lists and their order on each resource",
                      code="plan-valid.schedule-not-computable")
    for i, rule in enumerate(plan.stop_rules):
        contradiction = contradicts_corpus(plan, rule)
        if contradiction is not None:
            c = contradiction
            yield Finding(c.detail, where=_where(ctx, ["stop_rules", i, "parameters", c.key]),
                          expected=f"{c.frozen}, the corpus entry's {c.key}", found=c.wanted,
                          hint=c.fix, code="plan-valid.rule-contradicts-corpus")


def _culprit(plan: Plan) -> int | None:
    """The first step in a dependency cycle or waiting for an unknown step."""
    steps = plan.schedule.steps
    ids = {s.id for s in steps}
    closure = sched.ancestors(steps)
    return next((i for i, s in enumerate(steps)
                 if s.id in closure[s.id] or any(d not in ids for d in s.after)), None)


def _where(ctx: Context, path: list[str | int]) -> str:
    """``plan.json:12:7 $.schedule.steps[3].after``."""
    file = plan_path(ctx)
    try:
        line, column = locate(file.read_text("utf-8"), path)
    except (OSError, UnicodeDecodeError):
        line = column = None
    pos = f":{line}:{column}" if line is not None else ""
    return json_where(f"{file.name}{pos}", *path)


KINDS: dict[str, Kind] = {
    "plan-valid.schedule-not-computable": Kind(
        rule="the plan's schedule cannot be computed: a step waits for an unknown step or for "
        "itself (a dependency cycle)",
        fix="fix the steps' 'after' lists and their order on each resource"),
    "plan-valid.rule-contradicts-corpus": Kind(
        rule="an input_truncated stop rule expects another example count or sha256 than its "
        "corpus entry freezes",
        fix="edit the rule's parameter together with the corpus entry's, so that both say "
        "the same"),
    # The plan is judged alone: no manifest to be a draft for, or to name another campaign.
    **recoded_kinds(documents.KINDS, "plan-valid", of="manifest",
                    without=("manifest.plan-draft", "manifest.campaign-mismatch")),
}

CHECK = Check("plan-valid", "the plan is JSON, schema-valid and its schedule computable",
              plan_valid, scope="plan", needs=frozenset(), fast=True, kinds=KINDS)
