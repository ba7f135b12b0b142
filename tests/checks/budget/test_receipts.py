"""Issue 24, point 11: receipts say what they prove (budget-consistent).

An included expense's receipt names the campaign or the expense's provider, is dated in the
campaign's window (frozen_at to closed_at, give or take 7 days), is issued by the provider
the expense names, and can be read (text, or a PDF's text layer); the rental lot never comes
back as an included expense. Each rule has a failing campaign whose message is asserted and
a passing twin, judged in-process: budget-consistent alone, with the session's reload server
(tests/checks/prose/judging.py), not a whole campaign run per test.
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime

import pytest

from pytest_itera.checks.budget.receipts import states_reference
from pytest_itera.checks.prose.receipts import expense_provider, receipt_dates, receipt_issuer
from tests.checks.campaigns import BUDGET, budget
from tests.checks.judging import (
    advises_then_fails,
    expect_finding,
    expect_no_finding,
    judge,
    judged,
)
from tests.factory import CampaignBuilder
from tests.pdfs import image_only_pdf, text_pdf

STORAGE = "Northbridge Object Storage: bucket receiving the campaign folder"
WHERE = "manifest.json $.budget.included_expenses[0]"
RECEIPT = "receipts/INV-40715.txt"


def invoice(seller: str = "Northbridge Object Storage", buyer: str = "campaign tiny-2026-11",
            dated: str = "2026-11-21", amount: str = "1.20") -> str:
    return (f"INVOICE INV-40715\nSeller: {seller}\nOrder reference: ORD-88213\nDate: {dated}\n"
            f"Buyer: {buyer}\n\nItem: bucket, 5 GB, one month\nTotal paid: {amount} USD\n")


def include(campaign: CampaignBuilder, receipt: str | bytes, label: str = STORAGE,
            amount: str = "1.20", path: str = RECEIPT, **facts: str) -> None:
    """One included expense with its receipt file (and the receipt's recorded ``facts``:
    issued_on, issued_by, amount_as_written, reference; ``kind``), and a consistent cost
    per deliverable."""
    campaign.files[path] = receipt.encode() if isinstance(receipt, str) else receipt
    total = 47.14 + float(amount)
    kind = {"kind": facts.pop("kind")} if "kind" in facts else {}
    budget(campaign, included_expenses=[{"label": label, "amount": amount, **kind,
                                         "source": {"file": path, **facts}}],
           cost_per_deliverable=f"{total:.2f}")


def advisories(campaign: CampaignBuilder) -> list[str]:
    """The readings of the receipt's text that advise (and fail nothing by default)."""
    found = judged(campaign, BUDGET)
    assert [f.render() for f in found.deciding] == []
    return [f.render() for f in found.advisories]


def only_advisory(campaign: CampaignBuilder) -> None:
    """The campaign's budget decides nothing by default and advises once (the reading that
    ``advises_then_fails`` then checks by its code)."""
    found = judged(campaign, BUDGET)
    assert found.deciding == ()
    assert len(found.advisories) == 1, [f.render() for f in found.advisories]


def test_a_receipt_that_names_dates_and_issues_what_it_proves_passes(
    campaign: CampaignBuilder,
) -> None:
    include(campaign, invoice())
    expect_no_finding(judge(campaign, BUDGET))


@pytest.mark.parametrize(
    "receipt",
    [
        pytest.param(invoice(buyer="Jane Doe", seller="Northbridge Object Storage Ltd"),
                     id="names-the-provider-not-the-campaign"),
        pytest.param(invoice(dated="13 November 2026"), id="a-week-before-the-freeze"),
        pytest.param(invoice(dated="November 28, 2026"), id="a-week-after-the-closure"),
        pytest.param(text_pdf(*invoice().splitlines()), id="a-pdf-with-its-text-layer"),
    ],
)
def test_receipts_that_prove_the_expense_pass(campaign: CampaignBuilder,
                                              receipt: str | bytes) -> None:
    include(campaign, receipt, path=RECEIPT if isinstance(receipt, str) else "receipts/i.pdf")
    expect_no_finding(judge(campaign, BUDGET))


