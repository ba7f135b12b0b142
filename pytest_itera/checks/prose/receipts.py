"""Reading a receipt's text: its dates, its issuer, the campaign it is addressed to, and the
provider an expense's label names. Every reading here advises (budget-consistent's
``receipt-date``, ``receipt-issuer``, ``receipt-addressee``, ``receipt-other-campaign``);
the structured ``source.issued_on`` / ``source.issued_by`` decide instead, when recorded.

Tables (data first):

- :data:`MONTHS`: month names and abbreviations in English, French, German and Spanish.
- :data:`ISSUER_WORDS`: the words of a receipt's issuer line ("Seller:", "Vendeur :",
  "Verkäufer:", "Vendedor:" ...), English, French, German, Spanish.
- :data:`ISSUE_DATE_WORDS`: the words of the line that dates a receipt ("Invoice date:",
  "Date de facture :", "Rechnungsdatum:", "Fecha de factura:" ...), the same languages.
- :data:`BUYER_WORDS` / :data:`CAMPAIGN_WORDS`: a buyer line naming a campaign.
- :data:`TITLE_WORDS`: a document's title ("INVOICE", "Rechnung"), never its letterhead.
- :data:`LEGAL_FORMS`: legal forms and region words set aside when names are compared.

Dates are read as ISO ``2026-12-03`` (also ``/`` or ``.``), ``03/12/2026`` (day or month
first), ``3 December 2026`` / ``3. Dezember 2026`` / ``3 de diciembre de 2026`` /
``03 Dec 26`` (a two-digit year after a month name), ``December 3, 2026`` and
``2026年12月3日``.
"""

from __future__ import annotations

import re
from datetime import date

MONTHS: dict[str, int] = {
    # English
    "january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7,
    "august": 8, "september": 9, "october": 10, "november": 11, "december": 12,
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9,
    "sept": 9, "oct": 10, "nov": 11, "dec": 12,
    # French
    "janvier": 1, "février": 2, "fevrier": 2, "mars": 3, "avril": 4, "mai": 5, "juin": 6,
    "juillet": 7, "août": 8, "aout": 8, "septembre": 9, "octobre": 10, "novembre": 11,
    "décembre": 12, "decembre": 12, "janv": 1, "févr": 2, "fevr": 2, "avr": 4, "juil": 7,
    "déc": 12,
    # German
    "januar": 1, "jänner": 1, "februar": 2, "märz": 3, "maerz": 3, "juni": 6, "juli": 7,
    "oktober": 10, "dezember": 12, "mär": 3, "mrz": 3, "okt": 10, "dez": 12,
    # Spanish
    "enero": 1, "febrero": 2, "marzo": 3, "abril": 4, "mayo": 5, "junio": 6, "julio": 7,
    "agosto": 8, "septiembre": 9, "setiembre": 9, "octubre": 10, "noviembre": 11,
    "diciembre": 12, "ene": 1, "abr": 4, "ago": 8, "dic": 12,
}
ISSUER_WORDS = (
    "seller", "vendor", "supplier", "issued by", "issuer", "from", "provider", "sold by",
    "billed by", "vendeur", "fournisseur", "émetteur", "emetteur", "prestataire",
    "verkäufer", "verkaeufer", "lieferant", "anbieter", "rechnungssteller", "aussteller",
    "vendedor", "proveedor", "emisor", "emitido por",
)
ISSUE_DATE_WORDS = (
    "invoice date", "receipt date", "issue date", "billing date", "date", "date of issue",
    "issued", "issued on", "date de facture", "date de la facture", "date d'émission",
    "date d\u2019émission", "rechnungsdatum", "datum", "ausstellungsdatum", "belegdatum",
    "fecha", "fecha de factura", "fecha de emisión", "fecha de emision",
)
BUYER_WORDS = ("buyer", "client", "customer", "bill to", "billed to", "project", "projet",
               "acheteur", "kunde", "käufer", "projekt", "cliente", "comprador", "proyecto")
CAMPAIGN_WORDS = ("campaign", "campagne", "kampagne", "campaña", "campana")
TITLE_WORDS = ("invoice", "receipt", "tax invoice", "facture", "reçu", "recu", "rechnung",
               "quittung", "beleg", "factura", "recibo", "quote", "devis", "angebot",
               "presupuesto", "order", "commande", "bestellung", "pedido")
LEGAL_FORMS = frozenset({
    "ltd", "limited", "inc", "llc", "llp", "plc", "gmbh", "ag", "kg", "ug", "sa", "sas",
    "sarl", "sàrl", "bv", "nv", "corp", "corporation", "co", "company", "srl", "sl", "oy",
    "ab", "emea", "eu", "europe", "us", "uk"})


def _alternatives(words: tuple[str, ...]) -> str:
    return "|".join(re.escape(w).replace(r"\ ", r"[ \t]+")
                    for w in sorted(words, key=len, reverse=True))


_MONTH = "|".join(sorted(map(re.escape, MONTHS), key=len, reverse=True))
_ISO = re.compile(r"(?<!\d)(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?!\d)")
_NUMERIC = re.compile(r"(?<!\d)(\d{1,2})[-/.](\d{1,2})[-/.](\d{4})(?!\d)")
_DAY_MONTH = re.compile(rf"(?<!\w)(\d{{1,2}})(?:st|nd|rd|th|er)?\.?(?:\s+de)?(?:\s+|-)"
                        rf"({_MONTH})\.?,?(?:\s+de(?:l)?)?(?:\s+|-)(\d{{4}}|\d{{2}})(?!\d)",
                        re.IGNORECASE)
