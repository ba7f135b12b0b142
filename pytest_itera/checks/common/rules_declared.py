"""rules-declared: the stop rules are written in the plan before the trials (R5), each with
its own id and usable parameters, and a pilot is followed by a decision point (R2).

It lives in ``checks/common`` because two families apply it: the evidence family judges a
closed campaign with it, and the plan gate (``plan-frozen-ready``) refuses to freeze a plan
that breaks it, under its own ids (:func:`pytest_itera.core.findings.recoded`). Its
:data:`KINDS` are the meaning of the codes it builds, for both.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any

from pytest_itera.checks.context import Context
from pytest_itera.checks.model import Kind
from pytest_itera.checks.stop_rules import (
    rule_parameters_problem,
)
from pytest_itera.core.campaign import (
    PLAN_FILE,
    Plan,
    StopRule,
)
from pytest_itera.core.findings import Finding
from pytest_itera.core.findings import where as json_where
from pytest_itera.core.text import is_blank

CONTRACT = "docs/contract-v2.md"

KINDS: dict[str, Kind] = {
    "rules-declared.no-rules": Kind(
        rule="the plan declares no stop rule (stop_rules is empty)",
        fix="declare the stop rules in plan.json before the trials, e.g. a non_finite_loss rule "
        "on the loss series"),
    "rules-declared.repeated-id": Kind(
        rule="two stop rules of the plan share one id",
        fix="a stopped run cites its rule by id: give each rule its own id"),
    "rules-declared.parameters": Kind(
        rule="a stop rule's parameters cannot be evaluated (unusable, or an itera-plan/1 rule's "
        "free-form parameters)",
        fix="write the parameters the contract gives for the rule's kind (itera-plan/2)"),
    "rules-declared.unknown-resume-check": Kind(
        rule="a no_resume rule names as its resume check a run that is not a planned resume check",
        fix="name a planned run with role resume_check"),
    "rules-declared.no-decision-point": Kind(
        rule="the plan has a pilot but fixes no decision point after it",
        fix="write decision.point, or a schedule step of kind 'decision' after the pilot's steps"),
}


_EXAMPLES = {
    "non_finite_loss": '{"series": "loss"}',
    "quality_below": '{"metric": "validation_accuracy", "threshold": 0.5, '
                     '"direction": "higher", "split": "validation"}',
    "input_truncated": '{"input": "<corpus id or path>", "examples": 600}',
    "no_resume": '{"resume_check": "<run id>"}',
}


def v1_rule(plan: Plan, rule: StopRule, problem: str) -> tuple[str, str]:
    """(detail, hint) for a rule whose parameters cannot be evaluated."""
    params = dict(rule.parameters or {})
    if plan.version < 2:
        detail = (f"itera-plan/1 cannot prove that stop rule {rule.id!r} ({rule.kind}) is "
                  f"applied: its parameters are free-form ({params}: {problem})")
        hint = (f"re-close the campaign with itera-plan/2 and itera-manifest/2: a "
                f"{rule.kind} rule has the parameters {_EXAMPLES.get(rule.kind, '{}')} "
                f"({CONTRACT})")
    else:
        detail = f"stop rule {rule.id!r} ({rule.kind}) has unusable parameters: {problem}"
        hint = f"write the parameters {_EXAMPLES.get(rule.kind, '{}')} ({CONTRACT})"
    return detail, hint


def rules_declared(ctx: Context, _target: str | None) -> Iterator[Finding]:
    """Stop rules declared (machine-readable) before the trials; a decision after the pilot."""
    plan = ctx.campaign.plan
    assert plan is not None  # guaranteed by Check.needs: a schema error is manifest's alone
    if not plan.stop_rules:
        yield _no_rules()
    for rule_id, count in sorted(Counter(r.id for r in plan.stop_rules).items()):
        if count > 1:
            yield Finding(f"stop rule id {rule_id!r} appears {count} times",
                          where=json_where(PLAN_FILE, "stop_rules"),
                          hint="a stopped run cites its rule by id: give each rule its own id",
                          code="rules-declared.repeated-id")
    for i, rule in enumerate(plan.stop_rules):
        yield from _rule_declaration(plan, i, rule)
    yield from _pilot_decision(plan)


def _no_rules() -> Finding:
    return Finding(
        "the plan declares no stop rule (stop_rules is empty)",
        where=json_where(PLAN_FILE, "stop_rules"),
        expected="at least one rule, written before any run starts: non-finite loss, quality "
        "under a threshold, a truncated input, no usable resume",
        hint='declare them in plan.json before the trials, e.g. {"id": "non-finite-loss", '
        f'"kind": "non_finite_loss", "parameters": {{"series": "loss"}}}} ({CONTRACT})',
        code="rules-declared.no-rules")


def _rule_declaration(plan: Plan, i: int, rule: StopRule) -> Iterator[Finding]:
    where = json_where(PLAN_FILE, "stop_rules", i)
    problem = rule_parameters_problem(rule)
    if problem is not None:
        detail, hint = v1_rule(plan, rule, problem)
        yield Finding(detail, where=f"{where}.parameters", hint=hint,
                      code="rules-declared.parameters")
        return
    if rule.kind == "no_resume":
        target = str(rule.parameters["resume_check"])
        checks = [r.id for r in plan.runs if r.role == "resume_check"]
        if target not in checks:
            yield Finding(
                f"stop rule {rule.id!r} (no_resume) names {target!r}, which is not a planned "
                "resume check", where=f"{where}.parameters.resume_check",
                expected=f"one of {checks}" if checks else "a planned run with role resume_check",
                found=repr(target),
                code="rules-declared.unknown-resume-check")


def _pilot_decision(plan: Plan) -> Iterator[Finding]:
    pilots = [r.id for r in plan.runs if r.role == "pilot"]
    if not pilots or not is_blank(plan.decision.point):
        return
    steps = {s.id: s for s in plan.schedule.steps}
    pilot_steps = {s.id for s in plan.schedule.steps if s.run in pilots}
    for step in plan.schedule.steps:
        if step.kind == "decision" and _after_any(step.id, pilot_steps, steps):
            return
    found = ("no schedule step names the pilot (steps[].run)" if not pilot_steps
             else "no step of kind 'decision' comes after the pilot's steps "
             f"({', '.join(sorted(pilot_steps))})")
    yield Finding(
        f"the plan has a pilot ({', '.join(pilots)}) but fixes no decision point after it",
        where=json_where(PLAN_FILE, "decision", "point"), found=found,
        expected="decision.point (when the post-pilot decision is taken), or a schedule step "
        "of kind 'decision' after the pilot's steps (through 'after')",
        hint="after the pilot, decide: continue, drop an optional variant, or revise the "
        "question; write that decision point into the plan before the trials",
        code="rules-declared.no-decision-point")


def _after_any(step_id: str, targets: set[str], steps: Mapping[str, Any]) -> bool:
    """Does ``step_id`` depend, through ``after``, on one of ``targets``?"""
    seen: set[str] = set()
    todo = list(getattr(steps.get(step_id), "after", ()))
    while todo:
        current = todo.pop()
        if current in targets:
            return True
        if current in seen:
            continue
        seen.add(current)
        todo.extend(getattr(steps.get(current), "after", ()))
    return False