def test_the_rental_lot_relisted_with_the_provider_s_invoice_is_refused(
    campaign: CampaignBuilder,
) -> None:
    rental = invoice(seller="IteraGPU", amount="47.14").replace(
        "bucket, 5 GB, one month", "IteraGPU RTX 4090, 3 days")
    include(campaign, rental, label="compute for the campaign", amount="47.14",
            path="receipts/iteragpu-invoice.txt")
    found = judge(campaign, BUDGET)
    assert len(found) == 1
    expect_finding(found, "budget-consistent.rental-as-expense", where=WHERE, says=(
        "included expense 'compute for the campaign' (47.14 USD) is the rental lot "
        "'rtx4090-3d'", "its receipt receipts/iteragpu-invoice.txt is 'IteraGPU''s invoice"))


def test_the_rental_lot_relisted_under_the_provider_s_name_is_refused(
    campaign: CampaignBuilder,
) -> None:
    include(campaign, invoice(seller="IteraGPU", amount="47.14"),
            label="IteraGPU: GPU time", amount="47.14")
    expect_finding(judge(campaign, BUDGET), "budget-consistent.rental-as-expense", where=WHERE,
                   says="the same amount (47.14) and provider ('IteraGPU', in its label)")


def test_another_purchase_from_the_gpu_provider_is_an_expense(campaign: CampaignBuilder) -> None:
    include(campaign, invoice(seller="IteraGPU", amount="2.00"),
            label="IteraGPU: extra disk", amount="2.00")
    expect_no_finding(judge(campaign, BUDGET))


def test_a_receipt_addressed_to_another_campaign_is_refused(campaign: CampaignBuilder) -> None:
    receipt = invoice(buyer="campaign rings-2025-03", seller="Coldvault")
    include(campaign, receipt, label="object storage for the outputs")
    only_advisory(campaign)
    finding = advises_then_fails(campaign, BUDGET, "budget-consistent.receipt-addressee")
    assert finding.where == f"{WHERE}.source.file"
    assert f"its receipt {RECEIPT} names neither the campaign 'tiny-2026-11' nor a provider " \
        "the expense names" in finding.message
    assert (finding.expected, finding.found) == ("'tiny-2026-11' in the receipt",
                                                 "issued by 'Coldvault', addressed to neither")
    assert "record source.issued_by" in (finding.hint or "")


def test_a_receipt_of_the_provider_to_another_campaign_is_refused(
    campaign: CampaignBuilder,
) -> None:
    include(campaign, invoice(buyer="campaign rings-2025-03"))
    only_advisory(campaign)
    finding = advises_then_fails(campaign, BUDGET, "budget-consistent.receipt-other-campaign")
    assert finding.where == f"{WHERE}.source.file"
    assert f"its receipt {RECEIPT} is addressed to campaign 'rings-2025-03', not " \
        "'tiny-2026-11'" in finding.message
    assert finding.found == "campaign 'rings-2025-03'"


def test_a_receipt_dated_20_months_before_the_rental_is_refused(
    campaign: CampaignBuilder,
) -> None:
    include(campaign, invoice(dated="2025-03-20"))
    only_advisory(campaign)
    finding = advises_then_fails(campaign, BUDGET, "budget-consistent.receipt-date")
    assert finding.where == f"{WHERE}.source.file"
    assert f"its receipt {RECEIPT} is dated 2025-03-20, outside the campaign's window" in (
        finding.message)
    assert (finding.expected, finding.found) == (
        "a date from 2026-11-20 (frozen_at) to 2026-11-22 (closed_at), give or take 7 days",
        "2025-03-20")
    assert "record source.issued_on" in (finding.hint or "")


def test_a_receipt_without_a_date_says_it_cannot_prove_one(campaign: CampaignBuilder) -> None:
    include(campaign, invoice().replace("Date: 2026-11-21\n", ""))
    only_advisory(campaign)
    finding = advises_then_fails(campaign, BUDGET, "budget-consistent.receipt-date")
    assert finding.where == f"{WHERE}.source.file"
    assert f"cannot prove the receipt's date from its text ({RECEIPT}); record issued_on" in (
        finding.message)


