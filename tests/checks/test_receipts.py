"""Issue 24, point 11: receipts say what they prove (budget-consistent).

An included expense's receipt names the campaign or the expense's provider, is dated in the
campaign's window (frozen_at to closed_at, give or take 7 days), is issued by the provider
the expense names, and can be read (text, or a PDF's text layer); the rental lot never comes
back as an included expense. Each rule has a failing campaign whose message is asserted and
a passing twin, judged in-process (pytest_itera.report.verify.check_campaign).
"""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from pytest_itera.checks.receipts import (
    expense_provider,
    receipt_dates,
    receipt_issuer,
    states_reference,
)
from pytest_itera.report.verify import check_campaign
from tests.checks.test_budget_checks import CHECK, budget
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
            amount: str = "1.20", path: str = RECEIPT) -> None:
    """One included expense with its receipt file, and a consistent cost per deliverable."""
    campaign.files[path] = receipt.encode() if isinstance(receipt, str) else receipt
    total = 47.14 + float(amount)
    budget(campaign, included_expenses=[{"label": label, "amount": amount,
                                         "source": {"file": path}}],
           cost_per_deliverable=f"{total:.2f}")


def problems(campaign: CampaignBuilder, *, strict_text: bool = False) -> list[str]:
    verdict = check_campaign(campaign.write(), strict_text=strict_text)
    return [p.finding.render() for p in verdict.findings if p.check == CHECK]


def advisories(campaign: CampaignBuilder) -> list[str]:
    """The readings of the receipt's text that advise (and fail nothing by default)."""
    verdict = check_campaign(campaign.write())
    assert [p.finding.render() for p in verdict.findings if p.check == CHECK] == []
    return [p.finding.render() for p in verdict.advisories if p.check == CHECK]


def advises(campaign: CampaignBuilder, code: str) -> list[str]:
    """A prose reading's finding: an advisory with ``code`` by default, the same failure
    under strict text; its rendered lines."""
    verdict = check_campaign(campaign.write())
    assert [p.finding.render() for p in verdict.findings if p.check == CHECK] == []
    advised = [p.finding for p in verdict.advisories if p.check == CHECK]
    assert [f.code for f in advised] == [code]
    assert problems(campaign, strict_text=True) == [advised[0].render()]
    return [advised[0].render()]


def test_a_receipt_that_names_dates_and_issues_what_it_proves_passes(
    campaign: CampaignBuilder,
) -> None:
    include(campaign, invoice())
    assert problems(campaign) == []


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
    assert problems(campaign) == []


def test_the_rental_lot_relisted_with_the_provider_s_invoice_is_refused(
    campaign: CampaignBuilder,
) -> None:
    rental = invoice(seller="IteraGPU", amount="47.14").replace(
        "bucket, 5 GB, one month", "IteraGPU RTX 4090, 3 days")
    include(campaign, rental, label="compute for the campaign", amount="47.14",
            path="receipts/iteragpu-invoice.txt")
    assert problems(campaign) == [
        f"{WHERE}: included expense 'compute for the campaign' (47.14 USD) is the rental lot "
        "'rtx4090-3d' (IteraGPU RTX 4090, 3 days, 47.14 x 1 USD): the same amount (47.14), "
        "and its receipt receipts/iteragpu-invoice.txt is 'IteraGPU''s invoice for the lot\n"
        "    expected: the lot in budget.lots only (the rental_total holds it)\n"
        "    found:    listed again as an included expense\n"
        "    fix:      a rental lot is paid once, as the rental: remove it from "
        "included_expenses (included expenses are what the campaign paid beside the lots)",
    ]


def test_the_rental_lot_relisted_under_the_provider_s_name_is_refused(
    campaign: CampaignBuilder,
) -> None:
    include(campaign, invoice(seller="IteraGPU", amount="47.14"),
            label="IteraGPU: GPU time", amount="47.14")
    assert problems(campaign)[0].startswith(
        f"{WHERE}: included expense 'IteraGPU: GPU time' (47.14 USD) is the rental lot "
        "'rtx4090-3d' (IteraGPU RTX 4090, 3 days, 47.14 x 1 USD): the same amount (47.14) and "
        "provider ('IteraGPU', in its label)")


def test_another_purchase_from_the_gpu_provider_is_an_expense(campaign: CampaignBuilder) -> None:
    include(campaign, invoice(seller="IteraGPU", amount="2.00"),
            label="IteraGPU: extra disk", amount="2.00")
    assert problems(campaign) == []


