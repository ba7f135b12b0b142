"""The rules of ``predictions-cover-corpus``
(pytest_itera/checks/runs/predictions_cover_corpus.py): each break refused, with its honest
twin.

Where the cases come from (the files they were first written in):

Parquet and gzip/zstd-compressed predictions and corpora (issue 28, item 4) under the same
rules as JSON Lines: predictions-cover-corpus, metrics-recomputed and the corpus identity of
budget-consistent; a corrupt file is a finding naming the file and the offset. Judged
in-process on the factory's campaign (the readers themselves: tests/files/test_packed.py).
"""
from __future__ import annotations

import gzip
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_itera.checks import Context, Options
from pytest_itera.checks.common.corpus_ids import corpus_ids
from pytest_itera.checks.runs import CHECKS
from pytest_itera.core.campaign import load_campaign
from pytest_itera.files.predictions import IdLine, UnreadableIds, cover, read_ids
from tests.checks.campaigns import (
    CSV_PREDICTIONS,
    PACK,
    Campaign,
    _predictions,
    _run_csv_predictions,
    add_corpus,
    deliver,
    deliver_a_copy,
    findings,
    jsonl,
    parquet,
    record,
    rendered,
    repack,
    stop,
    two_corpora,
    zstd,
)
from tests.checks.judging import expect_finding, expect_no_finding, judge
from tests.factory import (
    CORPUS_IDS,
    CampaignBuilder,
    expect,
    sha256,
)
from tests.runner import Itera

JSONL = "runs/variant-a/predictions.jsonl"


@pytest.mark.parametrize("name", sorted(PACK))
def test_packed_predictions_cover_the_corpus(campaign: CampaignBuilder, name: str) -> None:
    repack(campaign, name)
    assert findings(campaign.write(), "predictions-cover-corpus", "variant-a") == ()


@pytest.mark.parametrize("name", sorted(PACK))
def test_packed_predictions_missing_and_repeating_ids(campaign: CampaignBuilder,
                                                       name: str) -> None:
    ids = ["ex-1", "ex-2", "ex-2", "ex-4"]
    rows = "".join(json.dumps({"id": i, "prediction": "pos"}) + "\n" for i in ids).encode()
    path = repack(campaign, name, data=PACK[name](rows))
    text = rendered(findings(campaign.write(), "predictions-cover-corpus", "variant-a"))
    assert f"{path}: predictions miss 1 ID of the 4 corpus IDs" in text, text
    assert "    found:    ex-3" in text, text
    assert "predictions repeat corpus IDs (1 extra line)" in text, text
    assert "    found:    ex-2 (line 3)" in text, text


def test_a_truncated_gzip_predictions_file_names_file_and_offset(
        campaign: CampaignBuilder) -> None:
    data = gzip.compress(campaign.files[JSONL])
    path = repack(campaign, "p.jsonl.gz", data=data[:-4])
    found = findings(campaign.write(), "predictions-cover-corpus", "variant-a")
    assert [f.code for f in found] == ["predictions-cover-corpus.predictions-unreadable"]
    assert found[0].render().startswith(
        f"{path}: predictions {path} is a truncated gzip stream: it ends at byte "
        f"{len(data) - 4} inside the member that begins at offset 0 (an interrupted copy?)")


def test_a_parquet_file_cut_before_its_footer(campaign: CampaignBuilder) -> None:
    data = parquet(campaign.files[JSONL])
    path = repack(campaign, "p.parquet", data=data[:-100])
    found = findings(campaign.write(), "predictions-cover-corpus", "variant-a")
    assert found[0].render().startswith(
        f"{path}: predictions {path} has no Parquet footer: the bytes at offset "
        f"{len(data) - 104} are not 'PAR1' (a truncated file?)")


def test_parquet_without_pyarrow_says_what_to_install(
        campaign: CampaignBuilder, monkeypatch: pytest.MonkeyPatch) -> None:
    path = repack(campaign, "p.parquet")
    root = campaign.write()
    for loaded in [m for m in sys.modules if m == "pyarrow" or m.startswith("pyarrow.")]:
        monkeypatch.setitem(sys.modules, loaded, None)
    found = findings(root, "predictions-cover-corpus", "variant-a")
    assert found[0].render().startswith(
        f"{path}: predictions {path} is Parquet; reading it needs pyarrow: "
        "pip install 'pytest-itera[formats]'")