def test_a_receipt_issued_by_another_provider_is_refused(campaign: CampaignBuilder) -> None:
    include(campaign, invoice(seller="Coldvault Storage Ltd"))
    only_advisory(campaign)
    finding = advises_then_fails(campaign, BUDGET, "budget-consistent.receipt-issuer")
    assert finding.where == f"{WHERE}.source.file"
    assert "is issued by 'Coldvault Storage Ltd', another provider than the expense names " \
        "('Northbridge Object Storage')" in finding.message
    assert (finding.expected, finding.found) == (
        "a receipt issued by 'Northbridge Object Storage'", "issued by 'Coldvault Storage Ltd'")
    assert "record source.issued_by" in (finding.hint or "")


def test_a_label_s_category_word_is_not_taken_for_another_provider(
    campaign: CampaignBuilder,
) -> None:
    include(campaign, invoice().replace("bucket, 5 GB", "egress of the outputs, 5 GB"),
            label="egress: the outputs to the bucket")
    expect_no_finding(judge(campaign, BUDGET))


def test_a_pdf_without_a_text_layer_cannot_be_read(campaign: CampaignBuilder) -> None:
    include(campaign, image_only_pdf(), path="receipts/scan.pdf")
    found = judge(campaign, BUDGET)
    assert len(found) == 1
    unread = expect_finding(found, "budget-consistent.receipt-unreadable",
                            where=f"{WHERE}.source.file", says=(
                                "its receipt receipts/scan.pdf is a PDF without a text layer",
                                "cannot be checked"))
    assert unread.found == "is a PDF without a text layer (a scanned image?)"


def test_a_broken_pdf_cannot_be_read(campaign: CampaignBuilder) -> None:
    include(campaign, b"%PDF-1.7\n1 0 obj<</Length 9/Filter/FlateDecode>>stream\nx\x9c\xcb\x00"
            b"\nendstream\n", path="receipts/broken.pdf")
    found = judge(campaign, BUDGET)
    assert len(found) == 1
    expect_finding(found, "budget-consistent.receipt-unreadable", where=f"{WHERE}.source.file",
                   says=("its receipt receipts/broken.pdf is a PDF ", "cannot be checked"))


# ------------------------------------------------------------- reading a receipt


@pytest.mark.parametrize(
    ("text", "dates"),
    [
        ("Date: 2026-12-03", [date(2026, 12, 3)]),
        ("Issued 2026/12/03, due 2027.01.02", [date(2026, 12, 3), date(2027, 1, 2)]),
        ("Date : 3 décembre 2026", [date(2026, 12, 3)]),
        ("Dec. 3rd, 2026", [date(2026, 12, 3)]),
        ("03/12/2026", [date(2026, 3, 12), date(2026, 12, 3)]),  # day or month first
        ("25/12/2026", [date(2026, 12, 25)]),
        ("INV-2026-311, 12.00 USD, 10:30", []),
        ("Date : 6 déc. 2026, échéance 5 janv. 2027", [date(2026, 12, 6), date(2027, 1, 5)]),
        ("Invoice date: 06-Dec-2026", [date(2026, 12, 6)]),
        ("Rechnungsdatum: 3. Dezember 2026", [date(2026, 12, 3)]),
        ("Fecha: 3 de diciembre de 2026", [date(2026, 12, 3)]),
        ("2026年12月3日", [date(2026, 12, 3)]),
        ("03 Dec 26", [date(2026, 12, 3)]),
        ("Datum: 21. Nov. 2026, fällig 5. Jan. 2027", [date(2026, 11, 21), date(2027, 1, 5)]),
    ],
)
def test_receipt_dates(text: str, dates: list[date]) -> None:
    assert receipt_dates(text) == dates


