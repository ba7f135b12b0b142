"""The closure report: a plain model built from check results, rendered as text and JSON.

No pytest import: the session plugin feeds it results taken from test reports,
so it is built the same way with or without pytest-xdist.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pytest_itera.campaign import Campaign

REPORT_FORMAT = "itera-report/1"


@dataclass(frozen=True)
class CheckResult:
    check: str
    target: str | None
    outcome: str  # "passed" | "failed" | "skipped"
    message: str
    nodeid: str


@dataclass(frozen=True)
class CampaignReport:
    campaign: str
    root: str
    verdict: str  # "accepted" | "rejected" | "plausible (fast mode)" | "incomplete"
    checks: tuple[CheckResult, ...]
    budget: dict[str, Any] | None
    schedule: dict[str, Any] | None
    collected: int
    fast: bool = False
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def failed(self) -> int:
        return sum(1 for c in self.checks if c.outcome != "passed")


def build(
    campaign: Campaign, results: Iterable[CheckResult], *, collected: int, fast: bool
) -> CampaignReport:
    checks = tuple(sorted(results, key=lambda r: r.nodeid))
    return CampaignReport(
        campaign=campaign.id,
        root=str(campaign.root),
        verdict=verdict(checks, collected=collected, fast=fast),
        checks=checks,
        budget=budget_section(campaign),
        schedule=schedule_section(campaign),
        collected=collected,
        fast=fast,
    )


def verdict(checks: Sequence[CheckResult], *, collected: int, fast: bool) -> str:
    if any(c.outcome != "passed" for c in checks):
        return "rejected"
    if not checks or len(checks) < collected:
        return "incomplete"  # some checks deselected or not run: never "accepted"
    return "plausible (fast mode)" if fast else "accepted"


def budget_section(campaign: Campaign) -> dict[str, Any] | None:
    manifest = campaign.manifest
    if manifest is None:
        return None
    b = manifest.budget
    return {
        "currency": b.currency,
        "lots": list(b.lots),
        "engaged_total": b.rental_total,
        "included_expenses": [asdict(e) for e in b.included_expenses],
        "external_expenses": [asdict(e) for e in b.external_expenses],
        "unit": b.unit,
        "accepted_deliverables": b.accepted_deliverables,
        "cost_per_deliverable": b.cost_per_deliverable,
        "rejection_cause": b.rejection_cause,
    }


def schedule_section(campaign: Campaign) -> dict[str, Any] | None:
    plan, manifest = campaign.plan, campaign.manifest
    if plan is None and manifest is None:
        return None
    return {
        "window_hours": plan.schedule.window_hours if plan else None,
        "sequential_hours": plan.schedule.sequential_hours if plan else None,
        "uncommitted_hours": plan.schedule.uncommitted_hours if plan else None,
        "reserved_hours": manifest.schedule.reserved_hours if manifest else None,
        "observed_hours": manifest.schedule.observed_hours if manifest else None,
    }


# ---------------------------------------------------------------- rendering


def to_json(reports: Sequence[CampaignReport]) -> dict[str, Any]:
    """One campaign: its report object; several: {"verdict", "campaigns": [...]}."""
    objects = [_campaign_json(r) for r in reports]
    if len(objects) == 1:
        return objects[0]
    overall = "accepted" if all(r.verdict == "accepted" for r in reports) else "rejected"
    return {"format": REPORT_FORMAT, "verdict": overall, "campaigns": objects}


def _campaign_json(report: CampaignReport) -> dict[str, Any]:
    return {
        "format": REPORT_FORMAT,
        "campaign": report.campaign,
        "root": report.root,
        "verdict": report.verdict,
        "fast": report.fast,
        "checks": [
            {"check": c.check, "target": c.target, "outcome": c.outcome, "message": c.message,
             "nodeid": c.nodeid}
            for c in report.checks
        ],
        "budget": report.budget,
        "schedule": report.schedule,
    }


def write_json(path: Path, reports: Sequence[CampaignReport]) -> None:
    text = json.dumps(to_json(reports), indent=2, ensure_ascii=False) + "\n"
    _write_atomic(path, text)


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def verdict_line(report: CampaignReport) -> str:
    total = len(report.checks)
    head = f"campaign {report.campaign}"
    if report.verdict == "rejected":
        return f"{head}: REJECTED — {report.failed} of {total} checks failed"
    if report.verdict == "incomplete":
        return f"{head}: INCOMPLETE — {total} of {report.collected} checks ran"
    label = "PLAUSIBLE (fast mode)" if report.fast else "ACCEPTED"
    return f"{head}: {label} — {total}/{total} checks"


def terminal_lines(report: CampaignReport) -> list[str]:
    lines = [verdict_line(report)]
    if report.budget is not None:
        b = report.budget
        cost = (
            f"{b['cost_per_deliverable']} {b['currency']} per {b['unit']}"
            if b["cost_per_deliverable"] is not None
            else f"undefined: {b['accepted_deliverables']} accepted — cause {b['rejection_cause']}"
        )
        lines.append(
            f"  budget: {b['engaged_total']} {b['currency']} engaged ({', '.join(b['lots'])}); "
            f"{b['accepted_deliverables']} accepted {b['unit']}(s); {cost}"
        )
    if report.schedule is not None:
        s = report.schedule
        lines.append(
            f"  schedule: window {_h(s['window_hours'])}, reserved {_h(s['reserved_hours'])}, "
            f"observed {_h(s['observed_hours'])}, uncommitted {_h(s['uncommitted_hours'])}"
        )
    return lines


def _h(hours: float | None) -> str:
    return "?" if hours is None else f"{hours:g} h"
