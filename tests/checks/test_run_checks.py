"""stop-records, config-identity, predictions-cover-corpus, conclusion-consistent: pass and fail."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from pytest_itera.checks import Context, Options
from pytest_itera.checks.common.corpus_ids import corpus_ids
from pytest_itera.checks.runs import CHECKS
from pytest_itera.core.campaign import load_campaign
from pytest_itera.files.predictions import IdLine, UnreadableIds, cover, read_ids
from tests.factory import CORPUS_IDS, CampaignBuilder, as_plan_2, expect, sha256
from tests.runner import Itera

Pytester = pytest.Pytester
Campaign = CampaignBuilder


@pytest.fixture
def plan2_campaign(campaign: Campaign) -> Campaign:
    """The factory's campaign with an itera-plan/2: these rules judge the measurements files
    (the itera-plan/3 recomputation and the conclusion on it: tests/checks/test_metrics.py)."""
    as_plan_2(campaign.plan)
    return campaign


def record(campaign: Campaign, run_id: str) -> dict[str, Any]:
    return campaign.run_record(run_id)


def stop(campaign: Campaign, run_id: str = "variant-a", **stop_fields: Any) -> None:
    """Record ``run_id`` as stopped the way the recorder does (no deliverable, not concluded),
    with the evidence: its loss series is NaN from step 14."""
    rec = record(campaign, run_id)
    rec["outcome"] = "stopped"
    rec["stop"] = {"rule": "non-finite-loss", "reason": "training loss was nan at step 14",
                   "step": 14, **stop_fields}
    rec.pop("deliverable", None)
    rec.pop("predictions", None)
    rec.pop("corpus", None)
    if campaign.version >= 2:
        campaign.measurements[run_id] = [
            *({"step": i, "loss": 1.0 / i} for i in range(1, 14)), {"step": 14, "loss": "NaN"},
            *(r for r in campaign.measurements.get(run_id, []) if "metrics" in r)]
    campaign.manifest["conclusion"] = {
        "meets_threshold": [], "text": "Negative result: no variant meets the threshold."}


def jsonl(ids: list[Any]) -> bytes:
    return "".join(json.dumps({"id": i, "prediction": "pos"}) + "\n" for i in ids).encode()


# ------------------------------------------------------------- stop-records


def test_stop_record_passes(itera: Itera, plan2_campaign: Campaign) -> None:
    stop(plan2_campaign)
    result = itera.passes(plan2_campaign, "stop-records")
    result.stdout.no_fnmatch_line("*stop-records?control*")  # one item: the stopped run only


def test_no_stopped_run_no_item(itera: Itera, plan2_campaign: Campaign) -> None:
    plan2_campaign.write()
    itera(check="stop-records").assert_outcomes()


@pytest.mark.parametrize(
    ("fields", "messages"),
    [
        ({"reason": "  "},
         ["manifest.json $.runs[3].stop.reason: stopped run variant-a has no stop reason",
          "    fix:      say what was observed*"]),
        # one rule for text everywhere (pytest_itera.core.text.is_blank): zero-width is blank too
        ({"reason": "\u200b\u00a0"},
         ["manifest.json $.runs[3].stop.reason: stopped run variant-a has no stop reason"]),
        ({"rule": "out-of-memory"},
         ["manifest.json $.runs[3].stop.rule: stopped run variant-a cites stop rule "
          "'out-of-memory', which the plan does not declare",
          "    expected: one of ['non-finite-loss']",
          "    found:    'out-of-memory'",
          "    fix:      stop rules are written in the plan before any run starts*"]),
        ({"rule": ""},
         ["manifest.json $.runs[3].stop.rule: stopped run variant-a does not name the stop rule "
          "that fired"]),
        ({"step": None},
         ["manifest.json $.runs[3].stop: stopped run variant-a does not say when it was stopped",
          "    expected: a step or an 'at' timestamp"]),
    ],
    ids=["empty-reason", "zero-width-reason", "rule-not-in-plan", "no-rule", "no-when"],
)
def test_stop_record_incomplete(
    itera: Itera, plan2_campaign: Campaign, fields: dict[str, Any], messages: list[str]
) -> None:
    stop(plan2_campaign, **fields)
    rec = record(plan2_campaign, "variant-a")
    rec["stop"] = {k: v for k, v in rec["stop"].items() if v is not None}
    itera.fails(plan2_campaign, "stop-records", "*stop-records?variant-a?: 1 problem*", *messages)


def test_stop_at_time_is_enough(itera: Itera, plan2_campaign: Campaign) -> None:
    stop(plan2_campaign, at="2026-11-21T12:00:00Z")
    del record(plan2_campaign, "variant-a")["stop"]["step"]
    plan2_campaign.write()
    itera(check="stop-records").assert_outcomes(passed=1)


def test_stopped_before_it_started(itera: Itera, plan2_campaign: Campaign) -> None:
    record(plan2_campaign, "variant-a")["started_at"] = "2026-11-20T10:00:00Z"
    stop(plan2_campaign, at="2026-11-20T09:00:00Z")
    plan2_campaign.write()
    result = itera(check="stop-records")
    expect(result, "manifest.json $.runs[3].stop.at: run variant-a was stopped before it started",
           "    expected: at or after 2026-11-20T10:00:00+00:00")


def test_stopped_run_without_stop_record(itera: Itera, plan2_campaign: Campaign) -> None:
    stop(plan2_campaign)
    del record(plan2_campaign, "variant-a")["stop"]
    itera.fails(plan2_campaign, "stop-records",
                "manifest.json $.runs[3].stop: stopped run variant-a has no stop record")


def test_stopped_run_counted_as_accepted(itera: Itera, plan2_campaign: Campaign) -> None:
    # the stop rule fired, but the run was still recorded as an accepted deliverable
    record(plan2_campaign, "variant-a")["stop"] = {
        "rule": "non-finite-loss", "reason": "loss nan", "step": 3}
    itera.fails(
        plan2_campaign, "stop-records",
        "manifest.json $.runs[3].outcome: run variant-a was stopped by rule 'non-finite-loss' "
        "but is counted as accepted",
        "    expected: 'stopped'", "    found:    'accepted'",
        "    fix:      a stopped run keeps its ID and reason, is not an accepted deliverable, "
        "and still counts as an expense*",
    )


def test_stopped_run_concluded_and_delivered(itera: Itera, pytester: Pytester) -> None:
    campaign = CampaignBuilder(pytester.path / "out", version=1)  # /1 records deliverables
    stop(campaign)
    record(campaign, "variant-a")["deliverable"] = "tiny-corpus"
    campaign.manifest["conclusion"]["meets_threshold"] = ["variant-a"]
    campaign.write()
    result = itera(check="stop-records")
    expect(result, "*stop-records?variant-a?: 2 problems*",
           "manifest.json $.conclusion.meets_threshold: stopped run variant-a is listed as meeting "
           "the threshold",
           "*",
           "manifest.json $.runs[3].deliverable: stopped run variant-a records a deliverable "
           "('tiny-corpus')")
    # the conclusion check says the same from its side
    result = itera(check="conclusion-consistent")
    expect(result, "manifest.json $.conclusion.meets_threshold: the conclusion lists variant-a, "
           "whose outcome is 'stopped': only an accepted run can meet the threshold")


def test_stop_rules_declared_after_the_runs(itera: Itera, plan2_campaign: Campaign) -> None:
    # The plan (and its stop rules) was frozen at noon; the runs started at 10:00.
    plan2_campaign.plan["frozen_at"] = "2026-11-20T12:00:00Z"
    stop(plan2_campaign)
    result = itera.fails(
        plan2_campaign, "stop-records or plan-frozen",
        "manifest.json $.runs[0].started_at: run control started before the plan (and its stop "
        "rules) was frozen",
        failed=2,
    )
    expect(result,
           "plan.json $.frozen_at: stop rule 'non-finite-loss' of run variant-a was declared after "
           "the runs began: the plan was frozen at 2026-11-20T12:00:00+00:00, run control started "
           "at 2026-11-20T10:00:00+00:00",
           "    fix:      stop rules are written before any run starts (see the plan-frozen item)")


# ---------------------------------------------------------- config-identity


def test_config_identity_passes(itera: Itera, plan2_campaign: Campaign) -> None:
    itera.passes(plan2_campaign, "config-identity", passed=4)


def test_config_changed_under_the_same_id(itera: Itera, plan2_campaign: Campaign) -> None:
    # After a fix the config changed, but the run kept its planned ID (the manifest is consistent).
    fixed = json.dumps({"run": "variant-a", "lr": 0.001}).encode()
    plan2_campaign.files["configs/variant-a.json"] = fixed
    record(plan2_campaign, "variant-a")["config_sha256"] = sha256(fixed)
    result = itera.fails(plan2_campaign, "config-identity", passed=3)
    planned = plan2_campaign.plan["runs"][3]["config_sha256"]
    expect(result,
           "manifest.json $.runs[3].config (plan.json $.runs[3].config_sha256): run variant-a ran "
           "a configuration other than the one planned under its ID: a new configuration after a "
           "fix needs a new ID",
           f"    expected: {planned}",
           f"    found:    {sha256(fixed)} (configs/variant-a.json)",
           "    fix:      keep the planned config under the old ID*new run added by a decision*")


def test_config_edited_after_the_run(itera: Itera, plan2_campaign: Campaign) -> None:
    plan2_campaign.write()
    (plan2_campaign.root / "configs/control.json").write_text('{"run": "control", "lr": 0.5}')
    plan2_campaign.seal()
    result = itera(check="config-identity")
    result.assert_outcomes(passed=3, failed=1)
    expect(result, "*config-identity?control?: 2 problems*",
           "manifest.json $.runs[0].config_sha256: config configs/control.json of run control "
           "changed after the run recorded it",
           "*", "*", "*",
           "manifest.json $.runs[0].config (plan.json $.runs[0].config_sha256): run control ran "
           "a configuration other than the one planned under its ID*")


def test_run_without_config(itera: Itera, plan2_campaign: Campaign) -> None:
    del record(plan2_campaign, "variant-a")["config"]
    itera.fails(plan2_campaign, "config-identity",
                "manifest.json $.runs[3]: run variant-a records no config file",
                "    expected: config: the path of the configuration it ran with", passed=3)


def test_config_file_missing(itera: Itera, plan2_campaign: Campaign) -> None:
    record(plan2_campaign, "control")["config"] = "configs/gone.json"
    plan2_campaign.write()
    result = itera(check="config-identity")
    expect(result,
           "manifest.json $.runs[0].config: config configs/gone.json of run control is missing")


def test_dropped_run_without_config_has_no_item(itera: Itera, plan2_campaign: Campaign) -> None:
    plan2_campaign.manifest["runs"][3] = {
        "id": "variant-a", "outcome": "dropped", "decision": "after-pilot"}
    plan2_campaign.manifest["schedule"]["decisions"] = [
        {"id": "after-pilot", "text": "variant-a is not needed", "drops": ["variant-a"]}]
    result = itera.passes(plan2_campaign, "config-identity", passed=3)
    result.stdout.no_fnmatch_line("*config-identity[[]variant-a]*")


def test_run_added_by_decision_has_no_planned_hash(itera: Itera, plan2_campaign: Campaign) -> None:
    fixed = json.dumps({"run": "variant-a2", "lr": 0.001}).encode()
    plan2_campaign.files["configs/variant-a2.json"] = fixed
    plan2_campaign.manifest["runs"].append(dict(
        record(plan2_campaign, "variant-a"), id="variant-a2", config="configs/variant-a2.json",
        config_sha256=sha256(fixed)))
    plan2_campaign.manifest["schedule"]["decisions"] = [
        {"id": "after-fix", "text": "variant-a with lr 0.001 gets a new ID",
         "adds": ["variant-a2"]}]
    plan2_campaign.write()
    itera(check="config-identity or expected-ids").assert_outcomes(passed=6)


# ------------------------------------------------- predictions-cover-corpus


def test_predictions_cover_the_corpus(itera: Itera, plan2_campaign: Campaign) -> None:
    plan2_campaign.write()
    itera(check="predictions-cover-corpus").assert_outcomes(passed=2)  # control, variant-a


def _predictions(campaign: Campaign, data: bytes, run_id: str = "variant-a") -> None:
    campaign.files[f"runs/{run_id}/predictions.jsonl"] = data


def test_prediction_line_deleted(itera: Itera, plan2_campaign: Campaign) -> None:
    _predictions(plan2_campaign, jsonl(["ex-1", "ex-2", "ex-4"]))
    itera.fails(plan2_campaign, "predictions-cover-corpus",
                "*predictions-cover-corpus?variant-a?: 1 problem*",
                "runs/variant-a/predictions.jsonl: predictions miss 1 ID of the 4 corpus IDs",
                "    found:    ex-3",
                "    fix:      predict every example of the frozen corpus corpus/corpus.jsonl "
                "exactly once", passed=1)


def test_prediction_line_duplicated(itera: Itera, plan2_campaign: Campaign) -> None:
    _predictions(plan2_campaign, jsonl([*CORPUS_IDS, "ex-2"]))
    itera.fails(plan2_campaign, "predictions-cover-corpus",
                "runs/variant-a/predictions.jsonl:5: predictions repeat corpus IDs (1 extra line)",
                "    found:    ex-2 (line 5)", passed=1)


def test_prediction_unknown_id(itera: Itera, plan2_campaign: Campaign) -> None:
    _predictions(plan2_campaign, jsonl([*CORPUS_IDS[:3], "ex-99"]))
    plan2_campaign.write()
    result = itera(check="predictions-cover-corpus")
    expect(result, "*predictions-cover-corpus?variant-a?: 2 problems*",
           "runs/variant-a/predictions.jsonl: predictions miss 1 ID of the 4 corpus IDs",
           "    found:    ex-4",
           "*",
           "runs/variant-a/predictions.jsonl:4: predictions hold 1 ID not in the frozen corpus",
           "    found:    ex-99 (line 4)")


def test_many_problems_show_the_first_few_and_a_count(
    itera: Itera, plan2_campaign: Campaign
) -> None:
    _predictions(plan2_campaign, jsonl([*CORPUS_IDS, *(f"zz-{i}" for i in range(8))]))
    plan2_campaign.write()
    result = itera(check="predictions-cover-corpus")
    expect(result,
           "runs/variant-a/predictions.jsonl:5: predictions hold 8 IDs not in the frozen corpus",
           "    found:    zz-0 (line 5), zz-1 (line 6), zz-2 (line 7), zz-3 (line 8), "
           "zz-4 (line 9), ... (3 more)")


def test_malformed_prediction_lines(itera: Itera, plan2_campaign: Campaign) -> None:
    lines = jsonl(["ex-1", "ex-2"]) + b'{"id": "ex-3", "prediction": \n' + b'{"label": "pos"}\n'
    _predictions(plan2_campaign, lines + b'["ex-4"]\n' + jsonl(["ex-4"]) + b'{"id": 4.5}\n')
    plan2_campaign.write()
    result = itera(check="predictions-cover-corpus")
    expect(result, "*predictions-cover-corpus?variant-a?: 2 problems*",
           "runs/variant-a/predictions.jsonl: predictions miss 1 ID of the 4 corpus IDs",
           "    found:    ex-3",
           "*",
           "runs/variant-a/predictions.jsonl:3: predictions have 4 malformed lines",
           "    found:    line 3: not JSON (Expecting value); line 4: no 'id' field; "
           "line 5: a JSON list, not an object; line 7: 'id' is 4.5, not an ID")


def test_corpus_edited(itera: Itera, plan2_campaign: Campaign) -> None:
    plan2_campaign.write()
    corpus = plan2_campaign.root / "corpus/corpus.jsonl"
    corpus.write_bytes(corpus.read_bytes().replace(b"example ex-2", b"example ex-2 (fixed)"))
    plan2_campaign.seal()
    result = itera(check="predictions-cover-corpus")
    result.assert_outcomes(failed=2)
    expect(result,
           "plan.json $.corpora[0].sha256: the corpus is frozen: corpus/corpus.jsonl is not the "
           "corpus the plan froze (its sha256 differs); predictions were not compared",
           f"    expected: {plan2_campaign.plan['corpora'][0]['sha256']}",
           f"    found:    {sha256(corpus.read_bytes())}",
           "    fix:      restore the frozen corpus*")


def test_corpus_missing(itera: Itera, plan2_campaign: Campaign) -> None:
    plan2_campaign.plan["corpora"][0]["path"] = "corpus/elsewhere.jsonl"
    itera.fails(
        plan2_campaign, "predictions-cover-corpus",
        "plan.json $.corpora[0].path: the frozen corpus corpus/elsewhere.jsonl is missing",
        failed=2,
    )


def test_corpus_count_differs_from_the_plan(itera: Itera, plan2_campaign: Campaign) -> None:
    plan2_campaign.plan["corpora"][0]["examples"] = 5
    plan2_campaign.write()
    result = itera(check="predictions-cover-corpus")
    expect(result, "plan.json $.corpora[0].examples: the frozen corpus holds 4 distinct IDs, the "
           "plan says 5 examples")


def test_accepted_variant_without_predictions(itera: Itera, plan2_campaign: Campaign) -> None:
    del record(plan2_campaign, "variant-a")["predictions"]
    result = itera.fails(
        plan2_campaign, "predictions-cover-corpus",
        "manifest.json $.runs[3].predictions: accepted run variant-a has no predictions",
        passed=1,
    )
    result.stdout.no_fnmatch_line("*predictions-cover-corpus[[]data-check]*")


def test_stopped_run_predictions_are_not_compared(itera: Itera, plan2_campaign: Campaign) -> None:
    stop(plan2_campaign)
    record(plan2_campaign, "variant-a")["predictions"] = "runs/variant-a/predictions.jsonl"
    _predictions(plan2_campaign, jsonl(["ex-1"]))  # it stopped half-way: not a deliverable
    plan2_campaign.write()
    itera(check="predictions-cover-corpus").assert_outcomes(passed=1)


def test_csv_predictions_and_integer_ids(itera: Itera, plan2_campaign: Campaign) -> None:
    corpus = jsonl([1, 2, 3, 4])
    plan2_campaign.files["corpus/corpus.jsonl"] = corpus
    plan2_campaign.plan["corpora"][0]["sha256"] = sha256(corpus)
    _predictions(plan2_campaign, jsonl([1, 2, 3, 4]), "control")
    del plan2_campaign.files["runs/variant-a/predictions.jsonl"]
    plan2_campaign.files["runs/variant-a/predictions.csv"] = (
        b"\xef\xbb\xbfprediction,id\r\npos,1\r\n\"neg,\r\nsurely\",2\r\npos,3\r\npos,4\r\n")
    record(plan2_campaign, "variant-a")["predictions"] = "runs/variant-a/predictions.csv"
    plan2_campaign.write()
    itera(check="predictions-cover-corpus").assert_outcomes(passed=2)


CSV_PREDICTIONS = "runs/variant-a/predictions.csv"


def _run_csv_predictions(itera: Itera, campaign: Campaign, data: bytes) -> pytest.RunResult:
    campaign.files[CSV_PREDICTIONS] = data
    record(campaign, "variant-a")["predictions"] = CSV_PREDICTIONS
    campaign.write()
    return itera(check="predictions-cover-corpus")


def test_csv_without_the_id_column(itera: Itera, plan2_campaign: Campaign) -> None:
    result = _run_csv_predictions(itera, plan2_campaign, b"example,prediction\nex-1,pos\n")
    expect(result,
           f"{CSV_PREDICTIONS}: predictions {CSV_PREDICTIONS} has no 'id' column in its header "
           "['example', 'prediction']",
           "    fix:      write JSON Lines objects or CSV rows with the 'id' field of the corpus")


def test_csv_with_bare_cr_line_ends(itera: Itera, plan2_campaign: Campaign) -> None:
    """Old Mac line ends: one 'line' holds every row; a clear failure, not a traceback."""
    result = _run_csv_predictions(itera, plan2_campaign, b"id,prediction\rex-1,pos\rex-2,neg\r")
    expect(result,
           f"{CSV_PREDICTIONS}: predictions {CSV_PREDICTIONS} has no readable CSV header "
           "(new-line character seen in unquoted field*")


def test_json_array_is_refused(itera: Itera, plan2_campaign: Campaign) -> None:
    _predictions(plan2_campaign, json.dumps([{"id": i} for i in CORPUS_IDS]).encode())
    plan2_campaign.write()
    result = itera(check="predictions-cover-corpus")
    expect(result,
           "runs/variant-a/predictions.jsonl: predictions runs/variant-a/predictions.jsonl is a "
           "JSON array; write one JSON object per line (JSON Lines)")


# ---------------------------------------------------------- reading IDs, unit level


def test_read_ids_tsv_and_csv_problems(tmp_path: Path) -> None:
    path = tmp_path / "p.tsv"
    path.write_text("id\tprediction\nex-1\tpos\n\n\tneg\nex-2\n")
    assert list(read_ids(path, "id")) == [
        IdLine(2, "ex-1"), IdLine(4, None, "no value in the 'id' column"), IdLine(5, "ex-2")]


def test_read_ids_skips_an_overlong_line_unread(tmp_path: Path) -> None:
    problem = "over the line length limit (skipped unread)"
    path = tmp_path / "p.jsonl"
    path.write_bytes(jsonl(["a"]) + b'{"id": "' + b"x" * 500 + b'"}\n' + jsonl(["b"]))
    assert list(read_ids(path, "id", max_line=64)) == [
        IdLine(1, "a"), IdLine(2, None, problem), IdLine(3, "b")]
    csv_path = tmp_path / "p.csv"
    csv_path.write_bytes(b"id,p\na,1\n" + b"b," + b"y" * 500 + b"\nc,2")  # no final newline
    assert list(read_ids(csv_path, "id", max_line=64)) == [
        IdLine(2, "a"), IdLine(3, None, problem), IdLine(4, "c")]


def test_read_ids_over_block_boundaries(tmp_path: Path) -> None:
    """Lines cut by the 1 MiB read blocks, and an over-long line spanning several blocks."""
    path = tmp_path / "p.jsonl"
    padding = "p" * 300_000
    rows = [json.dumps({"id": f"r{i}", "pad": padding}) + "\n" for i in range(8)]
    huge = '{"id": "huge", "pad": "' + "h" * 3_000_000 + '"}\n'
    path.write_text(rows[0] + huge + "".join(rows[1:]))
    got = list(read_ids(path, "id", max_line=1_000_000))
    assert got[1] == IdLine(2, None, "over the line length limit (skipped unread)")
    assert [r.id for r in got] == ["r0", None, *(f"r{i}" for i in range(1, 8))]
    assert [r.line for r in got] == list(range(1, 10))


def test_read_ids_refuses_binary_files(tmp_path: Path) -> None:
    """Binary content that is neither compressed text nor Parquet (gzip, zstd and Parquet are
    read: tests/files/test_packed.py)."""
    path = tmp_path / "p.arrow"
    path.write_bytes(b"ARROW1\0\0" + jsonl(list(CORPUS_IDS)))
    with pytest.raises(UnreadableIds, match=r"is binary \(Arrow, a spreadsheet\?\); write JSON "
                       r"Lines, CSV or Parquet, plain or compressed with gzip or zstd"):
        list(read_ids(path, "id"))


def test_read_ids_refuses_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "p.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(UnreadableIds, match="not a regular file"):
        list(read_ids(fifo, "id"))


def test_a_million_prediction_lines(tmp_path: Path) -> None:
    """1,000,000 lines against a 1,000,000-ID corpus: exact counts, first few of each problem.

    Peak memory is measured by benchmarks/bench_predictions.py, not here.
    """
    n = 1_000_000
    corpus = tmp_path / "corpus.csv"
    with corpus.open("w") as out:
        out.write("id,text\n")
        out.writelines(f"doc-{i},text {i}\n" for i in range(n))
    predictions = tmp_path / "predictions.jsonl"
    with predictions.open("w") as out:
        for i in range(n):
            if i == 10:
                out.write('{"id": "doc-9", "p": 0.5}\n')  # doc-10 missing, doc-9 repeated
            elif i == 500_000:
                out.write('{"id": "nowhere", "p": 0.5}\n')  # doc-500000 missing, one unknown
            else:
                out.write(f'{{"id": "doc-{i}", "p": 0.5}}\n')
    ids = {rec.id: pos for pos, rec in enumerate(read_ids(corpus, "id")) if rec.id is not None}
    assert len(ids) == n
    coverage = cover(ids, read_ids(predictions, "id"))
    assert coverage.records == n
    assert (coverage.missing, coverage.missing_first) == (2, ["doc-10", "doc-500000"])
    assert (coverage.duplicated, coverage.duplicated_first) == (1, [("doc-9", 11)])
    assert (coverage.unknown, coverage.unknown_first) == (1, [("nowhere", 500_001)])
    assert coverage.malformed == 0


def test_cover_keeps_only_the_first_few() -> None:
    records = [IdLine(i, f"u-{i}") for i in range(1, 101)]
    coverage = cover({"a": 0}, records, first=3)
    assert coverage.unknown == 100
    assert coverage.unknown_first == [("u-1", 1), ("u-2", 2), ("u-3", 3)]
    assert coverage.missing_first == ["a"]


def test_corpus_is_read_once_per_context(plan2_campaign: Campaign) -> None:
    root = plan2_campaign.write()
    checks = {c.id: c for c in CHECKS}
    ctx = Context(load_campaign(root), Options(), checks)
    first = corpus_ids(ctx)
    assert first is corpus_ids(ctx)
    assert list(first.ids) == list(CORPUS_IDS)
    other = Context(load_campaign(root), Options(), checks)
    assert corpus_ids(other) is not first  # a new campaign load reads it afresh


# ---------------------------------------------------------- conclusion-consistent
# Judged on the measurements files' values; the text both ways.

MEASURED = "runs/variant-a/measurements.jsonl"


def test_conclusion_consistent_passes(itera: Itera, plan2_campaign: Campaign) -> None:
    plan2_campaign.write()
    itera(check="conclusion-consistent").assert_outcomes(passed=1)


def test_negative_result_correctly_stated(itera: Itera, plan2_campaign: Campaign) -> None:
    plan2_campaign.set_metric("variant-a", "accuracy", 0.79)
    plan2_campaign.manifest["conclusion"] = {
        "meets_threshold": [],
        "text": "Negative result: no variant meets the 0.8 accuracy threshold (variant-a 0.79)."}
    plan2_campaign.write()
    itera(check="conclusion-consistent").assert_outcomes(passed=1)


@pytest.mark.parametrize("text", [
    "variant-a reaches 0.79, below the 0.8 threshold.",
    "The threshold is not met: variant-a stays at 0.79.",
    "Aucune variante n'atteint le seuil de 0.8 (variant-a : 0.79).",
    "variant-a n'atteint pas le seuil ; résultat négatif.",
    "Neither variant beats the 0.8 bar.",
])
def test_negative_result_in_other_words(
    itera: Itera, plan2_campaign: Campaign, text: str
) -> None:
    plan2_campaign.set_metric("variant-a", "accuracy", 0.79)
    plan2_campaign.manifest["conclusion"] = {"meets_threshold": [], "text": text}
    plan2_campaign.write()
    itera(check="conclusion-consistent").assert_outcomes(passed=1)


def test_empty_list_without_a_negative_statement(itera: Itera, plan2_campaign: Campaign) -> None:
    plan2_campaign.set_metric("variant-a", "accuracy", 0.79)
    plan2_campaign.manifest["conclusion"] = {"meets_threshold": [],
                                       "text": "variant-a scored 0.79 on the corpus."}
    itera.advises(
        plan2_campaign, "conclusion-consistent",
        "manifest.json $.conclusion.text: meets_threshold is empty, but the conclusion's text "
        "does not state the negative result",
        "    found:    'variant-a scored 0.79 on the corpus.'",
        "    fix:      say that no variant meets accuracy >= 0.8 (a negative result is a valid "
        "result and closes the campaign) (a reading of words: it fails only under "
        "--itera-strict-text)",
    )


def test_empty_list_but_the_text_claims_a_variant_meets(
    itera: Itera, plan2_campaign: Campaign
) -> None:
    plan2_campaign.set_metric("variant-a", "accuracy", 0.79)
    plan2_campaign.manifest["conclusion"] = {
        "meets_threshold": [],
        "text": "Negative result for the control; variant-a meets the 0.8 accuracy threshold."}
    itera.fails(
        plan2_campaign, "conclusion-consistent",
        "manifest.json $.conclusion.text: the conclusion's text names variant-a as meeting the "
        "threshold, but meets_threshold is empty",
        "    found:    'variant-a meets the 0.8 accuracy threshold'",
    )


@pytest.mark.parametrize("text", ["   ", "\u200b\u00a0"], ids=["spaces", "invisible"])
def test_blank_conclusion_text(itera: Itera, plan2_campaign: Campaign, text: str) -> None:
    plan2_campaign.manifest["conclusion"]["text"] = text
    itera.fails(plan2_campaign, "conclusion-consistent",
                "manifest.json $.conclusion.text: the conclusion has no text")


def test_listed_variant_not_named_in_the_text(itera: Itera, plan2_campaign: Campaign) -> None:
    plan2_campaign.manifest["conclusion"]["text"] = "One variant meets the 0.8 accuracy threshold."
    itera.advises(
        plan2_campaign, "conclusion-consistent",
        "manifest.json $.conclusion.text: the conclusion's text does not name variant-a, which "
        "meets_threshold lists",
        "    found:    'One variant meets the 0.8 accuracy threshold.'",
        "    fix:      name variant-a in the text with its measured accuracy (a reading of "
        "words: it fails only under --itera-strict-text)",
    )


def test_conclusion_contradicts_the_metrics(itera: Itera, plan2_campaign: Campaign) -> None:
    plan2_campaign.set_metric("variant-a", "accuracy", 0.79)
    itera.fails(
        plan2_campaign, "conclusion-consistent",
        "manifest.json $.conclusion.meets_threshold: the conclusion lists variant-a as meeting "
        "the threshold, but its accuracy is 0.79",
        "    expected: accuracy >= 0.8",
        f"    found:    accuracy = 0.79 ({MEASURED}:5)",
        "    fix:      state the conclusion the measured metrics support; a negative result is "
        "a valid result",
    )


def test_gain_inflated_in_the_manifest_only(itera: Itera, plan2_campaign: Campaign) -> None:
    """The manifest says 0.85, the measurements 0.79: the conclusion is judged on the file."""
    plan2_campaign.set_metric("variant-a", "accuracy", 0.79)
    record(plan2_campaign, "variant-a")["metrics"]["accuracy"] = 0.85
    itera.fails(plan2_campaign, "conclusion-consistent",
                "*the conclusion lists variant-a as meeting the threshold, but its accuracy "
                "is 0.79", "    expected: accuracy >= 0.8",
                f"    found:    accuracy = 0.79 ({MEASURED}:5)")


def test_conclusion_hides_a_variant_that_meets(itera: Itera, plan2_campaign: Campaign) -> None:
    plan2_campaign.manifest["conclusion"] = {"meets_threshold": [], "text": "Negative result."}
    plan2_campaign.write()
    result = itera(check="conclusion-consistent")
    expect(result,
           "manifest.json $.conclusion.meets_threshold: variant variant-a meets the threshold but "
           "the conclusion does not list it",
           "    expected: accuracy >= 0.8", f"    found:    accuracy = 1.0 ({MEASURED}:5)")


def test_hidden_variant_deflated_in_the_manifest_only(
    itera: Itera, plan2_campaign: Campaign
) -> None:
    """A negative result stated on a manifest value the measurements contradict."""
    record(plan2_campaign, "variant-a")["metrics"]["accuracy"] = 0.79
    plan2_campaign.manifest["conclusion"] = {"meets_threshold": [], "text": "Negative result."}
    plan2_campaign.write()
    result = itera(check="conclusion-consistent")
    expect(result, "*variant variant-a meets the threshold but the conclusion does not list it",
           "    expected: accuracy >= 0.8", f"    found:    accuracy = 1.0 ({MEASURED}:5)")


def test_run_without_measurements_is_judged_on_the_manifest(
    itera: Itera, plan2_campaign: Campaign
) -> None:
    """No evidence to read (measurements-agree fails it): the manifest's copy is used."""
    del record(plan2_campaign, "variant-a")["measurements"]
    record(plan2_campaign, "variant-a")["metrics"]["accuracy"] = 0.79
    plan2_campaign.write()
    result = itera(check="conclusion-consistent")
    expect(result, "*the conclusion lists variant-a as meeting the threshold, but its accuracy "
           "is 0.79", "    found:    accuracy = 0.79 (manifest.json $.runs[3].metrics)")


