"""A run's measurements file (JSON Lines): the evidence the run checks read.

No pytest import: the recorder, notebooks and the checks share this reader. One JSON
object per line (docs/contract-v2.md, "Measurements file"):

- ``{"step": 12, "loss": 0.93, "validation_accuracy": 0.71}``: a point of each named
  series at that step. A non-finite value is the string ``"NaN"``, ``"Infinity"`` or
  ``"-Infinity"`` (any case, ``"inf"``/``"+inf"`` too); a bare ``NaN`` token, as Python's
  ``json.dumps`` writes it, is read the same way.
- ``{"metrics": {"test_accuracy": 0.91}}``: the run's final metrics (at most one line).
- ``{"checked_input": {"input": "rings-600-v1", "sha256": "…", "examples": 600,
  "bytes": 48213}}``: what a data check measured on an input.

Reading never raises on bad input and is bounded: a file over :data:`MAX_BYTES`, a line
over :data:`MAX_LINE_BYTES` or more than :data:`MAX_POINTS` points is refused, and only
the first :data:`MAX_PROBLEMS` problems are kept (with a count of the rest). The result
is :class:`Measurements`, or :class:`Unreadable` with the problems and their line
numbers: a check never judges a run on part of its evidence.
"""

from __future__ import annotations

import codecs
import io
import json
import math
from array import array
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, BinaryIO

from pytest_itera.core.campaign import json_constant, non_finite
from pytest_itera.files import jsonl

__all__ = [
    "MAX_BYTES",
    "MAX_LINE_BYTES",
    "MAX_POINTS",
    "MAX_PROBLEMS",
    "CheckedInput",
    "Measurements",
    "Metric",
    "Problem",
    "Series",
    "Unreadable",
    "parse_measurements",
    "read_measurements",
    "same_at_precision",
]

MAX_BYTES = 512 * 1024 * 1024
MAX_LINE_BYTES = 1024 * 1024
MAX_POINTS = 4_000_000  # all series together: 24 bytes each in memory
MAX_PROBLEMS = 20
_CHECKED_FIELDS = frozenset({"input", "sha256", "examples", "bytes"})


@dataclass(frozen=True)
class Problem:
    """One way the file breaks the format: its line (None: the file as a whole) and what."""

    line: int | None
    message: str
    fix: str | None = None  # what to do about this one problem, when it is that precise

    def where(self, path: str) -> str:
        return path if self.line is None else f"{path}:{self.line}"


@dataclass(frozen=True)
class Unreadable:
    """The file cannot serve as evidence: the first problems, and how many more there are."""

    path: str
    problems: tuple[Problem, ...]
    more: int = 0

    def summary(self) -> str:
        first = self.problems[0] if self.problems else Problem(None, "cannot be read")
        count = len(self.problems) + self.more
        rest = f" (+{count - 1} more problem{'s' if count > 2 else ''})" if count > 1 else ""
        if first.line is None:
            return f"{self.path} {first.message}{rest}"
        return f"{first.where(self.path)}: {first.message}{rest}"


@dataclass(frozen=True)
class Series:
    """One named series, sorted by step (each step once)."""

    name: str
    steps: array[int] = field(default_factory=lambda: array("q"))
    values: array[float] = field(default_factory=lambda: array("d"))
    lines: array[int] = field(default_factory=lambda: array("q"))

    def __len__(self) -> int:
        return len(self.steps)

    def points(self) -> Iterator[tuple[int, float, int]]:
        """(step, value, line) in step order."""
        return zip(self.steps, self.values, self.lines, strict=True)

    def first_non_finite(self) -> tuple[int, float, int] | None:
        """(step, value, line) of the first point holding NaN or ±inf, or None."""
        for point in self.points():
            if not math.isfinite(point[1]):
                return point
        return None

    def last(self) -> tuple[int, float, int] | None:
        if not self.steps:
            return None
        return self.steps[-1], self.values[-1], self.lines[-1]