def test_a_compressed_frozen_corpus_with_parquet_predictions(campaign: CampaignBuilder) -> None:
    corpus = zstd(campaign.files.pop("corpus/corpus.jsonl"))
    campaign.files["corpus/corpus.jsonl.zst"] = corpus
    campaign.plan["corpora"][0].update(path="corpus/corpus.jsonl.zst", sha256=sha256(corpus))
    repack(campaign, "p.parquet")
    root = campaign.write()
    assert findings(root, "predictions-cover-corpus", "variant-a") == ()
    assert findings(root, "predictions-cover-corpus", "control") == ()


def test_a_parquet_copy_of_the_corpus_is_the_same_deliverable(campaign: CampaignBuilder) -> None:
    data = parquet(campaign.files["corpus/corpus.jsonl"])
    expect_finding(deliver_a_copy(campaign, "corpus/corpus-b.parquet", data),
                   "budget-consistent.accepted-deliverables",
                   says="'corpus-b' is 'tiny-corpus' (other bytes, the same 4 example IDs")


# ---------------------------------------- first written in test_budget_checks.py


def test_predictions_of_another_corpus_than_planned(campaign: CampaignBuilder) -> None:
    """R1: variant-a was planned on tiny-corpus; the manifest says its predictions cover
    corpus-b (another content). predictions-cover-corpus says so, whatever the budget."""
    two_corpora(campaign)
    next(r for r in campaign.plan["runs"] if r["id"] == "variant-a")["corpus"] = "tiny-corpus"
    finding = expect_finding(
        judge(campaign, "predictions-cover-corpus", target="variant-a"),
        "predictions-cover-corpus.corpus-moved", where="manifest.json $.runs[3].corpus",
        says="run variant-a was planned on corpus 'tiny-corpus', but the manifest says its "
        "predictions cover 'corpus-b'")
    assert (finding.expected, finding.found) == ("'tiny-corpus'", "'corpus-b'")
    expect_no_finding(judge(campaign, "predictions-cover-corpus", target="control", write=False))


