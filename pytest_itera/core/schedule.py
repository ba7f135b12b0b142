"""End-to-end schedules: makespan, lots' spans and the window (rules R3, R4, R6, R9).

Pure arithmetic, no pytest import. Hours are exact decimals: a float from
the plan becomes the decimal its shortest repr shows (``0.1`` is 0.1), so
"48 h in a 72 h window leave 24 h" holds exactly, never to 1e-15.

Model (list scheduling in the listed order):

- a step starts when every step of its ``after`` has ended *and* the
  previous step listed on the same resource has ended: two rows on one GPU
  never run in parallel, steps on different resources overlap;
- the makespan runs from the first start (always 0) to the last end. It is
  the campaign's *sequential hours*: from the start of preparation to the
  retrieval of results (R3), human steps included;
- a lot's clock runs from the first start to the last end of the steps that
  name it (``lot``). Human preparation before the rental names no lot, so it
  consumes the window but not the lot; it is still in the sequential hours.

Resources: ``human`` and ``network`` are off the rented machines; ``cpu`` (``cpu1``,
``disk``, ``storage``, ``host``, ``io``...) is the host of a rented machine; every other
resource is a GPU of a machine of the rental. A lot provides ``gpus_per_lot x quantity``
GPUs, so its steps may use at most that many distinct GPU resources
(:func:`capacity_excesses`). One run is never on two resources at once: the GPU steps
naming one ``run`` never overlap (:func:`run_overlaps`), even on two lots.

>>> from pytest_itera.core.campaign import Step
>>> t = makespan([Step("prep", "setup", "human", 8), Step("train", "training", "gpu0", 40,
...                                                        after=("prep",), lot="A")])
>>> t.makespan, uncommitted_hours(72, t), t.lot_hours("A")
(Decimal('48'), Decimal('24'), Decimal('40'))
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Protocol

from pytest_itera.core.campaign import Plan
from pytest_itera.core.money import lot_hours, overflow_advice

if TYPE_CHECKING:
    from pytest_itera.core.campaign import ActualStep, CheckpointPolicy, Lot, PlannedRun
    from pytest_itera.core.money import Catalogue

HUMAN = "human"
NETWORK = "network"
# Resources off the rented machines: time spent there occupies no GPU of a lot.
OFF_MACHINE = frozenset({HUMAN, NETWORK})
# A rented machine's host (CPU, disk, I/O): on the machine, but none of its GPUs.
_HOST = re.compile(r"(cpu|host|disk|storage|io)([\w.-]*)", re.IGNORECASE)
REQUIRED_KINDS = (
    "setup",
    "data_load",
    "validation",
    # Both ends of checkpoint I/O: the source puts save, transfer and restore
    # time in the schedule, and an early save is reloaded in a new process.
    "checkpoint_save",
    "checkpoint_restore",
    "output",
    "retrieval",
)
DEFAULT_TOLERANCE = Decimal("0.10")
# A tolerance above half the planned hours would hide a step that barely ran.
MAX_TOLERANCE = Decimal("0.5")
# Retrieval must come after these (through ``after``): the outputs and the checkpoint files.
RETRIEVED_KINDS = ("output", "checkpoint_save", "checkpoint_restore")

HoursLike = float | int | Decimal | str


class ScheduleError(ValueError):
    """A schedule that cannot be computed (unknown or cyclic dependencies, a deadlock)."""


class StepLike(Protocol):
    """A step: the plan's :class:`pytest_itera.core.campaign.Step`, or the
    :class:`ObservedStep` copy with observed or forecast hours that is laid out again."""

    @property
    def id(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def resource(self) -> str: ...

    @property
    def hours(self) -> HoursLike: ...

    @property
    def after(self) -> Sequence[str]: ...

    @property
    def lot(self) -> str | None: ...


def as_hours(value: HoursLike) -> Decimal:
    """Hours as an exact Decimal (a float through its shortest repr); finite, >= 0."""
    if isinstance(value, bool) or not isinstance(value, float | int | Decimal | str):
        raise TypeError(f"hours are a number, not {value!r}")
    try:
        hours = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    except ArithmeticError:
        raise ValueError(f"{value!r} is not a number of hours") from None
    if not hours.is_finite() or hours < 0:
        raise ValueError(f"hours must be finite and non-negative, not {value!r}")
    return hours


def hours_text(value: Decimal) -> str:
    """``78``, ``6.5``: hours without exponent or trailing zeros, for messages."""
    return f"{value.normalize():f}"


def in_hours(value: Decimal) -> str:
    """``78 h``, ``6.5 h``: hours with their unit, as every message about time writes them."""
    return f"{hours_text(value)} h"


# ------------------------------------------------------------------ timeline


@dataclass(frozen=True)
class Slot:
    """When one step runs in the computed schedule."""

    id: str
    kind: str
    resource: str
    lot: str | None
    start: Decimal
    end: Decimal
    run: str | None = None

    @property
    def hours(self) -> Decimal:
        return self.end - self.start

    def overlaps(self, other: Slot) -> bool:
        """Both run for a while at the same time (touching ends do not overlap)."""
        return self.start < other.end and other.start < self.end


@dataclass(frozen=True)
class Timeline:
    """The computed schedule: one slot per step, in the listed order."""

    slots: tuple[Slot, ...]
    makespan: Decimal
    busy: Mapping[str, Decimal]  # resource -> hours occupied
    lot_spans: Mapping[str, tuple[Decimal, Decimal]]  # lot -> (first start, last end)

    def slot(self, step_id: str) -> Slot:
        return next(s for s in self.slots if s.id == step_id)

    def lot_hours(self, lot: str) -> Decimal:
        """Hours the lot's clock runs: first start to last end of its steps (0 if unused)."""
        start, end = self.lot_spans.get(lot, (Decimal(0), Decimal(0)))
        return end - start

    @property
    def machine_hours(self) -> Decimal:
        """Busy hours on every resource but ``human``."""
        return sum((h for r, h in self.busy.items() if r != HUMAN), Decimal(0))

    @property
    def human_hours(self) -> Decimal:
        return self.busy.get(HUMAN, Decimal(0))

    def end_of(self, kind: str) -> Decimal | None:
        """When the last step of ``kind`` ends; None when there is none."""
        ends = [s.end for s in self.slots if s.kind == kind]
        return max(ends) if ends else None


