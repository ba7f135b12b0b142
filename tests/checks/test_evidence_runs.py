"""Evidence checks: rules-declared, measurements-agree, stop-rules-applied, role-evidence, and the
evidence side of analysis-present. Each rule: a failing case (message asserted), a passing twin.

The default campaign (tests/factory.py) is itera-plan/2 + itera-manifest/2 with its evidence:
runs/<id>/measurements.jsonl (variant-a: loss at steps 1-4 on lines 1-4, metrics on line 5),
the data check's record of the corpus, the resume check resumed from the control's step-2
checkpoint with the control's losses after it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from pytest_itera.files.measurements import Measurements, Unreadable, read_measurements
from tests.checks.judging import advises_then_fails
from tests.factory import (
    CONTROL_CKPT,
    RESUME_CKPT,
    VARIANT_WEIGHTS,
    CampaignBuilder,
    expect,
    sha256,
)
from tests.runner import Itera

Pytester = pytest.Pytester
Campaign = CampaignBuilder

VARIANT_M = "runs/variant-a/measurements.jsonl"
RESUME_M = "runs/resume-check/measurements.jsonl"
DATA_M = "runs/data-check/measurements.jsonl"


def record(campaign: Campaign, run_id: str) -> dict[str, Any]:
    return campaign.run_record(run_id)


def stop_by_nan(campaign: Campaign, run_id: str = "variant-a", step: int = 14,
                nan_at: int = 14) -> None:
    """Stop ``run_id`` by the non-finite rule; its loss series turns NaN at ``nan_at``."""
    rec = record(campaign, run_id)
    rec["outcome"] = "stopped"
    rec["stop"] = {"rule": "non-finite-loss", "reason": f"loss was nan at step {nan_at}",
                   "step": step}
    for key in ("predictions", "corpus"):
        rec.pop(key, None)
    metrics = [r for r in campaign.measurements[run_id] if "metrics" in r]
    campaign.measurements[run_id] = [
        *({"step": i, "loss": round(1.0 / i, 4)} for i in range(1, nan_at)),
        {"step": nan_at, "loss": "NaN"}, *metrics]
    campaign.manifest["conclusion"] = {
        "meets_threshold": [], "text": "Negative result: no variant meets the threshold."}


def add_rule(campaign: Campaign, rule_id: str, kind: str, **parameters: Any) -> None:
    campaign.plan["stop_rules"].append({"id": rule_id, "kind": kind, "parameters": parameters})


def checked(campaign: Campaign, **fields: Any) -> dict[str, Any]:
    """The data check's record of the corpus (to edit)."""
    row: dict[str, Any] = campaign.measurements["data-check"][0]["checked_input"]
    row.update(fields)
    return row


# ================================================================== stop-rules-applied


def test_stop_rules_applied_passes(itera: Itera, campaign: Campaign) -> None:
    campaign.write()
    itera(check="stop-rules-applied").assert_outcomes(passed=4)


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "inf", "nan", math.nan,
                                   math.inf], ids=repr)
def test_accepted_run_with_a_non_finite_loss(
    itera: Itera, campaign: Campaign, value: object
) -> None:
    campaign.measurements["variant-a"][2]["loss"] = value  # step 3, line 3
    result = itera.fails(campaign, "stop-rules-applied", passed=3)
    shown = {"nan": "NaN", "inf": "Infinity", "-infinity": "-Infinity", "infinity": "Infinity"}
    expect(result,
           f"{VARIANT_M}:3: accepted run variant-a triggers stop rule 'non-finite-loss' "
           f"(non_finite_loss): its 'loss' series is {shown[str(value).lower()]} at step 3",
           "    expected: a run whose own evidence triggers a declared stop rule is stopped, not "
           "accepted",
           "    found:    outcome 'accepted' (manifest.json $.runs[3].outcome)",
           "    fix:      record it as stopped*")


def test_run_stopped_by_its_rule_with_its_evidence(itera: Itera, campaign: Campaign) -> None:
    stop_by_nan(campaign)
    campaign.write()
    itera(check="stop-rules-applied").assert_outcomes(passed=4)


def test_stop_step_is_not_the_first_non_finite_step(
    itera: Itera, campaign: Campaign
) -> None:
    stop_by_nan(campaign, step=20, nan_at=14)
    itera.fails(
        campaign, "stop-rules-applied",
        "manifest.json $.runs[3].stop.step: stopped run variant-a records stop step 20, but its "
        "'loss' series is first non-finite at step 14",
        "    expected: 14", "    found:    20",
        f"    fix:      the stop step is the first step whose value is NaN or ±inf ({VARIANT_M}"
        ":14)",
        passed=3,
    )


def test_stopped_run_whose_evidence_does_not_trigger_its_rule(
    itera: Itera, campaign: Campaign
) -> None:
    stop_by_nan(campaign)
    campaign.measurements["variant-a"][13]["loss"] = 0.05  # the NaN was never measured
    itera.fails(
        campaign, "stop-rules-applied",
        "manifest.json $.runs[3].stop.rule: stopped run variant-a cites stop rule "
        "'non-finite-loss' (non_finite_loss), but its evidence does not trigger it: 14 'loss' "
        "points, all finite",
        passed=3,
    )


