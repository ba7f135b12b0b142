"""The rules of ``conclusion-consistent`` (pytest_itera/checks/runs/conclusion_consistent.py): each
break refused, with its honest twin.

Where the cases come from (the files they were first written in):

decision.confidence: a variant meets the threshold only when its paired bootstrap interval
does (conclusion-consistent.not-decisive); without it nothing decides differently, and the
report carries each variant's interval.

The campaign is the factory's itera-plan/3 one on a 400-example corpus: the control right on
300, the variant on 322 (a gain of 0.055 over a threshold of 0.05, well inside its noise).

stop-records, config-identity, predictions-cover-corpus, conclusion-consistent: pass and fail.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from pytest_itera import report
from pytest_itera.checks import Options
from pytest_itera.core.campaign import load_campaign
from pytest_itera.core.findings import Finding
from tests.checks.campaigns import (
    DENIED,
    EXTRA_CLAIM,
    Campaign,
    campaign_of,
    findings,
    plan3,
    record,
    rendered,
    stop,
)
from tests.checks.judging import advises_then_fails, expect_finding, expect_no_finding, judge
from tests.factory import CampaignBuilder
from tests.runner import Itera


def test_with_confidence_the_interval_must_clear_the_threshold(tmp_path: Path) -> None:
    root = campaign_of(tmp_path / "out", confidence=0.95).write()
    found = judge(root, "conclusion-consistent")
    text = expect_finding(found, "conclusion-consistent.not-decisive").render()
    assert len(found) == 1, text
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
    found = judge(root, "conclusion-consistent")
    assert len(found) == 1, [f.render() for f in found]
    expect_finding(found, "conclusion-consistent.not-decisive",
                   says="too few examples for an interval (10 paired, at least 20)")


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
    found = judge(campaign, "conclusion-consistent")
    expect_no_finding(found, "conclusion-consistent.not-decisive")
    expect_finding(found, "conclusion-consistent.not-a-variant")




# ---------------------------------------------------------- conclusion-consistent
# Judged on the measurements files' values; the text both ways.

MEASURED = "runs/variant-a/measurements.jsonl"


CHECK = "conclusion-consistent"


def test_conclusion_consistent_passes(plan2_campaign: Campaign) -> None:
    expect_no_finding(judge(plan2_campaign, CHECK))


def test_one_item_for_the_conclusion(itera: Itera, plan2_campaign: Campaign) -> None:
    plan2_campaign.write()
    itera(check="conclusion-consistent").assert_outcomes(passed=1)


def test_negative_result_correctly_stated(plan2_campaign: Campaign) -> None:
    plan2_campaign.set_metric("variant-a", "accuracy", 0.79)
    plan2_campaign.manifest["conclusion"] = {
        "meets_threshold": [],
        "text": "Negative result: no variant meets the 0.8 accuracy threshold (variant-a 0.79)."}
    expect_no_finding(judge(plan2_campaign, CHECK, strict=True))


@pytest.mark.parametrize("text", [
    "variant-a reaches 0.79, below the 0.8 threshold.",
    "The threshold is not met: variant-a stays at 0.79.",
    "Aucune variante n'atteint le seuil de 0.8 (variant-a : 0.79).",
    "variant-a n'atteint pas le seuil ; résultat négatif.",
    "Neither variant beats the 0.8 bar.",
])
def test_negative_result_in_other_words(plan2_campaign: Campaign, text: str) -> None:
    plan2_campaign.set_metric("variant-a", "accuracy", 0.79)
    plan2_campaign.manifest["conclusion"] = {"meets_threshold": [], "text": text}
    found = judge(plan2_campaign, CHECK)
    expect_no_finding(found)
    expect_no_finding(found.advisories, "conclusion-consistent.negative-unstated")


def test_empty_list_without_a_negative_statement(plan2_campaign: Campaign) -> None:
    plan2_campaign.set_metric("variant-a", "accuracy", 0.79)
    plan2_campaign.manifest["conclusion"] = {"meets_threshold": [],
                                             "text": "variant-a scored 0.79 on the corpus."}
    finding = advises_then_fails(plan2_campaign, CHECK, "conclusion-consistent.negative-unstated")
    assert finding.where == "manifest.json $.conclusion.text"
    assert "meets_threshold is empty, but the conclusion's text does not state the negative " \
        "result" in finding.message
    assert finding.found == "'variant-a scored 0.79 on the corpus.'"
    assert (finding.hint or "").startswith("say that no variant meets accuracy >= 0.8")


def test_empty_list_but_the_text_claims_a_variant_meets(plan2_campaign: Campaign) -> None:
    plan2_campaign.set_metric("variant-a", "accuracy", 0.79)
    plan2_campaign.manifest["conclusion"] = {
        "meets_threshold": [],
        "text": "Negative result for the control; variant-a meets the 0.8 accuracy threshold."}
    finding = expect_finding(judge(plan2_campaign, CHECK), "conclusion-consistent.named-unlisted",
                             where="manifest.json $.conclusion.text",
                             says="the conclusion's text names variant-a as meeting the "
                             "threshold, but meets_threshold is empty")
    assert finding.found == "'variant-a meets the 0.8 accuracy threshold'"


@pytest.mark.parametrize("text", ["   ", "\u200b\u00a0"], ids=["spaces", "invisible"])
def test_blank_conclusion_text(plan2_campaign: Campaign, text: str) -> None:
    plan2_campaign.manifest["conclusion"]["text"] = text
    expect_finding(judge(plan2_campaign, CHECK), "conclusion-consistent.no-text",
                   where="manifest.json $.conclusion.text", says="the conclusion has no text")


def test_listed_variant_not_named_in_the_text(plan2_campaign: Campaign) -> None:
    plan2_campaign.manifest["conclusion"]["text"] = "One variant meets the 0.8 accuracy threshold."
    finding = advises_then_fails(plan2_campaign, CHECK, "conclusion-consistent.listed-unnamed")
    assert finding.where == "manifest.json $.conclusion.text"
    assert "the conclusion's text does not name variant-a, which meets_threshold lists" \
        in finding.message
    assert finding.found == "'One variant meets the 0.8 accuracy threshold.'"


def _below(found: Sequence[Finding], says: str, shown: str) -> Finding:
    finding = expect_finding(found, "conclusion-consistent.below-threshold",
                             where="manifest.json $.conclusion.meets_threshold",
                             says=f"the conclusion lists variant-a as meeting the threshold, "
                             f"but its {says}")
    assert finding.found == shown
    return finding


def test_conclusion_contradicts_the_metrics(plan2_campaign: Campaign) -> None:
    plan2_campaign.set_metric("variant-a", "accuracy", 0.79)
    finding = _below(judge(plan2_campaign, CHECK), "accuracy is 0.79",
                     f"accuracy = 0.79 ({MEASURED}:5)")
    assert finding.expected == "accuracy >= 0.8"
    assert (finding.hint or "").startswith("state the conclusion the measured metrics support")


def test_gain_inflated_in_the_manifest_only(plan2_campaign: Campaign) -> None:
    """The manifest says 0.85, the measurements 0.79: the conclusion is judged on the file."""
    plan2_campaign.set_metric("variant-a", "accuracy", 0.79)
    record(plan2_campaign, "variant-a")["metrics"]["accuracy"] = 0.85
    _below(judge(plan2_campaign, CHECK), "accuracy is 0.79", f"accuracy = 0.79 ({MEASURED}:5)")


@pytest.mark.parametrize("deflated", [False, True], ids=["as-measured", "deflated-in-manifest"])
def test_conclusion_hides_a_variant_that_meets(plan2_campaign: Campaign, deflated: bool) -> None:
    """A negative result stated on the measurements, or on a manifest value they contradict."""
    if deflated:
        record(plan2_campaign, "variant-a")["metrics"]["accuracy"] = 0.79
    plan2_campaign.manifest["conclusion"] = {"meets_threshold": [], "text": "Negative result."}
    finding = expect_finding(judge(plan2_campaign, CHECK),
                             "conclusion-consistent.unlisted-variant",
                             where="manifest.json $.conclusion.meets_threshold",
                             says="variant variant-a meets the threshold but the conclusion "
                             "does not list it")
    assert (finding.expected, finding.found) == ("accuracy >= 0.8",
                                                 f"accuracy = 1.0 ({MEASURED}:5)")


def test_run_without_measurements_is_judged_on_the_manifest(plan2_campaign: Campaign) -> None:
    """No evidence to read (measurements-agree fails it): the manifest's copy is used."""
    del record(plan2_campaign, "variant-a")["measurements"]
    record(plan2_campaign, "variant-a")["metrics"]["accuracy"] = 0.79
    _below(judge(plan2_campaign, CHECK), "accuracy is 0.79",
           "accuracy = 0.79 (manifest.json $.runs[3].metrics)")


