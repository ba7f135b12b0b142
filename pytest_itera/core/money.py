"""Money, fixed-price lots and the cost of a useful result (rules R4 and R7).

Pure arithmetic on :class:`decimal.Decimal` with cents; no pytest import and
no float anywhere money flows. The plan and manifest keep money as decimal
strings ("47.14"); this module turns them into :class:`Money` exactly.

>>> two_lots = Money("47.14", "USD") * 2
>>> two_lots.format()
'94.28 USD'
>>> cost_per_deliverable(Money("47.14", "USD"), 2).format()
'23.57 USD'
>>> cost_per_deliverable(Money("47.14", "USD"), 0) is None
True

Rounding: a cost per deliverable is rounded to the cent with
``ROUND_HALF_UP`` (what a person computing by hand writes). Comparisons of a
stated ratio accept any value within half a cent of the exact quotient, so a
manifest written with Python's banker's rounding is not refused at exact ties.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from functools import total_ordering
from importlib import resources
from pathlib import Path
from typing import Any, Protocol

from pytest_itera.core.campaign import parse_json
from pytest_itera.core.text import is_blank

CENT = Decimal("0.01")
HALF_CENT = Decimal("0.005")
HOURS_PER_DAY = 24
CATALOGUE_FORMAT = "itera-catalogue/1"
EXAMPLE_CATALOGUE = "iteragpu-rtx4090.json"
_CURRENCY = re.compile(r"[A-Z]{3}")
# Twelve integer digits, as the contract's money pattern allows; a bound keeps
# every product and sum far inside Decimal's default 28-digit precision.
_MAX_AMOUNT = Decimal("999999999999.99")

Amount = str | Decimal | int


# -------------------------------------------------------------------- Money


@total_ordering
@dataclass(frozen=True, init=False)
class Money:
    """A non-negative amount of one currency, exact to the cent.

    Built from a decimal string, a :class:`~decimal.Decimal` or an int. A
    float is refused (it cannot hold 47.14 exactly); so are negative, NaN and
    infinite amounts, and more than two decimals (input is never rounded).
    """

    amount: Decimal
    currency: str

    def __init__(self, amount: Amount, currency: str) -> None:
        object.__setattr__(self, "amount", _cents(amount))
        object.__setattr__(self, "currency", _currency(currency))

    @classmethod
    def zero(cls, currency: str) -> Money:
        return cls(0, currency)

    @classmethod
    def parse(cls, text: str) -> Money:
        """The inverse of :meth:`format`: ``"47.14 USD"`` -> ``Money("47.14", "USD")``."""
        amount, _, currency = text.partition(" ")
        if not currency:
            raise ValueError(f"{text!r} is not an amount and a currency like '47.14 USD'")
        return cls(amount, currency)

    def format(self) -> str:
        """``"47.14 USD"``: the amount with two decimals, then the currency."""
        return f"{self} {self.currency}"

    def __str__(self) -> str:
        return f"{self.amount:f}"

    def __repr__(self) -> str:
        return f"Money({str(self)!r}, {self.currency!r})"

    def __add__(self, other: Money) -> Money:
        if not isinstance(other, Money):
            return NotImplemented
        return Money(self.amount + other.amount, self._same(other, "add"))

    def __radd__(self, other: int) -> Money:
        # sum() starts from the int 0; any other left operand is a mistake.
        if isinstance(other, int) and not isinstance(other, bool) and other == 0:
            return self
        return NotImplemented

    def __mul__(self, times: int) -> Money:
        if not isinstance(times, int) or isinstance(times, bool):
            return NotImplemented
        if times < 0:
            raise ValueError(f"cannot multiply {self.format()} by a negative count ({times})")
        return Money(self.amount * times, self.currency)

    __rmul__ = __mul__

    def __lt__(self, other: Money) -> bool:
        if not isinstance(other, Money):
            return NotImplemented
        self._same(other, "compare")
        return self.amount < other.amount

    def _same(self, other: Money, verb: str) -> str:
        if other.currency != self.currency:
            raise ValueError(
                f"cannot {verb} {self.format()} and {other.format()}: currencies differ"
            )
        return self.currency


def _cents(value: object) -> Decimal:
    amount = _decimal(value)
    if not amount.is_finite():
        raise ValueError(f"money must be a finite amount, not {value!r}")
    if amount < 0:
        raise ValueError(f"money cannot be negative: {value!r}")
    if amount > _MAX_AMOUNT:
        raise ValueError(f"{value!r} is over the largest amount accepted ({_MAX_AMOUNT})")
    cents = amount.quantize(CENT)
    if cents != amount:
        raise ValueError(f"{value!r} has more than two decimals; money is exact to the cent")
    return abs(cents)  # abs() turns a "-0.00" into "0.00"


def _decimal(value: object) -> Decimal:
    if isinstance(value, float):
        raise TypeError(
            f"money from a float ({value!r}) is refused: a float cannot hold cents exactly; "
            f"use a string such as '{value}'"
        )
    if isinstance(value, bool) or not isinstance(value, str | Decimal | int):
        raise TypeError(f"money is built from a decimal string, a Decimal or an int, not {value!r}")
    try:
        return Decimal(value)
    except InvalidOperation:
        raise ValueError(f"{value!r} is not a decimal amount like '47.14'") from None


def _currency(code: object) -> str:
    if not isinstance(code, str) or not _CURRENCY.fullmatch(code):
        raise ValueError(f"currency {code!r} is not a three-letter code like 'USD'")
    return code


def to_money(value: Money | Amount, currency: str) -> Money:
    """``value`` as :class:`Money` of ``currency`` (a Money of another currency is refused)."""
    if isinstance(value, Money):
        if value.currency != currency:
            raise ValueError(f"{value.format()} is not in the budget's currency {currency}")
        return value
    return Money(value, currency)


# --------------------------------------------------------------------- lots


class PricedLot(Protocol):
    """What a lot needs for its cost; :class:`pytest_itera.core.campaign.Lot` satisfies it."""

    @property
    def price(self) -> Money | Amount: ...

    @property
    def quantity(self) -> int: ...


class GroupedLot(PricedLot, Protocol):
    """A priced lot with its composition; :class:`pytest_itera.core.campaign.Lot` satisfies it."""

    @property
    def gpus_per_lot(self) -> int: ...


class DatedLot(Protocol):
    """A lot or an offer with a duration (``campaign.Lot`` and :class:`Offer` satisfy it)."""

    @property
    def days(self) -> int: ...


class Priced(Protocol):
    """Anything with an amount: ``campaign.Expense`` satisfies it."""

    @property
    def amount(self) -> Money | Amount: ...


@dataclass(frozen=True)
class Offer:
    """One entry of a catalogue: a fixed price for a fixed duration (R4).

    ``gpus_per_lot`` describes the composition only: a lot of two B200 GPUs
    is priced once, never twice.
    """

    offer: str
    gpu: str
    gpus_per_lot: int
    days: int
    price: Money

    @property
    def hours(self) -> int:
        return lot_hours(self)

    def describe(self) -> str:
        """``"the 7-day lot (110.00 USD)"``, as messages name an offer."""
        return f"the {self.days}-day lot ({self.price.format()})"


def lot_hours(lot: DatedLot) -> int:
    """The hours a lot covers: its days * 24. Quantity buys parallel machines, not time."""
    return lot.days * HOURS_PER_DAY


def lot_cost(lot: PricedLot, currency: str) -> Money:
    """Price * quantity. GPUs per lot are deliberately not a factor (R4)."""
    return to_money(lot.price, currency) * lot.quantity


def rental_total(lots: Iterable[PricedLot], currency: str) -> Money:
    """The engaged rental: Σ price * quantity over ``lots``, exact to the cent."""
    return sum((lot_cost(lot, currency) for lot in lots), Money.zero(currency))


def expenses_total(expenses: Iterable[Priced], currency: str) -> Money:
    """Σ of the expenses' amounts (kept apart from the rental by the caller)."""
    return sum((to_money(e.amount, currency) for e in expenses), Money.zero(currency))