def makespan(steps: Iterable[StepLike]) -> Timeline:
    """Schedule ``steps`` in the listed order and return the :class:`Timeline`.

    Raises :class:`ScheduleError` for a duplicate id, an unknown or self
    dependency, a dependency cycle, or a deadlock between a dependency and
    the listed order on one resource (a step that must wait for a step listed
    after it on the same resource).
    """
    steps = list(steps)
    hours = _validate(steps)
    waits = _waits(steps)
    order = _topological(steps, waits)
    ends: dict[str, Decimal] = {}
    starts: dict[str, Decimal] = {}
    for step_id in order:
        starts[step_id] = max((ends[p] for p, _ in waits[step_id]), default=Decimal(0))
        ends[step_id] = starts[step_id] + hours[step_id]
    slots = tuple(
        Slot(s.id, s.kind, s.resource, s.lot, starts[s.id], ends[s.id], _run_of(s))
        for s in steps
    )
    return Timeline(
        slots=slots,
        makespan=max(ends.values(), default=Decimal(0)),
        busy=_busy(slots),
        lot_spans=_lot_spans(slots),
    )


def _run_of(step: StepLike) -> str | None:
    """The run a step serves (``Step.run``); None for a step object without the field."""
    run = getattr(step, "run", None)
    return run if isinstance(run, str) else None


def _validate(steps: list[StepLike]) -> dict[str, Decimal]:
    hours: dict[str, Decimal] = {}
    for step in steps:
        if step.id in hours:
            raise ScheduleError(f"step id {step.id!r} is used twice; each step needs its own id")
        try:
            hours[step.id] = as_hours(step.hours)
        except (TypeError, ValueError) as exc:
            raise ScheduleError(f"step {step.id!r}: {exc}") from None
    for step in steps:
        for dep in step.after:
            if dep == step.id:
                raise ScheduleError(f"step {step.id!r} is listed in its own 'after'")
            if dep not in hours:
                raise ScheduleError(
                    f"step {step.id!r} comes after {dep!r}, which is not a step of the schedule"
                )
    return hours


# Each wait is (the step waited for, why): "after" or the shared resource.
_Waits = dict[str, list[tuple[str, str]]]


def _waits(steps: list[StepLike]) -> _Waits:
    waits: _Waits = {}
    last_on: dict[str, str] = {}
    for step in steps:
        waits[step.id] = [(dep, "after") for dep in step.after]
        if step.resource in last_on:
            waits[step.id].append((last_on[step.resource], f"resource {step.resource!r}"))
        last_on[step.resource] = step.id
    return waits


def _topological(steps: list[StepLike], waits: _Waits) -> list[str]:
    """Kahn's order (ties in listed order, so the result is deterministic)."""
    pending = {s.id: len({p for p, _ in waits[s.id]}) for s in steps}
    followers: dict[str, list[str]] = {s.id: [] for s in steps}
    for step_id, ws in waits.items():
        for p in {p for p, _ in ws}:
            followers[p].append(step_id)
    ready = [s.id for s in steps if pending[s.id] == 0]
    order: list[str] = []
    while ready:
        current = ready.pop(0)
        order.append(current)
        for nxt in followers[current]:
            pending[nxt] -= 1
            if pending[nxt] == 0:
                ready.append(nxt)
    if len(order) < len(steps):
        raise ScheduleError(_explain_cycle(steps, waits, set(order)))
    return order


def _explain_cycle(steps: list[StepLike], waits: _Waits, done: set[str]) -> str:
    cycle = _cycle(waits, [s.id for s in steps if s.id not in done])
    links = ", ".join(
        f"{a!r} waits for {b!r} ({why})" if why == "after"
        else f"{a!r} waits for {b!r} (listed before it on {why})"
        for a, b, why in cycle
    )
    if all(why == "after" for _, _, why in cycle):
        return f"dependency cycle: {links}; no order can run these steps"
    return (
        f"deadlock: {links}; steps on one resource run in listed order, "
        "so list a step after the steps it depends on"
    )


