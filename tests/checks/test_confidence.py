"""decision.confidence: a variant meets the threshold only when its paired bootstrap interval
does (conclusion-consistent.not-decisive); without it nothing decides differently, and the
report carries each variant's interval.

The campaign is the factory's itera-plan/3 one on a 400-example corpus: the control right on
300, the variant on 322 (a gain of 0.055 over a threshold of 0.05, well inside its noise).
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from pytest_itera import report
from pytest_itera.core.campaign import load_campaign
from pytest_itera.core.findings import Finding
from tests.checks.test_metrics import findings
from tests.factory import CampaignBuilder, sha256

EXAMPLES = 400
RIGHT = {"control": 300, "variant-a": 322}


def _jsonl(rows: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def campaign_of(root: Path, examples: int = EXAMPLES, *, confidence: float | None = None,
                right: dict[str, int] | None = None) -> CampaignBuilder:
    """The gain relative to the control decides (threshold 0.05); variant-a is listed."""
    right = right or RIGHT
    campaign = CampaignBuilder(root)
    ids = [f"ex-{i}" for i in range(examples)]
    labels = ["pos" if i % 2 else "neg" for i in range(examples)]
    corpus = _jsonl([{"id": i, "text": f"example {i}", "label": lab}
                     for i, lab in zip(ids, labels, strict=True)])
    campaign.files["corpus/corpus.jsonl"] = corpus
    campaign.plan["corpora"][0].update(sha256=sha256(corpus), examples=examples)
    for row in campaign.measurements["data-check"]:
        if "checked_input" in row:
            row["checked_input"].update(sha256=sha256(corpus), examples=examples,
                                        bytes=len(corpus))
    decision = campaign.plan["decision"]
    decision.update(metric="accuracy_gain", threshold=0.05, computation={
        "kind": "accuracy", "label_field": "label", "prediction_field": "prediction",
        "relative_to": "control"})
    if confidence is not None:
        decision["confidence"] = confidence
    for run_id, hits in right.items():
        # the control right on the first examples, the variant on its first and a few more
        guesses = [lab if i < hits else ("neg" if lab == "pos" else "pos")
                   for i, lab in enumerate(labels)]
        campaign.files[f"runs/{run_id}/predictions.jsonl"] = _jsonl(
            [{"id": i, "prediction": p} for i, p in zip(ids, guesses, strict=True)])
        campaign.run_record(run_id)["metrics"] = {}
        campaign.measurements[run_id] = [r for r in campaign.measurements[run_id]
                                         if "metrics" not in r]
    gain = (right["variant-a"] - right["control"]) / examples
    campaign.set_metric("variant-a", "accuracy_gain", gain)
    campaign.manifest["conclusion"] = {
        "meets_threshold": ["variant-a"] if gain >= 0.05 else [],
        "text": f"variant-a meets the threshold: accuracy_gain {gain}." if gain >= 0.05
        else "No variant meets the threshold."}
    return campaign


def codes(found: tuple[Finding, ...]) -> list[str | None]:
    return [f.code for f in found]


def test_without_confidence_a_gain_inside_its_noise_passes(tmp_path: Path) -> None:
    root = campaign_of(tmp_path / "out").write()
    assert findings(root, "metrics-recomputed", "variant-a") == ()
    assert findings(root, "conclusion-consistent") == ()


def test_with_confidence_the_interval_must_clear_the_threshold(tmp_path: Path) -> None:
    root = campaign_of(tmp_path / "out", confidence=0.95).write()
    found = findings(root, "conclusion-consistent")
    assert codes(found) == ["conclusion-consistent.not-decisive"], found
    text = found[0].render()
    assert "the conclusion lists variant-a as meeting the threshold, but it is not decisive " \
        "at 95 %: gain 0.055, 95 % interval [" in text, text
    assert "(paired bootstrap, 2000 resamples, seed 0): its bound " in text, text


def test_with_confidence_a_clear_gain_passes(tmp_path: Path) -> None:
    root = campaign_of(tmp_path / "out", confidence=0.95,
                       right={"control": 300, "variant-a": 380}).write()
    assert findings(root, "conclusion-consistent") == ()


def test_with_confidence_an_unlisted_noisy_variant_need_not_be_listed(tmp_path: Path) -> None:
    campaign = campaign_of(tmp_path / "out", confidence=0.95)
    campaign.manifest["conclusion"] = {"meets_threshold": [],
                                       "text": "No variant meets the threshold."}
    assert findings(campaign.write(), "conclusion-consistent") == ()


def test_with_confidence_too_few_examples_is_said(tmp_path: Path) -> None:
    root = campaign_of(tmp_path / "out", 10, confidence=0.95,
                       right={"control": 5, "variant-a": 9}).write()
    found = findings(root, "conclusion-consistent")
    assert codes(found) == ["conclusion-consistent.not-decisive"], found
    assert "too few examples for an interval (10 paired, at least 20)" in found[0].render()


def test_confidence_is_refused_in_plan_2(tmp_path: Path) -> None:
    campaign = campaign_of(tmp_path / "out", confidence=0.95)
    campaign.plan["format"] = "itera-plan/2"
    campaign.plan["decision"].pop("computation")
    campaign.plan.pop("metrics", None)
    loaded = load_campaign(campaign.write())
    text = "\n".join(e.message for e in loaded.errors)
    assert "'confidence' is itera-plan/3" in text, text


def built_report(root: Path) -> report.CampaignReport:
    return report.build(load_campaign(root), [], collected=0, fast=False)


def test_the_reports_carry_the_interval_and_say_not_decisive(tmp_path: Path) -> None:
    built = built_report(campaign_of(tmp_path / "out").write())
    [interval] = built.evidence.intervals
    assert (interval.run, interval.level, interval.decisive) == ("variant-a", 0.95, False)
    assert interval.gain == pytest.approx(0.055)
    assert interval.low is not None
    assert interval.high is not None
    assert interval.low < 0.05 < interval.high
    data = json.loads(report.render_json([built]))
    schema = json.loads(resources.files("pytest_itera.schemas")
                        .joinpath("report.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(data)
    assert data["evidence"]["intervals"] == [{
        "run": "variant-a", "gain": interval.gain, "low": interval.low, "high": interval.high,
        "level": 0.95, "method": "paired bootstrap, 2000 resamples, seed 0",
        "decisive": False, "note": None}]
    [line] = [x for x in report.terminal_lines(built) if x.startswith("  variant-a: ")]
    assert line == (f"  variant-a: accuracy_gain gain +0.055, 95 % interval "
                    f"[{interval.low:+.4g}, {interval.high:+.4g}] (paired bootstrap, 2000 "
                    "resamples, seed 0): not decisive at 95 %")
    markdown = report.render_markdown([built])
    assert "| 95 % interval of Δ |" in markdown
    row = next(x for x in markdown.splitlines() if x.startswith("| variant-a | variant |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    low, high = (float(x) for x in cells[5].replace("\\", "").strip("[]").split(", "))
    assert low == pytest.approx(interval.low, abs=5e-4)
    assert high == pytest.approx(interval.high, abs=5e-4)
    assert cells[6] == "yes (not decisive at 95 %)"
    assert "not decisive at 95 %" in report.render_html([built])


def test_too_few_examples_are_said_in_the_json_report_only(tmp_path: Path) -> None:
    built = built_report(CampaignBuilder(tmp_path / "out").write())
    note = "too few examples for an interval (4 paired, at least 20)"
    assert [(i.run, i.note) for i in built.evidence.intervals] == [("variant-a", note)]
    assert not any(x.startswith("  variant-a: ") for x in report.terminal_lines(built))


def test_a_listed_control_is_not_judged_on_an_interval(tmp_path: Path) -> None:
    campaign = campaign_of(tmp_path / "out", confidence=0.95,
                           right={"control": 300, "variant-a": 380})
    campaign.manifest["conclusion"]["meets_threshold"] = ["variant-a", "control"]
    found = findings(campaign.write(), "conclusion-consistent")
    assert "conclusion-consistent.not-decisive" not in codes(found), found
    assert "conclusion-consistent.not-a-variant" in codes(found), found