def engaged_total(
    lots: Iterable[PricedLot], currency: str, included: Iterable[Priced] = ()
) -> Money:
    """What the campaign engaged: the rental plus the expenses actually included.

    External expenses are never part of it (R7): pass only ``included_expenses``.
    """
    return rental_total(lots, currency) + expenses_total(included, currency)


# ------------------------------------------------------- useful result (R7)


def cost_per_deliverable(total: Money, accepted: int) -> Money | None:
    """``total`` / ``accepted``, rounded half up to the cent; ``None`` when none is accepted.

    ``None`` means *undefined*: a campaign with zero accepted deliverables has
    no ratio, and it is never shown as a zero cost.
    """
    if isinstance(accepted, bool) or not isinstance(accepted, int):
        raise TypeError(f"the accepted count is an int, not {accepted!r}")
    if accepted < 0:
        raise ValueError(f"the accepted count cannot be negative ({accepted})")
    return _ratio(total, accepted) if accepted else None


def _ratio(total: Money, accepted: int) -> Money:
    return Money((total.amount / accepted).quantize(CENT, ROUND_HALF_UP), total.currency)


def ratio_matches(stated: Money, total: Money, accepted: int) -> bool:
    """Whether ``stated`` is within half a cent of ``total / accepted`` (either rounding)."""
    if accepted <= 0:
        return False
    stated._same(total, "compare")
    return abs(stated.amount * accepted - total.amount) <= HALF_CENT * accepted


