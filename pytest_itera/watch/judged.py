"""What ``watch`` judges of an open campaign besides the forecast (issue 37), each in its
own function returning typed facts (:mod:`pytest_itera.core.open_facts`):

- :func:`rules_on_series`: the declared stop rules read from measurements
  (``non_finite_loss``, ``quality_below``) on each run's series so far, judged by the one
  rule the checks and the recorder apply (:func:`pytest_itera.checks.stop_rules.measured`):
  the journal's ``log`` points (its file:line is the journal's), or the run's own
  measurements file when the script writes it (``measurements`` event);
- :func:`checkpoint_reloads`: each checkpoint the journal says was saved, reloaded in the
  sandboxed reload server;
- :func:`predictions_coverage`: each journaled predictions file against its frozen corpus
  (:func:`pytest_itera.checks.runs.predictions_cover_corpus.coverage_problems`);
- :func:`step_times`: the measured steps' hours against the plan's deviation tolerance.

Files are read, never written. :class:`Judged` is what lasts from one judgement to the next
(``watch`` follows a journal for days): one reload server, started at the first checkpoint
there is to reload, and every file's verdict cached by its size and mtime, so that a
re-judgement never reloads nor re-reads an unchanged file.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from functools import partial
from pathlib import Path
from typing import Any, TypeGuard, TypeVar

from pytest_itera.checks.runs.predictions_cover_corpus import coverage_problems
from pytest_itera.checks.stop_rules import MEASURED_KINDS, measured, rule_parameters_problem
from pytest_itera.core import schedule as sched
from pytest_itera.core.campaign import Corpus, Plan
from pytest_itera.core.journal import JOURNAL_FILE
from pytest_itera.core.lot_forecast import StepProgress
from pytest_itera.core.open_facts import (
    CheckpointReload,
    OpenFacts,
    PredictionsCoverage,
    RuleOnSeries,
    StepTime,
)
from pytest_itera.files.measurements import Measurements, Metric, Series, read_measurements
from pytest_itera.record.base import from_json_number
from pytest_itera.reload import Reloader, ReloadResult

__all__ = ["Judged", "checkpoint_reloads", "open_facts", "predictions_coverage",
           "rules_on_series", "step_times"]

T = TypeVar("T")
Stamp = tuple[tuple[str, int, int], ...]  # (relative path, size, mtime_ns) of each file
SERVER_FAILURES = ("interpreter", "server")  # the reloader's fault, not the checkpoint's


class Judged:
    """One reload server for a whole ``watch``, and the verdicts on files by their stamp."""

    def __init__(self, python: str | None = None, *, timeout: float | None = None) -> None:
        self._python, self._timeout = python, timeout
        self._reloader: Reloader | None = None
        self._cache: dict[tuple[str, str, Stamp], Any] = {}
        self.reloads = 0  # reloads actually run (a test asks: never twice per file)

    def cached(self, kind: str, path: Path, stamp: Stamp, compute: Callable[[], T]) -> T:
        """``compute()`` once per (kind, path, stamp)."""
        key = (kind, str(path), stamp)
        if key not in self._cache:
            self._cache[key] = compute()
        found: T = self._cache[key]
        return found

    def reloaded(self, target: Path, display: str, seen: Stamp) -> ReloadResult:
        """``target`` reloaded in the server (started at the first reload), once per stamp.
        A failure of the server itself (no usable interpreter, a crash) is no verdict on the
        file: not cached, the next judgement asks again."""
        key = ("reload", str(target), seen)
        if key in self._cache:
            cached: ReloadResult = self._cache[key]
            return cached
        if self._reloader is None:
            self._reloader = (Reloader(self._python) if self._timeout is None
                              else Reloader(self._python, timeout=self._timeout))
        self.reloads += 1
        result = self._reloader.reload(target, display)
        if result.ok or result.failure not in SERVER_FAILURES:
            self._cache[key] = result
        return result

    def close(self) -> None:
        if self._reloader is not None:
            self._reloader.close()
            self._reloader = None

    def __enter__(self) -> Judged:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def stamp(path: Path) -> Stamp | None:
    """Size and mtime of ``path``, of each file under it for a folder; None when absent."""
    try:
        if not path.is_dir():
            info = path.stat()
            return (("", info.st_size, info.st_mtime_ns),)
        found = []
        for top, _, files in os.walk(path):
            for name in files:
                info = os.stat(os.path.join(top, name))
                found.append((os.path.relpath(os.path.join(top, name), path), info.st_size,
                              info.st_mtime_ns))
        return tuple(sorted(found))
    except OSError:
        return None


def _inside(root: Path, relpath: str) -> Path | None:
    """``root/relpath`` when it stays in the folder (a journal's path is not trusted)."""
    target = (root / relpath).resolve()
    return target if target.is_relative_to(root.resolve()) else None


def open_facts(plan: Plan, root: Path, events: Sequence[Mapping[str, Any]],
               steps: Sequence[StepProgress], judged: Judged | None) -> OpenFacts:
    """Every fact of the open campaign as of the ``events`` judged (the journal up to now);
    without ``judged`` no file is read (the series in the journal and the times still are)."""
    notes: list[str] = []
    rules = rules_on_series(plan, root, events, judged, notes)
    reloads = (checkpoint_reloads(plan, root, events, judged, notes) if judged is not None
               else ())
    predictions = predictions_coverage(plan, root, events, judged) if judged is not None else ()
    return OpenFacts(rules, reloads, predictions, step_times(plan, steps),
                     reloaded=judged is not None, notes=tuple(notes))


# ------------------------------------------------------------------------ stop rules


def rules_on_series(plan: Plan, root: Path, events: Sequence[Mapping[str, Any]],
                    judged: Judged | None, notes: list[str]) -> tuple[RuleOnSeries, ...]:
    """The measured stop rules each started run's evidence so far triggers; a run the
    journal already stopped, rejected or dropped is left out (its stop is said already)."""
    rules = [r for r in plan.stop_rules
             if r.kind in MEASURED_KINDS and rule_parameters_problem(r) is None]
    if not rules:
        return ()
    found = []
    for run, evidence in _evidence(root, events, judged, notes).items():
        planned = plan.run(run)
        for rule in rules:
            verdict = measured(rule, evidence, planned.role if planned else None)
            if verdict.status == "triggered":
                found.append(RuleOnSeries(run, rule.id, rule.kind, verdict.step,
                                          verdict.where, verdict.detail))
    return tuple(found)


def _evidence(root: Path, events: Sequence[Mapping[str, Any]], judged: Judged | None,
              notes: list[str]) -> dict[str, Measurements]:
    """Each open or accepted run's measurements so far: its own file when the script
    writes it (read when ``judged``), else its points and metrics in the journal."""
    started, ended, files = set(), set(), {}
    for event in events:
        kind, run = event.get("event"), event.get("run")
        if kind == "run-start" and isinstance(run, str):
            started.add(run)
        elif kind in ("stopped", "rejected") and isinstance(run, str):
            ended.add(run)
        elif kind == "decide" and isinstance(event.get("drops"), list):
            ended.update(r for r in event["drops"] if isinstance(r, str))
        elif kind == "measurements" and isinstance(run, str) and isinstance(
                event.get("path"), str):
            files[run] = str(event["path"])
    journaled = _journal_measurements(events)
    found: dict[str, Measurements] = {}
    for run in sorted(started - ended):
        if run not in files:
            found[run] = journaled.get(run) or _empty(JOURNAL_FILE)
        elif judged is not None:
            read = _measurements_file(root, files[run], judged)
            if isinstance(read, str):
                notes.append(f"run {run}'s measurements {files[run]} {read}: its stop rules "
                             "are judged when it reads")
            else:
                found[run] = read
    return found


def _measurements_file(root: Path, relpath: str, judged: Judged) -> Measurements | str:
    target = _inside(root, relpath)
    seen = stamp(target) if target is not None else None
    if target is None or seen is None:
        return "is not in the campaign folder yet"
    read = judged.cached("measurements", target, seen,
                         lambda: read_measurements(target, relpath))
    return read if isinstance(read, Measurements) else f"cannot be read yet ({read.summary()})"


def _empty(path: str) -> Measurements:
    return Measurements(path, {}, None, None, (), 0)


def _journal_measurements(events: Sequence[Mapping[str, Any]]) -> dict[str, Measurements]:
    """Each run's ``log`` points (a ``rewind`` forgets the later ones; a step logged again
    keeps its last value) and ``metrics``, with their journal lines."""
    points: dict[str, dict[str, dict[int, tuple[float, int]]]] = {}
    metrics: dict[str, dict[str, Metric]] = {}
    for line, event in enumerate(events, 1):
        kind, run, step = event.get("event"), event.get("run"), event.get("step")
        if not isinstance(run, str):
            continue
        if kind == "log" and _is_step(step) and isinstance(event.get("values"), dict):
            for name, raw in event["values"].items():
                value = from_json_number(raw)
                if isinstance(value, int | float) and not isinstance(value, bool):
                    points.setdefault(run, {}).setdefault(name, {})[step] = (float(value), line)
        elif kind == "rewind" and _is_step(step):
            for series in points.get(run, {}).values():
                for later in [s for s in series if s > step]:
                    del series[later]
        elif kind == "metrics" and isinstance(event.get("values"), dict):
            metrics.setdefault(run, {}).update(
                (name, Metric(value, None, line)) for name, value in event["values"].items()
                if isinstance(value, int | float | str) and not isinstance(value, bool))
    return {run: Measurements(JOURNAL_FILE, _series(points.get(run, {})),
                              metrics.get(run), None, (), len(events))
            for run in set(points) | set(metrics)}


def _is_step(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _series(points: Mapping[str, Mapping[int, tuple[float, int]]]) -> dict[str, Series]:
    found = {}
    for name, by_step in points.items():
        steps = sorted(by_step)
        found[name] = Series(name, array("q", steps), array("d", (by_step[s][0] for s in steps)),
                             array("q", (by_step[s][1] for s in steps)))
    return found


# ------------------------------------------------------------------------- checkpoints


def checkpoint_reloads(plan: Plan, root: Path, events: Sequence[Mapping[str, Any]],
                       judged: Judged, notes: list[str]) -> tuple[CheckpointReload, ...]:
    """Each checkpoint path the journal saved or listed (its last run), reloaded once per
    content: a file not in the folder is said missing, not reloaded."""
    saved: dict[str, str] = {}
    for event in events:
        path, run = event.get("path"), event.get("run")
        if event.get("event") == "checkpoint" and isinstance(path, str) and isinstance(run, str):
            saved[path] = run
    found = []
    for path, run in saved.items():
        planned = plan.run(run)
        must = planned is not None and planned.category == "must"
        target = _inside(root, path)
        if target is None:
            found.append(CheckpointReload(path, run, must, "fails",
                                          f"{path}: the path leaves the campaign folder"))
            continue
        seen = stamp(target)
        if seen is None:
            found.append(CheckpointReload(path, run, must, "missing"))
            continue
        result = judged.reloaded(target, path, seen)
        if not result.ok and result.failure in SERVER_FAILURES:
            notes.append(f"checkpoint not reloaded (asked again at the next judgement): "
                         f"{result.cause}")
            continue
        found.append(CheckpointReload(path, run, must, "reloads" if result.ok else "fails",
                                      result.cause, result.step))
    return tuple(found)


# ------------------------------------------------------------------------- predictions


def predictions_coverage(plan: Plan, root: Path, events: Sequence[Mapping[str, Any]],
                         judged: Judged) -> tuple[PredictionsCoverage, ...]:
    """Each run's last journaled predictions file against its frozen corpus (the corpus
    the event names, else the run's planned one)."""
    written: dict[str, tuple[str, str | None]] = {}
    for event in events:
        path, run, corpus = event.get("path"), event.get("run"), event.get("corpus")
        if event.get("event") == "predictions" and isinstance(path, str) and isinstance(
                run, str):
            written[run] = (path, corpus if isinstance(corpus, str) else None)
    found = []
    for run, (path, corpus_id) in sorted(written.items()):
        corpus = plan.corpus_by_id(corpus_id) if corpus_id else plan.corpus_of(run)
        target = _inside(root, path)
        seen = stamp(target) if target is not None else None
        if corpus is None or target is None or seen is None:
            why = ("no frozen corpus to cover" if corpus is None
                   else "the file is not in the campaign folder")
            found.append(PredictionsCoverage(run, path, (why,)))
            continue
        problems = judged.cached("predictions", target,
                                 (*seen, *(stamp(root / corpus.path) or ())),
                                 partial(_coverage, root, corpus, path))
        found.append(PredictionsCoverage(run, path, problems))
    return tuple(found)


def _coverage(root: Path, corpus: Corpus, relpath: str) -> tuple[str, ...]:
    return tuple(f.message for f in coverage_problems(root, corpus, relpath))


# ------------------------------------------------------------------------------- times


def step_times(plan: Plan, steps: Sequence[StepProgress]) -> tuple[StepTime, ...]:
    """The measured steps whose hours do not fit the plan: short (less than half, whatever
    the tolerance) or beyond the plan's deviation tolerance (0.10 unless it says)."""
    observed = {s.step: s.worked.quantize(Decimal("0.01")) for s in steps if s.measured}
    if not observed:
        return ()
    tolerance = sched.bounded_tolerance(plan.schedule.deviation_tolerance
                                        or sched.DEFAULT_TOLERANCE)
    planned = [s for s in plan.schedule.steps if s.id in observed]
    short = {s.step: s for s in sched.short_steps(planned, observed)}
    found = [StepTime(s.step, s.planned, observed[s.step], True, s.describe())
             for s in short.values()]
    found += [StepTime(d.step, d.planned, d.observed, False, d.describe(tolerance))
              for d in sched.deviations(planned, observed, tolerance) if d.step not in short]
    order = {s.id: i for i, s in enumerate(plan.schedule.steps)}
    return tuple(sorted(found, key=lambda t: order[t.step]))