def test_lower_is_better(plan2_campaign: Campaign) -> None:
    plan2_campaign.plan["decision"] = {"metric": "error", "direction": "lower", "threshold": 0.2}
    plan2_campaign.set_metric("control", "error", 0.25)
    plan2_campaign.set_metric("variant-a", "error", 0.2)  # equal counts as meeting it
    expect_no_finding(judge(plan2_campaign, CHECK))


def test_lower_is_better_contradicted(plan2_campaign: Campaign) -> None:
    plan2_campaign.plan["decision"] = {"metric": "error", "direction": "lower", "threshold": 0.2}
    plan2_campaign.set_metric("variant-a", "error", 0.21)
    finding = _below(judge(plan2_campaign, CHECK), "error is 0.21",
                     f"error = 0.21 ({MEASURED}:5)")
    assert finding.expected == "error <= 0.2"


def test_variant_without_the_decision_metric(plan2_campaign: Campaign) -> None:
    record(plan2_campaign, "variant-a")["metrics"] = {"loss": 0.3}
    plan2_campaign.measurements["variant-a"][-1] = {"metrics": {"loss": 0.3}}
    plan2_campaign.manifest["conclusion"] = {"meets_threshold": [], "text": "No variant meets it."}
    finding = expect_finding(judge(plan2_campaign, CHECK), "conclusion-consistent.no-metric",
                             where=MEASURED, says="accepted variant variant-a has no 'accuracy' "
                             "metric (the plan's decision metric)")
    assert finding.found == "metrics ['loss']"