def distinct_deliverables(keys: Iterable[str]) -> int:
    """How many different deliverables ``keys`` name: a corpus replayed five times is one."""
    return len(set(keys))


def rental_total_problem(
    stated: Money,
    lots: Iterable[GroupedLot],
    external: Iterable[Priced] = (),
) -> str | None:
    """Why a stated rental total is wrong, naming the usual mistakes; None when exact.

    ``lots`` are the engaged lots; ``external`` the external expenses, which
    must never be part of the rental (R7).
    """
    lots, currency = list(lots), stated.currency
    expected = rental_total(lots, currency)
    if stated == expected:
        return None
    per_gpu = sum(
        (lot_cost(lot, currency) * lot.gpus_per_lot for lot in lots), Money.zero(currency)
    )
    outside = expenses_total(external, currency)
    head = f"rental total {stated.format()} is not the sum of price * quantity, {expected.format()}"
    if stated == per_gpu:
        return f"{head}: it multiplies prices by GPUs per lot, but a lot is priced once"
    if outside.amount and stated == expected + outside:
        return f"{head}: it adds the external expenses ({outside.format()}); list them apart"
    return head


def ratio_problem(
    stated: Money | None,
    total: Money,
    accepted: int,
    unit: str = "corpus",
    rejection_cause: str | None = None,
) -> str | None:
    """Why a stated cost per deliverable is wrong (R7); None when it is right.

    Zero accepted: no ratio, a non-zero engaged cost and a rejection cause. A
    research decision reports its conclusion, not a ratio. Otherwise the ratio
    is within half a cent of ``total / accepted``.
    """
    if unit == "decision":
        return None if stated is None else (
            f"a research decision reports its conclusion, not a cost per deliverable "
            f"({stated.format()})"
        )
    if accepted == 0:
        return _zero_accepted_problem(stated, total, rejection_cause)
    expected = _ratio(total, accepted).format()
    if stated is None:
        return f"{accepted} accepted deliverable(s) but no cost per deliverable ({expected})"
    if not ratio_matches(stated, total, accepted):
        return (
            f"cost per deliverable {stated.format()} is not {total.format()} / {accepted} "
            f"= {expected}"
        )
    return None


def _zero_accepted_problem(stated: Money | None, total: Money, cause: str | None) -> str | None:
    if stated is not None:
        return (
            f"zero accepted deliverables but a cost per deliverable of {stated.format()}: "
            "the ratio is undefined (null)"
        )
    if not total.amount:
        return "zero accepted deliverables and a zero engaged cost: show the cost actually engaged"
    if not cause or placeholder_reference(cause):
        return (
            f"zero accepted deliverables ({total.format()} engaged) without a rejection cause"
            + (f" ({cause!r} is a placeholder, not a cause)" if cause and not is_blank(cause)
               else "")
        )
    return None


# ------------------------------------------------------ hourly billing (R4)

# A price is never hours x a rate: the arithmetic below reads a lot's price as a pro-rata or
# a round hourly rate (a diagnosis beside the catalogue's price). Hourly billing *written in
# words* is a reading of text: pytest_itera.checks.prose.hourly.


