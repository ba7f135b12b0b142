"""Hourly billing written in words ("billed per hour", "0.65 USD/h", "facturé à l'heure").

Lots are fixed-price (R4). Whether a lot *is* billed by the hour is decided from structure by
budget-consistent: the lot's catalogue offer, its price against the offer's (a pro-rata, or
hours x a round rate: :func:`pytest_itera.core.money.hourly_reading`), an included expense
priced as a catalogue lot cut to hours. This reading only says that a text of plan.json or
manifest.json *writes* a rate per hour: it advises.

One table, :data:`HOURLY_PHRASES`, English, French, German and Spanish (tests/checks/prose/
test_hourly.py has examples for each row); users add literal phrases through the
``pytest_itera_hourly_phrases`` hook. Decisions, tested both ways:

- "/h" is a unit, not a path: "/home", "/hf/x" and "runs/h/x" are not billing.
- "hourly" alone bills; "hourly-resolution", "hourly-checkpoints" (a compound whose second
  word is not a billing word) do not; "hourly-billed", "hourly-rate" do.
- "GPU-hours" alone is a quantity ("72 GPU-hours"); "GPU-hours at 0.65" is a rate, "72
  GPU-hours at a fixed price" is not.
- French "horaire" alone means a timetable; "tarif horaire", "taux horaire" bill.
- A phrase denied just before it ("no hourly rate", "pas de facturation à l'heure", "kein
  Stundensatz", "sin tarifa por hora") is not billing: :data:`NEGATIONS`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["HOURLY_PHRASES", "NEGATIONS", "HourlyHit", "HourlyMatcher", "Phrase",
           "hourly_billing", "hourly_rate_phrase"]

_UNIT = r"(?:h|hrs?|hours?)"
_CODES = r"(?:usd|eur|gbp|chf|jpy|cad|aud|cny|inr|sek|nok|dkk|pln|dollars?|euros?)"
_SYMBOLS = r"[€$£¥]"
_BILLING_WORDS = r"(?:billed|billing|priced|pricing|rated?|rates|charged?|charges|fees?|costs?)"
_FIXED = r"(?:an?\s+)?(?:fixed|flat|set|lump|single|one)\b"


@dataclass(frozen=True)
class Phrase:
    """One way of writing a rate per hour: its name in the table and its pattern."""

    name: str
    pattern: re.Pattern[str]

    @classmethod
    def literal(cls, text: str) -> Phrase:
        """A user's phrase (the ``pytest_itera_hourly_phrases`` hook): literal, any case."""
        return cls(text, re.compile(re.escape(text), re.IGNORECASE))


def _phrase(name: str, regex: str, flags: int = re.IGNORECASE) -> Phrase:
    return Phrase(name, re.compile(regex, flags))


HOURLY_PHRASES: tuple[Phrase, ...] = (
    # A currency code per hour; case-sensitive so that it names a code ("usd/h" is still "/h").
    _phrase("USD/h",
            r"\b[A-Z]{3}\s*/\s*(?i:h|hrs?|hours?|heures?|std|stunden?|horas?)(?![\w/])", 0),
    _phrase("€/h", rf"{_SYMBOLS}\s*/\s*(?:h|hrs?|hours?|heures?|std|stunden?|horas?)(?![\w/])"),
    _phrase("/h", r"/\s*h(?![\w/])"),
    _phrase("/hr", r"/\s*(?:hrs?|hours?)(?![\w/])"),
    _phrase("/heure", r"/\s*heures?\b"),
    _phrase("per GPU-hour", rf"\bper\s+gpu[\s-]*{_UNIT}\b|/\s*gpu[\s-]*{_UNIT}\b"),
    _phrase("per hour", rf"\bper[\s-]+{_UNIT}\b"),
    _phrase("GPU-hours at", rf"\bgpu[\s-]*{_UNIT}\s*(?:at\b(?!\s+{_FIXED})|@)"),
    _phrase("hourly", rf"\bhourly(?:-{_BILLING_WORDS}\b|(?![\w-]))"),
    _phrase("an hour", rf"(?:{_SYMBOLS}|\b{_CODES})\s+an?\s+hour\b"),
    _phrase("for each hour", r"\b(?:for|per)\s+(?:each|every)\s+(?:gpu[\s-]*)?hours?\b"
            r"|\b(?:each|every)\s+(?:gpu[\s-]*)?hour\s+(?:at\b|@|costs?\b|billed\b)"),
    _phrase("hours at <amount>", rf"\b{_UNIT}\s+(?:at|@)\s*(?:{_SYMBOLS}\s*\d|"
            rf"\d+(?:[.,]\d+)?\s*(?:{_SYMBOLS}|{_CODES}\b))"),
    # French
    _phrase("par heure", r"\bpar\s+heures?\b"),
    _phrase("à l'heure", r"\b(?:à|a)\s+l['\u2019]\s*heure\b"),
    _phrase("tarif horaire", r"\b(?:tarif|taux|co[uû]t|prix|facturation)\s+horaire\b"),
    # German
    _phrase("pro Stunde", r"\b(?:pro|je)\s+(?:gpu-?)?stunde\b|/\s*std\b(?![/])\.?"),
    _phrase("Stundensatz", r"\bstunden(?:satz|s[äa]tze|preis|tarif|lohn)\b|\bstündlich\s+"
            r"(?:abgerechnet|berechnet|bezahlt)\b"),
    # Spanish
    _phrase("por hora", r"\bpor\s+(?:cada\s+)?hora\b|/\s*hora\b(?!/)"),
    _phrase("tarifa horaria", r"\b(?:tarifa|precio|coste|costo|cobro)\s+(?:horari[oa]|"
            r"por\s+hora)\b"),
)