def _cycle(waits: _Waits, stuck: list[str]) -> list[tuple[str, str, str]]:
    """One cycle among the ``stuck`` steps, as (step, waited-for, why) links."""
    # Every stuck step waits for at least one stuck step, so walking those
    # waits must revisit a step: the walk from there is a cycle.
    stuck_set = set(stuck)
    seen: dict[str, int] = {}
    path: list[tuple[str, str, str]] = []
    current = stuck[0]
    while current not in seen:
        seen[current] = len(path)
        dep, why = next((p, w) for p, w in waits[current] if p in stuck_set)
        path.append((current, dep, why))
        current = dep
    return path[seen[current]:]


def _busy(slots: tuple[Slot, ...]) -> dict[str, Decimal]:
    busy: dict[str, Decimal] = {}
    for slot in slots:
        busy[slot.resource] = busy.get(slot.resource, Decimal(0)) + slot.hours
    return busy


def _lot_spans(slots: tuple[Slot, ...]) -> dict[str, tuple[Decimal, Decimal]]:
    spans: dict[str, tuple[Decimal, Decimal]] = {}
    for slot in slots:
        if slot.lot is None:
            continue
        start, end = spans.get(slot.lot, (slot.start, slot.end))
        spans[slot.lot] = (min(start, slot.start), max(end, slot.end))
    return spans


# ---------------------------------------------------------- window and lots


def sequential_hours(timeline: Timeline) -> Decimal:
    """From the start of preparation to the last step's end: the makespan (R3)."""
    return timeline.makespan


def uncommitted_hours(window: HoursLike, timeline: Timeline) -> Decimal:
    """Window minus makespan; negative when the schedule overflows the window."""
    return as_hours(window) - timeline.makespan


def window_overflow(window: HoursLike, timeline: Timeline) -> Decimal | None:
    """How many hours the makespan exceeds the window by; None when it fits."""
    excess = -uncommitted_hours(window, timeline)
    return excess if excess > 0 else None


def missing_kinds(steps: Iterable[StepLike]) -> tuple[str, ...]:
    """The :data:`REQUIRED_KINDS` that no step has, in that order."""
    present = {s.kind for s in steps}
    return tuple(k for k in REQUIRED_KINDS if k not in present)


def retrieval_end(timeline: Timeline) -> Decimal | None:
    """When the last retrieval step ends; None without one."""
    return timeline.end_of("retrieval")


def retrieval_inside_window(window: HoursLike, timeline: Timeline) -> bool:
    """Whether results are retrieved before the window closes (False without a retrieval)."""
    end = retrieval_end(timeline)
    return end is not None and end <= as_hours(window)


@dataclass(frozen=True)
class LotOverflow:
    """A lot whose steps run longer than the lot lasts."""

    lot: str
    days: int
    span: Decimal

    @property
    def capacity(self) -> int:
        return self.days * 24

    @property
    def excess(self) -> Decimal:
        return self.span - self.capacity

    def advice(self, catalogue: Catalogue | None = None) -> str:
        """"78 h exceeds the 3-day lot (72 h) by 6 h: consider the 7-day lot (110.00 USD) ..."."""
        return f"lot {self.lot!r}: {overflow_advice(self.span, self, catalogue)}"


def lot_overflows(lots: Iterable[Lot], timeline: Timeline) -> list[LotOverflow]:
    """The lots whose span in ``timeline`` exceeds their days * 24 hours."""
    return [
        LotOverflow(lot.id, lot.days, timeline.lot_hours(lot.id))
        for lot in lots
        if timeline.lot_hours(lot.id) > lot_hours(lot)
    ]


def lot_windows(
    lots: Iterable[Lot], timeline: Timeline | None
) -> list[tuple[Decimal, Decimal]]:
    """Each lot's reservation, ``[start, start + days * 24)``: its clock starts with the first
    of its steps in ``timeline`` and runs for its days. A lot that no step names (the plan's
    only lot, steps naming none), and every lot without a timeline, starts with the
    schedule, at 0."""
    spans = timeline.lot_spans if timeline is not None else {}
    windows = []
    for lot in lots:
        start = spans.get(lot.id, (Decimal(0), Decimal(0)))[0]
        windows.append((start, start + lot_hours(lot)))
    return windows


def union_hours(windows: Iterable[tuple[Decimal, Decimal]]) -> Decimal:
    """The measure of the union of ``[start, end)`` windows: an overlap counted once, a gap
    between two windows not at all."""
    total, reach = Decimal(0), None
    for start, end in sorted(windows):
        if reach is not None and start < reach:
            start = reach  # the part before ``reach`` is counted already
        if end > start:
            total += end - start
        reach = end if reach is None else max(reach, end)
    return total


def reserved_hours(lots: Sequence[Lot], steps: Iterable[StepLike]) -> Decimal:
    """The hours ``lots`` reserve for the schedule of ``steps`` (R4, R9): the union of their
    windows (:func:`lot_windows`). Lots side by side reserve one lot's days; two 3-day lots
    overlapping by 3 h reserve 141 h, never one lot's 72 h; two in turn with an 8 h gap
    between them 144 h, the gap not reserved. 0 without lots; a schedule that cannot be
    computed (schedule-fits reports it) puts every lot at 0."""
    try:
        timeline: Timeline | None = makespan(steps)
    except ScheduleError:
        timeline = None
    return union_hours(lot_windows(lots, timeline))


