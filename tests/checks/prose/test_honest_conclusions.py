"""The honest corpus of conclusion-consistent's and analysis-present's readings of numbers and
of the threshold: conclusions in English, French, German, Spanish and Chinese, and error
analyses with numbers (tables, steps, splits, percentages, decimal commas). Each entry is
judged as a whole campaign: no deciding finding by default, exactly the advisories its entry
names. Dishonest twins still fail: exact readings by default, loose ones under strict text.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.checks.judging import advises_then_fails, judged
from tests.factory import CampaignBuilder

HONEST = Path(__file__).parent / "honest"
LANGUAGES = {"en", "fr", "de", "es", "zh"}


def _entries(folder: str) -> list[dict[str, Any]]:
    found = []
    for path in sorted((HONEST / folder).glob("*.toml")):
        for entry in tomllib.loads(path.read_text("utf-8"))["entry"]:
            entry.setdefault("lang", path.stem)
            found.append(entry)
    return found


CONCLUSIONS = _entries("conclusions")
ANALYSES = _entries("analyses")


def _params(entries: list[dict[str, Any]]) -> list[Any]:
    """One parameter per entry, named by its language and name."""
    return [pytest.param(e, id=f"{e['lang']}-{e['name']}") for e in entries]


def campaign_for(root: Path, meets: list[str], text: str,
                 analysis: str | None = None) -> CampaignBuilder:
    """The factory's campaign (control 0.75, variant-a 1.0, accuracy >= 0.8, recomputed from
    the predictions) with the conclusion ``meets`` / ``text``; with ``meets`` empty,
    variant-a predicts what the control does (0.75, below the threshold)."""
    campaign = CampaignBuilder(root)
    if not meets:
        campaign.files["runs/variant-a/predictions.jsonl"] = \
            campaign.files["runs/control/predictions.jsonl"]
        campaign.set_metric("variant-a", "accuracy", 0.75)
    campaign.manifest["conclusion"] = {"meets_threshold": list(meets), "text": text}
    if analysis is not None:
        campaign.files["analysis.md"] = analysis.encode()
    return campaign


def test_the_corpus_is_large_and_in_five_languages() -> None:
    honest = CONCLUSIONS
    assert len(honest) >= 30
    assert {e["lang"] for e in honest} >= LANGUAGES
    minimum = {"en": 10, "fr": 6, "de": 5, "es": 5, "zh": 4}
    for lang, count in minimum.items():
        assert sum(e["lang"] == lang for e in honest) >= count, lang
    assert len(ANALYSES) >= 10
    for corpus in (CONCLUSIONS, ANALYSES):
        names = [(e["lang"], e["name"]) for e in corpus]
        assert len(names) == len(set(names))
    assert all(e["meets"] in (["variant-a"], []) for e in CONCLUSIONS + ANALYSES)
    assert all(set(e) <= {"name", "lang", "meets", "text", "advisories"}
               for e in CONCLUSIONS + ANALYSES)


def test_the_positive_and_negative_campaigns_are_what_the_entries_say(tmp_path: Path) -> None:
    for meets in (["variant-a"], []):
        campaign = campaign_for(tmp_path / f"c{len(meets)}", meets, "unused")
        campaign.manifest["conclusion"]["text"] = (
            "variant-a meets the 0.8 threshold." if meets
            else "Negative result: no variant meets the 0.8 threshold.")
        result = judged(campaign, "conclusion-consistent")
        assert result.codes() == ([], []), [f.render() for f in result.deciding]


@pytest.mark.parametrize("entry", _params(CONCLUSIONS))
def test_an_honest_conclusion_gets_no_deciding_finding(entry: dict[str, Any],
                                                       tmp_path: Path) -> None:
    campaign = campaign_for(tmp_path / "out", entry["meets"], entry["text"])
    result = judged(campaign, "conclusion-consistent")
    assert result.deciding == (), "\n".join(f.render() for f in result.deciding)
    assert sorted(result.codes()[1]) == sorted(entry.get("advisories", [])), \
        "\n".join(f.render() for f in result.advisories)


@pytest.mark.parametrize("entry", _params(ANALYSES))
def test_an_honest_analysis_gets_no_deciding_finding(entry: dict[str, Any],
                                                     tmp_path: Path) -> None:
    meets = entry.get("meets", ["variant-a"])
    text = "variant-a meets the 0.8 threshold." if meets \
        else "Negative result: no variant meets the 0.8 threshold."
    campaign = campaign_for(tmp_path / "out", meets, text, analysis=entry["text"])
    result = judged(campaign, "analysis-present")
    assert result.deciding == (), "\n".join(f.render() for f in result.deciding)
    assert sorted(result.codes()[1]) == sorted(entry.get("advisories", [])), \
        "\n".join(f.render() for f in result.advisories)


# ------------------------------------------------------------ dishonest twins

# (meets, text, the deciding code): an exact reading fails them by default.
DECIDING = [
    pytest.param([], "variant-a meets the 0.8 threshold.",
                 "conclusion-consistent.named-unlisted", id="en-meets-unlisted"),
    pytest.param([], "variant-a atteint le seuil de 0,8.",
                 "conclusion-consistent.named-unlisted", id="fr-meets-unlisted"),
    pytest.param([], "variant-a erreicht die Schwelle von 0,8.",
                 "conclusion-consistent.named-unlisted", id="de-meets-unlisted"),
    pytest.param([], "variant-a supera el umbral de 0,8.",
                 "conclusion-consistent.named-unlisted", id="es-meets-unlisted"),
    pytest.param([], "variant-a 达到了 0.8 的阈值。",
                 "conclusion-consistent.named-unlisted", id="zh-meets-unlisted"),
    pytest.param(["variant-a"], "variant-a's accuracy is 0.95, above the 0.8 threshold.",
                 "conclusion-consistent.quoted-value", id="en-misquoted"),
    pytest.param(["variant-a"], "variant-a meets the threshold with accuracy 0.90.",
                 "conclusion-consistent.quoted-value", id="en-misquoted-its"),
    pytest.param([], "Negative result: variant-a's accuracy is 0.70, below the 0.8 bar.",
                 "conclusion-consistent.quoted-value", id="en-misquoted-negative"),
]


@pytest.mark.parametrize(("meets", "text", "code"), DECIDING)
def test_a_dishonest_conclusion_fails_by_default(meets: list[str], text: str, code: str,
                                                 tmp_path: Path) -> None:
    result = judged(campaign_for(tmp_path / "out", meets, text), "conclusion-consistent")
    assert code in result.codes()[0], (result.codes(), [f.render() for f in result.advisories])


# (meets, text, the advising code): a loose reading advises, strict text fails them.
LOOSE = [
    pytest.param(["variant-a"], "variant-a was run; no variant meets the threshold.",
                 "conclusion-consistent.negative-but-listed", id="en-none-meets-listed"),
    pytest.param([], "variant-a scored 0.75 on the corpus.",
                 "conclusion-consistent.negative-unstated", id="en-negative-unstated"),
    pytest.param(["variant-a"], "variant-a does not meet the threshold.",
                 "conclusion-consistent.text-denies", id="en-text-denies"),
    pytest.param(["variant-a"], "The control stays below the 0.8 threshold.",
                 "conclusion-consistent.listed-unnamed", id="en-listed-unnamed"),
    pytest.param(["variant-a"], "variant-a 0.95 overall, above the 0.8 threshold.",
                 "conclusion-consistent.quoted-value", id="en-loose-misquote"),
    pytest.param([], "variant-a beats the control and passes the threshold, but not by much.",
                 "conclusion-consistent.named-unlisted", id="en-meets-with-contrast"),
    pytest.param([], "variant-a a tourné 3 époques sur gpu0.",
                 "conclusion-consistent.negative-unstated", id="fr-negative-unstated"),
]


@pytest.mark.parametrize(("meets", "text", "code"), LOOSE)
def test_a_loosely_dishonest_conclusion_fails_under_strict_text(
    meets: list[str], text: str, code: str, tmp_path: Path
) -> None:
    advises_then_fails(campaign_for(tmp_path / "out", meets, text), "conclusion-consistent",
                       code)


def test_a_misquoted_analysis_fails(tmp_path: Path) -> None:
    analysis = "# Error analysis\n\ncontrol's accuracy is 0.70; variant-a gets ex-3 right.\n"
    campaign = campaign_for(tmp_path / "out", ["variant-a"], "variant-a meets the 0.8 "
                            "threshold.", analysis=analysis)
    result = judged(campaign, "analysis-present")
    assert "analysis-present.quoted-value" in result.codes()[0], result.codes()