def test_conclusion_lists_the_control(plan2_campaign: Campaign) -> None:
    plan2_campaign.set_metric("control", "accuracy", 0.9)
    plan2_campaign.manifest["conclusion"]["meets_threshold"] = ["variant-a", "control", "variant-z"]
    found = judge(plan2_campaign, CHECK)
    # The list decides; the text not naming variant-z is a reading of words: it advises.
    assert len(found) == 2, [f.render() for f in found]
    expect_finding(found, "conclusion-consistent.not-a-variant",
                   where="manifest.json $.conclusion.meets_threshold",
                   says="the conclusion lists control, a control run: only variants are "
                   "compared with the threshold")
    expect_finding(found, "conclusion-consistent.unknown-run",
                   where="manifest.json $.conclusion.meets_threshold",
                   says="the conclusion lists variant-z, which is not a run of the manifest")


def test_pilot_is_not_a_variant(plan2_campaign: Campaign) -> None:
    plan2_campaign.plan["runs"].append({"id": "pilot", "role": "pilot", "category": "useful",
                                        "config_sha256": "1" * 64})
    plan2_campaign.manifest["runs"].append(dict(record(plan2_campaign, "variant-a"), id="pilot"))
    expect_no_finding(judge(plan2_campaign, CHECK))  # meets, unlisted: fine
    plan2_campaign.manifest["conclusion"]["meets_threshold"] = ["variant-a", "pilot"]
    plan2_campaign.manifest["conclusion"]["text"] = "variant-a and pilot meet the threshold."
    expect_finding(judge(plan2_campaign, CHECK), "conclusion-consistent.not-a-variant",
                   where="manifest.json $.conclusion.meets_threshold",
                   says="the conclusion lists pilot, a pilot run: only variants are compared "
                   "with the threshold")


