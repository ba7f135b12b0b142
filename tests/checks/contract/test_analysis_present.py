"""The rules of ``analysis-present`` (pytest_itera/checks/contract/analysis_present.py): each break
refused, with its honest twin.

Where the cases come from (the files they were first written in):

Honest campaigns the checks refused (goodcamp's audit): each case as a user writes it,
accepted, beside the forgery the rule still refuses.
"""
from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.checks.campaigns import (
    METRICS_TABLE,
    TABLE,
    Campaign,
    selecting,
    stop_by_nan,
)
from tests.checks.judging import advises_then_fails, expect_finding, expect_no_finding, judge
from tests.factory import (
    CONTROL_CKPT,
    VARIANT_WEIGHTS,
    CampaignBuilder,
)
from tests.runner import Itera

# ------------------------------------------------------ reload instructions' outputs


def test_reload_instructions_copying_saving_and_teeing_their_outputs_pass(
    campaign: CampaignBuilder
) -> None:
    """A newcomer's RELOAD.md: a console session whose commands write new files beside the
    shipped ones (a copy's destination, torch.save, tee): outputs of the reload, not files
    the campaign claims to hold."""
    campaign.files["RELOAD.md"] += (
        b"\n```console\n$ mkdir -p runs/variant-a/export\n"
        b"$ cp runs/variant-a/weights.pt runs/variant-a/export/copy.pt\n"
        b"$ cp -v ./runs/control/step-2.pt \"runs/control/backup.pt\" && ls runs/control\n"
        b"$ python -c \"import torch; torch.save(torch.load('runs/variant-a/weights.pt', "
        b"weights_only=True), 'runs/variant-a/export/fp32.pt')\"\n"
        b"$ python score.py runs/variant-a/weights.pt | tee runs/variant-a/export/eval.txt\n"
        b"accuracy 1.0\n```\n")
    expect_no_finding(judge(campaign, "analysis-present"))


def test_copying_a_file_not_shipped_is_still_refused(campaign: CampaignBuilder) -> None:
    """The source of a copy is read, not written: it must be shipped."""
    campaign.files["RELOAD.md"] += (b"\n$ cp runs/variant-a/final.pt runs/variant-a/copy.pt\n"
                                    b"$ cp ./runs/control/final.pt .\n")
    expect_finding(
        judge(campaign, "analysis-present"), "analysis-present.reload-path-missing",
        says=("runs/variant-a/final.pt", "runs/control/final.pt"))


# ---------------------------------------- first written in test_contract_checks.py


# --------------------------------------------------------- analysis-present


def test_analysis_present_passes(itera: Itera, campaign: CampaignBuilder) -> None:
    campaign.write()
    itera(*selecting("analysis-present")).assert_outcomes(passed=1)


def _no_analysis(campaign: CampaignBuilder) -> None:
    del campaign.files["analysis.md"]


def _blank_analysis(campaign: CampaignBuilder) -> None:
    campaign.files["analysis.md"] = b"  \n\n\t\n"


def _empty_reload(campaign: CampaignBuilder) -> None:
    campaign.files["RELOAD.md"] = b""


def _reload_outside(campaign: CampaignBuilder) -> None:
    campaign.manifest["reload_instructions"] = "../RELOAD.md"


@pytest.mark.parametrize(("change", "where", "says"), [
    pytest.param(_no_analysis, "manifest.json $.analysis",
                 "the error analysis analysis.md is missing", id="missing-analysis"),
    pytest.param(_blank_analysis, "manifest.json $.analysis",
                 "the error analysis analysis.md holds only whitespace", id="blank-analysis"),
    pytest.param(_empty_reload, "manifest.json $.reload_instructions",
                 "the reload instructions RELOAD.md is empty", id="empty-reload"),
    pytest.param(_reload_outside, "manifest.json $.reload_instructions",
                 "the reload instructions ../RELOAD.md '..' leaves the campaign folder",
                 id="outside-reload"),
])
def test_analysis_or_reload_instructions_missing_or_empty(
    campaign: CampaignBuilder, change: Callable[[CampaignBuilder], None], where: str, says: str
) -> None:
    change(campaign)
    found = judge(campaign, "analysis-present")
    assert len(found) == 1, [f.render() for f in found]
    expect_finding(found, "analysis-present.unusable", where=where, says=says)


# ---------------------------------------- first written in test_evidence_runs.py


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
    campaign: Campaign, text: str, marker: str, line: int
) -> None:
    """A text that says nothing but a placeholder is no analysis: that decides."""
    campaign.files["analysis.md"] = text.encode()
    expect_finding(judge(campaign, "analysis-present"), "analysis-present.placeholder",
                   where=f"analysis.md:{line}", says=f"the error analysis analysis.md is a "
                   f"placeholder ({marker!r} on line {line})")


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


def test_analysis_does_not_name_a_compared_run(campaign: Campaign) -> None:
    campaign.files["analysis.md"] = b"# Error analysis\n\nThe control confuses ex-3 with neg.\n"
    finding = expect_finding(judge(campaign, "analysis-present"), "analysis-present.runs-unnamed",
                             where="analysis.md",
                             says="the error analysis analysis.md does not name variant-a")
    assert finding.expected == "every compared run named: control, variant-a"