def prorata_reading(price: Money, hours: int, offers: Iterable[Offer]) -> str | None:
    """How a price is a catalogue offer's price cut to other hours, or None:
    "62.85 USD = 47.14 USD / 72 h x 96 h, a pro-rata of the 3-day lot (47.14 USD)". A quote
    for another duration that lands on the cent of that pro-rata is billing by the hour
    dressed as a lot, whatever reference it cites."""
    if hours <= 0:
        return None
    for offer in offers:
        if offer.hours == hours or offer.price.currency != price.currency:
            continue
        exact = offer.price.amount * hours / offer.hours
        if abs(exact - price.amount) < CENT:
            return (f"{price.format()} = {offer.price.format()} / {offer.hours} h x {hours} h, "
                    f"a pro-rata of {offer.describe()}")
    return None


def hourly_reading(price: Money, hours: int, offers: Iterable[Offer] = ()) -> str | None:
    """How a price that is not the catalogue's reads as hourly billing, or None.

    "78.57 USD = 47.14 USD / 72 h x 120 h, a pro-rata of the 3-day lot (47.14 USD)", or
    "46.80 USD = 72 h x 0.65 USD/h". Only a diagnosis: a lot is priced by its offer.
    """
    if hours <= 0:
        return None
    prorata = prorata_reading(price, hours, offers)
    if prorata is not None:
        return prorata
    rate = price.amount / hours
    if price.amount and rate == rate.quantize(Decimal("0.001")):
        return f"{price.format()} = {hours} h x {rate.normalize():f} {price.currency}/h"
    return None


_PLACEHOLDER = re.compile(
    r"n/?a|none|nil|null|tb[cd]|todo|unknown|pending|missing|not provided|non fourni|"
    r"inconnue?|aucune?|à venir|-+|\?+|x+|0+|\.+", re.IGNORECASE
)


def placeholder_reference(reference: str | None) -> bool:
    """True when a source reference is a placeholder ("n/a", "TBD", "-", blank), not a
    reference."""
    if reference is None:
        return False
    return is_blank(reference) or _PLACEHOLDER.fullmatch(reference.strip()) is not None


# ----------------------------------------------- a lot against the catalogue (R4)


def _key(text: str) -> str:
    """Case, spaces and punctuation ignored: "RTX-4090" and "rtx 4090" are one GPU."""
    return re.sub(r"[\W_]+", "", text.casefold())


@dataclass(frozen=True)
class OfferMatch:
    """The catalogue offer a lot is, and how it was recognised ("offer name", "GPU and days")."""

    offer: Offer
    by: str


def catalogue_offer(
    catalogue: Catalogue, offer: str, gpu: str, days: int, *, quoted: bool = False
) -> OfferMatch | None:
    """The catalogue offer a lot is, or None when it is not in the catalogue.

    1. The same offer name (case, spaces and punctuation ignored) is that offer.
    2. Otherwise the same GPU model (same normalisation) for the same days is that offer,
       unless the lot has its own quote (``quoted``: a source) and its offer does not name
       the catalogue's provider: another provider's lot of the same GPU and duration.
    A lot matched either way must carry the offer's price, days and GPUs per lot.
    """
    name = _key(offer)
    for candidate in catalogue.offers:
        if _key(candidate.offer) == name:
            return OfferMatch(candidate, "offer name")
    if quoted and _key(catalogue.provider) not in name:
        return None
    for candidate in catalogue.offers:
        if _key(candidate.gpu) == _key(gpu) and candidate.days == days:
            return OfferMatch(candidate, "GPU and days")
    return None


# ------------------------------------------------- deliverables per corpus (R7)

DELIVERING_ROLES = frozenset({"control", "variant"})


@dataclass(frozen=True)
class Delivery:
    """An accepted run and the corpus its predictions cover."""

    run: str
    role: str  # the planned role: only control and variant runs deliver
    corpus: str  # the corpus id it names
    content: str  # the corpus's content digest (its sha256)
    passed: bool = True  # accepted and passed its own checks


def deliverables_per_corpus(deliveries: Iterable[Delivery]) -> dict[str, tuple[str, ...]]:
    """Content digest -> the runs that deliver it: one deliverable per distinct corpus.

    Only control and variant runs that passed deliver (a data check, pilot or resume check
    never does); a corpus replayed, or named under another id with the same content, is one
    deliverable however many runs deliver it.
    """
    out: dict[str, list[str]] = {}
    for d in deliveries:
        if d.passed and d.role in DELIVERING_ROLES:
            out.setdefault(d.content, []).append(d.run)
    return {content: tuple(runs) for content, runs in out.items()}


