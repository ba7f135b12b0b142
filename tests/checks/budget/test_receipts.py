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
from collections.abc import Callable
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


# A letterhead invoice without a Seller line: the letterhead names the issuer.
LETTERHEAD = ("Coldvault Storage Ltd\n12 Harbour Street, Leith\n\nINVOICE 40715\n"
              "Date: 2026-11-21\nBuyer: campaign tiny-2026-11\nTotal paid: 1.20 USD\n")
RENTAL_INVOICE = invoice(seller="IteraGPU", amount="47.14").replace(
    "bucket, 5 GB, one month", "IteraGPU RTX 4090, 3 days")
# Receipts in other languages, that their recorded facts prove.
GERMAN = ("Amazon Web Services EMEA SARL\nRechnung Nr. 40715\nRechnungsdatum: 21. November "
          "2026\nKunde: Kampagne tiny-2026-11\nS3-Bucket, 5 GB\nGesamtbetrag: 1,20 USD "
          "(1.20)\n")
CHINESE = ("发票 40715\n开票日期\uff1a2026年11月21日\n销售方\uff1a北桥对象存储\n合计\uff1a1.20 "
           "USD\n")  # full-width colons, as printed


# A reading of the receipt's text that advises by default and decides under strict text, at
# the receipt file: (the expense, the code, a few words; the finding's expected, found and a
# few words of its hint, None where not asserted).
@pytest.mark.parametrize(("arrange", "code", "says", "expected", "found", "hint"), [
    pytest.param(lambda c: include(c, invoice(buyer="campaign rings-2025-03", seller="Coldvault"),
                                   label="object storage for the outputs"),
                 "budget-consistent.receipt-addressee",
                 f"its receipt {RECEIPT} names neither the campaign 'tiny-2026-11' nor a provider "
                 "the expense names", "'tiny-2026-11' in the receipt",
                 "issued by 'Coldvault', addressed to neither", "record source.issued_by",
                 id="addressed-to-another-campaign"),
    pytest.param(lambda c: include(c, invoice(buyer="campaign rings-2025-03")),
                 "budget-consistent.receipt-other-campaign",
                 f"its receipt {RECEIPT} is addressed to campaign 'rings-2025-03', not "
                 "'tiny-2026-11'", None, "campaign 'rings-2025-03'", None,
                 id="of-the-provider-to-another-campaign"),
    pytest.param(lambda c: include(c, invoice(dated="2025-03-20")),
                 "budget-consistent.receipt-date",
                 f"its receipt {RECEIPT} is dated 2025-03-20, outside the campaign's window",
                 "a date from 2026-11-20 (frozen_at) to 2026-11-22 (closed_at), give or take 7 "
                 "days", "2025-03-20", "record source.issued_on",
                 id="dated-20-months-before-the-rental"),
    pytest.param(lambda c: include(c, invoice().replace("Date: 2026-11-21\n", "")),
                 "budget-consistent.receipt-date",
                 f"cannot prove the receipt's date from its text ({RECEIPT}); record issued_on",
                 None, None, None, id="without-a-date"),
    pytest.param(lambda c: include(c, invoice(seller="Coldvault Storage Ltd")),
                 "budget-consistent.receipt-issuer",
                 "is issued by 'Coldvault Storage Ltd', another provider than the expense names "
                 "('Northbridge Object Storage')", "a receipt issued by 'Northbridge Object "
                 "Storage'", "issued by 'Coldvault Storage Ltd'", "record source.issued_by",
                 id="issued-by-another-provider"),
    pytest.param(lambda c: include(c, LETTERHEAD), "budget-consistent.receipt-issuer",
                 f"its receipt {RECEIPT} is headed by 'Coldvault Storage Ltd', another provider "
                 "than the expense names ('Northbridge Object Storage')", None, None, None,
                 id="another-company-s-letterhead"),
])
def test_a_receipt_read_as_not_proving_its_expense_advises(
    campaign: CampaignBuilder, arrange: Callable[[CampaignBuilder], object], code: str,
    says: str, expected: str | None, found: str | None, hint: str | None,
) -> None:
    arrange(campaign)
    only_advisory(campaign)
    finding = advises_then_fails(campaign, BUDGET, code)
    assert finding.where == f"{WHERE}.source.file"
    assert says in finding.message
    assert expected is None or finding.expected == expected
    assert found is None or finding.found == found
    assert hint is None or hint in (finding.hint or ""), finding.hint