def test_lower_is_better(itera: Itera, plan2_campaign: Campaign) -> None:
    plan2_campaign.plan["decision"] = {"metric": "error", "direction": "lower", "threshold": 0.2}
    plan2_campaign.set_metric("control", "error", 0.25)
    plan2_campaign.set_metric("variant-a", "error", 0.2)  # equal counts as meeting it
    plan2_campaign.write()
    itera(check="conclusion-consistent").assert_outcomes(passed=1)


def test_lower_is_better_contradicted(itera: Itera, plan2_campaign: Campaign) -> None:
    plan2_campaign.plan["decision"] = {"metric": "error", "direction": "lower", "threshold": 0.2}
    plan2_campaign.set_metric("variant-a", "error", 0.21)
    plan2_campaign.write()
    result = itera(check="conclusion-consistent")
    expect(result,
           "*the conclusion lists variant-a as meeting the threshold, but its error is 0.21",
           "    expected: error <= 0.2")


def test_variant_without_the_decision_metric(itera: Itera, plan2_campaign: Campaign) -> None:
    record(plan2_campaign, "variant-a")["metrics"] = {"loss": 0.3}
    plan2_campaign.measurements["variant-a"][-1] = {"metrics": {"loss": 0.3}}
    plan2_campaign.manifest["conclusion"] = {"meets_threshold": [], "text": "No variant meets it."}
    itera.fails(
        plan2_campaign, "conclusion-consistent",
        f"{MEASURED}: accepted variant variant-a has no 'accuracy' metric (the plan's decision "
        "metric)",
        "    found:    metrics ['loss']",
    )