@pytest.mark.parametrize(
    ("text", "reference", "stated"),
    [
        ("FACTURE N° F-2026-1207", "F2026-1207", True),  # as the provider's dashboard shows it
        ("Commande : cmd 88412", "CMD-88412", True),
        ("Invoice INV/4471 (order PO-2026-093)", "po2026093", True),
        ("Order reference: ORD-11111", "ORD-88213", False),
        ("Invoice XF-2026-12070", "F-2026-1207", False),  # letters and digits stay whole
    ],
)
def test_a_reference_is_stated_whatever_its_punctuation(
    text: str, reference: str, stated: bool
) -> None:
    assert states_reference(text, reference) is stated


def test_issuer_and_provider() -> None:
    assert receipt_issuer("INVOICE\nSeller: Northbridge Ltd\nBuyer: x\n") == "Northbridge Ltd"
    assert receipt_issuer("Facture\nFournisseur : Stockage SAS\n") == "Stockage SAS"
    assert receipt_issuer("Thanks for your order\n") is None
    assert expense_provider(STORAGE) == "Northbridge Object Storage"
    assert expense_provider("extra disk for the rental") is None


def test_the_example_receipt_proves_its_expense() -> None:
    from example_campaign.report import STORAGE_INVOICE, receipt_text

    text = receipt_text(STORAGE_INVOICE, datetime(2026, 12, 3, 10, 35, 49, tzinfo=UTC))
    assert receipt_issuer(text) == STORAGE_INVOICE.seller
    assert receipt_dates(text) == [date(2026, 12, 3)]


# ------------------------------------------------------------- the receipt's recorded facts

GERMAN = ("Amazon Web Services EMEA SARL\nRechnung Nr. 40715\nRechnungsdatum: 21. November "
          "2026\nKunde: Kampagne tiny-2026-11\nS3-Bucket, 5 GB\nGesamtbetrag: 1,20 USD "
          "(1.20)\n")
CHINESE = ("发票 40715\n开票日期\uff1a2026年11月21日\n销售方\uff1a北桥对象存储\n合计\uff1a1.20 "
           "USD\n")  # full-width colons, as printed


def _manifest_with(campaign: CampaignBuilder, **source: str) -> list[str]:
    from pytest_itera.core.campaign import validate

    include(campaign, invoice(), **source)
    root = campaign.write()
    return validate("manifest", json.loads((root / "manifest.json").read_text()))


@pytest.mark.parametrize(
    ("facts", "field"),
    [
        ({"issued_on": "3 Dec 2026"}, "issued_on"),
        ({"issued_on": ""}, "issued_on"),
        ({"issued_by": " "}, "issued_by"),
        ({"amount_as_written": ""}, "amount_as_written"),
        ({"kind": "guess"}, "kind"),
    ],
)
def test_the_schema_refuses_a_malformed_fact(campaign: CampaignBuilder, facts: dict[str, str],
                                             field: str) -> None:
    problems = _manifest_with(campaign, **facts)
    assert problems
    assert all(field in p for p in problems), problems


def test_the_schema_takes_the_facts(campaign: CampaignBuilder) -> None:
    assert _manifest_with(campaign, issued_on="2026-11-21", issued_by="Northbridge",
                          amount_as_written="1.20 USD", kind="paid") == []


@pytest.mark.parametrize(
    ("facts", "code", "says"),
    [
        pytest.param({"issued_by": "Coldvault Storage Ltd"}, "budget-consistent.receipt-issued-by",
                     f"its receipt {RECEIPT} does not state its source.issued_by 'Coldvault "
                     "Storage Ltd'", id="issued-by"),
        pytest.param({"amount_as_written": "1,20 €"},
                     "budget-consistent.receipt-amount-as-written",
                     f"its receipt {RECEIPT} does not state its source.amount_as_written "
                     "'1,20 €'", id="amount-as-written"),
        pytest.param({"reference": "ORD-11111"}, "budget-consistent.receipt-reference",
                     f"its receipt {RECEIPT} does not state its source reference 'ORD-11111'",
                     id="reference"),
        pytest.param({"issued_on": "2025-03-20"}, "budget-consistent.receipt-issued-on",
                     "its receipt is issued on 2025-03-20 (source.issued_on), outside the "
                     "campaign's window", id="issued-on"),
        pytest.param({"issued_on": "2026-02-30"}, "budget-consistent.receipt-issued-on",
                     "its source.issued_on '2026-02-30' is not a calendar date", id="not-a-date"),
    ],
)
def test_a_recorded_fact_the_receipt_does_not_bear_out_fails(
    campaign: CampaignBuilder, facts: dict[str, str], code: str, says: str
) -> None:
    """The one finding, at the recorded fact: its field."""
    include(campaign, invoice(), **facts)
    found = judge(campaign, BUDGET)
    assert len(found) == 1, [f.render() for f in found]
    field = next(iter(facts))
    expect_finding(found, code, where=f"{WHERE}.source.{field}",
                   says=[f"included expense '{STORAGE}' (1.20 USD): ", says])


