"""What ``watch`` judges of an open campaign besides the forecast (issue 37): typed facts,
plain data. :mod:`pytest_itera.watch.judged` finds them (it reads the folder's files and
reloads checkpoints); :class:`pytest_itera.core.lot_forecast.LotForecast` carries them, so
that the status, its JSON and ``--once``'s exit status say them alike."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Literal

__all__ = ["CheckpointReload", "OpenFacts", "PredictionsCoverage", "RuleOnSeries",
           "StepTime"]


@dataclass(frozen=True)
class RuleOnSeries:
    """A declared stop rule that the run's series so far triggers, judged as the checks
    judge it (:func:`pytest_itera.checks.stop_rules.measured`), whether or not the journal
    records the stop yet."""

    run: str
    rule: str
    kind: str
    step: int | None  # the first step that triggers it (None: a final metric)
    where: str | None  # file:line of the evidence
    detail: str

    def describe(self) -> str:
        at = f" at step {self.step}" if self.step is not None else ""
        where = f" ({self.where})" if self.where else ""
        return (f"stop rule {self.rule} ({self.kind}) fires on {self.run}{at}{where}: "
                f"{self.detail}; the journal records no stop yet")


@dataclass(frozen=True)
class CheckpointReload:
    """One checkpoint the journal says was saved, reloaded once in the sandboxed reload
    server: ``reloads``, ``fails`` (``cause`` says why) or ``missing`` (not in the folder:
    removed or overwritten elsewhere since its save; nothing to reload)."""

    path: str
    run: str
    must: bool  # the run is a must run: a checkpoint that does not reload is off track
    state: Literal["reloads", "fails", "missing"]
    cause: str | None = None
    step: int | None = None  # the training step its progress stores, when it says


@dataclass(frozen=True)
class PredictionsCoverage:
    """A run's predictions file (journaled) against its frozen corpus: what the
    ``predictions-cover-corpus`` check would say of it now (empty: it covers the corpus)."""

    run: str
    path: str
    problems: tuple[str, ...]

    @property
    def covers(self) -> bool:
        return not self.problems


@dataclass(frozen=True)
class StepTime:
    """A measured step whose hours do not fit the plan: over or under the deviation
    tolerance, or short (less than half its hours:
    :func:`pytest_itera.core.schedule.short_steps`)."""

    step: str
    planned: Decimal
    observed: Decimal
    short: bool
    text: str


@dataclass(frozen=True)
class OpenFacts:
    """Everything judged on the open campaign besides the forecast."""

    rules: tuple[RuleOnSeries, ...] = ()
    checkpoints: tuple[CheckpointReload, ...] = ()
    predictions: tuple[PredictionsCoverage, ...] = ()
    times: tuple[StepTime, ...] = ()
    reloaded: bool = False  # checkpoints were judged (a reload server was at hand)
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def failing_musts(self) -> tuple[CheckpointReload, ...]:
        """The must runs' checkpoints that do not reload (``--once`` exits 1)."""
        return tuple(c for c in self.checkpoints if c.must and c.state == "fails")
