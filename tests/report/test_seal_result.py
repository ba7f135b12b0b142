"""The result a seal records (issue 38.4): the journal's head as its pin gives it, and the
schema the record is validated with when written and read."""

from __future__ import annotations

from pathlib import Path

from pytest_itera.checks.context import Context
from pytest_itera.checks.model import Options
from pytest_itera.core.campaign import load_campaign
from pytest_itera.core.journal import JOURNAL_FILE, Journal
from pytest_itera.report import seal_result
from tests.factory import CampaignBuilder


def test_the_journal_head_is_its_pin_and_a_torn_tail_is_left_alone(tmp_path: Path) -> None:
    assert seal_result.journal_head(tmp_path) is None  # a hand-written campaign: no journal
    journal = Journal.open(tmp_path)
    journal.chain_start = "0" * 64
    for event in ("plan", "run-start", "close"):
        journal.append({"event": event})
    head = seal_result.journal_head(tmp_path)
    assert head is not None
    assert f"{head['line']}:{head['digest']}" == journal.pin()
    path = tmp_path / JOURNAL_FILE
    with path.open("ab") as handle:
        handle.write(b'{"event": "to')  # a torn write: not a line of the chain
    before = path.read_bytes()
    assert seal_result.journal_head(tmp_path) == head
    assert path.read_bytes() == before  # read, never cut (the folder is being sealed)


def test_the_schema_names_each_broken_field() -> None:
    assert seal_result.problems({"format": seal_result.RESULT_FORMAT}) != []
    found = seal_result.problems({
        "format": seal_result.RESULT_FORMAT, "plan_sha256": "f" * 64, "journal": {"line": 0,
        "digest": "x"}, "verdict": "accepted", "runs": [], "conclusion": {
            "meets_threshold": [], "text": ""},
        "decision": {"metric": "accuracy", "direction": "up", "threshold": 0.5,
                     "computation": None}})
    assert any(p.startswith("$.decision.direction: 'up'") for p in found)
    assert any(p.startswith("$.journal:") for p in found)


def test_the_sealed_computation_is_the_frozen_plans_own_words(tmp_path: Path) -> None:
    """A computation with a filter (a mapping in the plan, read-only once loaded) is sealed as
    plan.json writes it: the example's seal could not be made while it was copied field by
    field."""
    builder = CampaignBuilder(tmp_path / "c")
    computation = builder.plan["decision"]["computation"]
    computation["where"] = {"label": 1}
    builder.write()
    ctx = Context(load_campaign(builder.root), Options(), {})
    try:
        made = seal_result.record(ctx, "accepted")
    finally:
        ctx.close()
    assert made["decision"]["computation"] == computation
    assert seal_result.problems(made) == []