@pytest.mark.parametrize(
    "facts",
    [
        pytest.param({"issued_by": "northbridge   OBJECT storage"}, id="issued-by"),
        pytest.param({"amount_as_written": "1.20 usd"}, id="amount-as-written"),
        pytest.param({"reference": "ORD 88213"}, id="reference"),
        pytest.param({"issued_on": "2026-11-21"}, id="issued-on"),
    ],
)
def test_a_recorded_fact_the_receipt_bears_out_passes(
    campaign: CampaignBuilder, facts: dict[str, str]
) -> None:
    include(campaign, invoice(), **facts)
    expect_no_finding(judge(campaign, BUDGET, strict=True))


def test_a_recorded_fact_replaces_its_reading(campaign: CampaignBuilder) -> None:
    """issued_on and issued_by recorded: the date and issuer lines are not read (a receipt
    dated 2025 by its text passes on its recorded date; the facts themselves decide)."""
    include(campaign, invoice(dated="2025-03-20", seller="Coldvault"),
            issued_on="2026-11-21", issued_by="Coldvault")
    assert advisories(campaign) == []


@pytest.mark.parametrize(
    ("receipt", "facts"),
    [
        pytest.param(GERMAN, {"issued_by": "Amazon Web Services EMEA SARL"}, id="german"),
        pytest.param(CHINESE, {"issued_on": "2026-11-21", "issued_by": "北桥对象存储"},
                     id="chinese-with-its-iso-date"),
    ],
)
def test_a_receipt_in_any_language_passes_on_its_facts(
    campaign: CampaignBuilder, receipt: str, facts: dict[str, str]
) -> None:
    include(campaign, receipt, label="AWS: S3 bucket", **facts)
    expect_no_finding(judge(campaign, BUDGET, strict=True))


def test_a_pdf_without_a_text_layer_cannot_prove_its_facts(campaign: CampaignBuilder) -> None:
    include(campaign, image_only_pdf(), path="receipts/scan.pdf", issued_on="2026-11-21",
            issued_by="Northbridge Object Storage")
    found = judge(campaign, BUDGET)
    assert len(found) == 1
    expect_finding(found, "budget-consistent.receipt-unreadable",
                   says="is a PDF without a text layer (a scanned image?), so what it proves")


def test_a_provider_named_by_its_initials_is_its_issuer(campaign: CampaignBuilder) -> None:
    include(campaign, invoice(seller="Amazon Web Services EMEA SARL", buyer="Jane Doe"),
            label="AWS: S3 bucket")
    assert advisories(campaign) == []


def test_another_company_s_letterhead_invoice_is_read_as_its_issuer_s(
    campaign: CampaignBuilder,
) -> None:
    """No Seller line: the letterhead names the issuer, another company than the label's."""
    letter = ("Coldvault Storage Ltd\n12 Harbour Street, Leith\n\nINVOICE 40715\n"
              "Date: 2026-11-21\nBuyer: campaign tiny-2026-11\nTotal paid: 1.20 USD\n")
    include(campaign, letter)
    only_advisory(campaign)
    finding = advises_then_fails(campaign, BUDGET, "budget-consistent.receipt-issuer")
    assert finding.where == f"{WHERE}.source.file"
    assert f"its receipt {RECEIPT} is headed by 'Coldvault Storage Ltd', another provider than " \
        "the expense names ('Northbridge Object Storage')" in finding.message