@dataclass(frozen=True)
class Metric:
    """A final metric as the file writes it.

    ``value`` is an int, a float (NaN/±inf included) or a string. ``decimals`` is the
    number of decimal places of a float as written (``0.880`` -> 3, ``1e-05`` -> 5,
    ``1e3`` -> -3); None for an integer, a non-finite value or a string (compared exactly).
    """

    value: int | float | str
    decimals: int | None
    line: int


@dataclass(frozen=True)
class CheckedInput:
    """What a data check recorded about one input (a corpus id or a path)."""

    input: str
    line: int
    sha256: str | None = None
    examples: int | None = None
    bytes: int | None = None


@dataclass(frozen=True)
class Measurements:
    path: str
    series: Mapping[str, Series]
    metrics: Mapping[str, Metric] | None  # None: the file has no metrics line
    metrics_line: int | None
    checked_inputs: tuple[CheckedInput, ...]
    lines: int

    def checked(self, *names: str) -> CheckedInput | None:
        """The last record of an input named by any of ``names`` (an id, a path)."""
        wanted = {n for n in names if n}
        found = [c for c in self.checked_inputs if c.input in wanted]
        return found[-1] if found else None


def same_at_precision(stated: float, metric: Metric) -> bool:
    """Does ``stated`` (a manifest value) equal the file's metric at the file's precision?

    Integers and strings compare exactly; a float compares after rounding ``stated`` to
    the decimal places the file wrote (half-even on the decimal text, no binary surprises).
    A non-finite file value never equals a manifest number.
    """
    value = metric.value
    if isinstance(value, str) or isinstance(stated, bool):
        return False
    if isinstance(value, float) and not math.isfinite(value):
        return False
    if not math.isfinite(stated):
        return False
    if metric.decimals is None:
        return stated == value
    quantum = Decimal(1).scaleb(-metric.decimals)
    try:
        rounded = Decimal(repr(float(stated))).quantize(quantum)
        return rounded == Decimal(repr(float(value))).quantize(quantum)
    except InvalidOperation:  # more digits than the context holds: compare as written
        return float(stated) == float(value)


# ------------------------------------------------------------------------ reading


def read_measurements(path: Path, display: str | None = None) -> Measurements | Unreadable:
    """Read one measurements file; never raises on bad input."""
    shown = display if display is not None else str(path)
    try:
        handle = _open_regular(path)
    except OSError as exc:
        return Unreadable(shown, (Problem(None, f"cannot be read ({exc.strerror or exc})"),))
    except _Refused as exc:
        return Unreadable(shown, (Problem(None, str(exc)),))
    with handle:
        try:
            return _Reader(shown).read(handle)
        except OSError as exc:
            return Unreadable(shown, (Problem(None, f"cannot be read ({exc.strerror or exc})"),))


def parse_measurements(data: bytes, display: str) -> Measurements | Unreadable:
    """Read a measurements file's bytes held in memory (what the recorder will write), exactly
    as :func:`read_measurements` reads the file."""
    if len(data) > MAX_BYTES:
        return Unreadable(display, (Problem(None, _too_large(len(data))),))
    return _Reader(display).read(io.BytesIO(data))


def _too_large(size: int) -> str:
    return f"is {size} bytes, over the {MAX_BYTES}-byte limit for a measurements file"


class _Refused(Exception):
    pass


def _open_regular(path: Path) -> BinaryIO:
    try:
        handle, size = jsonl.open_regular(path)
    except jsonl.NotRegular as exc:
        raise _Refused(str(exc)) from None
    if size > MAX_BYTES:
        handle.close()
        raise _Refused(_too_large(size))
    return handle


class _Duplicate(ValueError):
    pass


def _pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in items:
        if key in out:
            raise _Duplicate(f"the key {key!r} appears twice in one object")
        out[key] = value
    return out


