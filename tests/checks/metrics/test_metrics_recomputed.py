"""The rules of ``metrics-recomputed`` (pytest_itera/checks/metrics/metrics_recomputed.py): each
break refused, with its honest twin.

Where the cases come from (the files they were first written in):

metrics-recomputed (itera-plan/3) and the conclusion judged on the recomputed values.

Campaigns are the factory's, turned into itera-plan/3: the corpus carries labels, each run's
predictions give a value a hand computation (the oracle below, scikit-learn's definitions)
also gives, and the manifest and measurements state it; forging breaks one of them.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_itera.checks import Options
from pytest_itera.checks.common.scoring import accuracy
from pytest_itera.core.campaign import load_campaign
from tests.checks.campaigns import (
    CLASSES,
    GUESSED,
    NUMBERS,
    PACK,
    PREDICTED_CLASSES,
    REGRESSION,
    SPLITS,
    _jsonl,
    campaign_of,
    findings,
    oracle,
    plan3,
    rendered,
    repack,
    split_gain,
    stop,
)
from tests.checks.judging import expect_finding, expect_no_finding, judge
from tests.factory import CORPUS_IDS, CampaignBuilder, as_plan_2, sha256

CHECK = "metrics-recomputed"
KINDS = ("accuracy", "exact_match", "f1_macro", "f1_micro", "precision_macro", "recall_macro",
         *REGRESSION)


def test_the_default_campaign_passes(tmp_path: Path) -> None:
    root = CampaignBuilder(tmp_path / "out").write()
    expect_no_finding(judge(root, CHECK))
    expect_no_finding(judge(root, "conclusion-consistent"))


def test_a_changed_corpus_is_said_under_this_checks_own_code(tmp_path: Path) -> None:
    """No metric is recomputed on a frozen corpus that changed: the coverage check's kind of
    finding, re-coded under metrics-recomputed (an item's codes are its check's)."""
    root = CampaignBuilder(tmp_path / "out").write()
    corpus = root / "corpus" / "corpus.jsonl"
    corpus.write_bytes(corpus.read_bytes() + b"\n")
    found = judge(root, CHECK, target="variant-a")
    assert [f.code for f in found] == ["metrics-recomputed.corpus-sha256"], rendered(tuple(found))
    expect_finding(found, "metrics-recomputed.corpus-sha256", where="plan.json $.corpora[0]",
                   says="is not the corpus the plan froze")


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_recomputed_passes(tmp_path: Path, kind: str) -> None:
    root = plan3(tmp_path / "out", kind).write()
    for run_id in PREDICTED_CLASSES:
        assert findings(root, "metrics-recomputed", run_id) == ()


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_forged_in_manifest_and_file_fails(tmp_path: Path, kind: str) -> None:
    campaign = plan3(tmp_path / "out", kind)
    numeric = kind in REGRESSION
    truth = NUMBERS if numeric else CLASSES
    right = oracle(kind, truth, (GUESSED if numeric else PREDICTED_CLASSES)["variant-a"])
    forged = round(right + 0.1, 4)
    campaign.set_metric("variant-a", "accuracy", forged)  # both places
    found = judge(campaign, CHECK, target="variant-a")
    assert [f.code for f in found] == ["metrics-recomputed.mismatch"] * 2, rendered(tuple(found))
    text = rendered(tuple(found))
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
    text = rendered(tuple(judge(campaign, CHECK, target="variant-a")))
    assert "runs/variant-a/measurements.jsonl:5: run variant-a's accuracy is 0.856 at " \
        "runs/variant-a/measurements.jsonl:5, but its predictions give 0.000" in text, text
    # the conclusion is judged on the recomputed value, not on the 0.856 written twice
    text = rendered(tuple(judge(campaign, "conclusion-consistent", write=False)))
    assert "the conclusion lists variant-a as meeting the threshold, but its accuracy is 0.0" \
        in text, text
    assert "    found:    accuracy = 0.0 (recomputed (accuracy) from " \
        "runs/variant-a/predictions.jsonl)" in text, text


def test_label_column_rewritten_to_agree_is_refused(tmp_path: Path) -> None:
    campaign = plan3(tmp_path / "out")
    campaign.files["runs/variant-a/predictions.jsonl"] = _jsonl(
        [{"id": i, "label": p, "prediction": p}
         for i, p in zip(CORPUS_IDS, PREDICTED_CLASSES["variant-a"], strict=True)])
    campaign.set_metric("variant-a", "accuracy", 1.0)  # what the rewritten labels would give
    found = judge(campaign, CHECK, target="variant-a")
    text = rendered(tuple(found))
    expect_finding(found, "metrics-recomputed.label-disagrees",
                   where="runs/variant-a/predictions.jsonl:4",
                   says="the predictions of run variant-a rewrite the corpus labels: 1 row(s) "
                   "give a 'label' other than the frozen corpus corpus/corpus.jsonl's")
    assert "run variant-a's accuracy is 1.0 at runs/variant-a/measurements.jsonl:5, but its " \
        "predictions give 0.8" in text, text  # scored on the corpus's labels (0.75 at 1 decimal)


def test_label_disagreement_names_ids_and_lines(tmp_path: Path) -> None:
    campaign = plan3(tmp_path / "out")
    campaign.files["runs/variant-a/predictions.jsonl"] = _jsonl(
        [{"id": i, "label": p, "prediction": p}
         for i, p in zip(CORPUS_IDS, PREDICTED_CLASSES["variant-a"], strict=True)])
    root = campaign.write()
    text = rendered(findings(root, "metrics-recomputed", "variant-a"))
    assert "    found:    ex-4 (line 4): 'c', the corpus says 'a'" in text, text


def test_gain_relative_to_control_passes(tmp_path: Path) -> None:
    root = plan3(tmp_path / "out", metric="accuracy_gain", relative_to="control").write()
    assert findings(root, "metrics-recomputed", "variant-a") == ()


def test_plan_2_cannot_prove(tmp_path: Path) -> None:
    campaign = CampaignBuilder(tmp_path / "out")
    as_plan_2(campaign.plan)
    finding = expect_finding(judge(campaign, CHECK, target="variant-a"),
                             "metrics-recomputed.unprovable",
                             where="manifest.json $.runs[3].metrics",
                             says="itera-plan/2 cannot prove the metric: run variant-a reports "
                             "accuracy = 1.0, but the plan does not say how it is computed")
    assert (finding.hint or "").startswith(
        "declare the computation in itera-plan/3: decision.computation")


def test_unknown_kind_without_hook_cannot_prove(tmp_path: Path) -> None:
    campaign = plan3(tmp_path / "out")
    campaign.plan["decision"]["computation"]["kind"] = "within_one"
    expect_finding(judge(campaign, CHECK, target="variant-a"), "metrics-recomputed.unknown-kind",
                   says="cannot prove the metric: 'within_one' is not a built-in metric kind "
                   "and no pytest_itera_metric hook computes it")


def test_custom_kind_through_the_hook_in_process(tmp_path: Path) -> None:
    campaign = plan3(tmp_path / "out")
    campaign.plan["decision"]["computation"]["kind"] = "hits"
    campaign.set_metric("variant-a", "accuracy", 3.0)
    campaign.set_metric("control", "accuracy", 2.0)
    options = Options(metric_hook=lambda name: (lambda pairs: float(sum(a == b for a, b in pairs)))
                      if name == "hits" else None)
    expect_no_finding(judge(campaign, CHECK, target="variant-a", options=options))


def _raises(pairs: object) -> float:
    raise ZeroDivisionError("no pairs")


def test_a_hook_whose_metric_raises_cannot_prove(tmp_path: Path) -> None:
    campaign = plan3(tmp_path / "out")
    campaign.plan["decision"]["computation"]["kind"] = "hits"
    options = Options(metric_hook=lambda name: _raises if name == "hits" else None)
    expect_finding(judge(campaign, CHECK, target="variant-a", options=options),
                   "metrics-recomputed.hook-raised", where="conftest.py",
                   says="the pytest_itera_metric hook's 'hits' raised ZeroDivisionError: "
                   "no pairs")


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
    for run_id, guess in PREDICTED_CLASSES.items():
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
    for run_id in PREDICTED_CLASSES:
        assert findings(root, "metrics-recomputed", run_id) == ()


def test_a_row_that_carries_the_filtered_field_is_filtered_by_its_own_value(
    tmp_path: Path,
) -> None:
    campaign = _split_campaign(tmp_path / "out", corpus_split=True)
    campaign.files["runs/variant-a/predictions.jsonl"] = _jsonl(  # every row says validation
        [{"id": i, "split": "validation", "prediction": p}
         for i, p in zip(CORPUS_IDS, PREDICTED_CLASSES["variant-a"], strict=True)])
    text = rendered(findings(campaign.write(), "metrics-recomputed", "variant-a"))
    assert "run variant-a's accuracy is 0.5 at " in text, text
    assert "but its predictions give 0.8" in text, text  # 3 of 4 rows, at 1 decimal


def test_a_where_field_in_neither_the_corpus_nor_the_predictions_says_where_it_looked(
    tmp_path: Path,
) -> None:
    found = judge(_split_campaign(tmp_path / "out", corpus_split=False), CHECK,
                  target="variant-a")
    finding = expect_finding(found, "metrics-recomputed.empty",
                             where="runs/variant-a/predictions.jsonl",
                             says='cannot prove the metric: no row of '
                             'runs/variant-a/predictions.jsonl is scored by the computation '
                             '(accuracy where {"split": "validation"})')
    assert finding.hint == ("check the plan's where filter against the corpus's fields (or "
                            "the predictions' own, which a row carrying the field is filtered "
                            "by)")


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


# ---------------------------------------- first written in test_confidence.py


def test_without_confidence_a_gain_inside_its_noise_passes(tmp_path: Path) -> None:
    root = campaign_of(tmp_path / "out").write()
    assert findings(root, "metrics-recomputed", "variant-a") == ()
    assert findings(root, "conclusion-consistent") == ()


# ---------------------------------------- first written in test_one_rule_breaks.py


def test_a_test_example_moved_to_train_in_one_runs_rows_is_refused(tmp_path: Path) -> None:
    root = split_gain(tmp_path / "out", ("train", "train", "test", "train"))
    found = findings(root, "metrics-recomputed", "variant-a")
    assert [f.code for f in found] == ["metrics-recomputed.filter-differs"], rendered(tuple(found))
    expect_finding(found, "metrics-recomputed.filter-differs",
                   where="runs/variant-a/predictions.jsonl",
                   says=("accuracy_gain is relative to control's", "where split=test",
                         f"1 only in control's ({CORPUS_IDS[3]})"))


def test_the_same_split_in_both_runs_rows_passes(tmp_path: Path) -> None:
    root = split_gain(tmp_path / "out", SPLITS)
    assert findings(root, "metrics-recomputed", "variant-a") == ()


# ---------------------------------------- first written in test_packed_predictions.py


@pytest.mark.parametrize("name", sorted(PACK))
def test_the_metric_is_recomputed_from_packed_predictions(tmp_path: Path, name: str) -> None:
    campaign = plan3(tmp_path / "out")
    repack(campaign, name)
    root = campaign.write()
    assert findings(root, "metrics-recomputed", "variant-a") == ()
    campaign.set_metric("variant-a", "accuracy", 0.1)
    root = campaign.write()
    text = rendered(findings(root, "metrics-recomputed", "variant-a"))
    assert "run variant-a's accuracy is 0.1 at " in text, text
    assert f"(recomputed (accuracy) from runs/variant-a/{name})" in text, text


# ------------------------------------------------ what the recomputation cannot score


def _rows(campaign: CampaignBuilder, path: str, edit: Callable[[list[dict[str, Any]]], None],
          plan_sha: bool = False) -> None:
    """The JSON Lines file ``path`` with its rows edited (the plan's sha256 kept for a
    corpus)."""
    rows = [json.loads(line) for line in campaign.files[path].splitlines()]
    edit(rows)
    campaign.files[path] = _jsonl(rows)
    if plan_sha:
        campaign.plan["corpora"][0]["sha256"] = sha256(campaign.files[path])


def _no_label(c: CampaignBuilder) -> None:
    _rows(c, "corpus/corpus.jsonl", lambda rows: rows[2].pop("label"), plan_sha=True)
    for run_id in PREDICTED_CLASSES:  # the rows score the corpus's label, not their own
        _rows(c, f"runs/{run_id}/predictions.jsonl", _without_labels)


def _without_labels(rows: list[dict[str, Any]]) -> None:
    for row in rows:
        del row["label"]


@pytest.mark.parametrize(("break_", "code", "where", "says"), [
    pytest.param(_no_label, "metrics-recomputed.no-label", "runs/variant-a/predictions.jsonl:3",
                 "the frozen corpus corpus/corpus.jsonl has no 'label' label for 1 predicted "
                 "example(s)", id="corpus-row-without-label"),
    pytest.param(lambda c: _rows(c, "runs/variant-a/predictions.jsonl",
                                 lambda rows: rows[1].pop("prediction")),
                 "metrics-recomputed.no-prediction", "runs/variant-a/predictions.jsonl:2",
                 "1 scored row(s) of runs/variant-a/predictions.jsonl have no usable "
                 "'prediction'", id="row-without-prediction"),
    pytest.param(lambda c: c.plan["corpora"][0].update(path="corpus/elsewhere.jsonl"),
                 "metrics-recomputed.corpus-unreadable", "plan.json $.corpora[0].path",
                 "the frozen corpus corpus/elsewhere.jsonl is missing", id="corpus-missing"),
])
def test_a_metric_the_predictions_cannot_give(tmp_path: Path, break_: Callable[
        [CampaignBuilder], None], code: str, where: str, says: str) -> None:
    campaign = plan3(tmp_path / "out")
    break_(campaign)
    expect_finding(judge(campaign, CHECK, target="variant-a"), code, where=where, says=says)


def test_a_gain_relative_to_a_run_that_was_not_accepted(tmp_path: Path) -> None:
    campaign = plan3(tmp_path / "out", metric="accuracy_gain", relative_to="control")
    stop(campaign, "control")
    expect_finding(judge(campaign, CHECK, target="variant-a"), "metrics-recomputed.reference",
                   where="plan.json (relative_to)",
                   says="run variant-a's accuracy_gain is relative to 'control'")
