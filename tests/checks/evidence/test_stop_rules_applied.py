"""The rules of ``stop-rules-applied`` (pytest_itera/checks/evidence/stop_rules_applied.py): each
break refused, with its honest twin.

Where the cases come from (the files they were first written in):

Evidence checks: rules-declared, measurements-agree, stop-rules-applied, role-evidence, and the
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

import pytest

from pytest_itera.files.measurements import Measurements, Unreadable, read_measurements
from tests.checks.campaigns import (
    DATA_M,
    MALFORMED,
    RESUME_M,
    VARIANT_M,
    Campaign,
    Pytester,
    add_rule,
    checked,
    evidence_checkpoint,
    record,
    stop_by_nan,
    stopped_at,
)
from tests.checks.judging import expect_finding, expect_no_finding, judge
from tests.factory import (
    CONTROL_CKPT,
    CampaignBuilder,
    expect,
    sha256,
)
from tests.runner import Itera

# ================================================================== stop-rules-applied


CHECK = "stop-rules-applied"


def test_stop_rules_applied_passes(campaign: Campaign) -> None:
    expect_no_finding(judge(campaign, CHECK))


def test_one_item_per_run(itera: Itera, campaign: Campaign) -> None:
    campaign.write()
    itera(check="stop-rules-applied").assert_outcomes(passed=4)


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "inf", "nan", math.nan,
                                   math.inf], ids=repr)
def test_accepted_run_with_a_non_finite_loss(campaign: Campaign, value: object) -> None:
    campaign.measurements["variant-a"][2]["loss"] = value  # step 3, line 3
    shown = {"nan": "NaN", "inf": "Infinity", "-infinity": "-Infinity", "infinity": "Infinity"}
    found = judge(campaign, CHECK)
    assert len(found) == 1, [f.render() for f in found]
    finding = expect_finding(found, "stop-rules-applied.accepted-triggers", where=f"{VARIANT_M}:3",
                             says="accepted run variant-a triggers stop rule 'non-finite-loss' "
                             f"(non_finite_loss): its 'loss' series is "
                             f"{shown[str(value).lower()]} at step 3")
    assert (finding.expected, finding.found) == (
        "a run whose own evidence triggers a declared stop rule is stopped, not accepted",
        "outcome 'accepted' (manifest.json $.runs[3].outcome)")
    assert (finding.hint or "").startswith("record it as stopped")


def test_run_stopped_by_its_rule_with_its_evidence(campaign: Campaign) -> None:
    stop_by_nan(campaign)
    expect_no_finding(judge(campaign, CHECK))


def test_stop_step_is_not_the_first_non_finite_step(campaign: Campaign) -> None:
    stop_by_nan(campaign, step=20, nan_at=14)
    finding = expect_finding(judge(campaign, CHECK, target="variant-a"),
                             "stop-rules-applied.stop-step",
                             where="manifest.json $.runs[3].stop.step",
                             says="stopped run variant-a records stop step 20, but its 'loss' "
                             "series is first non-finite at step 14")
    assert (finding.expected, finding.found) == ("14", "20")
    assert finding.hint == ("the stop step is the first step whose value is NaN or ±inf "
                            f"({VARIANT_M}:14)")


def test_stopped_run_whose_evidence_does_not_trigger_its_rule(campaign: Campaign) -> None:
    stop_by_nan(campaign)
    campaign.measurements["variant-a"][13]["loss"] = 0.05  # the NaN was never measured
    expect_finding(judge(campaign, CHECK, target="variant-a"),
                   "stop-rules-applied.stop-not-triggered",
                   where="manifest.json $.runs[3].stop.rule",
                   says="stopped run variant-a cites stop rule 'non-finite-loss' "
                   "(non_finite_loss), but its evidence does not trigger it: 14 'loss' points, "
                   "all finite")


def test_accepted_run_without_measurements(campaign: Campaign) -> None:
    del record(campaign, "variant-a")["measurements"]
    del campaign.measurements["variant-a"]
    finding = expect_finding(judge(campaign, CHECK, target="variant-a"),
                             "stop-rules-applied.no-measurements",
                             where="manifest.json $.runs[3].measurements",
                             says="stop rule 'non-finite-loss' cannot be evaluated on accepted "
                             "run variant-a: run variant-a records no measurements file "
                             "(runs[].measurements)")
    assert (finding.hint or "").startswith("record the run's measurements file")


def test_training_run_without_the_watched_series(campaign: Campaign) -> None:
    campaign.measurements["variant-a"] = [r for r in campaign.measurements["variant-a"]
                                          if "step" not in r]  # its loss was not logged
    found = judge(campaign, CHECK)  # the data check trains nothing: no loss is fine
    assert len(found) == 1, [f.render() for f in found]
    expect_finding(found, "stop-rules-applied.unproven", where=VARIANT_M,
                   says=f"stop rule 'non-finite-loss' (non_finite_loss) cannot be evaluated on "
                   f"accepted run variant-a: its measurements {VARIANT_M} hold no 'loss' series")


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


def test_malformed_measurements(itera: Itera, campaign: Campaign) -> None:
    campaign.files[VARIANT_M] = MALFORMED
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


# ---------------------------------------- first written in test_one_rule_breaks.py


def test_a_stopped_run_that_logged_past_its_stop_is_refused(campaign: CampaignBuilder) -> None:
    stopped_at(campaign, "2026-11-21T18:00:00Z")
    campaign.run_record("variant-a")["stop"]["step"] = 3  # NaN at step 3; step 4 logged too
    campaign.measurements["variant-a"][2]["loss"] = "NaN"
    found = expect_finding(judge(campaign, "stop-rules-applied"), "stop-rules-applied.after-stop",
        says=("'loss'", "'non-finite-loss'"))
    assert found.where == "runs/variant-a/measurements.jsonl:4"
    assert found.expected == "no 'loss' point after step 3 (manifest.json $.runs[3].stop.step)"
    assert found.hint is not None
    assert found.hint.startswith("a run stops when its rule fires")


def test_a_stopped_run_whose_log_ends_at_its_stop_passes(campaign: CampaignBuilder) -> None:
    stopped_at(campaign, "2026-11-21T18:00:00Z")  # NaN at step 4, its last
    expect_no_finding(judge(campaign, "stop-rules-applied"))


def test_a_stopped_runs_checkpoint_saved_past_its_stop_is_refused(
    campaign: CampaignBuilder
) -> None:
    # Its measurements end at the stop; its model trained on to step 40.
    evidence_checkpoint(campaign, 40)
    found = expect_finding(
        judge(campaign, "stop-rules-applied"), "stop-rules-applied.checkpoint-after-stop",
        says=("runs/variant-a/last.pt", "'non-finite-loss'"))
    assert found.where == "manifest.json $.checkpoints[3]"
    assert found.expected == "a step at or before 4 (manifest.json $.runs[3].stop.step)"
    assert found.hint is not None
    assert found.hint.startswith("a run stops when its rule fires: ship the checkpoint")


def test_a_stopped_runs_checkpoint_at_its_stop_passes(campaign: CampaignBuilder) -> None:
    evidence_checkpoint(campaign, 4)
    expect_no_finding(judge(campaign, "stop-rules-applied"))
