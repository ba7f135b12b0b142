"""The rules of ``plan-schedule-fits`` (pytest_itera/checks/plan/plan_schedule_fits.py): each break
refused, with its honest twin.
"""
from __future__ import annotations

import json

import pytest

from tests.plans import grown_by_30, seed_plan, write
from tests.runner import Itera

# ---------------------------------------- first written in test_plan_gate.py


def test_the_reports_carry_the_plan_its_verdict_and_its_schedule(
    itera: Itera, pytester: pytest.Pytester,
) -> None:
    """--itera-report on a plan gate: the plans, their checks and the summary's lines."""
    import jsonschema

    from pytest_itera.core.campaign import schema

    write(pytester.path / "ready", seed_plan())
    write(pytester.path / "late", grown_by_30(seed_plan()))
    itera.gate("--itera-plan", "late", "--itera-report", "r.json", "--itera-report", "r.md",
               "--itera-report", "r.html", plan="ready")
    data = json.loads((pytester.path / "r.json").read_text())
    jsonschema.validate(data, schema("report"))
    assert (data["verdict"], data["campaigns"]) == ("not ready", [])
    plans = {p["plan"]: p for p in data["plans"]}
    assert plans["ready/plan.json"]["verdict"] == "ready"
    late = plans["late/plan.json"]
    assert late["verdict"] == "not ready"
    failed = [c for c in late["checks"] if c["outcome"] == "failed"]
    assert [c["check"] for c in failed] == ["plan-schedule-fits"]
    assert "78 h exceeds the 3-day lot (72 h) by 6 h" in failed[0]["message"]
    assert any("uncommitted" in line for line in plans["ready/plan.json"]["summary"])
    markdown = (pytester.path / "r.md").read_text()
    assert "# Plan late/plan.json: NOT READY" in markdown
    assert "# Plan ready/plan.json: READY" in markdown
    assert "Plan late/plan.json</h1>" in (pytester.path / "r.html").read_text()