def test_a_listed_variant_that_stopped(plan2_campaign: Campaign) -> None:
    stop(plan2_campaign)
    plan2_campaign.manifest["conclusion"] = {"meets_threshold": ["variant-a"],
                                             "text": "variant-a meets the threshold."}
    expect_finding(judge(plan2_campaign, CHECK), "conclusion-consistent.not-accepted",
                   where="manifest.json $.conclusion.meets_threshold",
                   says="the conclusion lists variant-a, whose outcome is 'stopped': only an "
                   "accepted run can meet the threshold")


def test_text_states_a_negative_result_but_lists_a_variant(plan2_campaign: Campaign) -> None:
    conclusion = plan2_campaign.manifest["conclusion"]
    conclusion["text"] = "No variant meets the 0.8 threshold (variant-a)."
    finding = advises_then_fails(plan2_campaign, CHECK,
                                 "conclusion-consistent.negative-but-listed")
    assert finding.where == "manifest.json $.conclusion.text"
    assert "the conclusion's text states a negative result, but it lists variant-a as meeting " \
        "the threshold" in finding.message


def test_all_variants_stopped_is_a_negative_result(plan2_campaign: Campaign) -> None:
    stop(plan2_campaign)
    expect_no_finding(judge(plan2_campaign, CHECK))
    expect_no_finding(judge(plan2_campaign, "stop-records", write=False))


# ---------------------------------------- first written in test_metrics.py


def test_gain_listed_as_meeting_contradicted_by_predictions(tmp_path: Path) -> None:
    campaign = plan3(tmp_path / "out", metric="accuracy_gain", relative_to="control")
    campaign.plan["decision"]["threshold"] = 0.2  # the predictions give a gain of 0.25
    campaign.files["runs/variant-a/predictions.jsonl"] = campaign.files[
        "runs/control/predictions.jsonl"]  # ... now 0.0
    campaign.manifest["conclusion"] = {
        "meets_threshold": ["variant-a"], "text": "variant-a meets the threshold."}
    root = campaign.write()
    text = rendered(findings(root, "conclusion-consistent"))
    assert "the conclusion lists variant-a as meeting the threshold, but its accuracy_gain " \
        "is 0.0" in text, text
    assert "    found:    accuracy_gain = 0.0 (recomputed (accuracy) from " \
        "runs/variant-a/predictions.jsonl minus control's recomputed (accuracy) from " \
        "runs/control/predictions.jsonl)" in text, text
    text = rendered(findings(root, "metrics-recomputed", "variant-a"))
    assert "run variant-a's accuracy_gain is 0.25 at" in text, text


@pytest.mark.parametrize(("text", "message", "exact"), [
    ("variant-a meets the 0.8 accuracy threshold; variant-b meets the threshold too.",
     EXTRA_CLAIM, True),
    ("variant-a meets the 0.8 accuracy threshold; variant-b meets it too.", EXTRA_CLAIM, False),
    # A question is no statement: the exact reading does not take it, the loose one advises.
    ("variant-a meets the 0.8 accuracy threshold. Does variant-b meet the threshold too?",
     EXTRA_CLAIM, False),
    ("variant-a meets the threshold; variant-b beats the control and passes the threshold.",
     EXTRA_CLAIM, False),
    ("variant-a atteint le seuil; variant-b atteint aussi le seuil.", EXTRA_CLAIM, True),
    ("variant-a is listed; but variant-a does not reach the threshold.", DENIED, False),
    ("variant-a est retenue; variant-a n'atteint pas le seuil.", DENIED, False),
])
def test_conclusion_text_claims_what_the_list_does_not(
    tmp_path: Path, text: str, message: str, exact: bool
) -> None:
    """A sentence naming one unlisted run alone as meeting the threshold decides; the other
    readings of the words advise, and decide under strict text."""
    campaign = CampaignBuilder(tmp_path / "out")
    campaign.plan["runs"].append({**campaign.plan["runs"][3], "id": "variant-b"})
    campaign.manifest["conclusion"]["text"] = text
    root = campaign.write()
    found = rendered(findings(root, "conclusion-consistent"))
    assert (f"manifest.json $.conclusion.text: {message}" in found) is exact, found
    strict = rendered(findings(root, "conclusion-consistent", options=Options(strict_text=True)))
    assert f"manifest.json $.conclusion.text: {message}" in strict, strict