def test_a_receipt_addressed_to_another_campaign_is_refused(campaign: CampaignBuilder) -> None:
    receipt = invoice(buyer="campaign rings-2025-03", seller="Coldvault")
    include(campaign, receipt, label="object storage for the outputs")
    assert advises(campaign, "budget-consistent.receipt-addressee") == [
        f"{WHERE}.source.file: included expense 'object storage for the outputs' (1.20 USD): "
        f"its receipt {RECEIPT} names neither the campaign 'tiny-2026-11' nor a provider the "
        "expense names (its label names none: write '<provider>: <item>') (it is issued by "
        "'Coldvault')\n"
        "    expected: 'tiny-2026-11' in the receipt\n"
        "    found:    issued by 'Coldvault', addressed to neither\n"
        "    fix:      attach the receipt of this campaign's expense: it names the campaign (its "
        "id, as the buyer's reference) or the provider the label names; record "
        "source.issued_by (the issuer as the receipt writes it) to decide",
    ]


def test_a_receipt_dated_20_months_before_the_rental_is_refused(
    campaign: CampaignBuilder,
) -> None:
    include(campaign, invoice(dated="2025-03-20"))
    assert advises(campaign, "budget-consistent.receipt-date") == [
        f"{WHERE}.source.file: included expense '{STORAGE}' (1.20 USD): its receipt {RECEIPT} "
        "is dated 2025-03-20, outside the campaign's window\n"
        "    expected: a date from 2026-11-20 (frozen_at) to 2026-11-22 (closed_at), give or "
        "take 7 days\n"
        "    found:    2025-03-20\n"
        "    fix:      attach the receipt of what this campaign paid: it is dated between the "
        "plan's freezing and the closure (an older or later receipt is another purchase); "
        "record source.issued_on to decide",
    ]


def test_a_receipt_without_a_date_says_it_cannot_prove_one(campaign: CampaignBuilder) -> None:
    include(campaign, invoice().replace("Date: 2026-11-21\n", ""))
    assert advises(campaign, "budget-consistent.receipt-date")[0].startswith(
        f"{WHERE}.source.file: included expense '{STORAGE}' (1.20 USD): cannot prove the "
        f"receipt's date from its text ({RECEIPT}); record issued_on\n")


def test_a_receipt_issued_by_another_provider_is_refused(campaign: CampaignBuilder) -> None:
    include(campaign, invoice(seller="Coldvault Storage Ltd"))
    assert advises(campaign, "budget-consistent.receipt-issuer") == [
        f"{WHERE}.source.file: included expense '{STORAGE}' (1.20 USD): its receipt {RECEIPT} "
        "is issued by 'Coldvault Storage Ltd', another provider than the expense names "
        "('Northbridge Object Storage')\n"
        "    expected: a receipt issued by 'Northbridge Object Storage'\n"
        "    found:    issued by 'Coldvault Storage Ltd'\n"
        "    fix:      attach the receipt of this expense, issued by the provider it was paid "
        "to (or name that provider in the label); record source.issued_by (the issuer as the "
        "receipt writes it) to decide",
    ]


def test_a_label_s_category_word_is_not_taken_for_another_provider(
    campaign: CampaignBuilder,
) -> None:
    include(campaign, invoice().replace("bucket, 5 GB", "egress of the outputs, 5 GB"),
            label="egress: the outputs to the bucket")
    assert problems(campaign) == []


def test_a_pdf_without_a_text_layer_cannot_be_read(campaign: CampaignBuilder) -> None:
    include(campaign, image_only_pdf(), path="receipts/scan.pdf")
    assert problems(campaign) == [
        f"{WHERE}.source.file: included expense '{STORAGE}' (1.20 USD): its receipt "
        "receipts/scan.pdf is a PDF without a text layer (a scanned image?), so what it proves "
        "(amount, campaign or provider, date) cannot be checked\n"
        "    expected: a receipt whose text can be read (a text file, or a PDF with a text "
        "layer)\n"
        "    found:    is a PDF without a text layer (a scanned image?)\n"
        "    fix:      ship the provider's receipt as text or as a PDF with its text (the one "
        "the provider sends, not a scan)",
    ]


def test_a_broken_pdf_cannot_be_read(campaign: CampaignBuilder) -> None:
    include(campaign, b"%PDF-1.7\n1 0 obj<</Length 9/Filter/FlateDecode>>stream\nx\x9c\xcb\x00"
            b"\nendstream\n", path="receipts/broken.pdf")
    found = problems(campaign)
    assert len(found) == 1
    assert found[0].startswith(f"{WHERE}.source.file: included expense '{STORAGE}' (1.20 USD): "
                               "its receipt receipts/broken.pdf is a PDF ")
    assert "cannot be checked" in found[0]


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
    from example_campaign.build import STORAGE_INVOICE
    from example_campaign.report import receipt_text

    text = receipt_text(STORAGE_INVOICE, datetime(2026, 12, 3, 10, 35, 49, tzinfo=UTC))
    assert receipt_issuer(text) == STORAGE_INVOICE.seller
    assert receipt_dates(text) == [date(2026, 12, 3)]