def test_accepted_run_without_measurements(itera: Itera, campaign: Campaign) -> None:
    del record(campaign, "variant-a")["measurements"]
    del campaign.measurements["variant-a"]
    itera.fails(
        campaign, "stop-rules-applied",
        "manifest.json $.runs[3].measurements: stop rule 'non-finite-loss' cannot be evaluated "
        "on accepted run variant-a: run variant-a records no measurements file "
        "(runs[].measurements)",
        "    fix:      record the run's measurements file*",
        passed=3,
    )


def test_training_run_without_the_watched_series(itera: Itera, campaign: Campaign) -> None:
    campaign.measurements["variant-a"] = [r for r in campaign.measurements["variant-a"]
                                          if "step" not in r]  # its loss was not logged
    itera.fails(
        campaign, "stop-rules-applied",  # the data check trains nothing: no loss is fine
        f"{VARIANT_M}: stop rule 'non-finite-loss' (non_finite_loss) cannot be evaluated on "
        f"accepted run variant-a: its measurements {VARIANT_M} hold no 'loss' series",
        passed=3,
    )


QUALITY = {"metric": "accuracy", "threshold": 0.7, "direction": "higher", "split": "test"}


def test_quality_rule_holds(itera: Itera, campaign: Campaign) -> None:
    add_rule(campaign, "low-accuracy", "quality_below", **QUALITY)
    campaign.write()
    itera(check="stop-rules-applied").assert_outcomes(passed=4)


def test_accepted_variant_under_the_quality_threshold(
    itera: Itera, campaign: Campaign
) -> None:
    add_rule(campaign, "low-accuracy", "quality_below", **QUALITY)
    campaign.set_metric("variant-a", "accuracy", 0.6)
    itera.fails(campaign, "stop-rules-applied",
                f"{VARIANT_M}:5: accepted run variant-a triggers stop rule 'low-accuracy' "
                "(quality_below): its accuracy is 0.6, under the stop threshold 0.7", passed=3)


def test_quality_rule_lower_is_better(itera: Itera, campaign: Campaign) -> None:
    add_rule(campaign, "high-error", "quality_below",
             metric="error", threshold=0.3, direction="lower", split="validation")
    campaign.set_metric("control", "error", 0.2)
    campaign.set_metric("variant-a", "error", 0.31)
    itera.fails(campaign, "stop-rules-applied",
                "*accepted run variant-a triggers stop rule 'high-error' (quality_below): its "
                "error is 0.31, over the stop threshold 0.3", passed=3)


def test_quality_stop_read_from_the_series(itera: Itera, campaign: Campaign) -> None:
    """A run stopped by the quality rule mid-training: its last measured point is the evidence."""
    add_rule(campaign, "low-accuracy", "quality_below", metric="accuracy",
             threshold=0.5, direction="higher", split="validation")
    rec = record(campaign, "variant-a")
    rec.update(outcome="stopped", stop={"rule": "low-accuracy", "reason": "0.4 at step 2",
                                        "step": 2})
    rec.pop("predictions")
    campaign.measurements["variant-a"] = [{"step": 1, "loss": 1.0, "accuracy": 0.3},
                                          {"step": 2, "loss": 0.9, "accuracy": 0.4}]
    del rec["metrics"]
    campaign.manifest["conclusion"] = {"meets_threshold": [], "text": "Negative result."}
    itera.passes(campaign, "stop-rules-applied", passed=4)
    campaign.measurements["variant-a"][1]["accuracy"] = 0.6
    campaign.files.pop(VARIANT_M, None)
    campaign.write()
    result = itera(check="stop-rules-applied")
    expect(result, "manifest.json $.runs[3].stop.rule: stopped run variant-a cites stop rule "
           "'low-accuracy' (quality_below), but its evidence does not trigger it: its "
           "accuracy (last point) is 0.6 (stop under 0.5)")


def test_input_rule_holds(itera: Itera, campaign: Campaign) -> None:
    corpus = campaign.files["corpus/corpus.jsonl"]
    add_rule(campaign, "corpus-whole", "input_truncated", input="tiny-corpus", examples=4,
             bytes=len(corpus), sha256=sha256(corpus))
    campaign.write()
    itera(check="stop-rules-applied or role-evidence").assert_outcomes(passed=6)


def test_data_check_recorded_a_truncated_input(itera: Itera, campaign: Campaign) -> None:
    add_rule(campaign, "corpus-whole", "input_truncated", input="tiny-corpus", examples=4)
    checked(campaign, examples=3)
    itera.fails(campaign, "stop-rules-applied",  # every run on that corpus
                f"{DATA_M}:1: accepted run variant-a triggers stop rule 'corpus-whole' "
                "(input_truncated): input 'tiny-corpus': the data check data-check's record has "
                "examples 3, the rule expects 4", failed=4)


def test_input_in_the_folder_is_truncated(itera: Itera, campaign: Campaign) -> None:
    vocab = b"the\nof\nand\n"
    campaign.files["vocab/tokens.txt"] = vocab
    add_rule(campaign, "vocab-whole", "input_truncated", input="vocab/tokens.txt",
             bytes=len(vocab) + 6)
    checked_rows = campaign.measurements["data-check"]
    checked_rows.append({"checked_input": {"input": "vocab/tokens.txt", "bytes": len(vocab)}})
    itera.fails(campaign, "stop-rules-applied",  # not a corpus: every run uses it
                "vocab/tokens.txt: accepted run control triggers stop rule 'vocab-whole' "
                "(input_truncated): input 'vocab/tokens.txt': vocab/tokens.txt in the folder has "
                "bytes 11, the rule expects 17", failed=4)