def unknown_lots(steps: Iterable[StepLike], lots: Iterable[Lot]) -> list[tuple[str, str]]:
    """(step id, lot id) for each step naming a lot the budget does not have."""
    known = {lot.id for lot in lots}
    return [(s.id, s.lot) for s in steps if s.lot is not None and s.lot not in known]


# ------------------------------------------------- machines, lots and runs (R3, R4)


def is_off_machine(resource: str) -> bool:
    """``human`` and ``network`` time occupies no machine of the rental."""
    return resource.strip().lower() in OFF_MACHINE


def is_host(resource: str) -> bool:
    """``cpu``, ``cpu1``, ``disk``...: the host of a rented machine, holding no GPU of the lot."""
    return _HOST.fullmatch(resource.strip()) is not None


def is_gpu(resource: str) -> bool:
    """Every resource that is neither off the machines nor a host CPU is a GPU of a lot."""
    return not is_off_machine(resource) and not is_host(resource)


def lot_capacity(lot: Lot) -> int:
    """The GPUs a lot provides at once: ``gpus_per_lot x quantity``."""
    return lot.gpus_per_lot * lot.quantity


def lot_of(step: StepLike, lots: Sequence[Lot]) -> str | None:
    """The lot a machine step runs on: the one it names, else the plan's only lot.

    None for an off-machine step, and for a machine step that names no lot in a plan
    of several lots (which lot is unknown: :func:`steps_without_lot`).
    """
    if is_off_machine(step.resource):
        return step.lot
    if step.lot is not None:
        return step.lot
    return lots[0].id if len(lots) == 1 else None


def steps_without_lot(steps: Iterable[StepLike], lots: Sequence[Lot]) -> list[str]:
    """GPU steps of a plan with several lots that name none: no one knows whose GPU they use."""
    if len(lots) < 2:
        return []
    return [s.id for s in steps if is_gpu(s.resource) and s.lot is None]


@dataclass(frozen=True)
class CapacityExcess:
    """A lot whose steps use more distinct GPU resources than it provides."""

    lot: str
    capacity: int
    resources: tuple[str, ...]  # the distinct GPU resources its steps use, sorted
    peak: int  # the most of them busy at the same time in the computed schedule

    @property
    def excess(self) -> int:
        return len(self.resources) - self.capacity


def capacity_excesses(
    steps: Iterable[StepLike], lots: Sequence[Lot], timeline: Timeline | None = None
) -> list[CapacityExcess]:
    """Lots whose steps name more distinct GPU resources than ``gpus_per_lot x quantity``.

    A 1-GPU lot with steps on ``gpu0`` and ``gpu1`` is refused: the schedule
    counts on a GPU the rental does not provide. ``peak`` (from ``timeline``, else
    0) says how many of them the computed schedule keeps busy at once.
    """
    steps = list(steps)
    used: dict[str, set[str]] = {}
    for step in steps:
        lot_id = lot_of(step, lots)
        if lot_id is not None and is_gpu(step.resource):
            used.setdefault(lot_id, set()).add(step.resource)
    found = []
    for lot in lots:
        resources = used.get(lot.id, set())
        if len(resources) > lot_capacity(lot):
            peak = _peak(timeline, lot, lots, steps) if timeline is not None else 0
            found.append(CapacityExcess(lot.id, lot_capacity(lot), tuple(sorted(resources)), peak))
    return found


def _peak(
    timeline: Timeline, lot: Lot, lots: Sequence[Lot], steps: list[StepLike]
) -> int:
    """The most distinct GPU resources of ``lot`` busy at one moment."""
    mine = {s.id for s in steps if lot_of(s, lots) == lot.id and is_gpu(s.resource)}
    slots = [slot for slot in timeline.slots if slot.id in mine and slot.hours > 0]
    return max(
        (len({o.resource for o in slots if o.start <= slot.start < o.end}) for slot in slots),
        default=0,
    )


@dataclass(frozen=True)
class RunOverlap:
    """Two GPU steps of one run scheduled at the same time (on two resources)."""

    run: str
    first: Slot
    second: Slot

    @property
    def hours(self) -> Decimal:
        """How long they overlap."""
        return min(self.first.end, self.second.end) - max(self.first.start, self.second.start)


def run_overlaps(timeline: Timeline) -> list[RunOverlap]:
    """Pairs of GPU steps naming the same ``run`` that overlap in ``timeline``.

    A run is never on two resources at once: two lots can host independent
    variants but never shorten one run. Steps off the GPUs (a human reviewing a
    run's curves, a CPU evaluating a saved checkpoint while it trains) may overlap it.
    """
    by_run: dict[str, list[Slot]] = {}
    for slot in timeline.slots:
        if slot.run is not None and is_gpu(slot.resource) and slot.hours > 0:
            by_run.setdefault(slot.run, []).append(slot)
    found = []
    for run, slots in by_run.items():
        for i, first in enumerate(slots):
            found += [RunOverlap(run, first, second) for second in slots[i + 1:]
                      if first.overlaps(second)]
    return found