def test_analysis_of_a_negative_result_names_the_runs_compared(
    itera: Itera, campaign: Campaign
) -> None:
    stop_by_nan(campaign)  # variant-a was stopped: only the control is compared
    campaign.files["analysis.md"] = b"# Error analysis\n\nThe control confuses ex-3 with neg.\n"
    campaign.write()
    itera(check="analysis-present").assert_outcomes(passed=1)


def test_reload_instructions_miss_a_deliverable(campaign: Campaign) -> None:
    campaign.files["RELOAD.md"] = (
        f"# Reload\n\ntorch.load('{CONTROL_CKPT}', weights_only=True)\n".encode())
    finding = expect_finding(judge(campaign, "analysis-present"),
                             "analysis-present.artifacts-unnamed", where="RELOAD.md",
                             says=f"the reload instructions RELOAD.md do not name "
                             f"{VARIANT_WEIGHTS}")
    assert finding.expected == ("each deliverable artifact (checkpoint or adapter of an "
                                "accepted control or variant) named by its path in the campaign")


# ---------------------------------------- first written in test_one_rule_breaks.py


# ============================================== R8: instructions name shipped files


def test_reload_instructions_naming_a_file_not_shipped_are_refused(
    campaign: CampaignBuilder
) -> None:
    campaign.files["RELOAD.md"] += (b"\nThe variant's final model: "
                                    b"`torch.load('./runs/variant-a/final.pt')`.\n")
    found = expect_finding(
        judge(campaign, "analysis-present"), "analysis-present.reload-path-missing",
        says="runs/variant-a/final.pt")
    assert found.where == "RELOAD.md:6"


def test_reload_instructions_naming_templates_urls_and_other_folders_pass(
    campaign: CampaignBuilder
) -> None:
    campaign.files["RELOAD.md"] += (
        b"\nAny run: `runs/<run>/step-<N>.pt`; the base: https://hub.example/runs/x/model.pt;"
        b" the model class: example_campaign/model.py; the copy: $OUT/runs/control/x.pt.\n"
        b"Export: `python export.py --output runs/control/model.onnx -o runs/x.pt`;"
        b" `python score.py > runs/control/scores.jsonl`.\n")
    expect_no_finding(judge(campaign, "analysis-present"))


def test_an_analysis_table_quoting_a_value_no_metric_holds_advises(
    campaign: CampaignBuilder
) -> None:
    """A free table's column is a reading of words (its header may be a split, a step): it
    advises, and refuses under strict text."""
    from tests.checks.judging import advises_then_fails

    campaign.files["analysis.md"] += (TABLE + "| variant-a | 0.97 | 0.1 |\n").encode()
    found = advises_then_fails(campaign, "analysis-present", "analysis-present.quoted-value")
    expect_finding([found], "analysis-present.quoted-value", where="analysis.md:7",
                   says=("quotes 0.97 for variant-a under 'accuracy' (line 7)",
                         "none of its measured metrics"))
    assert found.hint is not None
    assert found.hint.startswith("write the analysis from the measurements")


def test_an_itera_metrics_table_quoting_another_value_is_refused(
    campaign: CampaignBuilder
) -> None:
    """The itera-metrics table is structured: each row is judged exactly, by default."""
    campaign.files["analysis.md"] += METRICS_TABLE.format(value="0.97").encode()
    found = expect_finding(judge(campaign, "analysis-present"), "analysis-present.metrics-table",
        says="'s itera-metrics table gives variant-a'")
    assert found.where == "analysis.md:8"
    assert (found.expected, found.found) == ("1", "0.97")


@pytest.mark.parametrize(("row", "message"), [
    ("| variant-z | accuracy | 1 |", " names run 'variant-z' (line 8), which the manifest does "
     "not record"),
    ("| variant-a | f1 | 1 |", " gives variant-a's 'f1' (line 8), a metric its measurements do "
     "not hold"),
    ("| variant-a | accuracy |", ": a row of 2 cells, not run | metric | value (line 8)"),
    ("| variant-a | accuracy | high |", " gives variant-a's accuracy as high (line 8), which "
     "is 1"),
])
def test_an_itera_metrics_table_row_that_is_no_measurement_is_refused(
    campaign: CampaignBuilder, row: str, message: str
) -> None:
    table = METRICS_TABLE.replace("| variant-a | accuracy | {value} |", row)
    campaign.files["analysis.md"] += table.encode()
    expect_finding(judge(campaign, "analysis-present"), "analysis-present.metrics-table",
                   says=f"the error analysis analysis.md's itera-metrics table{message}")


@pytest.mark.parametrize("value", ["1", "1.0", "1.000", "100 %", "1e0"])
def test_an_itera_metrics_table_with_the_measured_values_passes(
    campaign: CampaignBuilder, value: str
) -> None:
    campaign.files["analysis.md"] += METRICS_TABLE.format(value=value).encode()
    expect_no_finding(judge(campaign, "analysis-present"))


def test_an_analysis_quoting_the_measured_values_passes(campaign: CampaignBuilder) -> None:
    # A column that names no metric (loss) is not judged; nor is a number with a unit.
    campaign.files["analysis.md"] += (TABLE + "| variant-a | 1.0 | 0.1 |\n\nvariant-a 1.000 "
                                      "on the corpus, control 0.7500; variant-a 2.5 h.\n"
                                      ).encode()
    expect_no_finding(judge(campaign, "analysis-present"))