_MONTH_DAY = re.compile(rf"(?<!\w)({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})",
                        re.IGNORECASE)
_CJK = re.compile(r"(\d{4})\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*日")
_ISSUER = re.compile(rf"^[ \t]*(?:{_alternatives(ISSUER_WORDS)})[ \t]*:[ \t]*(\S[^\n]*)$",
                     re.IGNORECASE | re.MULTILINE)
_ISSUE_LINE = re.compile(rf"^\s*(?:{_alternatives(ISSUE_DATE_WORDS)})\s*:", re.IGNORECASE)
_CAMPAIGN_LINE = re.compile(
    rf"^[ \t]*(?:(?:{_alternatives(BUYER_WORDS)})[ \t]*:[ \t]*"
    rf"(?:{_alternatives(CAMPAIGN_WORDS)})[ \t]*:?|(?:{_alternatives(CAMPAIGN_WORDS)})[ \t]*:)"
    r"[ \t]*([\w][\w.-]*)", re.IGNORECASE | re.MULTILINE)
_TITLE = re.compile(rf"^\W*(?:{_alternatives(TITLE_WORDS)})\b", re.IGNORECASE)


def receipt_dates(text: str) -> list[date]:
    """Every calendar date the text states (see the module), in order of appearance."""
    found: list[tuple[int, date]] = []
    for pattern, order in ((_ISO, "ymd"), (_NUMERIC, "dmy"), (_DAY_MONTH, "dMy"),
                           (_MONTH_DAY, "Mdy"), (_CJK, "ymd")):
        for match in pattern.finditer(text):
            for day in _readings(match.groups(), order):
                found.append((match.start(), day))
    return [d for _, d in sorted(found)]


def _readings(groups: tuple[str | None, ...], order: str) -> list[date]:
    parts = dict(zip(order, groups, strict=True))
    year = int(parts["y"] or 0)
    if year < 100:
        year += 2000  # "03 Dec 26": a two-digit year after a month name
    if "M" in parts:
        month_day = [(MONTHS.get((parts["M"] or "").lower().rstrip(".")), int(parts["d"] or 0))]
    elif order == "dmy":  # 03/12/2026: day first (Europe) or month first (US)
        month_day = [(int(parts["m"] or 0), int(parts["d"] or 0)),
                     (int(parts["d"] or 0), int(parts["m"] or 0))]
    else:
        month_day = [(int(parts["m"] or 0), int(parts["d"] or 0))]
    out = []
    for month, day in month_day:
        try:
            out.append(date(year, month or 0, day))
        except ValueError:
            continue
    return out


def issue_dates(text: str) -> list[tuple[int, date]]:
    """The dates the receipt's own date lines state, with their line numbers: when it has
    such lines, they date it (another date it mentions, printed or served, does not)."""
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        if _ISSUE_LINE.match(line):
            out += [(number, d) for d in receipt_dates(line)]
    return out


def receipt_issuer(text: str) -> str | None:
    """Who issued the receipt, as its Seller/Vendor/From/... line says, or None."""
    match = _ISSUER.search(text)
    return match.group(1).strip() if match else None


def letterhead(text: str) -> str | None:
    """The name a receipt without an issuer line is headed by: its first line that is
    neither a title ("INVOICE 4471"), nor a date or a number, nor a labelled line."""
    for line in text.splitlines()[:5]:
        line = line.strip()
        if not line or _TITLE.match(line) or ":" in line or not re.search(r"[^\W\d_]{2}", line):
            continue
        return line
    return None


def addressed_campaign(text: str) -> str | None:
    """The campaign id a receipt's buyer line names ("Buyer: campaign rings-2026"), or None."""
    hit = _CAMPAIGN_LINE.search(text)
    return hit.group(1).rstrip(".") if hit is not None else None


def expense_provider(label: str) -> str | None:
    """The provider an expense's label names: the part before ':' (or ' - ', ' — ')."""
    head = re.split(r":| [-\u2013\u2014] ", label, maxsplit=1)
    if len(head) < 2 or not head[0].strip() or len(head[0].split()) > 6:
        return None
    return head[0].strip()


def words(text: str) -> list[str]:
    """The words of ``text``, case folded, legal forms aside."""
    return [w for w in re.findall(r"\w+", text.casefold()) if w not in LEGAL_FORMS]


def names(text: str, name: str) -> bool:
    """Whether ``text`` names ``name`` (case, punctuation and legal forms ignored)."""
    wanted = words(name)
    return bool(wanted) and f" {' '.join(wanted)} " in f" {' '.join(words(text))} "


def same_provider(provider: str, issuer: str) -> bool:
    """Whether an expense's provider and a receipt's issuer are one company: one names the
    other, or the provider is the issuer's initials ("AWS" and "Amazon Web Services EMEA
    SARL")."""
    if names(issuer, provider) or names(provider, issuer):
        return True
    short, long = words(provider), words(issuer)
    if len(short) != 1 or len(short[0]) < 2:
        return False
    initials = "".join(w[0] for w in long)
    return any(initials[:n] == short[0] for n in range(2, len(initials) + 1))