def chain_runs(steps: Iterable[StepLike]) -> list[ObservedStep]:
    """The steps with each run's GPU steps chained in listed order (``after`` the previous).

    What a schedule that lets one run use two resources at once should say: laid out with
    :func:`makespan`, the result has no :func:`run_overlaps`.
    """
    chained: list[ObservedStep] = []
    last: dict[str, str] = {}
    for step in steps:
        after = tuple(step.after)
        run = _run_of(step)
        if run is not None and is_gpu(step.resource):
            if run in last and last[run] not in after:
                after = (*after, last[run])
            last[run] = step.id
        chained.append(ObservedStep(step.id, step.kind, step.resource, as_hours(step.hours),
                                    after, step.lot, run))
    return chained


# ------------------------------------------------------------ order (R3, R6)


def ancestors(steps: Iterable[StepLike]) -> dict[str, frozenset[str]]:
    """Each step's transitive ``after``: the steps that must end before it starts.

    Unknown ids are kept as they are written; a cycle simply makes its steps
    each other's ancestors (never an error here: :func:`makespan` reports it).
    """
    direct = {s.id: tuple(s.after) for s in steps}
    found: dict[str, frozenset[str]] = {}
    for start in direct:
        seen: set[str] = set()
        stack = list(direct[start])
        while stack:
            current = stack.pop()
            if current in seen:
                continue
            seen.add(current)
            stack.extend(direct.get(current, ()))
        found[start] = frozenset(seen)
    return found


@dataclass(frozen=True)
class RetrievalGap:
    """The retrieval that comes after the most outputs and checkpoints, and what it misses."""

    retrieval: str
    missing: tuple[str, ...]  # output / checkpoint steps it does not come after, listed order


def retrieval_gap(steps: Iterable[StepLike]) -> RetrievalGap | None:
    """None when some retrieval step comes after every output and checkpoint step.

    "After" means through ``after`` dependencies (transitively), not by the
    computed times: a retrieval that happens to end later can still start before
    the files it fetches exist. An earlier retrieval (copying a checkpoint away
    mid-campaign) is allowed; one retrieval must come after everything on the
    rented machines (a human writing notes off the machine has nothing to fetch).
    None too when there is no retrieval step at all (:func:`missing_kinds` names it).
    """
    steps = list(steps)
    closure = ancestors(steps)
    needed = [s.id for s in steps
              if s.kind in RETRIEVED_KINDS and not is_off_machine(s.resource)]
    best: RetrievalGap | None = None
    for step in steps:
        if step.kind != "retrieval":
            continue
        missing = tuple(n for n in needed if n != step.id and n not in closure[step.id])
        if not missing:
            return None
        if best is None or len(missing) <= len(best.missing):
            best = RetrievalGap(step.id, missing)
    return best


def restores_without_save(steps: Iterable[StepLike]) -> list[str]:
    """Checkpoint restore steps that come after no checkpoint save (through ``after``)."""
    steps = list(steps)
    saves = {s.id for s in steps if s.kind == "checkpoint_save"}
    if not saves:
        return []  # no save at all: missing_kinds says so
    closure = ancestors(steps)
    return [s.id for s in steps
            if s.kind == "checkpoint_restore" and not closure[s.id] & saves]


def unplanned_kinds(steps: Iterable[StepLike]) -> tuple[str, ...]:
    """Required kinds whose steps are all planned at 0 h (a 0 h checkpoint save is no plan)."""
    totals: dict[str, Decimal] = {}
    for step in steps:
        if step.kind in REQUIRED_KINDS:
            totals[step.kind] = totals.get(step.kind, Decimal(0)) + as_hours(step.hours)
    return tuple(k for k in REQUIRED_KINDS if k in totals and totals[k] <= 0)


# ------------------------------------------------------------ checkpoints (R6)


def worst_case_loss_hours(policy: CheckpointPolicy) -> Decimal:
    """Work lost by a crash during a save: the interval plus the save's own cost."""
    save = as_hours(policy.save_hours) if policy.save_hours is not None else Decimal(0)
    return as_hours(policy.interval_hours) + save


def max_save_interval(policy: CheckpointPolicy) -> Decimal:
    """The longest interval whose worst-case loss stays within the tolerable loss."""
    save = as_hours(policy.save_hours) if policy.save_hours is not None else Decimal(0)
    return as_hours(policy.tolerable_loss_hours) - save


def interval_respects_tolerable_loss(policy: CheckpointPolicy) -> bool:
    """Interval + save cost <= tolerable loss (R6: the interval follows from both)."""
    return worst_case_loss_hours(policy) <= as_hours(policy.tolerable_loss_hours)


# ------------------------------------------------------ planned vs actual (R9)


@dataclass(frozen=True)
class StepDeviation:
    """A step whose observed hours differ from the plan by more than the tolerance."""

    step: str
    planned: Decimal
    observed: Decimal
    ratio: Decimal | None  # (observed - planned) / planned; None when planned is 0

    def describe(self, tolerance: HoursLike = DEFAULT_TOLERANCE) -> str:
        change = "unplanned time" if self.ratio is None else f"{self.ratio * 100:+.0f} %"
        return (
            f"step {self.step!r} took {hours_text(self.observed)} h against "
            f"{hours_text(self.planned)} h planned ({change}), above the "
            f"{as_hours(tolerance) * 100:.0f} % tolerance"
        )