# -------------------------------------------------------------- catalogues


class CatalogueError(ValueError):
    """A catalogue file that cannot be used; the message names the JSON path."""


@dataclass(frozen=True)
class Catalogue:
    """Fixed-price offers of one provider, in one currency, loaded from data."""

    provider: str
    currency: str
    offers: tuple[Offer, ...]
    source: str | None = None
    notes: Mapping[str, str] = field(default_factory=dict)

    def for_gpu(self, gpu: str) -> Catalogue:
        """The offers of one GPU model only."""
        kept = tuple(o for o in self.offers if o.gpu == gpu)
        return Catalogue(self.provider, self.currency, kept, self.source, self.notes)


def smallest_covering(catalogue: Catalogue, hours: float | int | Decimal) -> Offer | None:
    """The shortest offer whose days * 24 ≥ ``hours`` (a tie goes to the cheaper), or None.

    Monotone: more hours never select a shorter lot. Filter the catalogue with
    :meth:`Catalogue.for_gpu` when it mixes GPU models.
    """
    need = _hours(hours)
    covering = [o for o in catalogue.offers if o.hours >= need]
    if not covering:
        return None
    return min(covering, key=lambda o: (o.days, o.price.amount, o.offer))


@dataclass(frozen=True)
class LotOption:
    """A catalogue offer that covers some hours, and the hours it leaves idle."""

    offer: Offer
    idle_hours: Decimal

    @property
    def price(self) -> Money:
        return self.offer.price


def lot_options(hours: float | int | Decimal, catalogue: Catalogue) -> list[LotOption]:
    """Every offer of ``catalogue`` whose days * 24 cover ``hours``, cheapest first.

    Ties go to the shorter lot, then the offer's name. A lot's price covers its
    whole duration (R4): idle hours are time paid for and not used, never a refund
    or an hourly rate. Quantity buys parallel machines, not time, so no combination
    of lots is offered. Filter with :meth:`Catalogue.for_gpu` first when the
    catalogue mixes GPU models.

    >>> [(o.offer.days, o.price.format(), o.idle_hours) for o in
    ...  lot_options(78, example_catalogue())]
    [(7, '110.00 USD', Decimal('90')), (30, '390.00 USD', Decimal('642'))]
    """
    need = _hours(hours)
    fitting = [LotOption(o, Decimal(o.hours) - need) for o in catalogue.offers if o.hours >= need]
    return sorted(fitting, key=lambda o: (o.price.amount, o.offer.days, o.offer.offer))


def overflow_advice(
    hours: float | int | Decimal, lot: DatedLot, catalogue: Catalogue | None = None
) -> str | None:
    """What to say when ``hours`` exceed ``lot``; None when the lot covers them.

    "78 h exceeds the 3-day lot (72 h) by 6 h: consider the 7-day lot
    (110.00 USD) or a reduced protocol".
    """
    need, capacity = _hours(hours), lot_hours(lot)
    if need <= capacity:
        return None
    head = (
        f"{_h(need)} h exceeds the {lot.days}-day lot ({capacity} h) by {_h(need - capacity)} h"
    )
    bigger = smallest_covering(catalogue, need) if catalogue is not None else None
    if bigger is not None:
        return f"{head}: consider {bigger.describe()} or a reduced protocol"
    return (
        f"{head}: no single lot of the catalogue covers it; consider a reduced protocol "
        "(two lots can host independent variants but never shorten one run)"
    )


def load_catalogue(path: Path | str) -> Catalogue:
    """Read a catalogue JSON file (see ``catalogues/iteragpu-rtx4090.json``).

    Prices must be decimal strings; a float price, an unknown field, a
    duplicate key or a duplicate offer raises :class:`CatalogueError`.
    """
    path = Path(path)
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CatalogueError(f"{path}: cannot be read ({exc})") from None
    return parse_catalogue(text, str(path))


def example_catalogue() -> Catalogue:
    """The shipped IteraGPU RTX 4090 catalogue (prices as SPEC R4 quotes them)."""
    ref = resources.files("pytest_itera").joinpath("catalogues", EXAMPLE_CATALOGUE)
    return parse_catalogue(ref.read_text("utf-8"), EXAMPLE_CATALOGUE)