class _Reader:
    def __init__(self, path: str) -> None:
        self.path = path
        self.problems: list[Problem] = []
        self.problem_count = 0
        self.series: dict[str, tuple[array[int], array[float], array[int]]] = {}
        self.unsorted: set[str] = set()
        self.points = 0
        self.metrics: dict[str, Metric] | None = None
        self.metrics_line: int | None = None
        self.checked: list[CheckedInput] = []
        self.lines = 0

    def problem(self, line: int | None, message: str, fix: str | None = None) -> None:
        self.problem_count += 1
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(Problem(line, message, fix))

    def read(self, handle: BinaryIO) -> Measurements | Unreadable:
        for number, raw in jsonl.lines(handle, MAX_LINE_BYTES):
            self.lines = number
            if raw is None:
                self.problem(number, f"a line over the {MAX_LINE_BYTES}-byte limit (skipped)")
                continue
            if number == 1:
                raw = raw.removeprefix(codecs.BOM_UTF8)
            if not raw.strip():
                continue
            self.line(number, raw)
            if self.points > MAX_POINTS:
                self.problem(number, f"more than {MAX_POINTS} points: too large to judge "
                             "(write fewer points, e.g. every Nth step)")
                break
        series = self.finish_series()
        if self.problem_count:
            return Unreadable(self.path, tuple(self.problems),
                              self.problem_count - len(self.problems))
        return Measurements(self.path, series, self.metrics, self.metrics_line,
                            tuple(self.checked), self.lines)

    def line(self, number: int, raw: bytes) -> None:
        try:
            obj = json.loads(raw.decode("utf-8"), object_pairs_hook=_pairs,
                             parse_float=Decimal, parse_constant=json_constant)
        except UnicodeDecodeError as exc:
            self.problem(number, f"not UTF-8 (byte {exc.start + 1})")
            return
        except _Duplicate as exc:
            self.problem(number, str(exc))
            return
        except (ValueError, RecursionError) as exc:
            self.problem(number, f"not JSON ({getattr(exc, 'msg', None) or _short(exc)})")
            return
        if not isinstance(obj, dict):
            self.problem(number, f"a JSON {_kind(obj)}, not an object")
        elif "step" in obj:
            self.point(number, obj)
        elif "metrics" in obj:
            self.metrics_record(number, obj)
        elif "checked_input" in obj:
            self.checked_record(number, obj)
        else:
            self.problem(number, "neither a point ({\"step\": N, <series>: value}), a "
                         "metrics line ({\"metrics\": {...}}) nor a checked_input line; found "
                         f"the keys {sorted(obj)[:5]}")

    def point(self, number: int, obj: dict[str, Any]) -> None:
        step = obj["step"]
        if not _is_int(step) or step < 0:
            self.problem(number, f"step {_show(step)} is not a non-negative integer")
            return
        for name, raw in obj.items():
            if name == "step":
                continue
            value = _number(raw)
            if value is None:
                self.problem(number, f"series {name!r} has the value {_show(raw)}, not a "
                             'number (write NaN/inf as "NaN", "Infinity", "-Infinity")')
                continue
            steps, values, lines = self.series.setdefault(
                name, (array("q"), array("d"), array("q")))
            if steps and step <= steps[-1]:
                self.unsorted.add(name)
            steps.append(step)
            values.append(value)
            lines.append(number)
            self.points += 1

    def metrics_record(self, number: int, obj: dict[str, Any]) -> None:
        if len(obj) != 1:
            self.problem(number, "a metrics line holds only the key 'metrics'; found "
                         f"{sorted(k for k in obj if k != 'metrics')[:5]} too")
            return
        if self.metrics is not None:
            self.problem(number, f"a second metrics line (the first is line {self.metrics_line}):"
                         " a run has one set of final metrics")
            return
        body = obj["metrics"]
        if not isinstance(body, dict):
            self.problem(number, f"'metrics' is a JSON {_kind(body)}, not an object")
            return
        metrics: dict[str, Metric] = {}
        for name, raw in body.items():
            metric = _metric(raw, number)
            if metric is None:
                self.problem(number, f"metric {name!r} is {_show(raw)}: a metric is a number "
                             "or a string")
            else:
                metrics[name] = metric
        self.metrics, self.metrics_line = metrics, number

    def checked_record(self, number: int, obj: dict[str, Any]) -> None:
        if len(obj) != 1:
            self.problem(number, "a checked_input line holds only the key 'checked_input'")
            return
        body = obj["checked_input"]
        if not isinstance(body, dict):
            self.problem(number, f"'checked_input' is a JSON {_kind(body)}, not an object")
            return
        unknown = sorted(set(body) - _CHECKED_FIELDS)
        if unknown:
            self.problem(number, f"checked_input has unknown field(s) {unknown} (expected "
                         "input, sha256, examples, bytes)")
            return
        name = body.get("input")
        if not isinstance(name, str) or not name.strip():
            self.problem(number, "checked_input names no input (a corpus id or a path)")
            return
        digest = body.get("sha256")
        if digest is not None and not isinstance(digest, str):
            self.problem(number, f"checked_input sha256 is {_show(digest)}, not a string")
            return
        counts: dict[str, int | None] = {}
        for key in ("examples", "bytes"):
            value = body.get(key)
            if value is not None and (not _is_int(value) or value < 0):
                self.problem(number, f"checked_input {key} is {_show(value)}, not a "
                             "non-negative integer")
                return
            counts[key] = value
        self.checked.append(CheckedInput(name, number, digest, counts["examples"],
                                         counts["bytes"]))

    def finish_series(self) -> dict[str, Series]:
        out: dict[str, Series] = {}
        # (line, step, the first line of that step) -> the series it gives a second value:
        # one problem per duplicated line, however many series it holds.
        again: dict[tuple[int, int, int], list[str]] = {}
        for name, (steps, values, lines) in self.series.items():
            if name in self.unsorted:
                order = sorted(range(len(steps)), key=lambda i: (steps[i], lines[i]))
                steps = array("q", (steps[i] for i in order))
                values = array("d", (values[i] for i in order))
                lines = array("q", (lines[i] for i in order))
                for i in range(1, len(steps)):
                    if steps[i] == steps[i - 1]:
                        again.setdefault((lines[i], steps[i], lines[i - 1]), []).append(name)
            out[name] = Series(name, steps, values, lines)
        for (line, step, first), names in sorted(again.items()):
            shown = ", ".join(map(repr, names))
            self.problem(
                line, f"step {step} is logged twice (series {shown}; the first is on line "
                f"{first})",
                fix=f"remove the duplicate step {step} (line {line}): a series has one value "
                f"per step; a run resumed from an earlier checkpoint forgets the steps after "
                f"it first (pytest_itera.record's run.rewind({step - 1}))")
        return out


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(raw: object) -> float | None:
    """A series value as a float (non-finite strings accepted), or None."""
    if _is_int(raw) or isinstance(raw, Decimal | float):
        try:
            return float(raw)  # type: ignore[arg-type]
        except OverflowError:  # an integer beyond a double
            return math.inf if raw > 0 else -math.inf  # type: ignore[operator]
    if isinstance(raw, str):
        return non_finite(raw)
    return None


def _metric(raw: object, line: int) -> Metric | None:
    if _is_int(raw):
        assert isinstance(raw, int)
        return Metric(raw, None, line)
    if isinstance(raw, Decimal):
        value = float(raw)
        exponent = raw.as_tuple().exponent
        decimals = -exponent if isinstance(exponent, int) and math.isfinite(value) else None
        return Metric(value, decimals, line)
    if isinstance(raw, float):  # a bare NaN/Infinity token
        return Metric(raw, None, line)
    if isinstance(raw, str):
        special = non_finite(raw)
        return Metric(raw if special is None else special, None, line)
    return None


def _kind(value: object) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    return "number"


def _show(value: object) -> str:
    if isinstance(value, Decimal):
        text = str(value)
    elif isinstance(value, float):
        text = repr(value)
    else:
        try:
            text = json.dumps(value)
        except (TypeError, ValueError):
            text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _short(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return str(exc)[:120]
