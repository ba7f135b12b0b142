"""The tables of the Markdown and HTML reports, as rows of plain text (escaped by each)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from pathlib import PurePath, PurePosixPath, PureWindowsPath
from typing import Any

from pytest_itera.checks.closure import ReloadFacts
from pytest_itera.core.journal import Gap
from pytest_itera.report.evidence import GainInterval, ResultRow, delivery_text
from pytest_itera.report.model import CampaignReport, StepRow
from pytest_itera.report.terminal import RUN_HEADER, acceptance, check_counts, run_cells


def objective_rows(report: CampaignReport) -> list[tuple[str, str]]:
    """The question, the decision rule and the conclusion: what the verdict is about."""
    meets = ", ".join(report.meets_threshold) or "no variant"
    conclusion = (f"{report.conclusion} (meets the threshold: {meets})"
                  if report.conclusion is not None else "not stated (manifest.json did not load)")
    return [("Question", report.question or "not stated (plan.json did not load)"),
            ("Decision rule", report.decision_rule or "not stated (plan.json did not load)"),
            ("Conclusion", conclusion)]


Table = tuple[str, tuple[str, ...], list[tuple[str, ...]]]


def results_table(report: CampaignReport) -> Table | None:
    """Every compared run's absolute decision metric, its gain over the control on its corpus
    (the control's own: "—") and whether it meets the threshold: the numbers
    ``conclusion-consistent`` judged, rounded to what the corpus resolves
    (:func:`shown_decimals`)."""
    ev = report.evidence
    if ev.decision is None or not ev.results:
        return None
    d = ev.decision
    sign = ">=" if d.direction == "higher" else "<="
    places = shown_decimals([r.value for r in ev.results])
    level = next((i.level for i in ev.intervals if i.level is not None), ev.confidence or 0.95)
    header = ("run", "role", "outcome", d.metric, "Δ to control",
              f"{level * 100:g} % interval of Δ", f"meets {d.metric} {sign} {d.threshold:g}",
              "value from")
    rows: list[tuple[str, ...]] = []
    for r in ev.results:
        run, role, outcome, value, delta, meets, source = _result_cells(r, places)
        interval = ev.interval(r.run)
        if interval is not None and interval.inside_noise(r.meets):
            meets += f" (not decisive at {level * 100:g} %)"
        rows.append((run, role, outcome, value, delta, _interval_cell(interval, places), meets,
                     source))
    return ("Results", header, rows)


def _interval_cell(interval: GainInterval | None, places: int) -> str:
    """A variant's paired bootstrap interval of its gain at the results' decimals, or why it
    has none ("—" for a run that is not an accepted variant)."""
    if interval is None:
        return "—"
    if interval.low is None or interval.high is None:
        return interval.note or "no interval"
    return f"[{_gain(interval.low, places)}, {_gain(interval.high, places)}]"


# A metric counted over n examples (accuracy: k/n) is a fraction whose denominator divides n;
# past this many examples the values are not told from a measured float's own digits.
_MAX_EXAMPLES = 10**6
_EXACT = 1e-12  # how far a float may be from its fraction (a float's k/n is ~1e-16 off)
_SIGNIFICANT = 4  # digits shown of a metric that is not a count over examples
_COUNTED = 3  # the fewest decimals of a count over examples not written exactly


def shown_decimals(values: Iterable[float | None]) -> int:
    """The decimals that resolve the metric's step and no more. The values of a count over
    n examples (accuracy k/n) are multiples of 1/n, n a multiple of the least common
    denominator of their fractions: shown exactly when a few decimals hold them (4 examples:
    0.75; 400: 0.8525), else with ``digits(n)`` decimals and at least :data:`_COUNTED`
    (the fractions may be reduced: 240/300 is 4/5), which tell any two apart (0.853, never
    0.05333333333333334). Any other metric: :data:`_SIGNIFICANT` significant digits of the
    largest value."""
    finite = [v for v in values if v is not None and math.isfinite(v)]
    denominator = _denominator(finite)
    if denominator is not None:
        resolving = len(str(denominator)) if denominator > 1 else 0
        exact = _terminating(denominator)
        if exact is not None and exact <= resolving + 1:
            return exact  # written exactly: nothing lost, whatever n is
        return max(resolving, _COUNTED)
    largest = max((abs(v) for v in finite), default=0.0)
    magnitude = math.floor(math.log10(largest)) if largest else 0
    return max(0, _SIGNIFICANT - 1 - magnitude)


def _denominator(values: Sequence[float]) -> int | None:
    """The least common denominator of the values as fractions of at most
    :data:`_MAX_EXAMPLES`, or None: no values, or one that is no such fraction."""
    if not values:
        return None
    denominator = 1
    for v in values:
        fraction = Fraction(v).limit_denominator(_MAX_EXAMPLES)
        if abs(float(fraction) - v) > _EXACT:
            return None
        denominator = math.lcm(denominator, fraction.denominator)
    return denominator if denominator <= _MAX_EXAMPLES else None


def _terminating(denominator: int) -> int | None:
    """The decimals that write 1/denominator exactly (2**a * 5**b: max(a, b)), or None."""
    twos = fives = 0
    while denominator % 2 == 0:
        denominator, twos = denominator // 2, twos + 1
    while denominator % 5 == 0:
        denominator, fives = denominator // 5, fives + 1
    return max(twos, fives) if denominator == 1 else None


def _result_cells(r: ResultRow, places: int) -> tuple[str, ...]:
    value = "no value" if r.value is None else f"{r.value:.{places}f}"
    # The control is the reference of the gains: it has none ("—"), not a gain of 0.
    delta = "—" if r.role == "control" else "-" if r.delta is None else _gain(r.delta, places)
    meets = "-" if r.meets is None else "yes" if r.meets else "no"
    if r.role != "variant" and r.meets is not None:
        meets += " (a control is not compared)"
    elif r.outcome != "accepted" and r.meets is not None:
        meets += f" (not counted: {r.outcome})"
    return (r.run, r.role, r.outcome, value, delta, meets, r.source)


def _gain(delta: float, places: int) -> str:
    """A signed gain at the values' decimals; one that rounds to nothing is 0, unsigned."""
    text = f"{delta:+.{places}f}"
    return text[1:] if float(text) == 0 else text


def deliverables_text(report: CampaignReport) -> str | None:
    """Which runs delivered which corpus: where the accepted count comes from."""
    ev = report.evidence
    if ev.decision is None:
        return None
    return delivery_text(ev.deliveries, ev.not_delivering)


def deviation_rows(report: CampaignReport) -> list[tuple[str, ...]]:
    """Steps whose observed hours differ from the plan beyond the tolerance, explained."""
    return [(s.id, number_text(s.planned_hours), number_text(s.observed_hours),
             s.explanation or "no explanation recorded")
            for s in report.steps if s.over_tolerance]


# A table of the Markdown and HTML reports with the note said once above it (or None).
Section = tuple[str, tuple[str, ...], list[tuple[str, ...]], str | None]


def report_tables(report: CampaignReport, part: str) -> list[Section]:
    """The tables of the Markdown and HTML reports, with their titles and notes; those with
    no rows left out. ``part``: "runs" (runs, acceptance tests, waivers), "steps" (planned vs
    actual, reloads, checks)."""
    if part == "runs":
        tables: list[Section] = [
            ("Runs", RUN_HEADER, run_cells(report.runs), None),
            ("Acceptance tests", ("test", "outcome"),
             [(c.nodeid, c.outcome) for c in acceptance(report)], None),
            ("Waivers applied", ("item", "waiver"),
             [(n, w.text()) for w, ids in report.waivers for n in ids], None),
        ]
    else:
        tables = [
            ("Planned vs actual", _STEP_HEADER, _step_cells(report), None),
            ("Checkpoints as reloaded", _RELOAD_HEADER, _reload_cells(report),
             sandbox_note(report.reloads)),
            ("Checks", ("check", "passed", "failed", "waived", "skipped"),
             [tuple(str(x) for x in row) for row in check_counts(report)], None),
        ]
    return [t for t in tables if t[2]]


_RELOAD_HEADER = ("checkpoint", "format", "loaded", "parts", "tensors", "bytes",
                  "non-finite tensors (NaN, inf values)", "seconds")


def _reload_cells(report: CampaignReport) -> list[tuple[str, ...]]:
    """One row per checkpoint; the loader's sandbox, the same for nearly all of them, is
    said once (:func:`sandbox_note`)."""
    return [
        (r.path, r.format or "-", "yes" if r.ok else f"no: {r.cause or 'no cause given'}",
         ", ".join(r.parts) or "-", str(r.tensors), str(r.bytes),
         f"{r.nonfinite_tensors} ({r.nan_values}, {r.inf_values})", f"{r.seconds:g}")
        for r in report.reloads
    ]


def sandbox_note(reloads: Sequence[ReloadFacts]) -> str | None:
    """The loader sandbox for the page, once: "loader sandbox of every checkpoint: <layers>
    (not <layer>: <why>)"; checkpoints whose sandbox differs (a hook loaded them, or one
    refused before its child started) are named with their own. None: nothing reloaded."""
    if not reloads:
        return None
    by_cell: dict[str, list[str]] = {}
    for r in reloads:
        by_cell.setdefault(_sandbox_cell(r), []).append(r.path)
    if len(by_cell) == 1:
        return f"loader sandbox of every checkpoint: {next(iter(by_cell))}"
    return "loader sandbox: " + "; ".join(f"{cell} for {', '.join(paths)}"
                                          for cell, paths in by_cell.items())


def _sandbox_cell(r: ReloadFacts) -> str:
    """The layers in force, and each missing one with its reason."""
    if not r.sandbox and not r.sandbox_missing:
        return "none (loaded by a hook, or refused before its child started)"
    missing = "; ".join(f"not {m}" for m in r.sandbox_missing)
    return ", ".join(r.sandbox) + (f" ({missing})" if missing else "")


def provenance_rows(report: CampaignReport) -> list[tuple[str, str]]:
    """When, from which command and with which versions the report was made, over which
    documents."""
    p = report.provenance or {}
    rows = [("created (UTC)", str(p.get("created") or "unknown")),
            ("command", " ".join(_argument(str(a)) for a in p.get("command") or ())
             or "unknown"),
            ("pytest process", _versions(p.get("pytest_process"))),
            ("reload interpreter", _interpreter(p.get("reload_interpreter")))]
    rows += [(f"{name} sha256", report.digests.get(f"{name}_sha256") or "unreadable")
             for name in ("plan", "manifest")]
    return rows


def _interpreter(facts: Any) -> str:
    if not isinstance(facts, Mapping):
        return "not used: nothing was reloaded"
    if not facts.get("probed"):
        return f"{machine_name(str(facts.get('executable')))}: its versions could not be read"
    return _versions(facts)


def _versions(facts: Any) -> str:
    if not isinstance(facts, Mapping):
        return "unknown"
    names = (("plugin", "pytest-itera"), ("pytest", "pytest"), ("python", "Python"),
             ("torch", "torch"), ("numpy", "numpy"), ("safetensors", "safetensors"))
    shown = [f"{label} {facts.get(key) or 'absent'}" for key, label in names if key in facts]
    return f"{', '.join(shown)} ({machine_name(str(facts.get('executable')))})"


_STEP_HEADER = ("step", "kind", "resource", "planned h", "observed h", "change", "explanation")


def _step_cells(report: CampaignReport) -> list[tuple[str, ...]]:
    return [
        (s.id, s.kind or "(unplanned)", s.resource or "-", number_text(s.planned_hours),
         number_text(s.observed_hours), _change(s), s.explanation or "")
        for s in report.steps
    ]


def number_text(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def _change(step: StepRow) -> str:
    if step.planned_hours is None or step.observed_hours is None:
        return "not observed" if step.observed_hours is None else "unplanned"
    delta = step.observed_hours - step.planned_hours
    return f"{delta:+g} h" if delta else "="


def shown_root(root: str) -> str:
    """The campaign folder as the reports show it: by its name when it is an absolute path of
    this machine (a report is read elsewhere, and a path says who ran it where), else as the
    user gave it (a relative folder, an s3:// address)."""
    return machine_name(root)


def machine_name(path: str) -> str:
    """An absolute path of this machine by its last name (an interpreter, a folder), any other
    text as it is."""
    for flavour in (PurePosixPath, PureWindowsPath):
        pure: PurePath = flavour(path)
        if pure.is_absolute() and "://" not in path:
            return pure.name or path
    return path


def _argument(arg: str) -> str:
    """A command-line argument without this machine's paths: ``/x/y/camp`` and
    ``--opt=/x/y/r.html`` by their names."""
    option, sep, value = arg.partition("=")
    if sep and option.startswith("-"):
        return f"{option}={machine_name(value)}"
    return machine_name(arg)


def without_root(text: str, root: str) -> str:
    """``text`` with the campaign's absolute folder spelt as :func:`shown_root` shows it:
    a finding that names a file by its full path names it from the campaign's folder."""
    shown = shown_root(root)
    return text if shown == root or not root else text.replace(root, shown)


def interruption_lines(report: CampaignReport) -> list[str]:
    """What stopped the campaign and what reopened it, each with when and why, for the list
    under the verdict, in journal order: the journal's events say it (``core.journal.gaps``),
    never a sentence of the manifest's."""
    return [_gap_line(gap) for gap in report.gaps]


def _gap_line(gap: Gap) -> str:
    if gap.kind == "reopened":
        at = f" at {gap.since}" if gap.since else ""
        return f"reopened{at} after its closure: {gap.what}"
    since = gap.since or "an unrecorded moment"
    until = f", resumed at {gap.until}" if gap.until else ", never resumed"
    return (f"{gap.what} interrupted: no process ran it after {since}{until}; the time "
            "between is not counted as work")
