"""metrics-recomputed (itera-plan/3) and the conclusion judged on the recomputed values.

Campaigns are the factory's, turned into itera-plan/3: the corpus carries labels, each run's
predictions give a value a hand computation (the oracle below, scikit-learn's definitions)
also gives, and the manifest and measurements state it; forging breaks one of them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_itera.checks import Context, Options
from pytest_itera.checks.common.scoring import accuracy
from pytest_itera.checks.engine import judge
from pytest_itera.checks.metrics import CHECKS as METRIC_CHECKS
from pytest_itera.checks.runs import CHECKS as RUN_CHECKS
from pytest_itera.core.campaign import load_campaign
from pytest_itera.core.findings import Finding
from tests.factory import CORPUS_IDS, CampaignBuilder, as_plan_2, sha256

CLASSES = ["a", "b", "c", "a"]
PREDICTED = {"control": ["a", "b", "b", "b"], "variant-a": ["a", "b", "c", "c"]}
NUMBERS = [1.0, 2.0, 3.0, 4.0]
GUESSED = {"control": [1.5, 2.0, 2.0, 4.0], "variant-a": [1.0, 2.5, 3.0, 4.0]}
REGRESSION = ("mae", "mse", "rmse")


def oracle(kind: str, truth: Sequence[Any], guess: Sequence[Any]) -> float:
    """The definitions by hand (scikit-learn's: macro over labels present or predicted)."""
    n = len(truth)
    if kind in REGRESSION:
        mse = sum((a - b) ** 2 for a, b in zip(truth, guess, strict=True)) / n
        return float({"mae": sum(abs(a - b) for a, b in zip(truth, guess, strict=True)) / n,
                      "mse": mse, "rmse": math.sqrt(mse)}[kind])
    hits = sum(a == b for a, b in zip(truth, guess, strict=True))
    if kind in ("accuracy", "exact_match", "f1_micro"):
        return float(hits / n)
    per: list[float] = []
    for label in sorted(set(truth) | set(guess)):
        tp = sum(a == b == label for a, b in zip(truth, guess, strict=True))
        precision = tp / max(sum(b == label for b in guess), 1)
        recall = tp / max(sum(a == label for a in truth), 1)
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        per.append({"precision_macro": precision, "recall_macro": recall, "f1_macro": f1}[kind])
    return sum(per) / len(per)


def _jsonl(rows: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def plan3(root: Path, kind: str = "accuracy", *, metric: str = "accuracy",
          relative_to: str | None = None) -> CampaignBuilder:
    """The factory's campaign as itera-plan/3, each run's metric what its predictions give."""
    campaign = CampaignBuilder(root)
    numeric = kind in REGRESSION
    truth: list[Any] = NUMBERS if numeric else CLASSES
    guesses: dict[str, list[Any]] = GUESSED if numeric else PREDICTED
    corpus = _jsonl([{"id": i, "text": f"example {i}", "label": lab}
                     for i, lab in zip(CORPUS_IDS, truth, strict=True)])
    campaign.files["corpus/corpus.jsonl"] = corpus
    campaign.plan["corpora"][0]["sha256"] = sha256(corpus)
    campaign.plan["format"] = "itera-plan/3"
    computation: dict[str, Any] = {"kind": kind, "label_field": "label",
                                   "prediction_field": "prediction"}
    if relative_to is not None:
        computation["relative_to"] = relative_to
    campaign.plan["decision"].update(metric=metric, computation=computation)
    if numeric:
        campaign.plan["decision"].update(direction="lower", threshold=10.0)
    values = {}
    for run_id, guess in guesses.items():
        campaign.files[f"runs/{run_id}/predictions.jsonl"] = _jsonl(
            [{"id": i, "label": t, "prediction": p}
             for i, t, p in zip(CORPUS_IDS, truth, guess, strict=True)])
        values[run_id] = oracle(kind, truth, guess)
        campaign.run_record(run_id)["metrics"] = {}
        campaign.measurements[run_id] = [r for r in campaign.measurements[run_id]
                                         if "metrics" not in r]
    for run_id, value in values.items():
        if relative_to is not None:
            if run_id == "control":
                continue
            value -= values["control"]
        campaign.set_metric(run_id, metric, round(value, 4))
    return campaign


def findings(root: Path, check: str, target: str | None = None,
             options: Options | None = None) -> tuple[Finding, ...]:
    registry = {c.id: c for c in (*RUN_CHECKS, *METRIC_CHECKS)}
    context = Context(load_campaign(root), options or Options(), registry)
    try:
        return judge(context).findings(check, target)
    finally:
        context.close()


def rendered(found: tuple[Finding, ...]) -> str:
    return "\n".join(f.render() for f in found)


KINDS = ("accuracy", "exact_match", "f1_macro", "f1_micro", "precision_macro", "recall_macro",
         *REGRESSION)


def test_the_default_campaign_passes(tmp_path: Path) -> None:
    root = CampaignBuilder(tmp_path / "out").write()
    for run_id in ("control", "variant-a"):
        assert findings(root, "metrics-recomputed", run_id) == ()
    assert findings(root, "conclusion-consistent") == ()


def test_a_changed_corpus_is_said_under_this_checks_own_code(tmp_path: Path) -> None:
    """No metric is recomputed on a frozen corpus that changed: the coverage check's kind of
    finding, re-coded under metrics-recomputed (an item's codes are its check's)."""
    root = CampaignBuilder(tmp_path / "out").write()
    corpus = root / "corpus" / "corpus.jsonl"
    corpus.write_bytes(corpus.read_bytes() + b"\n")
    found = findings(root, "metrics-recomputed", "variant-a")
    assert [f.code for f in found] == ["metrics-recomputed.corpus-sha256"], rendered(found)


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_recomputed_passes(tmp_path: Path, kind: str) -> None:
    root = plan3(tmp_path / "out", kind).write()
    for run_id in PREDICTED:
        assert findings(root, "metrics-recomputed", run_id) == ()


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_forged_in_manifest_and_file_fails(tmp_path: Path, kind: str) -> None:
    campaign = plan3(tmp_path / "out", kind)
    numeric = kind in REGRESSION
    truth = NUMBERS if numeric else CLASSES
    right = oracle(kind, truth, (GUESSED if numeric else PREDICTED)["variant-a"])
    forged = round(right + 0.1, 4)
    campaign.set_metric("variant-a", "accuracy", forged)  # both places
    root = campaign.write()
    text = rendered(findings(root, "metrics-recomputed", "variant-a"))
    shown = f"{right:.{len(repr(forged).split('.')[1])}f}"  # at the precision written
    assert f"run variant-a's accuracy is {forged!r} at runs/variant-a/measurements.jsonl:5, " \
        f"but its predictions give {shown}" in text, text
    assert f"run variant-a's accuracy is {forged!r} at manifest.json " \
        "$.runs[3].metrics.accuracy" in text, text
    assert f"    expected: {shown} (recomputed ({kind}) from " \
        "runs/variant-a/predictions.jsonl)" in text, text


def test_every_prediction_wrong_while_metrics_claim_0_856(tmp_path: Path) -> None:
    campaign = plan3(tmp_path / "out")
    campaign.files["runs/variant-a/predictions.jsonl"] = _jsonl(
        [{"id": i, "label": t, "prediction": "z"} for i, t in zip(CORPUS_IDS, CLASSES,
                                                                    strict=True)])
    campaign.set_metric("variant-a", "accuracy", 0.856)
    root = campaign.write()
    text = rendered(findings(root, "metrics-recomputed", "variant-a"))
    assert "runs/variant-a/measurements.jsonl:5: run variant-a's accuracy is 0.856 at " \
        "runs/variant-a/measurements.jsonl:5, but its predictions give 0.000" in text, text
    # the conclusion is judged on the recomputed value, not on the 0.856 written twice
    text = rendered(findings(root, "conclusion-consistent"))
    assert "the conclusion lists variant-a as meeting the threshold, but its accuracy is 0.0" \
        in text, text
    assert "    found:    accuracy = 0.0 (recomputed (accuracy) from " \
        "runs/variant-a/predictions.jsonl)" in text, text


def test_label_column_rewritten_to_agree_is_refused(tmp_path: Path) -> None:
    campaign = plan3(tmp_path / "out")
    campaign.files["runs/variant-a/predictions.jsonl"] = _jsonl(
        [{"id": i, "label": p, "prediction": p}
         for i, p in zip(CORPUS_IDS, PREDICTED["variant-a"], strict=True)])
    campaign.set_metric("variant-a", "accuracy", 1.0)  # what the rewritten labels would give
    root = campaign.write()
    text = rendered(findings(root, "metrics-recomputed", "variant-a"))
    assert "runs/variant-a/predictions.jsonl:4: the predictions of run variant-a rewrite the " \
        "corpus labels: 1 row(s) give a 'label' other than the frozen corpus " \
        "corpus/corpus.jsonl's" in text, text
    assert "run variant-a's accuracy is 1.0 at runs/variant-a/measurements.jsonl:5, but its " \
        "predictions give 0.8" in text, text  # scored on the corpus's labels (0.75 at 1 decimal)


def test_label_disagreement_names_ids_and_lines(tmp_path: Path) -> None:
    campaign = plan3(tmp_path / "out")
    campaign.files["runs/variant-a/predictions.jsonl"] = _jsonl(
        [{"id": i, "label": p, "prediction": p}
         for i, p in zip(CORPUS_IDS, PREDICTED["variant-a"], strict=True)])
    root = campaign.write()
    text = rendered(findings(root, "metrics-recomputed", "variant-a"))
    assert "    found:    ex-4 (line 4): 'c', the corpus says 'a'" in text, text


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


def test_gain_relative_to_control_passes(tmp_path: Path) -> None:
    root = plan3(tmp_path / "out", metric="accuracy_gain", relative_to="control").write()
    assert findings(root, "metrics-recomputed", "variant-a") == ()


def test_plan_2_cannot_prove(tmp_path: Path) -> None:
    campaign = CampaignBuilder(tmp_path / "out")
    as_plan_2(campaign.plan)
    root = campaign.write()
    text = rendered(findings(root, "metrics-recomputed", "variant-a"))
    assert text.startswith("manifest.json $.runs[3].metrics: itera-plan/2 cannot prove the "
                           "metric: run variant-a reports accuracy = 1.0, but the plan does "
                           "not say how it is computed"), text
    assert "    fix:      declare the computation in itera-plan/3: decision.computation" in text


def test_unknown_kind_without_hook_cannot_prove(tmp_path: Path) -> None:
    campaign = plan3(tmp_path / "out")
    campaign.plan["decision"]["computation"]["kind"] = "within_one"
    root = campaign.write()
    text = rendered(findings(root, "metrics-recomputed", "variant-a"))
    assert "cannot prove the metric: 'within_one' is not a built-in metric kind and no " \
        "pytest_itera_metric hook computes it" in text, text


def test_custom_kind_through_the_hook_in_process(tmp_path: Path) -> None:
    campaign = plan3(tmp_path / "out")
    campaign.plan["decision"]["computation"]["kind"] = "hits"
    campaign.set_metric("variant-a", "accuracy", 3.0)
    campaign.set_metric("control", "accuracy", 2.0)
    root = campaign.write()
    options = Options(metric_hook=lambda name: (lambda pairs: float(sum(a == b for a, b in pairs)))
                      if name == "hits" else None)
    assert findings(root, "metrics-recomputed", "variant-a", options) == ()


CUSTOM_CONFTEST = """
def pytest_itera_metric(name, config):
    if name != "hits":
        return None
    return lambda pairs: float(sum(label == guess for label, guess in pairs))
"""


def test_custom_metric_hook_in_a_conftest(pytester: pytest.Pytester) -> None:
    campaign = plan3(pytester.path / "out")
    campaign.plan["decision"]["computation"]["kind"] = "hits"
    campaign.set_metric("variant-a", "accuracy", 2.0)  # the predictions give 3 hits
    campaign.set_metric("control", "accuracy", 2.0)
    campaign.write()
    pytester.makeconftest(CUSTOM_CONFTEST)
    result = pytester.runpytest("--itera-campaign", "out", "-k", "metrics-recomputed",
                                "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*run variant-a's accuracy is 2.0 at runs/variant-a/measurements.jsonl:5, but its "
        "predictions give 3.0*"])


def test_schema_refuses_computation_in_plan_2(tmp_path: Path) -> None:
    campaign = CampaignBuilder(tmp_path / "out")
    campaign.plan["format"] = "itera-plan/2"  # with the computation of the default /3 plan
    loaded = load_campaign(campaign.write())
    assert [e.message for e in loaded.errors] == [
        "'computation' is itera-plan/3: set format to itera-plan/3 (which requires it)"]


def test_plan_3_requires_the_decision_computation(tmp_path: Path) -> None:
    campaign = CampaignBuilder(tmp_path / "out")
    del campaign.plan["decision"]["computation"]
    loaded = load_campaign(campaign.write())
    assert [e.message for e in loaded.errors] == ["'computation' is a required property"]


EXTRA_CLAIM = ("the conclusion's text names variant-b as meeting the threshold, but "
               "meets_threshold lists only variant-a")
DENIED = "the conclusion's text says variant-a does not meet the threshold, but " \
    "meets_threshold lists it"


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


def test_conclusion_text_with_a_colon_list_names_no_extra_claim(tmp_path: Path) -> None:
    """The example's shape: the head names who meets, the list after the colon each run."""
    campaign = CampaignBuilder(tmp_path / "out")
    campaign.plan["runs"].append({**campaign.plan["runs"][3], "id": "variant-b"})
    campaign.manifest["conclusion"]["text"] = (
        "variant-a meets the threshold (accuracy >= 0.8): variant-a 1.0; variant-b 0.5.")
    root = campaign.write()
    assert "variant-b" not in rendered(findings(root, "conclusion-consistent"))


def _split_campaign(root: Path, *, corpus_split: bool) -> CampaignBuilder:
    """The new-plan draft's filter, ``where {"split": "validation"}``, over predictions that
    name each example and its prediction only (as a user writes them): the split is the
    corpus's (the last two examples are validation), or nowhere."""
    campaign = plan3(root)
    splits = ["train", "train", "validation", "validation"]
    corpus = _jsonl([{"id": i, "text": f"example {i}", "label": lab,
                      **({"split": s} if corpus_split else {})}
                     for i, lab, s in zip(CORPUS_IDS, CLASSES, splits, strict=True)])
    campaign.files["corpus/corpus.jsonl"] = corpus
    campaign.plan["corpora"][0]["sha256"] = sha256(corpus)
    campaign.plan["decision"]["computation"]["where"] = {"split": "validation"}
    for run_id, guess in PREDICTED.items():
        campaign.files[f"runs/{run_id}/predictions.jsonl"] = _jsonl(
            [{"id": i, "prediction": p} for i, p in zip(CORPUS_IDS, guess, strict=True)])
        campaign.set_metric(run_id, "accuracy", oracle("accuracy", CLASSES[2:], guess[2:]))
    return campaign


def test_a_where_filter_reads_the_corpus_row_when_the_predictions_lack_the_field(
    tmp_path: Path,
) -> None:
    """Met writing the guides: predictions without ``split`` were "not scored" although the
    corpus gives every example its split; the filter now reads the example's corpus row."""
    root = _split_campaign(tmp_path / "out", corpus_split=True).write()
    for run_id in PREDICTED:
        assert findings(root, "metrics-recomputed", run_id) == ()


def test_a_row_that_carries_the_filtered_field_is_filtered_by_its_own_value(
    tmp_path: Path,
) -> None:
    campaign = _split_campaign(tmp_path / "out", corpus_split=True)
    campaign.files["runs/variant-a/predictions.jsonl"] = _jsonl(  # every row says validation
        [{"id": i, "split": "validation", "prediction": p}
         for i, p in zip(CORPUS_IDS, PREDICTED["variant-a"], strict=True)])
    text = rendered(findings(campaign.write(), "metrics-recomputed", "variant-a"))
    assert "run variant-a's accuracy is 0.5 at " in text, text
    assert "but its predictions give 0.8" in text, text  # 3 of 4 rows, at 1 decimal


def test_a_where_field_in_neither_the_corpus_nor_the_predictions_says_where_it_looked(
    tmp_path: Path,
) -> None:
    root = _split_campaign(tmp_path / "out", corpus_split=False).write()
    text = rendered(findings(root, "metrics-recomputed", "variant-a"))
    assert 'cannot prove the metric: no row of runs/variant-a/predictions.jsonl is scored by ' \
        'the computation (accuracy where {"split": "validation"})' in text, text
    assert "fix:      check the plan's where filter against the corpus's fields (or the " \
        "predictions' own, which a row carrying the field is filtered by)" in text, text


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.tuples(st.integers(0, 5), st.integers(0, 5)),
                       st.integers(1, 10**9), min_size=1))
def test_accuracy_is_scikit_learns_to_the_bit(pairs: dict[tuple[int, int], int]) -> None:
    """accuracy and exact_match skip importing scikit-learn: the counted quotient is its
    accuracy_score of the same weighted pairs, bit for bit."""
    import numpy as np
    from sklearn.metrics import accuracy_score

    keys = list(pairs)
    truth = np.array([a for a, _ in keys], dtype=np.int64)
    guess = np.array([b for _, b in keys], dtype=np.int64)
    weights = np.array([pairs[k] for k in keys], dtype=np.float64)
    assert accuracy(pairs) == float(accuracy_score(truth, guess, sample_weight=weights))
