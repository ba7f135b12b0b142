"""Hourly billing written in words (checks/prose/hourly.py): one example per row of the
table, texts no row may read as billing, and the users' literal phrases."""

from __future__ import annotations

import pytest

from pytest_itera.checks.prose.hourly import (
    HOURLY_PHRASES,
    Phrase,
    hourly_billing,
    hourly_rate_phrase,
)

# One row per phrase of HOURLY_PHRASES: texts it must find (and the words found).
# A phrase added to the table without its examples here fails test_every_phrase_is_tested.
HOURLY_EXAMPLES: dict[str, list[tuple[str, str]]] = {
    "USD/h": [("GPU time at 0.65 USD/h", "USD/h"), ("1.20 EUR / hr", "EUR / hr")],
    "€/h": [("0,60 €/h", "€/h"), ("0.45 $/hr on demand", "$/hr"), ("12 €/heure", "€/heure")],
    "/h": [("2.50 usd/h", "/h"), ("0.65/h.", "/h"), ("0.65 / H", "/ H")],
    "/hr": [("0.65/hr", "/hr"), ("0.65 USD/hours", "USD/hours"), ("0.7 / hour", "/ hour")],
    "/heure": [("0,60 EUR/heure", "EUR/heure"), ("0,60 /heure", "/heure")],
    "per GPU-hour": [("0.65 USD per GPU-hour", "per GPU-hour"), ("per GPU hour", "per GPU hour"),
                     ("0.65 USD/GPU-h", "/GPU-h")],
    "per hour": [("billed per hour", "per hour"), ("per-hour pricing", "per-hour"),
                 ("0.65 per hr", "per hr")],
    "GPU-hours at": [("72 GPU-hours at 0.65 USD", "GPU-hours at"),
                     ("72 gpu hours @ 0.65", "gpu hours @")],
    "hourly": [("Hourly rate", "Hourly"), ("RTX 4090, billed hourly", "hourly"),
               ("hourly-billed lot", "hourly-billed")],
    "an hour": [("0.65 USD an hour", "USD an hour"), ("60 cents, $ an hour", "$ an hour")],
    "for each hour": [("at 0.65 USD for each hour, 3 days", "for each hour"),
                      ("0.65 per every GPU hour", "per every GPU hour"),
                      ("each hour at 0.65", "each hour at")],
    "hours at <amount>": [("6 extra hours at 0.65 USD each", "hours at 0.65 USD"),
                          ("72 h @ $0.65", "h @ $0"), ("10 hrs at 1,20 EUR", "hrs at 1,20 EUR")],
    "par heure": [("1,20 EUR par heure", "par heure"), ("facturé par heures", "par heures")],
    "à l'heure": [("facturé à l'heure", "à l'heure"), ("payé à l\u2019heure", "à l\u2019heure")],
    "tarif horaire": [("tarif horaire 0,60 €", "tarif horaire"), ("taux horaire", "taux horaire")],
    "pro Stunde": [("0,65 EUR pro Stunde", "pro Stunde"), ("je GPU-Stunde 0,65", "je GPU-Stunde"),
                   ("0,65 EUR/Std.", "EUR/Std"), ("0,65 /Std", "/Std")],
    "Stundensatz": [("Stundensatz 0,65 EUR", "Stundensatz"),
                    ("stündlich abgerechnet", "stündlich abgerechnet")],
    "por hora": [("0,65 USD por hora", "por hora"), ("0,65 /hora", "/hora"),
                 ("facturado por cada hora", "por cada hora")],
    "tarifa horaria": [("tarifa horaria de 0,65 USD", "tarifa horaria"),
                       ("precio por hora", "precio por hora")],
}

# Texts no phrase may find: durations, paths, timetables, compounds that are not billing.
NOT_HOURLY = [
    "IteraGPU RTX 4090, 3 days", "72 h window", "3-day lot (72 h)", "/home/user/quote.pdf",
    "https://quotes.example/h/Q-118", "runs/h/predictions.jsonl", "hourly-resolution metrics",
    "hourly-checkpoints", "8 GPU-hours of training", "horaire de la campagne", "for an hour",
    "shower", "hours of setup", "per host", "chourly", "a checkpoint every hour",
    "24 h at 2 GPUs", "for each run", "hours at step 200",
    # honest hours beside a fixed price, in the four languages
    "3 days = 72 h of GPU", "72 GPU-hours at a fixed price of 47.14 USD", "72 h à prix fixe",
    "Festpreis für 72 Stunden", "precio fijo por 3 días (72 h)", "fixed price, no hourly rate",
    "prix fixe, pas de tarif horaire", "Festpreis, kein Stundensatz",
    "precio cerrado, sin tarifa por hora", "not billed per hour", "/std/lib", "/hora/x",
    "Checkpoints stündlich gespeichert", "una hora de margen",
]


def test_every_phrase_is_tested() -> None:
    assert [p.name for p in HOURLY_PHRASES] == list(HOURLY_EXAMPLES)


@pytest.mark.parametrize("name", list(HOURLY_EXAMPLES))
def test_each_hourly_phrase_is_found(name: str) -> None:
    phrase = next(p for p in HOURLY_PHRASES if p.name == name)
    for text, found in HOURLY_EXAMPLES[name]:
        assert phrase.pattern.search(text), (name, text)
        assert hourly_rate_phrase(text) == found, text


@pytest.mark.parametrize("text", NOT_HOURLY)
def test_no_phrase_finds_a_duration_a_path_or_a_timetable(text: str) -> None:
    assert hourly_billing(text) is None


def test_prose_bills_by_the_hour_only_next_to_an_amount() -> None:
    assert hourly_billing("checkpoints are saved hourly", prose=True) is None
    assert hourly_billing("the lot cost 47.14 USD. Checkpoints are saved hourly",
                          prose=True) is None
    hit = hourly_billing("overran by 6 h, billed 0.65 USD per hour", prose=True)
    assert hit is not None
    assert hit.phrase == "per hour"
    hit = hourly_billing("the overrun was charged at 0.65 EUR/h", prose=True)
    assert hit is not None
    assert hit.found == "EUR/h"
    # outside prose (a budget string) the phrase alone is billing
    assert hourly_billing("checkpoints are saved hourly") is not None


def test_users_add_literal_phrases() -> None:
    phrases = (*HOURLY_PHRASES, Phrase.literal("la hora"))
    hit = hourly_billing("0,50 USD LA HORA", phrases)
    assert hit is not None
    assert (hit.phrase, hit.found) == ("la hora", "LA HORA")
    assert hourly_billing("0,50 USD la hora") is None
