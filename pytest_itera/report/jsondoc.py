"""The report as a JSON document (format ``itera-report/3``, schemas/report.schema.json): the
data behind every chart of the HTML and Markdown reports is in it (``evidence``, ``steps``),
and ``charts`` says which part each chart draws."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from pytest_itera.checks.closure import plain
from pytest_itera.report.charts import charts_index
from pytest_itera.report.evidence import Evidence
from pytest_itera.report.model import (
    REPORT_FORMAT,
    CampaignReport,
    CheckResult,
    PlanReport,
    overall_verdict,
)


def to_json(
    reports: Sequence[CampaignReport], plans: Sequence[PlanReport] = ()
) -> dict[str, Any]:
    """One campaign: its report object; several: {"format", "verdict", "campaigns": [...]};
    with plans judged before renting, also "plans" (and "verdict" is theirs when no campaign
    was judged)."""
    objects = [_campaign_json(r) for r in reports]
    if len(objects) == 1 and not plans:
        return objects[0]
    verdict = overall_verdict(reports) if reports else _plans_verdict(plans)
    document: dict[str, Any] = {"format": REPORT_FORMAT, "verdict": verdict,
                                "campaigns": objects}
    if plans:
        document["plans"] = [_plan_json(p) for p in plans]
    return document


def _plans_verdict(plans: Sequence[PlanReport]) -> str:
    for worst in ("not ready", "incomplete"):
        if any(p.verdict == worst for p in plans):
            return worst
    return "ready" if plans else "incomplete"


def _plan_json(plan: PlanReport) -> dict[str, Any]:
    return {"plan": plan.plan, "campaign": plan.campaign, "verdict": plan.verdict,
            "checks": [_check_json(c) for c in plan.checks], "summary": list(plan.summary)}


def _campaign_json(report: CampaignReport) -> dict[str, Any]:
    store = {} if report.store_verified is None else {"store_verified": list(report.store_verified)}
    return {**store,
        "format": REPORT_FORMAT,
        "campaign": report.campaign,
        "root": report.root,
        "verdict": report.verdict,
        "fast": report.fast,
        "collected": report.collected,
        "notes": list(report.all_notes),
        "settings": [asdict(setting) for setting in report.settings],
        "reopened": list(report.reopened),
        "played_clock": report.played_clock,
        "question": report.question,
        "decision_rule": report.decision_rule,
        "conclusion": None if report.conclusion is None else
        {"text": report.conclusion, "meets_threshold": list(report.meets_threshold)},
        "provenance": dict(report.provenance) if report.provenance is not None else None,
        "plan_sha256": report.digests.get("plan_sha256"),
        "manifest_sha256": report.digests.get("manifest_sha256"),
        "waivers": [{**plain(w), "nodeids": list(ids)} for w, ids in report.waivers],
        "advisories": [{"nodeid": c.nodeid, "check": c.check, "target": c.target, **plain(a)}
                       for c, a in report.advisories],
        "checks": [_check_json(c) for c in report.checks],
        "reloads": [plain(r) for r in report.reloads],
        "runs": [{**asdict(r), "failing": list(r.failing)} for r in report.runs],
        "budget": report.budget,
        "schedule": report.schedule,
        "steps": [asdict(s) for s in report.steps],
        "evidence": _evidence_json(report.evidence),
        "charts": charts_index(report),
    }


def _evidence_json(ev: Evidence) -> dict[str, Any]:
    """Plain JSON: a non-finite value as the strings the measurements format uses."""
    return {
        "decision": asdict(ev.decision) if ev.decision is not None else None,
        "results": [{**asdict(r), "value": _finite(r.value), "delta": _finite(r.delta)}
                    for r in ev.results],
        "series": [{**asdict(s), "points": [list(p) for p in s.points],
                    "non_finite": [list(p) for p in s.non_finite]} for s in ev.series],
        "resume": [{**asdict(r), "max_difference": _finite(r.max_difference),
                    "max_at": list(r.max_at) if r.max_at else None} for r in ev.resume],
        "deliveries": [{"corpus": d.corpus, "runs": list(d.runs)} for d in ev.deliveries],
        "not_delivering": [{"run": run, "why": why} for run, why in ev.not_delivering],
        "confidence": ev.confidence,
        "intervals": [{**asdict(i), "gain": _finite(i.gain), "low": _finite(i.low),
                       "high": _finite(i.high)} for i in ev.intervals],
    }


def _finite(value: float | None) -> float | str | None:
    if value is None or math.isfinite(value):
        return value
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def _check_json(c: CheckResult) -> dict[str, Any]:
    return {"check": c.check, "target": c.target, "outcome": c.outcome, "message": c.message,
            "nodeid": c.nodeid, "scope": c.scope, "findings": [plain(f) for f in c.findings],
            "advisories": [plain(a) for a in c.advisories],
            "waiver": plain(c.waiver) if c.waiver is not None else None}


def render_json(reports: Sequence[CampaignReport], plans: Sequence[PlanReport] = ()) -> str:
    return json.dumps(to_json(reports, plans), indent=2, ensure_ascii=False) + "\n"