# Words that deny the phrase right after them, in the four languages: "no hourly rate",
# "not billed per hour", "pas de tarif horaire", "kein Stundensatz", "sin cobro por hora".
NEGATIONS = re.compile(
    r"\b(?:no|not|never|without|non|pas|sans|jamais|ni|kein|keine|keinen|nicht|ohne|nie|"
    r"sin|nunca)\b(?:[^\w.;!?]+\w+){0,3}[^\w.;!?]*$", re.IGNORECASE)

# An amount with its currency: what makes a sentence of free text money-bearing.
_MONEY_MENTION = re.compile(
    rf"\d\s*(?:{_SYMBOLS}|{_CODES}(?![a-z]))|(?:{_SYMBOLS}|\b{_CODES})\s*\d", re.IGNORECASE
)
# Sentences: split at . ; ! ? and newlines, except a decimal point ("47.14").
_SENTENCE_END = re.compile(r"(?<!\d)[.;!?\n]|[.;!?\n](?!\d)")
_RATE_NAMES = frozenset({"USD/h", "€/h"})  # a currency per hour is money by itself


@dataclass(frozen=True)
class HourlyHit:
    """Where a text bills by the hour: the phrase of the table and the words found."""

    phrase: str
    found: str


class HourlyMatcher:
    """A set of phrases, compiled once, that finds hourly billing in texts."""

    def __init__(self, phrases: Iterable[Phrase] = HOURLY_PHRASES) -> None:
        self.phrases = tuple(phrases)
        parts = []
        for phrase in self.phrases:
            case = "i" if phrase.pattern.flags & re.IGNORECASE else "-i"
            parts.append(f"(?{case}:{phrase.pattern.pattern})")
        # One pass decides most strings (ids, paths); the phrases then name what was found.
        self._any = re.compile("|".join(parts) or "(?!)")

    def find(self, text: str, *, prose: bool = False) -> HourlyHit | None:
        """The first phrase of ``text`` that bills by the hour, or None.

        ``prose=False`` (a budget's strings: offers, expense labels, sources): any phrase
        bills. ``prose=True`` (notes, explanations, decisions): only in a sentence that
        also states an amount with its currency ("billed 0.65 USD per hour"), so that
        "checkpoints are saved hourly" is not billing.
        """
        if not self._any.search(text):
            return None
        if not prose:
            return _first_hit(text, self.phrases)
        start = 0
        for end in [m.start() for m in _SENTENCE_END.finditer(text)] + [len(text)]:
            sentence, start = text[start:end], end + 1
            hit = _first_hit(sentence, self.phrases)
            if hit is not None and (hit.phrase in _RATE_NAMES or _MONEY_MENTION.search(sentence)):
                return hit
        return None


_BUILT_IN = HourlyMatcher()


def hourly_billing(
    text: str, phrases: Iterable[Phrase] | None = None, *, prose: bool = False
) -> HourlyHit | None:
    """The first phrase of ``text`` that bills by the hour (built-in ``phrases`` by default),
    or None; see :meth:`HourlyMatcher.find`."""
    matcher = _BUILT_IN if phrases is None else HourlyMatcher(phrases)
    return matcher.find(text, prose=prose)


def _first_hit(text: str, phrases: tuple[Phrase, ...]) -> HourlyHit | None:
    best: tuple[int, int, HourlyHit] | None = None
    for phrase in phrases:
        for match in phrase.pattern.finditer(text):
            if NEGATIONS.search(text, 0, match.start()) is None:
                key = (match.start(), -len(match.group(0)))
                if best is None or key < best[:2]:
                    best = (*key, HourlyHit(phrase.name, match.group(0)))
                break
    return best[2] if best is not None else None


def hourly_rate_phrase(text: str) -> str | None:
    """The words of ``text`` that bill by the hour ("2.50 USD/h" -> "USD/h"), or None."""
    hit = hourly_billing(text)
    return hit.found if hit is not None else None
