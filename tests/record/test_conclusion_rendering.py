"""close() writes the conclusion and the analysis's itera-metrics table from the record, so
that no reading of words judges a recorder campaign: the list from the recorded metrics, the
sentence from the list (English, French on request), the table row by row."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_itera.checks.prose import conclusion as prose
from pytest_itera.checks.prose.quotes import exact_misquotes, loose_misquotes
from pytest_itera.core import metrics_table
from pytest_itera.record import CampaignRecorder, RecordError
from pytest_itera.report.verify import check_campaign
from tests.record.test_record import CONFIG, CORPUS, close_kwargs, make_plan

VARIANTS = ("variant", "variant-b")


def recorded(tmp_path: Path, **accuracy: float) -> CampaignRecorder:
    """Control and variants run and accepted, with these accuracies (threshold 0.5)."""
    plan = make_plan()
    plan["runs"].append({**plan["runs"][1], "id": "variant-b"})
    rec = CampaignRecorder(tmp_path / "camp")
    rec.write_bytes("corpus.jsonl", CORPUS)
    rec.write_bytes("configs/control.json", CONFIG)
    rec.freeze_plan(plan)
    for run_id, value in accuracy.items():
        run = rec.run(run_id)
        run.start()
        run.set_config("configs/control.json")
        run.set_metrics(accuracy=value, loss=0.25)
        run.accept()
    dropped = [r for r in VARIANTS if r not in accuracy]
    if dropped:
        rec.decide("after-pilot", "not needed", drops=dropped)
    rec.write_text("analysis.md", "# Errors\n\nThe control misreads ex-3.\n")
    rec.write_text("RELOAD.md", "torch.load(..., weights_only=True)\n")
    return rec


def closed(rec: CampaignRecorder, **kwargs: Any) -> dict[str, Any]:
    options = {k: v for k, v in close_kwargs().items() if k != "conclusion"} | kwargs
    rec.close(**options)
    manifest: dict[str, Any] = json.loads((rec.root / "manifest.json").read_text("utf-8"))
    return manifest


def _judged_text(text: str, listed: list[str], values: dict[str, dict[str, float]]) -> None:
    """Every reading of the words agrees with ``listed``: none would give a finding."""
    threshold = prose.Threshold(0.5, True)
    runs = ["control", *VARIANTS]
    assert exact_misquotes(text, values, ignore=(0.5,)) == []
    assert loose_misquotes(text, values) == []
    for run_id in VARIANTS:
        if run_id in listed:
            assert prose.claims_failing(text, run_id, threshold) is None, text
        elif run_id in values:
            assert prose.plainly_meets(text, run_id, runs, threshold) is None, text
            assert prose.claims_meeting(text, run_id, threshold) is None, text
    if listed:
        assert not prose.says_none_meets(text), text
    else:
        assert prose.states_negative(text, threshold), text


@pytest.mark.parametrize("language", ["en", "fr"])
@pytest.mark.parametrize(("accuracy", "listed"), [
    ({"control": 0.4, "variant": 0.75, "variant-b": 0.45}, ["variant"]),
    ({"control": 0.4, "variant": 0.75, "variant-b": 0.6}, ["variant", "variant-b"]),
    ({"control": 0.4, "variant": 0.3, "variant-b": 0.45}, []),
])
def test_the_conclusion_is_computed_and_rendered_from_the_record(
    tmp_path: Path, language: str, accuracy: dict[str, float], listed: list[str]
) -> None:
    manifest = closed(recorded(tmp_path, **accuracy), language=language)
    conclusion = manifest["conclusion"]
    assert conclusion["meets_threshold"] == listed
    values = {run: {"accuracy": value, "loss": 0.25} for run, value in accuracy.items()}
    _judged_text(conclusion["text"], listed, values)


def test_the_rendered_sentences_read_as_they_are_written(tmp_path: Path) -> None:
    manifest = closed(recorded(tmp_path, control=0.4, variant=0.75, **{"variant-b": 0.45}))
    assert manifest["conclusion"]["text"] == (
        "variant meets the threshold (accuracy >= 0.5): accuracy 0.75. variant-b does not "
        "meet it (accuracy 0.45).")
    french = closed(recorded(tmp_path / "fr", control=0.4, variant=0.3), language="fr")
    assert french["conclusion"] == {
        "meets_threshold": [],
        "text": "Résultat négatif : aucune variante n'atteint le seuil (accuracy >= 0.5). "
        "variant n'atteint pas le seuil (accuracy 0.3)."}


def test_a_given_conclusion_is_kept_as_written(tmp_path: Path) -> None:
    given = {"meets_threshold": ["variant"], "text": "variant passe la barre."}
    manifest = closed(recorded(tmp_path, control=0.4, variant=0.75), conclusion=given)
    assert manifest["conclusion"] == given


def test_a_language_without_a_rendering_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RecordError, match="rendered in en or fr; give conclusion"):
        closed(recorded(tmp_path, control=0.4, variant=0.75), language="de")


def test_the_analysis_gets_its_itera_metrics_table_once(tmp_path: Path) -> None:
    rec = recorded(tmp_path, control=0.4, variant=0.75)
    closed(rec)
    text = (rec.root / "analysis.md").read_text("utf-8")
    assert text.startswith("# Errors\n\nThe control misreads ex-3.\n\n<!-- itera-metrics -->")
    [table] = metrics_table.parse(text)
    assert [(r.run, r.metric, r.value) for r in table.rows] == [
        ("control", "accuracy", "0.4"), ("control", "loss", "0.25"),
        ("variant", "accuracy", "0.75"), ("variant", "loss", "0.25")]
    assert table.problems == ()
    # A reopening closes again: the table is replaced, never repeated.
    rec.reopen(reason="the variant's loss was mistyped")
    rec.run("variant").set_metrics(loss=0.5)
    closed(rec)
    again = (rec.root / "analysis.md").read_text("utf-8")
    assert again.count("<!-- itera-metrics -->") == 1
    assert "| variant | loss | 0.5 |" in again


def test_no_table_when_asked_or_when_the_analysis_is_no_text(tmp_path: Path) -> None:
    rec = recorded(tmp_path, control=0.4, variant=0.75)
    closed(rec, metrics_table=False)
    assert "itera-metrics" not in (rec.root / "analysis.md").read_text("utf-8")
    pdf = recorded(tmp_path / "pdf", control=0.4, variant=0.75)
    pdf.write_bytes("analysis.pdf", b"%PDF-1.4 not text\n")
    closed(pdf, analysis="analysis.pdf")
    assert (pdf.root / "analysis.pdf").read_bytes() == b"%PDF-1.4 not text\n"


def test_the_checks_judge_the_rendered_conclusion_and_table_without_a_finding(
    tmp_path: Path
) -> None:
    rec = recorded(tmp_path, control=0.4, variant=0.75, **{"variant-b": 0.45})
    closed(rec)
    verdict = check_campaign(rec.root, strict_text=True)
    found = [p.render() for p in verdict.findings
             if p.check in ("conclusion-consistent", "analysis-present")]
    assert found == []