@dataclass(frozen=True)
class ObservedStep:
    """A planned step carrying its observed hours, to lay out with the plan's rules."""

    id: str
    kind: str
    resource: str
    hours: Decimal
    after: tuple[str, ...]
    lot: str | None
    run: str | None = None


def as_observed(steps: Iterable[StepLike], observed: Mapping[str, Decimal]) -> list[ObservedStep]:
    """The plan's steps with their observed hours (0 h for a step that did not run).

    ``makespan`` of the result is the actual timeline: same dependencies, same
    resource order, observed durations.
    """
    return [
        ObservedStep(s.id, s.kind, s.resource, observed.get(s.id, Decimal(0)),
                     tuple(s.after), s.lot, _run_of(s))
        for s in steps
    ]


def observed_hours(actual: Iterable[ActualStep]) -> dict[str, Decimal]:
    """``{step id: hours}`` from ``ActualStep`` records; a step recorded twice is summed."""
    out: dict[str, Decimal] = {}
    for record in actual:
        out[record.id] = out.get(record.id, Decimal(0)) + as_hours(record.observed_hours)
    return out


def deviations(
    planned: Iterable[StepLike],
    observed: Mapping[str, HoursLike],
    tolerance: HoursLike = DEFAULT_TOLERANCE,
) -> list[StepDeviation]:
    """Observed steps whose hours differ from the plan by more than ``tolerance`` * planned.

    Over- and under-runs both count. A step planned at 0 h that took time is a
    deviation with no ratio. Steps missing from either side are left to
    :func:`unobserved_steps` and :func:`unplanned_steps`.
    """
    tol = as_hours(tolerance)
    found = []
    for step in planned:
        if step.id not in observed:
            continue
        plan, seen = as_hours(step.hours), as_hours(observed[step.id])
        if abs(seen - plan) > tol * plan:
            ratio = (seen - plan) / plan if plan else None
            found.append(StepDeviation(step.id, plan, seen, ratio))
    return found


def bounded_tolerance(tolerance: HoursLike) -> Decimal:
    """The deviation tolerance, at most :data:`MAX_TOLERANCE` (0.5) whatever was asked."""
    return min(as_hours(tolerance), MAX_TOLERANCE)


@dataclass(frozen=True)
class ShortStep:
    """A planned step that did not run (0 h or no record) or ran less than half its hours."""

    step: str
    planned: Decimal
    observed: Decimal | None  # None: no observed entry at all

    @property
    def did_not_run(self) -> bool:
        return not self.observed

    def describe(self) -> str:
        if self.observed is None:
            return f"planned step {self.step!r} has no observed hours"
        if not self.observed:
            return (f"step {self.step!r} did not run (0 h observed against "
                    f"{hours_text(self.planned)} h planned)")
        return (f"step {self.step!r} ran {hours_text(self.observed)} h of "
                f"{hours_text(self.planned)} h planned, less than half")


def short_steps(
    planned: Iterable[StepLike], observed: Mapping[str, HoursLike]
) -> list[ShortStep]:
    """Steps that need an explanation whatever the tolerance (R9).

    A step planned at more than 0 h that has no observed entry, was observed at
    0 h, or ran less than half of its planned hours.
    """
    found = []
    for step in planned:
        plan = as_hours(step.hours)
        if step.id not in observed:
            found.append(ShortStep(step.id, plan, None))
            continue
        seen = as_hours(observed[step.id])
        if plan > 0 and seen * 2 < plan:
            found.append(ShortStep(step.id, plan, seen))
    return found


def unobserved_steps(planned: Iterable[StepLike], observed: Mapping[str, object]) -> list[str]:
    """Planned step ids with no observed hours."""
    return [s.id for s in planned if s.id not in observed]


def unplanned_steps(planned: Iterable[StepLike], observed: Mapping[str, object]) -> list[str]:
    """Observed step ids that the plan does not have, sorted."""
    known = {s.id for s in planned}
    return sorted(k for k in observed if k not in known)


# ------------------------------------------- before renting: lots, reductions, forecast


# Optional categories, in the order their runs are dropped (R2: must runs never are).
DROPPABLE = ("exploratory", "useful")
# Up to this many optional runs every subset is tried; beyond, a greedy search.
EXHAUSTIVE_RUNS = 12


@dataclass(frozen=True)
class LotUse:
    """How long a lot's clock runs in a timeline, against what the lot covers."""

    lot: str
    days: int
    span: Decimal
    # False: no step names a lot, so the machine steps' span is set against the longest lot.
    named: bool = True

    @property
    def capacity(self) -> int:
        return self.days * 24

    @property
    def excess(self) -> Decimal:
        """Hours beyond the lot (negative or zero: it fits)."""
        return self.span - self.capacity


def machine_span(timeline: Timeline) -> Decimal:
    """First start to last end of the steps off the ``human`` resource."""
    machine = [s for s in timeline.slots if s.resource != HUMAN]
    if not machine:
        return Decimal(0)
    return max(s.end for s in machine) - min(s.start for s in machine)