def test_conclusion_text_denying_a_listed_variant(tmp_path: Path) -> None:
    campaign = CampaignBuilder(tmp_path / "out")
    campaign.manifest["conclusion"]["text"] = ("variant-a is listed; but variant-a does not "
                                               "reach the threshold.")
    finding = advises_then_fails(campaign, "conclusion-consistent",
                                 "conclusion-consistent.text-denies")
    assert (finding.where, finding.message) == ("manifest.json $.conclusion.text", DENIED)


def test_conclusion_text_with_a_colon_list_names_no_extra_claim(tmp_path: Path) -> None:
    """The example's shape: the head names who meets, the list after the colon each run."""
    campaign = CampaignBuilder(tmp_path / "out")
    campaign.plan["runs"].append({**campaign.plan["runs"][3], "id": "variant-b"})
    campaign.manifest["conclusion"]["text"] = (
        "variant-a meets the threshold (accuracy >= 0.8): variant-a 1.0; variant-b 0.5.")
    root = campaign.write()
    assert "variant-b" not in rendered(findings(root, "conclusion-consistent"))


# ---------------------------------------- first written in test_one_rule_breaks.py


# ============ v3: the conclusion and the analysis quote the measured values (audit3)


def test_a_conclusion_quoting_a_value_no_metric_holds_is_refused(
    campaign: CampaignBuilder
) -> None:
    # Measurements, manifest and predictions say variant-a 1.0; the text quotes 0.95.
    campaign.manifest["conclusion"]["text"] = (
        "variant-a 0.95 meets the 0.8 accuracy threshold; control's 0.75 does not.")
    found = expect_finding(
        judge(campaign, "conclusion-consistent"), "conclusion-consistent.quoted-value",
        where="manifest.json $.conclusion.text",
        says="quotes 0.95 for variant-a's accuracy, which is 1")
    # The clause names the run, its metric and a number: an exact reading, it decides.
    assert not found.advisory
    assert found.expected == ("variant-a's accuracy 1 (runs/variant-a/measurements.jsonl)")
    assert found.hint is not None
    assert found.hint.startswith("quote the values the measurements hold")


def test_a_conclusion_quoting_the_measured_values_passes(campaign: CampaignBuilder) -> None:
    campaign.manifest["conclusion"]["text"] = (
        "variant-a 1.00 meets the 0.8 accuracy threshold; control's 75.0% does not "
        "(variant-a at 0.5 h more).")
    expect_no_finding(judge(campaign, "conclusion-consistent"))


@pytest.mark.parametrize("text", [
    "variant-a 0.25 higher than control meets the accuracy threshold; control does not.",
    "variant-a 1.3 times control's accuracy meets the threshold; control does not.",
    "variant-a 0.5 dropout meets the accuracy threshold; control does not.",
    "control: 0.1 noise, 0.75 accuracy, under the threshold; variant-a meets it.",
])
def test_a_difference_a_ratio_or_a_setting_after_a_run_is_no_quoted_value(
    campaign: CampaignBuilder, text: str
) -> None:
    """An honest text writes numbers beside a run that no metric holds: only a value the run
    is said to have is judged against its measurements."""
    campaign.manifest["conclusion"]["text"] = text
    expect_no_finding(judge(campaign, "conclusion-consistent"))