def test_input_with_no_evidence(itera: Itera, campaign: Campaign) -> None:
    add_rule(campaign, "vocab-whole", "input_truncated", input="vocab/tokens.txt",
             sha256="a" * 64)
    itera.fails(
        campaign, "stop-rules-applied",
        "manifest.json $.runs[0]: stop rule 'vocab-whole' (input_truncated) cannot be evaluated "
        "on accepted run control: no evidence of the sha256 of input 'vocab/tokens.txt': it is "
        "not a file of the campaign folder and no data check recorded it",
        failed=4,
    )


def test_no_resume_rule_holds(itera: Itera, campaign: Campaign) -> None:
    add_rule(campaign, "resume-usable", "no_resume", resume_check="resume-check")
    campaign.write()
    itera(check="stop-rules-applied").assert_outcomes(passed=4)


def test_accepted_resume_check_that_diverges(itera: Itera, campaign: Campaign) -> None:
    add_rule(campaign, "resume-usable", "no_resume", resume_check="resume-check")
    campaign.measurements["resume-check"][1]["loss"] = 0.55  # step 4: control has 0.5
    itera.fails(
        campaign, "stop-rules-applied",
        f"{RESUME_M}:2: accepted run resume-check triggers stop rule 'resume-usable' "
        f"(no_resume): after resuming {CONTROL_CKPT} at step 2, its 'loss' is 0.55 at step 4 "
        "where control's is 0.5 (tolerance 0)",
        passed=3,
    )


def test_other_rule_is_reported_as_not_evaluated(itera: Itera, campaign: Campaign) -> None:
    add_rule(campaign, "budget-watch", "other", note="stop if the lot runs out")
    result = itera.passes(campaign, "stop-rules-applied", passed=4)  # never a failure...
    expect(result, "tiny-2026-11: stop rule 'budget-watch' (kind 'other', free-form parameters) "
           "was not evaluated: check it yourself, or judge it in a pytest_itera_stop_rule hook")


def test_a_hook_judges_a_custom_rule(itera: Itera, pytester: Pytester, campaign: Campaign) -> None:
    add_rule(campaign, "grad-norm", "other", series="grad_norm", max=10)
    campaign.measurements["variant-a"][1]["grad_norm"] = 50.0
    campaign.write()
    pytester.makeconftest('''
from pytest_itera.checks.stop_rules import RuleVerdict

def pytest_itera_stop_rule(rule, run, measurements, campaign, config):
    if rule.kind != "other":
        return None
    series = measurements.series.get(rule.parameters["series"]) if measurements else None
    for step, value, line in series.points() if series else ():
        if value > rule.parameters["max"]:
            return RuleVerdict("triggered", f"grad_norm {value} at step {step}", step=step,
                               where=f"{measurements.path}:{line}")
    return RuleVerdict("clear", "grad_norm stays small")
''')
    result = itera(check="stop-rules-applied")
    result.assert_outcomes(passed=3, failed=1)
    expect(result, f"{VARIANT_M}:2: accepted run variant-a triggers stop rule 'grad-norm' (other): "
           "grad_norm 50.0 at step 2")
    result.stdout.no_fnmatch_line("*check it yourself*")


def test_v1_campaign_cannot_prove_its_stop_rules(itera: Itera, pytester: Pytester) -> None:
    campaign = CampaignBuilder(pytester.path / "out", version=1)
    itera.fails(
        campaign, "stop-rules-applied",
        "plan.json $.stop_rules: stop rule 'non-finite-loss' (non_finite_loss) cannot be "
        "evaluated on accepted run control: itera-plan/1 cannot prove that stop rule "
        "'non-finite-loss' (non_finite_loss) is applied: its parameters are free-form ({}: no "
        "'series' (the measured series to watch))",
        "    fix:      re-close the campaign with itera-plan/2 and itera-manifest/2: a "
        'non_finite_loss rule has the parameters {"series": "loss"} (docs/contract-v2.md)',
        failed=4,
    )


# ================================================================== measurements-agree


def test_measurements_agree_passes(itera: Itera, campaign: Campaign) -> None:
    campaign.write()
    itera(check="measurements-agree").assert_outcomes(passed=4)


def test_gain_inflated_in_the_manifest(itera: Itera, campaign: Campaign) -> None:
    campaign.set_metric("variant-a", "accuracy", 0.85)
    record(campaign, "variant-a")["metrics"]["accuracy"] = 0.95
    itera.fails(
        campaign, "measurements-agree",
        f"manifest.json $.runs[3].metrics.accuracy ({VARIANT_M}:5): run variant-a's accuracy "
        "is 0.95 in the manifest but 0.85 in its measurements",
        "    expected: 0.85 (to the file's 2 decimals)",
        "    found:    0.95",
        "    fix:      the measurements are the evidence and the manifest a copy*",
        passed=3,
    )