def lot_uses(lots: Sequence[Lot], timeline: Timeline) -> list[LotUse]:
    """Each lot's span in ``timeline``; when no step names a lot, the machine steps' span
    on the longest lot (the plan's only lot, usually)."""
    if not lots:
        return []
    if any(s.lot is not None for s in timeline.slots):
        return [LotUse(lot.id, lot.days, timeline.lot_hours(lot.id)) for lot in lots]
    longest = max(lots, key=lambda lot: lot.days)
    return [LotUse(longest.id, longest.days, machine_span(timeline), named=False)]


def off_lot_text(timeline: Timeline, lot: str) -> str | None:
    """Where the lot's clock runs in the schedule and which steps run off it (preparation
    before, retrieval after...): why the window and the lot overflow by different hours.
    None when the lot is unused or runs the whole schedule."""
    if lot not in timeline.lot_spans:
        return None
    start, end = timeline.lot_spans[lot]
    if start <= 0 and end >= timeline.makespan:
        return None
    parts = []
    for hours, slots, where in (
            (start, [s for s in timeline.slots if s.end <= start and s.hours], "before"),
            (timeline.makespan - end,
             [s for s in timeline.slots if s.start >= end and s.hours], "after")):
        if hours > 0:
            names = ", ".join(s.id for s in slots)
            parts.append(f"{names + ', ' if names else ''}{hours_text(hours)} h {where} it")
    return (f"the lot runs from {hours_text(start)} h to {hours_text(end)} h of the "
            f"{hours_text(timeline.makespan)} h schedule; off the lot: {' and '.join(parts)}")


def fits(window: HoursLike, lots: Sequence[Lot], timeline: Timeline) -> bool:
    """The makespan fits the window and every lot's span fits the lot."""
    if timeline.makespan > as_hours(window):
        return False
    return all(use.excess <= 0 for use in lot_uses(lots, timeline))


def without_runs(steps: Iterable[StepLike], runs: Iterable[str]) -> list[ObservedStep]:
    """The schedule without the steps that serve ``runs``.

    A kept step that waited for a dropped step now waits for what the dropped step
    waited for, so the order of what remains is kept and, laid out with
    :func:`makespan`, the schedule never gets longer.
    """
    steps = list(steps)
    gone = set(runs)
    dropped = {s.id: tuple(s.after) for s in steps if _run_of(s) in gone}

    def expand(dep: str, seen: frozenset[str]) -> list[str]:
        if dep not in dropped:
            return [dep]
        if dep in seen:  # a cycle among dropped steps: makespan of the plan reports it
            return []
        return [d for up in dropped[dep] for d in expand(up, seen | {dep})]

    return [
        ObservedStep(s.id, s.kind, s.resource, as_hours(s.hours),
                     tuple(dict.fromkeys(d for dep in s.after for d in expand(dep, frozenset()))),
                     s.lot, _run_of(s))
        for s in steps if s.id not in dropped
    ]


@dataclass(frozen=True)
class Reduction:
    """Optional runs whose steps, dropped, make the schedule fit (or the best there is)."""

    dropped: tuple[str, ...]  # run ids, exploratory first, then useful, each in plan order
    categories: Mapping[str, str]  # run id -> its category
    step_hours: Decimal  # the planned hours of their steps
    before: Timeline
    timeline: Timeline  # the schedule without them
    fits: bool  # False: even dropping every optional run is not enough

    @property
    def freed(self) -> Decimal:
        """How much shorter the schedule gets."""
        return self.before.makespan - self.timeline.makespan


def reduced_protocol(
    steps: Iterable[StepLike],
    runs: Iterable[PlannedRun],
    window: HoursLike,
    lots: Sequence[Lot],
    *,
    keep: Iterable[str] = (),
) -> Reduction | None:
    """The smallest set of optional runs to drop so that the schedule fits the window and
    every lot (R2: a reduced protocol that still answers the question).

    Exploratory runs go first: a useful run is dropped only when no set of exploratory
    runs is enough. Among sets of the same size, the one that drops the fewest planned
    hours (the most work kept), then plan order. Must runs, runs in ``keep`` (already
    started) and runs without steps are never proposed. None when the schedule already
    fits or no run can be dropped; a Reduction with ``fits=False`` (every optional run
    dropped) when no set is enough.
    """
    steps = list(steps)
    before = makespan(steps)
    if fits(window, lots, before):
        return None
    candidates = _droppable(steps, runs, set(keep))
    if not candidates:
        return None
    hours = {run: sum((as_hours(s.hours) for s in steps if _run_of(s) == run), Decimal(0))
             for run, _ in candidates}

    def attempt(chosen: Sequence[tuple[str, str]]) -> Reduction:
        ids = tuple(run for run, _ in chosen)
        timeline = makespan(without_runs(steps, ids))
        return Reduction(ids, dict(chosen), sum((hours[r] for r in ids), Decimal(0)), before,
                         timeline, fits(window, lots, timeline))

    search = _exhaustive if len(candidates) <= EXHAUSTIVE_RUNS else _greedy
    found = search(candidates, hours, attempt)
    return found if found is not None else attempt(candidates)


def _droppable(
    steps: list[StepLike], runs: Iterable[PlannedRun], keep: set[str]
) -> list[tuple[str, str]]:
    """(run id, category) of the runs that may be dropped: exploratory first, plan order."""
    served = {_run_of(s) for s in steps}
    runs = [r for r in runs if r.category in DROPPABLE and r.id in served and r.id not in keep]
    return sorted(((r.id, r.category) for r in dict((r.id, r) for r in runs).values()),
                  key=lambda rc: DROPPABLE.index(rc[1]))