def test_conclusion_lists_the_control(itera: Itera, plan2_campaign: Campaign) -> None:
    plan2_campaign.set_metric("control", "accuracy", 0.9)
    plan2_campaign.manifest["conclusion"]["meets_threshold"] = ["variant-a", "control", "variant-z"]
    plan2_campaign.write()
    result = itera(check="conclusion-consistent")
    # The list decides; the text not naming variant-z is a reading of words: it advises.
    expect(result, "*conclusion-consistent: 2 problems*",
           "manifest.json $.conclusion.meets_threshold: the conclusion lists control, a control "
           "run: only variants are compared with the threshold",
           "manifest.json $.conclusion.meets_threshold: the conclusion lists variant-z, which is "
           "not a run of the manifest")


def test_pilot_is_not_a_variant(itera: Itera, plan2_campaign: Campaign) -> None:
    plan2_campaign.plan["runs"].append({"id": "pilot", "role": "pilot", "category": "useful",
                                  "config_sha256": "1" * 64})
    plan2_campaign.manifest["runs"].append(dict(record(plan2_campaign, "variant-a"), id="pilot"))
    itera.passes(plan2_campaign, "conclusion-consistent")  # meets, unlisted: fine
    plan2_campaign.manifest["conclusion"]["meets_threshold"] = ["variant-a", "pilot"]
    plan2_campaign.manifest["conclusion"]["text"] = "variant-a and pilot meet the threshold."
    plan2_campaign.write()
    result = itera(check="conclusion-consistent")
    expect(result, "manifest.json $.conclusion.meets_threshold: the conclusion lists pilot, a "
           "pilot run: only variants are compared with the threshold")


def test_text_states_a_negative_result_but_lists_a_variant(
    itera: Itera, plan2_campaign: Campaign
) -> None:
    conclusion = plan2_campaign.manifest["conclusion"]
    conclusion["text"] = "No variant meets the 0.8 threshold (variant-a)."
    itera.advises(plan2_campaign, "conclusion-consistent",
                "manifest.json $.conclusion.text: the conclusion's text states a negative "
                "result, but it lists variant-a as meeting the threshold")


def test_all_variants_stopped_is_a_negative_result(itera: Itera, plan2_campaign: Campaign) -> None:
    stop(plan2_campaign)
    plan2_campaign.write()
    itera(check="conclusion-consistent or stop-records").assert_outcomes(passed=2)