@pytest.mark.parametrize(("in_file", "in_manifest", "agree"), [
    (0.85, 0.8512, True),  # the file's precision: 2 decimals
    (0.8512, 0.85, False),  # the file is more precise than the manifest's copy
    (1000, 1000.0, True),  # an integer, exactly
    (1000, 1001, False),
], ids=["rounded-copy", "less-precise-copy", "integer", "integer-differs"])
def test_metrics_compared_at_the_file_precision(
    itera: Itera, campaign: Campaign, in_file: float, in_manifest: float, agree: bool
) -> None:
    campaign.set_metric("variant-a", "accuracy", in_file)
    record(campaign, "variant-a")["metrics"]["accuracy"] = in_manifest
    campaign.write()
    result = itera(check="measurements-agree and variant-a")
    result.assert_outcomes(passed=1 if agree else 0, failed=0 if agree else 1)


def test_metrics_without_measurements(itera: Itera, campaign: Campaign) -> None:
    del record(campaign, "variant-a")["measurements"]
    del campaign.measurements["variant-a"]
    itera.fails(
        campaign, "measurements-agree",
        "manifest.json $.runs[3].measurements: run variant-a reports metrics (accuracy) but "
        "records no measurements file",
        "    expected: the run's measurements JSON Lines, whose metrics line the manifest "
        "copies",
        passed=3,
    )


def test_v1_metrics_without_measurements(itera: Itera, pytester: Pytester) -> None:
    campaign = CampaignBuilder(pytester.path / "out", version=1)
    itera.fails(
        campaign, "measurements-agree",
        "manifest.json $.runs[0].measurements: run control reports metrics (accuracy) "
        "but records no measurements file; itera-manifest/1 cannot prove its metrics: re-close "
        "the campaign with itera-manifest/2 (docs/contract-v2.md)",
        failed=4,
    )


def test_metric_absent_from_the_file(itera: Itera, campaign: Campaign) -> None:
    record(campaign, "variant-a")["metrics"]["f1"] = 0.8
    campaign.write()
    result = itera(check="measurements-agree")
    expect(result, "manifest.json $.runs[3].metrics.f1: run variant-a's metric 'f1' is not in its "
           f"measurements {VARIANT_M}", "    found:    the file's metrics: ['accuracy']")


def test_file_without_a_metrics_line(itera: Itera, campaign: Campaign) -> None:
    campaign.measurements["variant-a"].pop()  # the metrics line
    campaign.write()
    result = itera(check="measurements-agree")
    expect(result, f"{VARIANT_M}: the measurements {VARIANT_M} of run variant-a have no metrics "
           "line: the manifest's metrics (accuracy) are not evidenced")


def test_malformed_measurements(itera: Itera, campaign: Campaign) -> None:
    campaign.files[VARIANT_M] = (
        b'{"step": 1, "loss": 1.0}\n'
        b'{"step": 2, "loss": \n'
        b'{"step": -1, "loss": 0.5}\n'
        b'{"step": 3, "loss": 0.9, "loss": "NaN"}\n'
        b'{"step": 4, "loss": "oops"}\n'
        b'{"metrics": {"accuracy": 0.85}}\n'
        b'{"metrics": {"accuracy": 0.95}}\n'
        b'{"note": "hello"}\n'
        b'{"step": 1, "loss": 0.7}\n')
    result = itera.fails(
        campaign, "measurements-agree and variant-a",
        "*measurements-agree?variant-a?: 6 problems*",
        f"{VARIANT_M}:2: the measurements {VARIANT_M} of run variant-a are not usable: not "
        "JSON (Expecting value)", "*",
        f"{VARIANT_M}:3: * are not usable: step -1 is not a non-negative integer", "*",
        f"{VARIANT_M}:4: * are not usable: the key 'loss' appears twice in one object", "*",
        f"{VARIANT_M}:5: * are not usable: series 'loss' has the value \"oops\", not a number*",
        "*",
        f"{VARIANT_M}:7: * are not usable: a second metrics line (the first is line 6): a run "
        "has one set of final metrics", "*",
        "manifest.json $.runs[3].measurements: ... and 2 more problems in "
        f"{VARIANT_M}",
    )
    # The stop rule cannot be evaluated on them: not judged beside measurements-agree (one
    # cause, one failure), and saying why when selected alone.
    both = itera("-rA", "-k", "(measurements-agree or stop-rules-applied) and variant-a")
    both.assert_outcomes(failed=1, skipped=1)
    expect(both, "SKIPPED [1] out/manifest.json:1: not judged: measurements-agree[variant-a] "
           f"failed ({VARIANT_M} is not usable)")
    result = itera(check="stop-rules-applied and variant-a")
    expect(result, "*: stop rule 'non-finite-loss' cannot be evaluated on accepted run variant-a: "
           f"its measurements cannot be read: {VARIANT_M}:2: not JSON (Expecting value) (+6 more "
           "problems)")


@pytest.mark.parametrize(
    ("path", "line"),
    [
        pytest.param("runs/control/measurements.jsonl",
                     "manifest.json $.runs[3].measurements: run variant-a shares its "
                     "measurements file runs/control/measurements.jsonl with control",
                     id="shared-by-two-runs"),
        pytest.param("runs/variant-a/gone.jsonl",
                     "runs/variant-a/gone.jsonl: the measurements runs/variant-a/gone.jsonl of "
                     "run variant-a is missing", id="file-missing"),
    ],
)
def test_measurements_file_not_the_runs_own(
    itera: Itera, campaign: Campaign, path: str, line: str
) -> None:
    record(campaign, "variant-a")["measurements"] = path
    campaign.write()
    expect(itera(check="measurements-agree"), line)


