"""The honest receipts and expense labels (tests/checks/prose/honest/receipts/receipts.json):
each text with the facts it was written about, in English, French, German and Spanish (and
Chinese and Japanese, with their ISO ``issued_on``). All of them are included expenses of
one campaign in order, judged once in-process: no deciding finding by default, and the
readings themselves (strict text) find nothing to say about them but what an entry's
``advises`` lists."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_itera.report.verify import Verdict, check_campaign
from tests.checks.campaigns import BUDGET, budget
from tests.factory import CampaignBuilder

CORPUS = Path(__file__).parent / "honest" / "receipts" / "receipts.json"
ENTRIES: list[dict[str, Any]] = json.loads(CORPUS.read_text("utf-8"))


def _expense(i: int, entry: dict[str, Any]) -> dict[str, Any]:
    facts = dict(entry.get("facts", {}))
    kind = {"kind": facts.pop("kind")} if "kind" in facts else {}
    return {"label": entry["label"], "amount": entry["amount"], **kind,
            "source": {"file": f"receipts/{i:02d}-{entry['id']}.txt", **facts}}


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> tuple[Verdict, Verdict]:
    campaign = CampaignBuilder(tmp_path_factory.mktemp("honest") / "out")
    expenses = [_expense(i, e) for i, e in enumerate(ENTRIES)]
    for i, entry in enumerate(ENTRIES):
        campaign.files[expenses[i]["source"]["file"]] = entry["text"].encode()
    total = sum(float(e["amount"]) for e in ENTRIES) + 47.14
    budget(campaign, included_expenses=expenses, cost_per_deliverable=f"{total:.2f}")
    root = campaign.write()
    return check_campaign(root), check_campaign(root, strict_text=True)


def _by_entry(verdict: Verdict, advisories: bool = False) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    problems = verdict.advisories if advisories else verdict.findings
    for p in problems:
        if p.check != BUDGET:
            continue
        where = p.finding.where or ""
        index = where.split("included_expenses[", 1)[1].split("]")[0] \
            if "included_expenses[" in where else None
        key = ENTRIES[int(index)]["id"] if index is not None else "(campaign)"
        out.setdefault(key, []).append(p.finding.render())
    return out


def test_the_corpus_is_large_and_many_languaged() -> None:
    assert len(ENTRIES) >= 40
    assert {e["lang"] for e in ENTRIES} >= {"en", "fr", "de", "es", "zh", "ja"}
    assert len({e["id"] for e in ENTRIES}) == len(ENTRIES)


def test_no_honest_receipt_or_label_fails_by_default(judged: tuple[Verdict, Verdict]) -> None:
    assert _by_entry(judged[0]) == {}


def test_the_readings_advise_nothing_on_honest_texts(judged: tuple[Verdict, Verdict]) -> None:
    expected = {e["id"]: e["advises"] for e in ENTRIES if e.get("advises")}
    codes = {k: sorted({line.split("\n")[0] for line in v})
             for k, v in _by_entry(judged[1]).items()}
    assert {k: v for k, v in codes.items() if k not in expected} == {}
