"""The contract's rules that the closure and the plan gate both apply: the two documents load
and agree (``manifest``), and the plan has the runs a campaign needs to conclude
(:func:`must_roles`, expected-ids' rule). The plan gate re-codes their findings under its own
ids (``core.findings.recoded``); :data:`KINDS` says what each code means."""

from __future__ import annotations

from collections.abc import Iterator

from pytest_itera.checks.context import Context
from pytest_itera.checks.model import Kind
from pytest_itera.core.campaign import MANIFEST_FILE, PLAN_FILE, Plan
from pytest_itera.core.findings import Finding
from pytest_itera.core.findings import where as json_where

MUST_ROLES = ("control", "data_check", "resume_check")

KINDS: dict[str, Kind] = {
    "manifest.invalid-document": Kind(
        rule="plan.json or manifest.json is missing, not JSON, or schema-invalid (each error "
        "with its JSON path and line:column)",
        fix="write the document with pytest_itera.record, or fix it at the JSON path given"),
    "manifest.plan-draft": Kind(
        rule="plan.json is a draft: it has no frozen_at, so no one froze it before the runs",
        fix="freeze the plan with CampaignRecorder.freeze_plan before the first run"),
    "manifest.campaign-mismatch": Kind(
        rule="plan.json and manifest.json name different campaigns",
        fix="a manifest closes the campaign its plan opened: check the folder"),
    "expected-ids.no-control": Kind(
        rule="the plan has no control run",
        fix="plan a control run: a campaign compares variants with a control"),
    "expected-ids.must-role-missing": Kind(
        rule="the must category lacks a control, a data check or a resume check run",
        fix="plan the control, the data check and the resume check in the must category"),
}


def manifest(ctx: Context, _target: str | None) -> Iterator[Finding]:
    """Both documents present, JSON, schema-valid, and about the same campaign."""
    for error in ctx.campaign.errors:
        yield Finding(
            error.message,
            where=error.where(),
            hint=_contract_hint(error.file, error.json_path),
            code="manifest.invalid-document",
        )
    plan, man = ctx.campaign.plan, ctx.campaign.manifest
    if plan is not None and man is not None and plan.frozen_at is None:
        yield Finding(
            "plan.json is a draft: it has no frozen_at, so no one froze it before the runs",
            where=json_where(PLAN_FILE, "frozen_at"),
            expected="the moment the plan was frozen",
            found="no frozen_at",
            hint="freeze the plan with CampaignRecorder.freeze_plan before the first run (it "
            "sets frozen_at and journals the plan's sha256)",
            code="manifest.plan-draft",
        )
    if plan is not None and man is not None and plan.campaign != man.campaign:
        yield Finding(
            "plan.json and manifest.json name different campaigns",
            where=json_where(MANIFEST_FILE, "campaign"),
            expected=repr(plan.campaign),
            found=repr(man.campaign),
            hint="a manifest closes the campaign its plan opened: check the folder",
            code="manifest.campaign-mismatch",
        )


def _contract_hint(file: str, json_path: str) -> str:
    if json_path == "$":
        return f"write {file} with pytest_itera.record (see docs/campaign-format.md)"
    schema = f"pytest_itera/schemas/{file.split('.')[0]}.schema.json"
    return f"fix {file} at {json_path}; the schema is {schema}"


def must_roles(plan: Plan) -> Iterator[Finding]:
    if not any(r.role == "control" for r in plan.runs):
        yield Finding(
            "the plan has no control run",
            where=json_where(PLAN_FILE, "runs"),
            hint="a campaign compares variants with a control",
            code="expected-ids.no-control",
        )
    for role in MUST_ROLES:
        if not any(r.role == role and r.category == "must" for r in plan.runs):
            yield Finding(
                f"the must category has no {role.replace('_', ' ')} run",
                where=json_where(PLAN_FILE, "runs"),
                expected=f"a run with role {role!r} and category 'must'",
                hint="the control, the data check and the resume check are needed to conclude",
                code="expected-ids.must-role-missing",
            )
