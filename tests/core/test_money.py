"""Money, lots, the cost of a useful result and catalogues: the source's numbers (R4, R7)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from pytest_itera.checks.prose.labels import AMOUNT_MARKERS, amount_markers
from pytest_itera.core.campaign import Expense, Lot
from pytest_itera.core.money import (
    Catalogue,
    CatalogueError,
    Delivery,
    Money,
    Offer,
    catalogue_offer,
    cost_per_deliverable,
    deliverables_per_corpus,
    distinct_deliverables,
    engaged_total,
    example_catalogue,
    expenses_total,
    hourly_reading,
    load_catalogue,
    lot_cost,
    overflow_advice,
    placeholder_reference,
    ratio_matches,
    ratio_problem,
    rental_total,
    rental_total_problem,
    smallest_covering,
    to_money,
)
from tests.runner import REPO


def usd(amount: str) -> Money:
    return Money(amount, "USD")


def rtx_lot(quantity: int = 1, lot_id: str = "A") -> Lot:
    return Lot(lot_id, "IteraGPU RTX 4090, 3 days", "RTX 4090", 1, 3, "47.14", quantity)


# -------------------------------------------------------- the source's numbers


def test_two_three_day_lots_cost_94_28() -> None:
    assert rental_total([rtx_lot(quantity=2)], "USD") == usd("94.28")
    assert rental_total([rtx_lot(lot_id="A"), rtx_lot(lot_id="B")], "USD") == usd("94.28")
    assert usd("47.14") * 2 == usd("94.28") == 2 * usd("47.14")


def test_a_two_gpu_lot_is_priced_once(tmp_path: Path) -> None:
    # The source quotes no B200 price: 200.00 is a made-up test value, not shipped data.
    path = write_catalogue(tmp_path, [offer_entry("B200", 2, 7, "200.00")])
    b200 = load_catalogue(path).offers[0]
    lot = Lot("b200", b200.offer, b200.gpu, b200.gpus_per_lot, b200.days, str(b200.price), 1)
    assert b200.gpus_per_lot == 2
    assert lot_cost(lot, "USD") == usd("200.00")
    assert rental_total([lot], "USD") == usd("200.00")


def test_47_14_for_two_distinct_accepted_corpora_is_23_57_each() -> None:
    accepted = distinct_deliverables(["corpus-a", "corpus-b"])
    cost = cost_per_deliverable(usd("47.14"), accepted)
    assert accepted == 2
    assert cost == usd("23.57")
    assert cost is not None
    assert cost.format() == "23.57 USD"


def test_five_replays_of_one_corpus_are_one_deliverable() -> None:
    assert distinct_deliverables(["corpus-a"] * 5) == 1
    assert cost_per_deliverable(usd("47.14"), distinct_deliverables(["corpus-a"] * 5)) == usd(
        "47.14"
    )


def test_zero_accepted_is_undefined_and_the_engaged_cost_remains() -> None:
    engaged = engaged_total([rtx_lot()], "USD")
    assert cost_per_deliverable(engaged, distinct_deliverables([])) is None
    assert engaged == usd("47.14")  # a negative result does not erase the cost


# ------------------------------------------------------------------ Money type


def test_money_prints_two_decimals_and_round_trips() -> None:
    price = usd("110")
    assert str(price) == "110.00"
    assert price.format() == "110.00 USD"
    assert repr(price) == "Money('110.00', 'USD')"
    assert Money(str(price), "USD") == price
    assert Money.parse(price.format()) == price


def test_money_accepts_decimal_int_and_exact_trailing_zeros() -> None:
    assert Money(Decimal("47.14"), "EUR") == Money("47.140", "EUR")
    assert str(Money(3, "EUR")) == "3.00"
    assert str(Money("-0", "EUR")) == "0.00"


def test_float_is_refused_with_a_hint() -> None:
    hint = r"a float cannot hold cents exactly; use a string such as '47.14'"
    with pytest.raises(TypeError, match=hint):
        Money(47.14, "USD")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("amount", "message"),
    [
        ("-1.00", "cannot be negative"),
        ("NaN", "finite"),
        ("Infinity", "finite"),
        ("47.145", "more than two decimals"),
        ("forty", "not a decimal amount"),
        ("1e13", "over the largest amount"),
    ],
)
def test_bad_amounts_are_refused(amount: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        usd(amount)


def test_bool_and_bad_currency_are_refused() -> None:
    with pytest.raises(TypeError, match="decimal string, a Decimal or an int"):
        usd(True)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="three-letter code"):
        Money("1", "usd")
    with pytest.raises(ValueError, match="not an amount and a currency"):
        Money.parse("47.14")


def test_arithmetic_keeps_one_currency() -> None:
    assert usd("0.10") + usd("0.20") == usd("0.30")
    assert sum([usd("1.10"), usd("2.20")]) == usd("3.30")
    assert usd("1") < usd("2")
    with pytest.raises(ValueError, match=r"cannot add 1.00 USD and 1.00 EUR: currencies differ"):
        _ = usd("1") + Money("1", "EUR")
    with pytest.raises(ValueError, match="cannot compare"):
        _ = usd("1") < Money("2", "EUR")
    with pytest.raises(ValueError, match="negative count"):
        _ = usd("1") * -2
    with pytest.raises(TypeError):
        _ = usd("1") * 1.5  # type: ignore[operator]


def test_to_money_refuses_another_currency() -> None:
    assert to_money("2", "USD") == usd("2")
    with pytest.raises(ValueError, match="not in the budget's currency USD"):
        to_money(Money("2", "EUR"), "USD")


# --------------------------------------------------- totals and the ratio


def test_external_expenses_stay_out_of_the_engaged_total() -> None:
    included = [Expense("storage", "3.50")]
    external = [Expense("annotation", "120.00")]
    assert engaged_total([rtx_lot()], "USD", included) == usd("50.64")
    assert expenses_total(external, "USD") == usd("120.00")
    assert rental_total([], "USD") == usd("0")


def test_cost_per_deliverable_rounds_half_up() -> None:
    assert cost_per_deliverable(usd("0.05"), 2) == usd("0.03")
    assert cost_per_deliverable(usd("10.00"), 3) == usd("3.33")


def test_ratio_matches_accepts_either_rounding_within_half_a_cent() -> None:
    assert ratio_matches(usd("0.03"), usd("0.05"), 2)
    assert ratio_matches(usd("0.02"), usd("0.05"), 2)  # banker's rounding at the tie
    assert not ratio_matches(usd("0.01"), usd("0.05"), 2)
    assert not ratio_matches(usd("0.00"), usd("47.14"), 0)


def test_cost_per_deliverable_refuses_bad_counts() -> None:
    with pytest.raises(ValueError, match="cannot be negative"):
        cost_per_deliverable(usd("1"), -1)
    with pytest.raises(TypeError, match="is an int"):
        cost_per_deliverable(usd("1"), 1.0)  # type: ignore[arg-type]


def b200_lot(quantity: int = 1) -> Lot:
    # Made-up price: the source quotes none for the B200 lot.
    return Lot("B", "B200, 7 days", "B200", 2, 7, "200.00", quantity)


def test_rental_total_problem_names_the_usual_mistakes() -> None:
    lots = [rtx_lot(quantity=2), b200_lot()]
    external = [Expense("annotation", "120.00")]
    assert rental_total_problem(usd("294.28"), lots, external) is None
    assert rental_total_problem(usd("494.28"), lots, external) == (
        "rental total 494.28 USD is not the sum of price * quantity, 294.28 USD: "
        "it multiplies prices by GPUs per lot, but a lot is priced once"
    )
    assert rental_total_problem(usd("414.28"), lots, external) == (
        "rental total 414.28 USD is not the sum of price * quantity, 294.28 USD: "
        "it adds the external expenses (120.00 USD); list them apart"
    )
    assert rental_total_problem(usd("47.14"), lots) == (
        "rental total 47.14 USD is not the sum of price * quantity, 294.28 USD"
    )


ZERO_WITH_RATIO = (
    "zero accepted deliverables but a cost per deliverable of 0.00 USD: "
    "the ratio is undefined (null)"
)


@pytest.mark.parametrize(
    ("stated", "accepted", "unit", "cause", "problem"),
    [
        ("23.57", 2, "corpus", None, None),
        (None, 0, "corpus", "the control diverged", None),
        (None, 0, "decision", None, None),
        ("23.56", 2, "corpus", None,
         "cost per deliverable 23.56 USD is not 47.14 USD / 2 = 23.57 USD"),
        (None, 2, "corpus", None,
         "2 accepted deliverable(s) but no cost per deliverable (23.57 USD)"),
        ("0.00", 0, "corpus", "diverged", ZERO_WITH_RATIO),
        (None, 0, "corpus", None,
         "zero accepted deliverables (47.14 USD engaged) without a rejection cause"),
        ("47.14", 1, "decision", None,
         "a research decision reports its conclusion, not a cost per deliverable (47.14 USD)"),
    ],
)
def test_ratio_problem(
    stated: str | None, accepted: int, unit: str, cause: str | None, problem: str | None
) -> None:
    money = usd(stated) if stated is not None else None
    assert ratio_problem(money, usd("47.14"), accepted, unit, cause) == problem


def test_zero_accepted_with_a_zero_cost_is_refused() -> None:
    assert ratio_problem(None, usd("0"), 0, "corpus", "nothing ran") == (
        "zero accepted deliverables and a zero engaged cost: show the cost actually engaged"
    )


# ------------------------------------------------------------ hourly billing (R4)

# Hourly billing written in words: tests/checks/prose/test_hourly.py.


def test_hourly_reading_names_a_pro_rata_or_a_round_rate() -> None:
    catalogue = example_catalogue()
    assert hourly_reading(usd("78.57"), 120, catalogue.offers) == (
        "78.57 USD = 47.14 USD / 72 h x 120 h, a pro-rata of the 3-day lot (47.14 USD)"
    )
    assert hourly_reading(usd("46.80"), 72) == "46.80 USD = 72 h x 0.65 USD/h"
    assert hourly_reading(usd("47.14"), 72) is None
    assert hourly_reading(usd("50.00"), 72, catalogue.offers) is None


# ------------------------------------------------ amounts the campaign made up (R7)

# One row per marker of money.AMOUNT_MARKERS: labels or references it must find.
MARKER_EXAMPLES: dict[str, list[str]] = {
    "estimated": ["storage, estimated", "Estimate for egress", "estimation"],
    "approx": ["approx. 12 USD", "approximately", "Approx"],
    "~": ["~12 USD", "storage ~ 3.00", "≈ 3 USD"],
    "roughly": ["roughly 3 USD", "ballpark", "guesstimate"],
    "environ": ["environ 3 EUR", "env. 3 EUR", "à peu près 3 EUR"],
    "estimé": ["stockage estimé", "coût estimée", "approximatif"],
    "provisional": ["provisional", "TBD", "forecast", "prévisionnel"],
    "computed": ["computed from the quote", "calculated", "montant calculé", "derived"],
    "prorated": ["prorated share", "pro rata", "pro-rata", "au prorata"],
    "quantity x rate": ["120 GB x 0.09", "72 h \u00d7 0.65", "3 days * 5"],
    "%": ["VAT 20%", "20 % of rental", "5 percent"],
    "per GB": ["0.09 per GB", "0.09 USD/GB", "0,08 € par Go"],
    "VAT": ["VAT", "TVA", "sales tax", "Taxes", "GST"],
    "transfer": ["egress to our bucket", "data transfer", "transfert des résultats",
                 "bandwidth", "download of the outputs"],
}

NOT_MADE_UP = [
    "extra disk for the rental", "2 x 1 TB disk", "object storage, November",
    "https://billing.example/~acct/INV-311", "syntax support", "taxi to the datacenter",
    "INV-2026-311", "PO-77", "annotation by the lab",
    "Northbridge: 2 TB x 1 month", "IteraGPU: 1 GPU x 3 days extension",
]


def test_every_marker_is_tested() -> None:
    assert [m.name for m in AMOUNT_MARKERS] == list(MARKER_EXAMPLES)


@pytest.mark.parametrize("name", list(MARKER_EXAMPLES))
def test_each_marker_is_found(name: str) -> None:
    for text in MARKER_EXAMPLES[name]:
        assert name in [m.name for m in amount_markers(text)], text


@pytest.mark.parametrize("text", NOT_MADE_UP)
def test_no_marker_finds_a_plain_label_or_reference(text: str) -> None:
    assert amount_markers(text) == ()


def test_taxes_rates_and_transfers_are_fine_with_their_receipt_only() -> None:
    kinds = {m.name: m.needs_receipt for m in AMOUNT_MARKERS}
    assert [n for n, needs in kinds.items() if needs] == ["%", "per GB", "VAT", "transfer"]


@pytest.mark.parametrize("reference", ["n/a", "N/A", "none", "TBD", "-", "?", " ", "0", "..."])
def test_placeholder_references(reference: str) -> None:
    assert placeholder_reference(reference)


@pytest.mark.parametrize("reference", ["INV-2026-311", "PO-77", "Q-2026-118", "n/a-77"])
def test_real_references(reference: str) -> None:
    assert not placeholder_reference(reference)


# ------------------------------------------------------- a lot and its offer (R4)


def test_a_lot_is_matched_by_offer_name_ignoring_case_and_punctuation() -> None:
    catalogue = example_catalogue()
    match = catalogue_offer(catalogue, "iteragpu rtx-4090 3 DAYS", "RTX 4090", 5)
    assert match is not None
    assert (match.offer.days, match.by) == (3, "offer name")


def test_a_lot_is_matched_by_gpu_and_days_under_another_name() -> None:
    catalogue = example_catalogue()
    match = catalogue_offer(catalogue, "4090 for a week", "rtx4090", 7)
    assert match is not None
    assert (match.offer.price, match.by) == (usd("110.00"), "GPU and days")
    assert catalogue_offer(catalogue, "4090 for five days", "RTX 4090", 5) is None
    assert catalogue_offer(catalogue, "B200 x2, 3 days", "B200", 3) is None


def test_another_providers_quoted_lot_of_the_same_gpu_is_not_the_catalogues() -> None:
    catalogue = example_catalogue()
    assert catalogue_offer(catalogue, "CloudX 4090, 3 days", "RTX 4090", 3, quoted=True) is None
    # ... but a quoted lot that names the provider is the catalogue's offer
    match = catalogue_offer(catalogue, "IteraGPU 4090 (3d)", "RTX 4090", 3, quoted=True)
    assert match is not None
    assert match.offer.price == usd("47.14")


# ------------------------------------------------------ deliverables per corpus (R7)


def test_deliverables_are_distinct_corpora_of_passing_controls_and_variants() -> None:
    deliveries = [
        Delivery("control", "control", "corpus-a", "sha-a"),
        Delivery("variant-1", "variant", "corpus-a", "sha-a"),  # a replay
        Delivery("variant-2", "variant", "corpus-a-copy", "sha-a"),  # relabelled: same content
        Delivery("variant-3", "variant", "corpus-b", "sha-b"),
        Delivery("variant-4", "variant", "corpus-c", "sha-c", passed=False),
        Delivery("data-check", "data_check", "corpus-d", "sha-d"),
        Delivery("pilot", "pilot", "corpus-e", "sha-e"),
        Delivery("resume-check", "resume_check", "corpus-f", "sha-f"),
    ]
    assert deliverables_per_corpus(deliveries) == {
        "sha-a": ("control", "variant-1", "variant-2"), "sha-b": ("variant-3",),
    }


# ----------------------------------------------------------------- catalogues


def offer_entry(gpu: str, gpus: int, days: int, price: Any) -> dict[str, Any]:
    return {
        "offer": f"{gpu} {days}d", "gpu": gpu, "gpus_per_lot": gpus, "days": days, "price": price
    }


def write_catalogue(tmp_path: Path, offers: list[dict[str, Any]], **top: Any) -> Path:
    data = {"format": "itera-catalogue/1", "provider": "Test", "currency": "USD", "offers": offers}
    path = tmp_path / "catalogue.json"
    path.write_text(json.dumps({**data, **top}), "utf-8")
    return path


def test_the_shipped_catalogue_has_the_sources_three_rtx_4090_lots() -> None:
    catalogue = example_catalogue()
    assert catalogue.provider == "IteraGPU"
    assert [(o.days, o.price.format(), o.gpus_per_lot) for o in catalogue.offers] == [
        (3, "47.14 USD", 1),
        (7, "110.00 USD", 1),
        (30, "390.00 USD", 1),
    ]
    assert {o.gpu for o in catalogue.offers} == {"RTX 4090"}


@pytest.mark.parametrize(
    ("hours", "days"),
    [(0, 3), (48, 3), (72, 3), (72.01, 7), (78, 7), (168, 7), (169, 30), (720, 30), (721, None)],
)
def test_smallest_covering_lot(hours: float, days: int | None) -> None:
    chosen = smallest_covering(example_catalogue(), hours)
    assert (chosen.days if chosen else None) == days


def test_smallest_covering_prefers_the_cheaper_of_equal_durations() -> None:
    cheap = Offer("b", "L40S", 1, 3, usd("30.00"))
    dear = Offer("a", "H100", 1, 3, usd("90.00"))
    catalogue = Catalogue("Test", "USD", (dear, cheap))
    assert smallest_covering(catalogue, 10) == cheap
    assert smallest_covering(catalogue.for_gpu("H100"), 10) == dear
    with pytest.raises(ValueError, match="non-negative"):
        smallest_covering(catalogue, -1)


def test_78_hours_overflow_the_3_day_lot_and_point_at_the_7_day_lot() -> None:
    catalogue = example_catalogue()
    three_days = catalogue.offers[0]
    assert overflow_advice(78, three_days, catalogue) == (
        "78 h exceeds the 3-day lot (72 h) by 6 h: consider the 7-day lot (110.00 USD) "
        "or a reduced protocol"
    )
    assert overflow_advice(72, three_days, catalogue) is None


def test_overflow_beyond_every_lot_suggests_a_reduced_protocol() -> None:
    catalogue = example_catalogue()
    advice = overflow_advice(Decimal("730.5"), catalogue.offers[2], catalogue)
    assert advice == (
        "730.5 h exceeds the 30-day lot (720 h) by 10.5 h: no single lot of the catalogue "
        "covers it; consider a reduced protocol (two lots can host independent variants "
        "but never shorten one run)"
    )
    assert overflow_advice(80, rtx_lot()) is not None  # a plan's Lot works, no catalogue


@pytest.mark.parametrize(
    ("offers", "top", "message"),
    [
        ([offer_entry("B200", 2, 7, 47.14)], {}, r"\$\.offers\[0\]\.price: 47\.14 is a float; "
         r"write prices as decimal strings \(\"47\.14\"\)"),
        ([offer_entry("B200", 2, 7, "-1")], {}, r"offers\[0\]\.price: money cannot be negative"),
        ([offer_entry("B200", 0, 7, "1")], {}, r"offers\[0\]\.gpus_per_lot: a positive integer"),
        ([offer_entry("B200", 2, 7, "1") | {"hourly": "1"}], {}, "unknown field hourly"),
        ([{"gpu": "B200"}], {}, "missing days, gpus_per_lot, offer, price"),
        ([offer_entry("B200", 2, 7, "1")] * 2, {}, "two B200 offers of 7 days"),
        ([], {}, r"\$\.offers: a non-empty list"),
        ([offer_entry("B200", 2, 7, "1")], {"format": "v2"}, "expected 'itera-catalogue/1'"),
        ([offer_entry("B200", 2, 7, "1")], {"currency": "dollars"}, "three-letter code"),
    ],
)
def test_bad_catalogues_name_the_json_path(
    tmp_path: Path, offers: list[dict[str, Any]], top: dict[str, Any], message: str
) -> None:
    path = write_catalogue(tmp_path, offers, **top)
    with pytest.raises(CatalogueError, match=message):
        load_catalogue(path)


def test_catalogue_json_must_be_strict(tmp_path: Path) -> None:
    duplicate = tmp_path / "dup.json"
    duplicate.write_text('{"format": "itera-catalogue/1", "format": "x"}', "utf-8")
    with pytest.raises(CatalogueError, match="duplicate key 'format'"):
        load_catalogue(duplicate)
    nan = tmp_path / "nan.json"
    nan.write_text('{"price": NaN}', "utf-8")
    with pytest.raises(CatalogueError, match="NaN is not JSON"):
        load_catalogue(nan)
    with pytest.raises(CatalogueError, match="cannot be read"):
        load_catalogue(tmp_path / "absent.json")


def test_a_users_catalogue_loads(tmp_path: Path) -> None:
    path = write_catalogue(
        tmp_path, [offer_entry("H100", 8, 1, "250"), offer_entry("H100", 8, 7, "1500.50")],
        source="quote 2025-03",
    )
    catalogue = load_catalogue(path)
    assert catalogue.source == "quote 2025-03"
    assert [o.price for o in catalogue.offers] == [usd("250.00"), usd("1500.50")]
    assert smallest_covering(catalogue, 30) == catalogue.offers[1]


def test_the_arithmetic_modules_import_neither_pytest_nor_hypothesis_nor_torch() -> None:
    code = (
        "import sys, pytest_itera.core.money, pytest_itera.core.schedule\n"
        "print(sorted(m for m in ('pytest', 'hypothesis', 'torch') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.stdout.strip() == "[]"