# ====================================================================== role-evidence


def test_role_evidence_passes(itera: Itera, campaign: Campaign) -> None:
    campaign.write()
    itera(check="role-evidence").assert_outcomes(passed=2)


def test_resume_check_diverges_after_the_resume(itera: Itera, campaign: Campaign) -> None:
    campaign.measurements["resume-check"][0]["loss"] = 0.65  # step 3: control has 0.6
    itera.fails(
        campaign, "role-evidence",
        f"{RESUME_M}:1: resume check resume-check does not reproduce its reference run: after "
        f"resuming {CONTROL_CKPT} at step 2, its 'loss' is 0.65 at step 3 where control's is "
        "0.6 (tolerance 0)",
        "    expected: the resumed series equal the reference run's at the same steps, within "
        "checkpoint_policy.resume_tolerance (0)",
        passed=1,
    )


def test_resume_within_the_declared_tolerance(itera: Itera, campaign: Campaign) -> None:
    campaign.plan["checkpoint_policy"]["resume_tolerance"] = 0.1
    campaign.measurements["resume-check"][0]["loss"] = 0.65
    campaign.write()
    itera(check="role-evidence").assert_outcomes(passed=2)


@pytest.mark.parametrize(("checkpoint", "why"), [
    (RESUME_CKPT, "its own checkpoint"),
    (VARIANT_WEIGHTS, "a weights checkpoint, which cannot resume training"),
    ("runs/control/step-9.pt", "which is not a checkpoint listed in the manifest"),
], ids=["own", "weights", "unlisted"])
def test_resume_check_resumed_from_the_wrong_checkpoint(
    itera: Itera, campaign: Campaign, checkpoint: str, why: str
) -> None:
    record(campaign, "resume-check")["resumed_from"]["checkpoint"] = checkpoint
    itera.fails(
        campaign, "role-evidence",
        "manifest.json $.runs[2].resumed_from.checkpoint: resume check resume-check does not "
        f"prove a resume: run resume-check resumed from {checkpoint}, {why}",
        f"    fix:      a resume check resumes a listed resume checkpoint of another run in a "
        f"new process (listed: {CONTROL_CKPT})",
        passed=1,
    )


def test_resume_check_without_resumed_from(itera: Itera, campaign: Campaign) -> None:
    del record(campaign, "resume-check")["resumed_from"]
    campaign.write()
    result = itera(check="role-evidence")
    expect(result, "manifest.json $.runs[2].resumed_from: resume check resume-check does not prove "
           "a resume: run resume-check records no resumed_from (the checkpoint it resumed from and "
           "its step)")


def test_v1_resume_check_cannot_prove_a_resume(itera: Itera, pytester: Pytester) -> None:
    campaign = CampaignBuilder(pytester.path / "out", version=1)
    campaign.write()
    result = itera(check="role-evidence")
    expect(result, "*resume check resume-check does not prove a resume: run resume-check records "
           "no resumed_from (the checkpoint it resumed from and its step); itera-manifest/1 cannot "
           "prove a resume: re-close the campaign with itera-manifest/2 (docs/contract-v2.md)")


def test_resume_check_with_nothing_to_compare(itera: Itera, campaign: Campaign) -> None:
    campaign.measurements["resume-check"] = [{"step": 3, "train_loss": 0.6}]
    campaign.write()
    result = itera(check="role-evidence")
    expect(result, f"{RESUME_M}: resume check resume-check does not prove a resume: nothing to "
           "compare: after step 2 its series (train_loss) share no step with control's (loss)")


def test_data_check_measured_another_corpus(itera: Itera, campaign: Campaign) -> None:
    checked(campaign, sha256="b" * 64)
    result = itera.fails(campaign, "role-evidence", passed=1)
    frozen = campaign.plan["corpora"][0]["sha256"]
    expect(result,
           f"{DATA_M}:1: data check data-check measured corpus tiny-corpus with sha256 {'b' * 64}, "
           f"but the plan froze {frozen}",
           f"    expected: {frozen}", f"    found:    {'b' * 64}")


def test_data_check_records_nothing(itera: Itera, campaign: Campaign) -> None:
    campaign.measurements["data-check"] = [{"step": 1, "rows_read": 4}]
    campaign.write()
    result = itera(check="role-evidence")
    expect(result, f"{DATA_M}: data check data-check records no check of corpus tiny-corpus "
           "(corpus/corpus.jsonl)")


def test_data_check_record_without_a_count(itera: Itera, campaign: Campaign) -> None:
    del checked(campaign)["examples"]
    campaign.write()
    result = itera(check="role-evidence")
    expect(result, f"{DATA_M}:1: data check data-check's record of corpus tiny-corpus has no "
           "examples", "    expected: examples 4")