def _exhaustive(
    candidates: list[tuple[str, str]],
    hours: Mapping[str, Decimal],
    attempt: _Attempt,
) -> Reduction | None:
    from itertools import combinations

    explore = [c for c in candidates if c[1] == "exploratory"]
    useful = [c for c in candidates if c[1] == "useful"]
    for n_useful in range(len(useful) + 1):
        for n_explore in range(len(explore) + 1):
            sets = [(*e, *u) for u in combinations(useful, n_useful)
                    for e in combinations(explore, n_explore)]
            sets.sort(key=lambda chosen: sum((hours[r] for r, _ in chosen), Decimal(0)))
            for chosen in sets:
                reduction = attempt(chosen)
                if reduction.fits:
                    return reduction
    return None


def _greedy(
    candidates: list[tuple[str, str]],
    hours: Mapping[str, Decimal],
    attempt: _Attempt,
) -> Reduction | None:
    """Many optional runs: drop the longest exploratory, then useful, runs until it fits,
    then give back every run that is not needed."""
    order = sorted(candidates, key=lambda c: (DROPPABLE.index(c[1]), -hours[c[0]]))
    chosen: list[tuple[str, str]] = []
    for candidate in order:
        chosen.append(candidate)
        if attempt(chosen).fits:
            break
    else:
        return None
    for candidate in list(reversed(chosen)):
        trial = [c for c in chosen if c != candidate]
        if attempt(trial).fits:
            chosen = trial
    return attempt(chosen)


class _Attempt(Protocol):
    def __call__(self, chosen: Sequence[tuple[str, str]], /) -> Reduction: ...


@dataclass(frozen=True)
class Forecast:
    """The schedule re-forecast at the post-pilot decision point (R2: "actualisez vos
    hypothèses de durée").

    Finished steps take their measured hours; an unfinished step of a kind that has
    finished steps is scaled by that kind's measured/planned ratio; any other step keeps
    its plan. The plan itself is never changed.
    """

    steps: tuple[ObservedStep, ...]  # the plan's steps with their forecast hours
    timeline: Timeline
    planned: Timeline
    measured: Mapping[str, Decimal]  # finished plan steps -> measured hours
    ratios: Mapping[str, Decimal]  # step kind -> measured / planned hours of its finished steps
    scaled: tuple[str, ...]  # unfinished steps whose hours a ratio other than 1 changed
    unknown: tuple[str, ...]  # observed step ids the plan does not have (ignored)

    @property
    def makespan(self) -> Decimal:
        return self.timeline.makespan

    @property
    def started_runs(self) -> frozenset[str]:
        """Runs with a finished step: dropping them now frees nothing already spent."""
        return frozenset(s.run for s in self.steps if s.run is not None and s.id in self.measured)


def forecast(plan: Plan | Iterable[StepLike], observed: Mapping[str, HoursLike]) -> Forecast:
    """Re-forecast ``plan`` (a Plan, or its steps) from the measured hours of the steps that
    finished (``{step id: hours}``); see :class:`Forecast`.

    >>> from pytest_itera.core.campaign import Step
    >>> steps = [Step("pilot", "training", "gpu0", 4), Step("control", "training", "gpu0", 10,
    ...                                                     after=("pilot",))]
    >>> f = forecast(steps, {"pilot": 6})
    >>> f.ratios["training"], f.makespan
    (Decimal('1.5'), Decimal('21.0'))
    """
    steps = _steps_of(plan)
    known = {s.id for s in steps}
    measured = {s.id: as_hours(observed[s.id]) for s in steps if s.id in observed}
    ratios = _kind_ratios(steps, measured)
    forecast_steps: list[ObservedStep] = []
    scaled: list[str] = []
    for step in steps:
        hours = as_hours(step.hours)
        if step.id in measured:
            hours = measured[step.id]
        elif step.kind in ratios and ratios[step.kind] != 1:
            hours = hours * ratios[step.kind]
            scaled.append(step.id)
        forecast_steps.append(ObservedStep(step.id, step.kind, step.resource, hours,
                                           tuple(step.after), step.lot, _run_of(step)))
    return Forecast(tuple(forecast_steps), makespan(forecast_steps), makespan(steps), measured,
                    ratios, tuple(scaled), tuple(sorted(k for k in observed if k not in known)))


def _steps_of(plan: Plan | Iterable[StepLike]) -> list[StepLike]:
    return list(plan.schedule.steps if isinstance(plan, Plan) else plan)


def _kind_ratios(steps: list[StepLike], measured: Mapping[str, Decimal]) -> dict[str, Decimal]:
    planned: dict[str, Decimal] = {}
    seen: dict[str, Decimal] = {}
    for step in steps:
        if step.id in measured:
            planned[step.kind] = planned.get(step.kind, Decimal(0)) + as_hours(step.hours)
            seen[step.kind] = seen.get(step.kind, Decimal(0)) + measured[step.id]
    return {kind: seen[kind] / planned[kind] for kind in planned if planned[kind] > 0}
