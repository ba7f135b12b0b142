"""plan-frozen-ready: everything the closure will need is declared before the trials (R2,
R5, R6).

Judged before renting, so that a campaign is never run on a plan it cannot be closed with:
itera-plan/2, each run's corpus, the must category (control, data check, resume check:
``documents``' rule, re-coded), stop rules with evaluable parameters (``rules-declared``'s
rule, re-coded), a decision point, a checkpoint policy with its resume state and where the
checkpoints live.
"""

from __future__ import annotations

from collections.abc import Iterator

from pytest_itera.checks.common import documents
from pytest_itera.checks.common.documents import must_roles
from pytest_itera.checks.common.rules_declared import KINDS as rules_declared_kinds
from pytest_itera.checks.common.rules_declared import rules_declared
from pytest_itera.checks.context import Check, Context
from pytest_itera.checks.model import Kind, recoded_kinds
from pytest_itera.checks.plan.gate import NEEDS_PLAN
from pytest_itera.core.campaign import PLAN_FILE, Plan
from pytest_itera.core.findings import Finding, recoded
from pytest_itera.core.findings import where as json_where
from pytest_itera.core.text import is_blank


def frozen_ready(ctx: Context, _target: str | None) -> Iterator[Finding]:
    """Everything the closure checks will need is declared before the trials."""
    plan = ctx.campaign.plan
    assert plan is not None  # guaranteed by Check.needs
    if plan.version < 2:
        yield Finding(
            f"{plan.format} cannot be closed with evidence: corpora, machine-readable stop "
            "rules and the run of each step are itera-plan/2",
            where=json_where(PLAN_FILE, "format"), expected="itera-plan/2", found=plan.format,
            hint="write the plan with pytest_itera.record.campaign (docs/contract-v2.md)",
            code="plan-frozen-ready.plan-v1")
    yield from _corpora(plan)
    yield from recoded(must_roles(plan), "plan-frozen-ready")
    yield from recoded(rules_declared(ctx, None), "plan-frozen-ready")
    yield from _decision_point(plan)
    yield from _checkpoint_policy(plan)


def _corpora(plan: Plan) -> Iterator[Finding]:
    declared = [c.id for c in plan.corpora]
    for i, run in enumerate(plan.runs):
        if run.corpus is not None and run.corpus not in declared:
            yield Finding(f"run {run.id} works on corpus {run.corpus!r}, which the plan does "
                          "not declare", where=json_where(PLAN_FILE, "runs", i, "corpus"),
                          expected=f"one of {declared}", found=repr(run.corpus),
                          hint="declare every frozen corpus in corpora (id, path, sha256)",
                          code="plan-frozen-ready.corpus-undeclared")
        elif run.corpus is None and len(declared) > 1 and run.role in ("control", "variant"):
            yield Finding(f"run {run.id} names no corpus, and the plan has {len(declared)}",
                          where=json_where(PLAN_FILE, "runs", i, "corpus"),
                          expected=f"one of {declared}", found="none",
                          hint="a deliverable is one corpus: name the one the run predicts on",
                          code="plan-frozen-ready.no-corpus")


def _decision_point(plan: Plan) -> Iterator[Finding]:
    """A decision point is fixed (its place after the pilot: rules-declared's rule)."""
    if not is_blank(plan.decision.point) or any(
            s.kind == "decision" for s in plan.schedule.steps):
        return
    yield Finding(
        "the plan fixes no decision point", where=json_where(PLAN_FILE, "decision", "point"),
        expected="decision.point, or a schedule step of kind 'decision' after the pilot",
        hint="decide after the pilot: continue, drop an optional variant or revise the "
        "question; the budget is not an obligation to fill every hour",
        code="plan-frozen-ready.no-decision-point")


def _checkpoint_policy(plan: Plan) -> Iterator[Finding]:
    policy = plan.checkpoint_policy
    where = json_where(PLAN_FILE, "checkpoint_policy")
    if not policy.resume_state:
        yield Finding("the checkpoint policy requires no resume state", where=f"{where}"
                      ".resume_state", expected="at least model, optimizer, progress",
                      hint="a resume needs more than weights: the optimizer state and the "
                      "progress too, and per loop the scheduler, scaler, RNG and data position",
                      code="plan-frozen-ready.no-resume-state")
    if policy.storage is None or is_blank(policy.storage):
        yield Finding("the checkpoint policy does not say where checkpoints live",
                      where=f"{where}.storage",
                      hint="state where the files are written and how they are retrieved "
                      "before the rental period ends",
                      code="plan-frozen-ready.no-checkpoint-place")


KINDS: dict[str, Kind] = {
    **recoded_kinds(documents.KINDS, "plan-frozen-ready", of="expected-ids"),
    **recoded_kinds(rules_declared_kinds, "plan-frozen-ready"),
    "plan-frozen-ready.plan-v1": Kind(
        rule="the plan is itera-plan/1: no corpora, machine-readable stop rules or step runs "
        "to close it with evidence",
        fix="write the plan with pytest_itera.record.campaign (itera-plan/2)"),
    "plan-frozen-ready.corpus-undeclared": Kind(
        rule="a run works on a corpus the plan does not declare",
        fix="declare every frozen corpus in corpora (id, path, sha256)"),
    "plan-frozen-ready.no-corpus": Kind(
        rule="a control or variant run names no corpus while the plan declares several",
        fix="name the corpus the run predicts on"),
    # The gate's own rule and rules-declared's (a pilot without a decision after it), one code.
    "plan-frozen-ready.no-decision-point": Kind(
        rule="the plan fixes no decision point (decision.point, or a schedule step of kind "
        "'decision'), or none after its pilot",
        fix="fix a decision point after the pilot: continue, drop an optional variant or "
        "revise the question"),
    "plan-frozen-ready.no-resume-state": Kind(
        rule="the checkpoint policy requires no resume state",
        fix="require at least the model, the optimizer state and the progress"),
    "plan-frozen-ready.no-checkpoint-place": Kind(
        rule="the checkpoint policy does not say where checkpoints live",
        fix="state where the files are written and how they are retrieved before the rental "
        "ends"),
}

CHECK = Check("plan-frozen-ready",
              "everything the closure will need is declared before the trials",
              frozen_ready, scope="plan", needs=NEEDS_PLAN, fast=True, kinds=KINDS)