def test_data_check_records_every_declared_input(itera: Itera, campaign: Campaign) -> None:
    vocab = b"the\nof\nand\n"
    campaign.files["vocab/tokens.txt"] = vocab
    add_rule(campaign, "vocab-whole", "input_truncated", input="vocab/tokens.txt",
             bytes=len(vocab))
    campaign.write()
    result = itera(check="role-evidence")
    expect(result, f"{DATA_M}: data check data-check records no check of input "
           "'vocab/tokens.txt', which stop rule 'vocab-whole' declares indispensable")
    campaign.measurements["data-check"].append(
        {"checked_input": {"input": "vocab/tokens.txt", "bytes": len(vocab)}})
    campaign.files.pop(DATA_M)
    campaign.write()
    itera(check="role-evidence").assert_outcomes(passed=2)


# ===================================================================== rules-declared


def test_rules_declared_passes(itera: Itera, campaign: Campaign) -> None:
    campaign.write()
    itera(check="rules-declared").assert_outcomes(passed=1)


def test_no_stop_rule_in_a_v1_plan(itera: Itera, pytester: Pytester) -> None:
    """itera-plan/1's schema lets the list be empty: the rule is rules-declared's."""
    campaign = CampaignBuilder(pytester.path / "out", version=1)
    campaign.plan["stop_rules"] = []
    itera.fails(campaign, "rules-declared",
                "plan.json $.stop_rules: the plan declares no stop rule (stop_rules is empty)",
                "    expected: at least one rule, written before any run starts: non-finite loss, "
                "quality under a threshold, a truncated input, no usable resume")


def test_no_stop_rule_is_a_schema_error_of_the_manifest_item(
    itera: Itera, pytester: Pytester
) -> None:
    """From itera-plan/2 the schema refuses an empty list: one cause, one failure (issue 26),
    on the contract check; rules-declared is not judged, and says so once."""
    campaign = CampaignBuilder(pytester.path / "out", version=2)
    campaign.plan["stop_rules"] = []
    campaign.write()
    result = itera("-rA", "-k", "manifest and not files and not temp or rules-declared")
    result.assert_outcomes(failed=1, skipped=1)
    expect(result, "plan.json:*:* $.stop_rules: no stop rule: write the stop rules down before "
           "the trials (non-finite loss, quality under a threshold, a truncated input, no usable "
           "resume)",
           "SKIPPED [1] out/manifest.json:1: not judged: manifest failed (plan.json did not load)",
           "FAILED out/manifest.json::manifest")


def _pilot(campaign: Campaign) -> None:
    campaign.plan["runs"].append({"id": "pilot", "role": "pilot", "category": "useful",
                                  "config_sha256": "1" * 64})
    steps = campaign.plan["schedule"]["steps"]
    steps.append({"id": "train-pilot", "kind": "training", "resource": "gpu0", "hours": 1,
                  "after": ["load-data"], "run": "pilot", "lot": "rtx4090-3d"})


def test_pilot_without_a_decision_point(itera: Itera, campaign: Campaign) -> None:
    _pilot(campaign)
    itera.fails(
        campaign, "rules-declared",
        "plan.json $.decision.point: the plan has a pilot (pilot) but fixes no decision point "
        "after it",
        "    expected: decision.point (when the post-pilot decision is taken), or a schedule "
        "step of kind 'decision' after the pilot's steps (through 'after')",
        "    found:    no step of kind 'decision' comes after the pilot's steps (train-pilot)",
    )


def test_pilot_with_a_decision_point(itera: Itera, campaign: Campaign) -> None:
    _pilot(campaign)
    campaign.plan["decision"]["point"] = "after the pilot: continue, drop variant-a, or revise"
    campaign.write()
    itera(check="rules-declared").assert_outcomes(passed=1)


def test_pilot_with_a_decision_step_after_it(itera: Itera, campaign: Campaign) -> None:
    _pilot(campaign)
    campaign.plan["decision"]["point"] = "  "  # blank: the step decides
    steps = campaign.plan["schedule"]["steps"]
    steps.append({"id": "review", "kind": "validation", "resource": "human", "hours": 1,
                  "after": ["train-pilot"]})
    steps.append({"id": "go-no-go", "kind": "decision", "resource": "human", "hours": 0.5,
                  "after": ["review"]})  # after the pilot through another step
    itera.passes(campaign, "rules-declared")
    steps[-1]["after"] = ["load-data"]  # before the pilot has run
    campaign.write()
    itera(check="rules-declared").assert_outcomes(failed=1)


def test_no_resume_rule_names_a_run_that_is_not_a_resume_check(
    itera: Itera, campaign: Campaign
) -> None:
    add_rule(campaign, "resume-usable", "no_resume", resume_check="control")
    campaign.write()
    result = itera(check="rules-declared")
    expect(result, "plan.json $.stop_rules[1].parameters.resume_check: stop rule 'resume-usable' "
           "(no_resume) names 'control', which is not a planned resume check",
           "    expected: one of ['resume-check']")


def test_repeated_stop_rule_id(itera: Itera, campaign: Campaign) -> None:
    add_rule(campaign, "non-finite-loss", "non_finite_loss", series="val_loss")
    campaign.write()
    result = itera(check="rules-declared")
    expect(result, "plan.json $.stop_rules: stop rule id 'non-finite-loss' appears 2 times")