# The one finding, deciding by default: (the expense, the code, where, a few words; the
# finding's found, None where not asserted).
@pytest.mark.parametrize(("arrange", "code", "where", "says", "found"), [
    # the rental lot never comes back as an included expense
    pytest.param(lambda c: include(c, RENTAL_INVOICE, label="compute for the campaign",
                                   amount="47.14", path="receipts/iteragpu-invoice.txt"),
                 "budget-consistent.rental-as-expense", WHERE,
                 ("included expense 'compute for the campaign' (47.14 USD) is the rental lot "
                  "'rtx4090-3d'", "its receipt receipts/iteragpu-invoice.txt is 'IteraGPU''s "
                  "invoice"), None, id="rental-lot-relisted-with-the-provider-s-invoice"),
    pytest.param(lambda c: include(c, invoice(seller="IteraGPU", amount="47.14"),
                                   label="IteraGPU: GPU time", amount="47.14"),
                 "budget-consistent.rental-as-expense", WHERE,
                 "the same amount (47.14) and provider ('IteraGPU', in its label)", None,
                 id="rental-lot-relisted-under-the-provider-s-name"),
    # a receipt that cannot be read
    pytest.param(lambda c: include(c, image_only_pdf(), path="receipts/scan.pdf"),
                 "budget-consistent.receipt-unreadable", f"{WHERE}.source.file",
                 ("its receipt receipts/scan.pdf is a PDF without a text layer",
                  "cannot be checked"), "is a PDF without a text layer (a scanned image?)",
                 id="pdf-without-a-text-layer"),
    pytest.param(lambda c: include(c, b"%PDF-1.7\n1 0 obj<</Length 9/Filter/FlateDecode>>stream"
                                   b"\nx\x9c\xcb\x00\nendstream\n", path="receipts/broken.pdf"),
                 "budget-consistent.receipt-unreadable", f"{WHERE}.source.file",
                 ("its receipt receipts/broken.pdf is a PDF ", "cannot be checked"), None,
                 id="broken-pdf"),
    pytest.param(lambda c: include(c, image_only_pdf(), path="receipts/scan.pdf",
                                   issued_on="2026-11-21", issued_by="Northbridge Object Storage"),
                 "budget-consistent.receipt-unreadable", f"{WHERE}.source.file",
                 "is a PDF without a text layer (a scanned image?), so what it proves", None,
                 id="pdf-without-a-text-layer-cannot-prove-its-facts"),
    # a recorded fact the receipt does not bear out: at its field
    pytest.param(lambda c: include(c, invoice(), issued_by="Coldvault Storage Ltd"),
                 "budget-consistent.receipt-issued-by", f"{WHERE}.source.issued_by",
                 f"its receipt {RECEIPT} does not state its source.issued_by 'Coldvault "
                 "Storage Ltd'", None, id="fact-issued-by"),
    pytest.param(lambda c: include(c, invoice(), amount_as_written="1,20 €"),
                 "budget-consistent.receipt-amount-as-written", f"{WHERE}.source.amount_as_written",
                 f"its receipt {RECEIPT} does not state its source.amount_as_written '1,20 €'",
                 None, id="fact-amount-as-written"),
    pytest.param(lambda c: include(c, invoice(), reference="ORD-11111"),
                 "budget-consistent.receipt-reference", f"{WHERE}.source.reference",
                 f"its receipt {RECEIPT} does not state its source reference 'ORD-11111'", None,
                 id="fact-reference"),
    pytest.param(lambda c: include(c, invoice(), issued_on="2025-03-20"),
                 "budget-consistent.receipt-issued-on", f"{WHERE}.source.issued_on",
                 "its receipt is issued on 2025-03-20 (source.issued_on), outside the "
                 "campaign's window", None, id="fact-issued-on"),
    pytest.param(lambda c: include(c, invoice(), issued_on="2026-02-30"),
                 "budget-consistent.receipt-issued-on", f"{WHERE}.source.issued_on",
                 "its source.issued_on '2026-02-30' is not a calendar date", None,
                 id="fact-issued-on-not-a-date"),
])
def test_a_receipt_that_does_not_prove_its_expense_is_refused(
    campaign: CampaignBuilder, arrange: Callable[[CampaignBuilder], object], code: str,
    where: str, says: str | tuple[str, ...], found: str | None,
) -> None:
    arrange(campaign)
    judged = judge(campaign, BUDGET)
    assert len(judged) == 1, [f.render() for f in judged]
    finding = expect_finding(judged, code, where=where, says=says)
    assert found is None or finding.found == found