def parse_catalogue(text: str, name: str = "<catalogue>") -> Catalogue:
    try:
        data = parse_json(text)  # the contract's strict JSON: no duplicate keys, no NaN
    except (ValueError, RecursionError) as exc:
        raise CatalogueError(f"{name}: not acceptable JSON: {exc}") from None
    return catalogue_from_data(data, name)


def catalogue_from_data(data: Any, name: str = "<catalogue>") -> Catalogue:
    """Build a :class:`Catalogue` from parsed JSON, naming the JSON path of any problem."""
    top = _object(
        data, name, "$", required={"format", "provider", "currency", "offers"},
        optional={"source", "notes"},
    )
    if top["format"] != CATALOGUE_FORMAT:
        raise CatalogueError(
            f"{name} $.format: expected {CATALOGUE_FORMAT!r}, got {top['format']!r}"
        )
    currency = _field(name, "$.currency", top["currency"], _currency)
    offers = top["offers"]
    if not isinstance(offers, list) or not offers:
        raise CatalogueError(f"{name} $.offers: a non-empty list of offers is expected")
    built = tuple(_offer(o, name, f"$.offers[{i}]", currency) for i, o in enumerate(offers))
    _no_duplicate_offers(built, name)
    return Catalogue(
        provider=_text(top["provider"], name, "$.provider"),
        currency=currency,
        offers=built,
        source=_text(top["source"], name, "$.source") if "source" in top else None,
        notes=_notes(top.get("notes", {}), name),
    )


def _offer(data: Any, name: str, where: str, currency: str) -> Offer:
    keys = {"offer", "gpu", "gpus_per_lot", "days", "price"}
    entry = _object(data, name, where, required=keys, optional=set())
    price = entry["price"]
    if not isinstance(price, str):
        raise CatalogueError(
            f"{name} {where}.price: {price!r} is a {type(price).__name__}; "
            f"write prices as decimal strings (\"{price}\")"
        )
    return Offer(
        offer=_text(entry["offer"], name, f"{where}.offer"),
        gpu=_text(entry["gpu"], name, f"{where}.gpu"),
        gpus_per_lot=_count(entry["gpus_per_lot"], name, f"{where}.gpus_per_lot"),
        days=_count(entry["days"], name, f"{where}.days"),
        price=_field(name, f"{where}.price", price, lambda p: Money(p, currency)),
    )


def _no_duplicate_offers(offers: tuple[Offer, ...], name: str) -> None:
    seen: set[tuple[str, int]] = set()
    for offer in offers:
        key = (offer.gpu, offer.days)
        if key in seen:
            raise CatalogueError(f"{name}: two {offer.gpu} offers of {offer.days} days")
        seen.add(key)


def _object(
    data: Any, name: str, where: str, *, required: set[str], optional: set[str]
) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise CatalogueError(f"{name} {where}: an object is expected")
    missing, unknown = required - data.keys(), data.keys() - required - optional
    if missing:
        raise CatalogueError(f"{name} {where}: missing {', '.join(sorted(missing))}")
    if unknown:
        raise CatalogueError(f"{name} {where}: unknown field {', '.join(sorted(unknown))}")
    return data


def _field(name: str, where: str, value: Any, build: Any) -> Any:
    try:
        return build(value)
    except (TypeError, ValueError) as exc:
        raise CatalogueError(f"{name} {where}: {exc}") from None


def _text(value: Any, name: str, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise CatalogueError(f"{name} {where}: a non-empty string is expected")
    return value


def _count(value: Any, name: str, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise CatalogueError(f"{name} {where}: a positive integer is expected, not {value!r}")
    return value


def _notes(value: Any, name: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise CatalogueError(f"{name} $.notes: an object of strings is expected")
    return dict(value)


# -------------------------------------------------------------------- hours


def _hours(value: float | int | Decimal) -> Decimal:
    # Same conversion as pytest_itera.core.schedule.as_hours (kept here so money
    # does not import schedule): a float's shortest repr, so 0.1 stays 0.1.
    if isinstance(value, bool):
        raise TypeError("hours are a number, not a bool")
    hours = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    if not hours.is_finite() or hours < 0:
        raise ValueError(f"hours must be finite and non-negative, not {value!r}")
    return hours


def _h(value: Decimal) -> str:
    """Hours without a useless exponent or trailing zeros: 78, 6.5."""
    return f"{value.normalize():f}"