def test_v1_free_form_rule_parameters(itera: Itera, pytester: Pytester) -> None:
    campaign = CampaignBuilder(pytester.path / "out", version=1)
    campaign.write()
    result = itera(check="rules-declared")
    expect(result, "plan.json $.stop_rules[0].parameters: itera-plan/1 cannot prove that stop rule "
           "'non-finite-loss' (non_finite_loss) is applied: its parameters are free-form*")


# ======================================================= analysis-present: the evidence


@pytest.mark.parametrize(("text", "marker", "line"), [
    ("# Error analysis\n\nTODO\n", "TODO", 3),
    ("# Analyse des erreurs\n\nÀ compléter.\n", "À compléter", 3),
    ("# Error analysis\n\ncontrol and variant-a: lorem ipsum dolor sit amet.\n", "lorem ipsum",
     3),
    ("# Error analysis\n\n- control: to be written\n- variant-a: TBD\n", "to be written", 3),
    ("# Fehleranalyse\n\nNoch zu schreiben.\n", "Noch zu schreiben", 3),
    ("# Análisis de errores\n\n- control: por completar\n- variant-a: pendiente\n",
     "por completar", 3),
], ids=["todo", "fr", "lorem", "to-be-written", "de", "es"])
def test_analysis_is_a_placeholder(
    itera: Itera, campaign: Campaign, text: str, marker: str, line: int
) -> None:
    """A text that says nothing but a placeholder is no analysis: that decides."""
    campaign.files["analysis.md"] = text.encode()
    itera.fails(campaign, "analysis-present",
                f"analysis.md:{line}: the error analysis analysis.md is a placeholder "
                f"({marker!r} on line {line})")


@pytest.mark.parametrize(("text", "line"), [
    ("# Analyse\n\n*en cours*\n\ncontrol, variant-a\n", 3),
    ("# Error analysis\n\n| run | errors |\n|---|---|\n| control | ex-3 |\n"
     "| variant-a | TBD |\n", 6),
], ids=["en-cours", "table-cell"])
def test_a_placeholder_inside_a_text_advises(
    itera: Itera, campaign: Campaign, text: str, line: int
) -> None:
    """A placeholder among words is a reading: an advisory by default, a failure under
    --itera-strict-text."""
    campaign.files["analysis.md"] = text.encode()
    found = advises_then_fails(campaign, "analysis-present", "analysis-present.placeholder-line")
    assert found.where == f"analysis.md:{line}"
    itera(check="analysis-present").assert_outcomes(passed=1)


def test_analysis_in_french_with_ordinary_words(itera: Itera, campaign: Campaign) -> None:
    campaign.files["analysis.md"] = (
        "# Analyse des erreurs\n\nPendant l'entraînement en cours de control, ex-3 est confondu "
        "avec neg ; variant-a corrige ex-3 mais rate ex-4 (travail à venir : ex-4).\n").encode()
    campaign.write()
    itera(check="analysis-present").assert_outcomes(passed=1)


def test_analysis_does_not_name_a_compared_run(itera: Itera, campaign: Campaign) -> None:
    campaign.files["analysis.md"] = b"# Error analysis\n\nThe control confuses ex-3 with neg.\n"
    itera.fails(campaign, "analysis-present",
                "analysis.md: the error analysis analysis.md does not name variant-a",
                "    expected: every compared run named: control, variant-a")


def test_analysis_of_a_negative_result_names_the_runs_compared(
    itera: Itera, campaign: Campaign
) -> None:
    stop_by_nan(campaign)  # variant-a was stopped: only the control is compared
    campaign.files["analysis.md"] = b"# Error analysis\n\nThe control confuses ex-3 with neg.\n"
    campaign.write()
    itera(check="analysis-present").assert_outcomes(passed=1)


def test_reload_instructions_miss_a_deliverable(itera: Itera, campaign: Campaign) -> None:
    campaign.files["RELOAD.md"] = (
        f"# Reload\n\ntorch.load('{CONTROL_CKPT}', weights_only=True)\n".encode())
    itera.fails(
        campaign, "analysis-present",
        f"RELOAD.md: the reload instructions RELOAD.md do not name {VARIANT_WEIGHTS}",
        "    expected: each deliverable artifact (checkpoint or adapter of an accepted control "
        "or variant) named by its path in the campaign",
    )


# ============================================================ no false rejects, end to end


def test_run_stopped_by_its_rule_stays_accepted(itera: Itera, campaign: Campaign) -> None:
    stop_by_nan(campaign)
    campaign.files["analysis.md"] = b"# Error analysis\n\nThe control confuses ex-3 with neg.\n"
    campaign.write()
    result = itera()
    assert result.ret == 0, result.stdout.str()[-3000:]
    result.stdout.fnmatch_lines(["campaign tiny-2026-11: ACCEPTED*"])


def test_negative_result_stays_accepted(itera: Itera, campaign: Campaign) -> None:
    # variant-a predicts what the control predicts: its recomputed accuracy is 0.75
    campaign.files["runs/variant-a/predictions.jsonl"] = campaign.files[
        "runs/control/predictions.jsonl"]
    campaign.set_metric("variant-a", "accuracy", 0.75)
    campaign.manifest["conclusion"] = {
        "meets_threshold": [],
        "text": "Résultat négatif : aucune variante n'atteint le seuil de 0.8 (variant-a 0.75)."}
    campaign.manifest["budget"]["unit"] = "decision"
    campaign.manifest["budget"]["cost_per_deliverable"] = None
    campaign.write()
    result = itera()
    assert result.ret == 0, result.stdout.str()[-3000:]
    result.stdout.fnmatch_lines(["campaign tiny-2026-11: ACCEPTED*"])