# (the expense; whether it passes under strict text too, its readings then deciding)
@pytest.mark.parametrize(("arrange", "strict"), [
    pytest.param(lambda c: include(c, invoice()), False,
                 id="a-receipt-that-names-dates-and-issues-what-it-proves"),
    pytest.param(lambda c: include(c, invoice(buyer="Jane Doe",
                                              seller="Northbridge Object Storage Ltd")),
                 False, id="names-the-provider-not-the-campaign"),
    pytest.param(lambda c: include(c, invoice(dated="13 November 2026")), False,
                 id="a-week-before-the-freeze"),
    pytest.param(lambda c: include(c, invoice(dated="November 28, 2026")), False,
                 id="a-week-after-the-closure"),
    pytest.param(lambda c: include(c, text_pdf(*invoice().splitlines()), path="receipts/i.pdf"),
                 False, id="a-pdf-with-its-text-layer"),
    pytest.param(lambda c: include(c, invoice(seller="IteraGPU", amount="2.00"),
                                   label="IteraGPU: extra disk", amount="2.00"),
                 False, id="another-purchase-from-the-gpu-provider-is-an-expense"),
    pytest.param(lambda c: include(c, invoice().replace("bucket, 5 GB", "egress of the outputs, "
                                                        "5 GB"),
                                   label="egress: the outputs to the bucket"),
                 False, id="a-label-s-category-word-is-not-another-provider"),
    # a recorded fact the receipt bears out
    pytest.param(lambda c: include(c, invoice(), issued_by="northbridge   OBJECT storage"), True,
                 id="fact-issued-by"),
    pytest.param(lambda c: include(c, invoice(), amount_as_written="1.20 usd"), True,
                 id="fact-amount-as-written"),
    pytest.param(lambda c: include(c, invoice(), reference="ORD 88213"), True,
                 id="fact-reference"),
    pytest.param(lambda c: include(c, invoice(), issued_on="2026-11-21"), True,
                 id="fact-issued-on"),
    # a receipt in any language passes on its facts
    pytest.param(lambda c: include(c, GERMAN, label="AWS: S3 bucket",
                                   issued_by="Amazon Web Services EMEA SARL"), True,
                 id="german"),
    pytest.param(lambda c: include(c, CHINESE, label="AWS: S3 bucket", issued_on="2026-11-21",
                                   issued_by="北桥对象存储"), True,
                 id="chinese-with-its-iso-date"),
])
def test_a_receipt_that_proves_its_expense_passes(
    campaign: CampaignBuilder, arrange: Callable[[CampaignBuilder], object], strict: bool
) -> None:
    arrange(campaign)
    expect_no_finding(judge(campaign, BUDGET, strict=strict))


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


def test_a_recorded_fact_replaces_its_reading(campaign: CampaignBuilder) -> None:
    """issued_on and issued_by recorded: the date and issuer lines are not read (a receipt
    dated 2025 by its text passes on its recorded date; the facts themselves decide)."""
    include(campaign, invoice(dated="2025-03-20", seller="Coldvault"),
            issued_on="2026-11-21", issued_by="Coldvault")
    assert advisories(campaign) == []


def test_a_provider_named_by_its_initials_is_its_issuer(campaign: CampaignBuilder) -> None:
    include(campaign, invoice(seller="Amazon Web Services EMEA SARL", buyer="Jane Doe"),
            label="AWS: S3 bucket")
    assert advisories(campaign) == []