def test_predictions_of_the_same_bytes_under_another_corpus_id_are_the_planned_corpus(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    add_corpus(campaign, "corpus-b", data=campaign.files["corpus/corpus.jsonl"])
    deliver(campaign, "variant-a", "tiny-corpus")
    campaign.run_record("variant-a")["corpus"] = "corpus-b"
    campaign.write()
    itera(check="predictions-cover-corpus").assert_outcomes(passed=2)


# ---------------------------------------- first written in test_one_rule_breaks.py

# ================================================================ R1: own predictions


def test_a_variant_naming_the_controls_predictions_file_is_refused(
    campaign: CampaignBuilder
) -> None:
    campaign.run_record("variant-a")["predictions"] = "runs/control/predictions.jsonl"
    del campaign.files["runs/variant-a/predictions.jsonl"]
    control = judge(campaign, "predictions-cover-corpus", target="control")
    expect_finding(control, "predictions-cover-corpus.shared-file")
    variant = expect_finding(
        judge(campaign, "predictions-cover-corpus", target="variant-a", write=False),
        "predictions-cover-corpus.shared-file", where="manifest.json $.runs[3].predictions",
        says=("shares its predictions file runs/control/predictions.jsonl with control",
              "not its own predictions"))
    assert variant.hint is not None
    assert "in its own file" in variant.hint


def test_each_run_with_its_own_predictions_file_passes(campaign: CampaignBuilder) -> None:
    # Two files with the same bytes are not refused: two models may predict alike.
    campaign.files["runs/variant-a/predictions.jsonl"] = \
        campaign.files["runs/control/predictions.jsonl"]
    expect_no_finding(judge(campaign, "predictions-cover-corpus"))


# ---------------------------------------- first written in test_run_checks.py


# ------------------------------------------------- predictions-cover-corpus


CHECK = "predictions-cover-corpus"

def test_predictions_cover_the_corpus(plan2_campaign: Campaign) -> None:
    expect_no_finding(judge(plan2_campaign, CHECK))


# A run's predictions broken: (its file, the code, where, a few words, what is found).
@pytest.mark.parametrize(("data", "code", "where", "says", "shown"), [
    pytest.param(jsonl(["ex-1", "ex-2", "ex-4"]), "predictions-cover-corpus.missing-ids", JSONL,
                 "predictions miss 1 ID of the 4 corpus IDs", "ex-3", id="line-deleted"),
    pytest.param(jsonl([*CORPUS_IDS, "ex-2"]), "predictions-cover-corpus.repeated-ids",
                 f"{JSONL}:5", "predictions repeat corpus IDs (1 extra line)", "ex-2 (line 5)",
                 id="line-duplicated"),
    pytest.param(jsonl([*CORPUS_IDS[:3], "ex-99"]), "predictions-cover-corpus.unknown-ids",
                 f"{JSONL}:4", "predictions hold 1 ID not in the frozen corpus",
                 "ex-99 (line 4)", id="unknown-id"),
    pytest.param(jsonl([*CORPUS_IDS, *(f"zz-{i}" for i in range(8))]),
                 "predictions-cover-corpus.unknown-ids", f"{JSONL}:5",
                 "predictions hold 8 IDs not in the frozen corpus",
                 "zz-0 (line 5), zz-1 (line 6), zz-2 (line 7), zz-3 (line 8), zz-4 (line 9), "
                 "... (3 more)", id="many-unknown-the-first-few"),
    pytest.param(jsonl(["ex-1", "ex-2"]) + b'{"id": "ex-3", "prediction": \n' +
                 b'{"label": "pos"}\n' + b'["ex-4"]\n' + jsonl(["ex-4"]) + b'{"id": 4.5}\n',
                 "predictions-cover-corpus.malformed-lines", f"{JSONL}:3",
                 "predictions have 4 malformed lines",
                 "line 3: not JSON (Expecting value); line 4: no 'id' field; line 5: a JSON "
                 "list, not an object; line 7: 'id' is 4.5, not an ID", id="malformed-lines"),
])
def test_predictions_that_do_not_cover_the_corpus(plan2_campaign: Campaign, data: bytes,
                                                  code: str, where: str, says: str,
                                                  shown: str) -> None:
    _predictions(plan2_campaign, data)
    found = judge(plan2_campaign, CHECK, target="variant-a")
    assert expect_finding(found, code, where=where, says=says).found == shown
    expect_no_finding(judge(plan2_campaign, CHECK, target="control", write=False))


def test_an_unknown_id_in_place_of_a_corpus_id_misses_that_id(
        plan2_campaign: Campaign) -> None:
    _predictions(plan2_campaign, jsonl([*CORPUS_IDS[:3], "ex-99"]))
    finding = expect_finding(judge(plan2_campaign, CHECK, target="variant-a"),
                             "predictions-cover-corpus.missing-ids", where=JSONL,
                             says="predictions miss 1 ID of the 4 corpus IDs")
    assert finding.found == "ex-4"
    assert finding.hint == ("predict every example of the frozen corpus corpus/corpus.jsonl "
                            "exactly once")


def _edited(root: Path) -> None:
    corpus = root / "corpus/corpus.jsonl"
    corpus.write_bytes(corpus.read_bytes().replace(b"example ex-2", b"example ex-2 (fixed)"))


def test_corpus_edited(plan2_campaign: Campaign) -> None:
    plan2_campaign.write()
    _edited(plan2_campaign.root)
    plan2_campaign.seal()
    found = judge(plan2_campaign, CHECK, write=False)
    assert [f.code for f in found] == ["predictions-cover-corpus.corpus-sha256"] * 2
    corpus = plan2_campaign.root / "corpus/corpus.jsonl"
    finding = expect_finding(found[:1], "predictions-cover-corpus.corpus-sha256",
                             where="plan.json $.corpora[0].sha256",
                             says=("the corpus is frozen: corpus/corpus.jsonl is not the corpus "
                                   "the plan froze", "predictions were not compared"))
    assert (finding.expected, finding.found) == (plan2_campaign.plan["corpora"][0]["sha256"],
                                                 sha256(corpus.read_bytes()))
    assert (finding.hint or "").startswith("restore the frozen corpus")


def _corpus(campaign: Campaign, data: bytes) -> None:
    campaign.files["corpus/corpus.jsonl"] = data
    campaign.plan["corpora"][0]["sha256"] = sha256(data)


# The frozen corpus broken (every hash kept): (the break, the code, where, a few words).
@pytest.mark.parametrize(("break_", "code", "where", "says"), [
    pytest.param(lambda c: c.plan["corpora"][0].update(path="corpus/elsewhere.jsonl"),
                 "predictions-cover-corpus.corpus-unreadable", "plan.json $.corpora[0].path",
                 "the frozen corpus corpus/elsewhere.jsonl is missing", id="corpus-missing"),
    pytest.param(lambda c: c.plan["corpora"][0].update(examples=5),
                 "predictions-cover-corpus.corpus-size", "plan.json $.corpora[0].examples",
                 "the frozen corpus holds 4 distinct IDs, the plan says 5 examples",
                 id="count-differs-from-the-plan"),
    pytest.param(lambda c: _corpus(c, c.files["corpus/corpus.jsonl"] + jsonl(["ex-2"])),
                 "predictions-cover-corpus.corpus-ids-repeated", "corpus/corpus.jsonl:5",
                 "the frozen corpus repeats IDs (1 extra record)", id="corpus-repeats-an-id"),
    pytest.param(lambda c: _corpus(c, c.files["corpus/corpus.jsonl"] + b'{"text": "x"}\n'),
                 "predictions-cover-corpus.corpus-ids-unusable", "corpus/corpus.jsonl:5",
                 "the frozen corpus has 1 record without a usable ID", id="a-row-without-id"),
])
def test_a_frozen_corpus_the_predictions_cannot_be_compared_to(
        plan2_campaign: Campaign, break_: Callable[[Campaign], None], code: str, where: str,
        says: str) -> None:
    break_(plan2_campaign)
    expect_finding(judge(plan2_campaign, CHECK, target="variant-a"), code, where=where,
                   says=says)


def test_accepted_variant_without_predictions_is_refused(plan2_campaign: Campaign) -> None:
    del record(plan2_campaign, "variant-a")["predictions"]
    expect_finding(judge(plan2_campaign, CHECK, target="variant-a"),
                   "predictions-cover-corpus.no-predictions",
                   where="manifest.json $.runs[3].predictions",
                   says="accepted run variant-a has no predictions")


def test_no_item_for_a_run_that_delivers_nothing(itera: Itera, plan2_campaign: Campaign) -> None:
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


def test_a_hundred_thousand_prediction_lines(tmp_path: Path) -> None:
    """100,000 lines against a 100,000-ID corpus: exact counts, first few of each problem, at
    a size no table of the test's own would reach. The million lines, their time and their
    peak memory are benchmarks/bench_predictions.py's, not a test's."""
    n = 100_000
    corpus = tmp_path / "corpus.csv"
    with corpus.open("w") as out:
        out.write("id,text\n")
        out.writelines(f"doc-{i},text {i}\n" for i in range(n))
    predictions = tmp_path / "predictions.jsonl"
    with predictions.open("w") as out:
        for i in range(n):
            if i == 10:
                out.write('{"id": "doc-9", "p": 0.5}\n')  # doc-10 missing, doc-9 repeated
            elif i == 50_000:
                out.write('{"id": "nowhere", "p": 0.5}\n')  # doc-50000 missing, one unknown
            else:
                out.write(f'{{"id": "doc-{i}", "p": 0.5}}\n')
    ids = {rec.id: pos for pos, rec in enumerate(read_ids(corpus, "id")) if rec.id is not None}
    assert len(ids) == n
    coverage = cover(ids, read_ids(predictions, "id"))
    assert coverage.records == n
    assert (coverage.missing, coverage.missing_first) == (2, ["doc-10", "doc-50000"])
    assert (coverage.duplicated, coverage.duplicated_first) == (1, [("doc-9", 11)])
    assert (coverage.unknown, coverage.unknown_first) == (1, [("nowhere", 50_001)])
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
