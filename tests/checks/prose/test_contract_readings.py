"""analysis-present's readings of text: what decides (a text that is only a placeholder, a file
the reload instructions read that is missing), what advises (a placeholder among words, a path
only mentioned), and what is not judged (the outputs the instructions' commands write). Each
rule: a failing fixture and its passing twin, by default and under --itera-strict-text."""

from __future__ import annotations

import pytest

from pytest_itera.checks.prose.placeholders import placeholder_lines, placeholder_only
from pytest_itera.checks.prose.reload_paths import MissingPath, missing_paths
from tests.checks.judging import advises_then_fails, expect_finding, judged
from tests.factory import CampaignBuilder
from tests.runner import Itera

CHECK = "analysis-present"
RELOAD = "# Reload\n\ntorch.load('runs/control/step-2.pt', weights_only=True)\n" \
    "torch.load('runs/variant-a/weights.pt', weights_only=True)\n"


def reload_text(campaign: CampaignBuilder, extra: str) -> None:
    campaign.files["RELOAD.md"] = (RELOAD + extra).encode()


# ------------------------------------------------------------------- placeholders


def test_instructions_that_are_only_a_placeholder_fail(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    campaign.files["RELOAD.md"] = b"# Reload\n\n- control: TODO\n- variant-a: TBD\n"
    itera.fails(campaign, CHECK, "RELOAD.md:3: the reload instructions RELOAD.md is a "
                "placeholder ('TODO' on line 3)")


def test_a_todo_comment_in_real_instructions_advises(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    reload_text(campaign, "```bash\n# TODO pin torch\npip install torch\n```\n")
    found = advises_then_fails(campaign, CHECK, "analysis-present.placeholder-line")
    expect_finding([found], "analysis-present.placeholder-line",
                   says=("1 placeholder line(s)", "'TODO' (line 6)"))
    itera.passes(campaign, CHECK)


def test_the_twin_without_the_todo_passes_even_strict(campaign: CampaignBuilder) -> None:
    reload_text(campaign, "```bash\n# pinned: torch==2.4.1\npip install torch==2.4.1\n```\n")
    assert judged(campaign, CHECK, strict=True).deciding == ()


@pytest.mark.parametrize("text", [
    "TODO", "# Analysis\n\nTBD\n", "à compléter", "## Análisis\n\n*por completar*\n",
    "Noch zu schreiben.", "lorem ipsum dolor sit amet", "# Reload\n\n```\n# TODO\n```\n",
    "- control: pending\n- variant-a: en cours\n",
])
def test_a_text_of_placeholders_only(text: str) -> None:
    assert placeholder_only(text) is not None


@pytest.mark.parametrize("text", [
    "# TODO pin torch\ntorch.load('runs/x.pt')", "control: 0.75; variant-a: pending review",
    "Pendant l'entraînement en cours, ex-3 est confondu avec neg.", "# Error analysis\n",
    "| control | TBD |\n| variant-a | 0.87 |",
])
def test_a_text_that_says_something(text: str) -> None:
    assert placeholder_only(text) is None


def test_each_placeholder_line_is_named() -> None:
    lines = placeholder_lines("a\n# TODO pin torch\nb\n| x | TBD |\nstatus: pendiente\n")
    assert [(p.marker, p.line) for p in lines] == [("TODO", 2), ("TBD", 4), ("pendiente", 5)]


# ------------------------------------------------------------------ reload paths


@pytest.mark.parametrize("extra", [
    "torch.load('runs/variant-a/final.pt', weights_only=True)\n",
    "python eval.py --checkpoint runs/variant-a/final.pt\n",
    "python eval.py --ckpt_path=runs/variant-a/final.pt\n",
    "$ cp runs/variant-a/final.pt ~/models/\n",
    "safetensors.torch.load_file('runs/variant-a/final.safetensors')\n",
    "python evaluar.py --modelo runs/variant-a/final.pt\n",
], ids=["torch-load", "flag", "flag-glued", "copy-source", "load-file", "flag-es"])
def test_a_file_the_instructions_read_that_is_missing_fails(
    campaign: CampaignBuilder, extra: str
) -> None:
    reload_text(campaign, extra)
    found = judged(campaign, CHECK)
    assert [f.code for f in found.deciding] == ["analysis-present.reload-path-missing"]
    assert found.deciding[0].where == "RELOAD.md:5"


def test_its_twin_with_the_file_shipped_passes(campaign: CampaignBuilder) -> None:
    reload_text(campaign, "python eval.py --checkpoint runs/variant-a/weights.pt\n")
    assert judged(campaign, CHECK, strict=True).deciding == ()


def test_a_path_only_mentioned_advises(itera: Itera, campaign: CampaignBuilder) -> None:
    reload_text(campaign, "The best weights are in runs/variant-a/best.pt (step 400).\n")
    found = advises_then_fails(campaign, CHECK, "analysis-present.reload-path")
    expect_finding([found], "analysis-present.reload-path",
                   says=("does not hold: runs/variant-a/best.pt (line 5)",))
    itera.passes(campaign, CHECK)


@pytest.mark.parametrize("extra", [
    "python merge.py runs/variant-a/weights.pt runs/merged/model.safetensors\n",
    "python export.py --output runs/control/model.onnx\n",
    "python score.py runs/variant-a/weights.pt > runs/eval/score.txt\n",
    "model.save_pretrained('runs/merged')\nload_file('runs/merged/model.safetensors')\n",
    "mkdir -p runs/export && cp runs/control/step-2.pt runs/export/ && ls runs/export/step-2.pt\n",
], ids=["positional", "output-flag", "redirect", "saved-folder", "created-folder"])
def test_the_outputs_of_the_instructions_are_not_judged(
    campaign: CampaignBuilder, extra: str
) -> None:
    reload_text(campaign, extra)
    assert judged(campaign, CHECK, strict=True).deciding == ()


EXISTS = frozenset({"runs", "runs/control", "runs/control/last.pt"})


@pytest.mark.parametrize(("text", "decides"), [
    ("torch.load('runs/control/gone.pt')", True),
    ("cd /elsewhere && python -c \"torch.load('runs/control/gone.pt')\"", False),
    ("```\ncd /elsewhere\ntorch.load('runs/control/gone.pt')\n```", False),
    ("```\ntar xf a.tar\ntorch.load('runs/control/gone.pt')\n```", False),
    ("See runs/control/gone.pt.", False),
    ("python eval.py --fp16 runs/control/gone.pt", False),
])
def test_a_read_decides_only_from_the_campaign_folder(text: str, decides: bool) -> None:
    assert missing_paths(text, EXISTS, {"runs"}) == [
        MissingPath("runs/control/gone.pt", text.count("\n", 0, text.index("runs/control/gone"))
                    + 1, decides)]


@pytest.mark.parametrize("text", [
    "torch.load('$OUT/runs/control/gone.pt')", "ls runs/*/gone.pt", "runs/<run>/gone.pt",
    "https://hub.example/runs/control/gone.pt", "~/runs/control/gone.pt",
    "torch.load('other/gone.pt')", "python merge.py runs/control/last.pt runs/control/gone.pt",
])
def test_paths_that_are_not_the_campaigns_are_not_judged(text: str) -> None:
    assert missing_paths(text, EXISTS, {"runs"}) == []
