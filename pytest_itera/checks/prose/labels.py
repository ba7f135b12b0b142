"""Reading an expense's label (and its source reference): does it say the amount was not
paid as such? It advises (budget-consistent's ``label-marker``); an expense's ``kind``
(:data:`EXPENSE_KINDS`) decides instead, when recorded.

The table, :data:`AMOUNT_MARKERS`, knows English and French words (and signs: ``~``,
``%``, ``x``). Each row says how a label declares an amount that is not one that was paid:

- "estimate" and "derived": the text itself says the amount is not what was paid
  ("estimated", "approx.", "~", "prorated", "computed").
- "rate", "tax", "transfer": a percentage, a unit rate, a tax or a transfer cost, accepted
  only with its receipt file (source.file), the document that states the amount.

A quantity and a duration ("2 TB x 1 month", "1 GPU x 3 days extension") describe what was
bought and are not read as an amount computed from a rate: only a number, a unit and a
multiplication followed by a money amount or a rate ("120 GB x 0.09") are.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# An expense's structured kind and what the check makes of it (budget-consistent, R7).
EXPENSE_KINDS: dict[str, str] = {
    "paid": "paid",  # an amount that was paid: its receipt states it
    "tax": "needs-receipt",  # a tax, stated by the invoice that bills it
    "transfer": "needs-receipt",  # a transfer cost (egress), stated by its invoice
    "rate": "needs-receipt",  # a percentage or a unit rate applied by the provider
    "estimate": "refused",  # not what was paid
    "derived": "refused",  # computed from other figures (prorated, quantity x rate)
    "refund": "refused",  # money returned, not paid: record the net amount paid
    "credit": "refused",  # a credit, not a payment
}


@dataclass(frozen=True)
class Marker:
    """One way a text declares an amount estimated or derived."""

    name: str
    kind: str  # estimate | derived | rate | tax | transfer
    pattern: re.Pattern[str]

    @property
    def needs_receipt(self) -> bool:
        """True: accepted with a receipt file; False: refused whatever the source."""
        return EXPENSE_KINDS[self.kind] == "needs-receipt"


def _marker(name: str, kind: str, regex: str) -> Marker:
    return Marker(name, kind, re.compile(regex, re.IGNORECASE))


_QUANTITY = r"\d\s*(?:gb|tb|mb|go|to|mo|h|hrs?|hours?|days?|jours?|gpus?)\s*[x\u00d7*]\s*"
AMOUNT_MARKERS: tuple[Marker, ...] = (
    _marker("estimated", "estimate", r"\bestimat(?:e|ed|es|ion|ing)\b"),
    _marker("approx", "estimate",
            r"\bapprox(?:imately|imate|imatif|imative|imativement)?\b\.?"),
    _marker("~", "estimate", r"(?<![\w/])~(?=\s*[\d€$£¥])|[≈≃]"),
    _marker("roughly", "estimate", r"\b(?:roughly|circa|ballpark|guess(?:ed|timate)?)\b"),
    _marker("environ", "estimate", r"\benviron\b|\benv\.\s*\d|\bà\s+peu\s+près\b"),
    _marker("estimé", "estimate", r"\bestim[ée]e?s?\b|\bapproximati(?:f|ve)\b"),
    _marker("provisional", "estimate",
            r"\b(?:provisional|provisoire|forecast|projected|pr[ée]visionnel(?:le)?|tb[cd])\b"),
    _marker("computed", "derived",
            r"\b(?:computed|calculated|derived|extrapolated|assumed|"
            r"calcul[ée]e?s?|extrapol[ée]e?s?|d[ée]duite?s?)\b"),
    _marker("prorated", "derived", r"\bpro[\s-]?rat(?:a|ed|ion|is[ée]e?)\b"),
    # a quantity times a price ("120 GB x 0.09", "72 h x 0.65"), never times a duration
    # or a count ("2 TB x 1 month", "1 GPU x 3 days")
    _marker("quantity x rate", "derived",
            _QUANTITY + r"(?:[€$£¥]\s*)?\d+(?:[.,]\d+)?(?!\s*(?:(?!usd|eur|gbp|chf)[a-z]|[.,]?\d))"
            r"|" + _QUANTITY + r"(?:[€$£¥]\s*)?\d+[.,]\d+"),
    _marker("%", "rate", r"\d\s*%|\bper\s?cent\b|\bpour\s?cent\b|\bpct\b"),
    _marker("per GB", "rate",
            r"\b(?:per|par)\s+(?:gb|tb|mb|go|to|mo)\b|/\s*(?:gb|tb|mb|go|to|mo)\b"),
    _marker("VAT", "tax",
            r"\b(?:vat|tva|gst|hst|pst|iva|mwst|taxe?s?|sales\s+tax|duty|duties|"
            r"droits?\s+de\s+douane)\b"),
    _marker("transfer", "transfer",
            r"\b(?:transfers?|transferts?|egress|ingress|bandwidth|bande\s+passante|data\s+out|"
            r"downloads?|uploads?|t[ée]l[ée]chargements?|sortie\s+de\s+donn[ée]es)\b"),
)


def amount_markers(*texts: str | None) -> tuple[Marker, ...]:
    """The rows of :data:`AMOUNT_MARKERS` that ``texts`` (a label, a reference) contain."""
    return tuple(m for m in AMOUNT_MARKERS
                 if any(t and m.pattern.search(t) for t in texts))


def marker_text(marker: Marker, *texts: str | None) -> str:
    """What ``marker`` found in ``texts`` (its name when none matches)."""
    for text in texts:
        match = marker.pattern.search(text) if text else None
        if match is not None:
            return match.group(0)
    return marker.name