# ============================================================ the reader, unit level


def test_reader_values_and_precision(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    path.write_bytes(
        b'\xef\xbb\xbf{"step": 2, "loss": 0.5, "acc": "-INF"}\n\n'
        b'{"step": 1, "loss": NaN}\n'
        b'{"checked_input": {"input": "c", "examples": 4, "sha256": "ab"}}\n'
        b'{"metrics": {"acc": 0.880, "n": 12, "tiny": 1e-05, "name": "best"}}\n')
    found = read_measurements(path, "m.jsonl")
    assert isinstance(found, Measurements)
    loss = found.series["loss"]
    assert list(loss.steps) == [1, 2]
    assert list(loss.lines) == [3, 1]
    first = loss.first_non_finite()
    assert first is not None
    assert (first[0], first[2]) == (1, 3)
    assert math.isnan(first[1])
    assert found.series["acc"].values[0] == -math.inf
    assert found.metrics is not None
    assert found.metrics_line == 5
    assert (found.metrics["acc"].value, found.metrics["acc"].decimals) == (0.88, 3)
    assert found.metrics["n"].decimals is None
    assert found.metrics["tiny"].decimals == 5
    assert found.metrics["name"].value == "best"
    record = found.checked("x", "c")
    assert record is not None
    assert (record.examples, record.sha256, record.line) == (4, "ab", 4)


def test_reader_is_bounded_and_never_raises(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    path.write_bytes(b"\xff\xfe\n" + b"[1, 2]\n" + b'{"step": true}\n' + b"{" * 100_000 + b"\n"
                     + b'{"step": 1, "loss": 1e999}\n'
                     + b"".join(json.dumps({"x": i}).encode() + b"\n" for i in range(30)))
    found = read_measurements(path, "m.jsonl")
    assert isinstance(found, Unreadable)
    assert [p.line for p in found.problems[:4]] == [1, 2, 3, 4]
    assert len(found.problems) == 20
    assert found.more == 14
    assert found.problems[0].message == "not UTF-8 (byte 1)"
    fifo = tmp_path / "fifo"
    import os

    os.mkfifo(fifo)
    refused = read_measurements(fifo, "fifo")
    assert isinstance(refused, Unreadable)
    assert refused.summary() == "fifo is not a regular file"


# ====================================================== one cause, one finding (issue 26)

DEPENDENTS = "measurements-agree or stop-rules-applied or role-evidence"


def test_a_duplicated_step_is_one_finding_with_its_fix(itera: Itera, campaign: Campaign) -> None:
    """A measurements file that logs step 2 twice broke three checks with a generic fix: the
    check that reads the file owns it, says which line to remove; the runs' other checks that
    read it are not judged, and say so once."""
    rows = campaign.measurements["control"]
    rows.insert(2, dict(rows[1]))  # step 2 again, on line 3
    campaign.write()
    result = itera("-rA", "-k", DEPENDENTS)
    outcomes = result.parseoutcomes()
    assert (outcomes["failed"], outcomes["skipped"]) == (1, 2), outcomes
    expect(result,
           "runs/control/measurements.jsonl:3: the measurements runs/control/measurements.jsonl "
           "of run control are not usable: step 2 is logged twice (series 'loss'; the first is "
           "on line 2)",
           "    fix:      remove the duplicate step 2 (line 3): a series has one value per step; "
           "a run resumed from an earlier checkpoint forgets the steps after it first "
           "(pytest_itera.record's run.rewind(1))",
           "SKIPPED [2] out/manifest.json:1: not judged: measurements-agree[control] failed "
           "(runs/control/measurements.jsonl is not usable)",
           "FAILED out/manifest.json::measurements-agree[control]")
    # Alone, a dependent item still fails: -k never hides a cause.
    expect(itera(check="stop-rules-applied"), "*its measurements cannot be read: "
           "runs/control/measurements.jsonl:3: step 2 is logged twice*")


def test_a_step_logged_once_per_line_is_judged_by_every_check(
    itera: Itera, campaign: Campaign
) -> None:
    campaign.write()
    result = itera("-k", DEPENDENTS)
    assert result.parseoutcomes().get("skipped", 0) == 0
    assert result.parseoutcomes().get("failed", 0) == 0


def test_a_missing_measurements_file_is_files_intact_s_alone(
    itera: Itera, campaign: Campaign
) -> None:
    campaign.write()
    (campaign.root / "runs/control/measurements.jsonl").unlink()
    campaign.seal()
    result = itera("-rA", "-k", f"files-intact and control/measurements or {DEPENDENTS}")
    outcomes = result.parseoutcomes()
    assert (outcomes["failed"], outcomes["skipped"]) == (1, 3), outcomes
    expect(result, "SKIPPED [3] out/manifest.json:1: not judged: "
           "files-intact[runs/control/measurements.jsonl] failed "
           "(runs/control/measurements.jsonl is missing)",
           "FAILED out/manifest.json::files-intact[runs/control/measurements.jsonl]")
