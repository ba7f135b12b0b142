"""The honest corpus of analysis-present and budget-consistent's readings: reload instructions
and error analyses (placeholders, the paths they name) and texts that mention hours beside a
fixed price, in English, French, German and Spanish. None gives a deciding finding by
default; each gives exactly the advisories its entry names. The readings are called as the
checks call them (contract.placeholder_findings, contract.reload_path_findings,
budget.hourly_billing_in), on the facts each entry states; two campaigns run the whole checks.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from pytest_itera.checks.budget.hourly import hourly_billing_in
from pytest_itera.checks.contract.analysis_present import (
    placeholder_findings,
    reload_path_findings,
)
from pytest_itera.core.findings import Finding, split
from tests.checks.judging import judged
from tests.factory import CampaignBuilder

HONEST = Path(__file__).parent / "honest"
LABELS = {"reload_instructions": ("reload instructions", "RELOAD.md"),
          "analysis": ("error analysis", "analysis.md")}


def _entries(folder: str) -> list[dict[str, Any]]:
    found = []
    for path in sorted((HONEST / folder).glob("*.toml")):
        for entry in tomllib.loads(path.read_text("utf-8"))["entry"]:
            entry.setdefault("lang", path.stem)
            entry.setdefault("kind", "reload_instructions")
            found.append(entry)
    return found


TEXTS = _entries("reload") + _entries("placeholders")
HOURS = _entries("hourly")


def _facts(files: list[str]) -> tuple[frozenset[str], frozenset[str]]:
    """(every path of the folder, files and folders; its top-level folders)."""
    paths: set[str] = set()
    for file in files:
        parts = file.split("/")
        paths.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))
    return frozenset(paths), frozenset(file.split("/")[0] for file in files if "/" in file)


def contract_readings(entry: dict[str, Any]) -> list[Finding]:
    label, relpath = LABELS[entry["kind"]]
    found = list(placeholder_findings(label, relpath, entry["text"]))
    if entry["kind"] == "reload_instructions":
        exists, tops = _facts(entry.get("files", []))
        found += reload_path_findings(relpath, entry["text"], exists, tops)
    return found


def test_the_corpus_is_large_and_in_four_languages() -> None:
    assert len(TEXTS) >= 30
    assert {e["lang"] for e in TEXTS} >= {"en", "fr", "de", "es"}
    assert {e["lang"] for e in HOURS} >= {"en", "fr", "de", "es"}


@pytest.mark.parametrize("entry", TEXTS, ids=[f"{e['lang']}-{e['name']}" for e in TEXTS])
def test_an_honest_text_gets_no_deciding_finding(entry: dict[str, Any]) -> None:
    deciding, advisories = split(contract_readings(entry))
    assert deciding == (), "\n".join(f.render() for f in deciding)
    assert sorted(f.code or "" for f in advisories) == sorted(entry.get("advisories", [])), \
        "\n".join(f.render() for f in advisories)


def _documents(entry: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The plan and the manifest (parsed JSON) with the entry's text where it says."""
    lot = {"id": "l1", "offer": "IteraGPU RTX 4090, 3 days"}
    plan: dict[str, Any] = {"budget": {"lots": [lot]}}
    manifest: dict[str, Any] = {"budget": {}}
    place, text = entry["place"], entry["text"]
    if place == "offer":
        plan["budget"]["lots"][0]["offer"] = text
    elif place == "expense":
        manifest["budget"]["included_expenses"] = [{"label": text, "amount": "2.00"}]
    elif place == "reference":
        manifest["budget"]["included_expenses"] = [{"label": "disk", "amount": "2.00",
                                                    "source": {"reference": text}}]
    elif place == "deviation":
        manifest["schedule"] = {"deviations": [{"step": "train", "explanation": text}]}
    elif place == "decision":
        manifest["schedule"] = {"decisions": [{"id": "d1", "text": text}]}
    else:
        assert place == "conclusion", place
        manifest["conclusion"] = {"text": text}
    return plan, manifest


@pytest.mark.parametrize("entry", HOURS, ids=[f"{e['lang']}-{e['name']}" for e in HOURS])
def test_hours_mentioned_honestly_are_not_hourly_billing(entry: dict[str, Any]) -> None:
    found = list(hourly_billing_in(*_documents(entry)))
    assert all(f.advisory for f in found)
    assert [f.code for f in found] == entry.get("advisories", []), \
        "\n".join(f.render() for f in found)


# ------------------------------------------------------------ whole checks, two campaigns


@pytest.fixture
def campaign(tmp_path: Path) -> CampaignBuilder:
    return CampaignBuilder(tmp_path / "out")


HONEST_RELOAD = """# Reload

```bash
# TODO pin torch (2.4.1 on the cluster)
python -c "import torch; torch.load('runs/control/step-2.pt', weights_only=True)"
python -c "import torch; torch.load('runs/variant-a/weights.pt', weights_only=True)"
python scripts/merge.py runs/variant-a/weights.pt runs/merged/model.safetensors
python -c "from safetensors.torch import load_file; load_file('runs/merged/model.safetensors')"
cd runs/variant-a && sha256sum weights.pt
```
Für die Auswertung: `python auswerten.py --gewichte runs/variant-a/weights.pt \\
  --ausgabe runs/auswertung/variant-a.json`.
"""


def test_an_honest_campaign_with_a_todo_comment_and_a_positional_output_passes(
    campaign: CampaignBuilder
) -> None:
    campaign.files["RELOAD.md"] = HONEST_RELOAD.encode()
    campaign.files["scripts/merge.py"] = b"# merges a state dict into safetensors\n"
    result = judged(campaign, "analysis-present")
    assert result.deciding == (), [f.render() for f in result.deciding]
    assert result.codes()[1] == ["analysis-present.placeholder-line"]
    assert result.advisories[0].where == "RELOAD.md:4"


LOT_NOTES = {
    "en": "3 days = 72 h of GPU, fixed price (no hourly rate)",
    "fr": "72 h à prix fixe : 47,14 USD pour le lot entier",
    "de": "Festpreis für 72 Stunden: 47,14 USD",
    "es": "precio fijo por 3 días (72 h): 47,14 USD",
}


def test_an_honest_budget_mentioning_hours_in_four_languages_passes(
    campaign: CampaignBuilder
) -> None:
    campaign.manifest["schedule"]["deviations"] = [
        {"step": "train-control", "explanation": text} for text in LOT_NOTES.values()]
    result = judged(campaign, "budget-consistent")
    assert result.deciding == (), [f.render() for f in result.deciding]
    assert result.advisories == ()
