"""measurements-agree: a run's metrics are the values of its own measurements file.

The measurements file (:mod:`pytest_itera.files.measurements`) is the evidence, the manifest's
``runs[].metrics`` a copy: the file must be readable (each problem named with its line), the
run's own, hold a metrics line, and each manifest metric must equal its value (integers
exactly, floats to the decimals the file wrote). The conclusion is judged on the file.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator

from pytest_itera.checks.common.rules_declared import CONTRACT
from pytest_itera.checks.context import Check, Context
from pytest_itera.checks.evidence.run_evidence import SHOWN, measurements_hint, v1
from pytest_itera.checks.model import Kind
from pytest_itera.checks.stop_rules import (
    show,
)
from pytest_itera.core.campaign import (
    MANIFEST_FILE,
    Manifest,
    RunRecord,
)
from pytest_itera.core.findings import Finding
from pytest_itera.core.findings import where as json_where
from pytest_itera.files import measurements
from pytest_itera.files.measurements import Unreadable


def measurements_targets(ctx: Context) -> Iterable[str]:
    """Runs that report metrics or point at a measurements file."""
    _, man = ctx.documents()
    return {r.id for r in man.runs if r.metrics or r.measurements is not None}


def _measurements_owners(man: Manifest) -> dict[str, list[str]]:
    """Measurements file -> the runs that record it (one pass, not one per run)."""
    owners: dict[str, list[str]] = {}
    for r in man.runs:
        if r.measurements is not None:
            owners.setdefault(r.measurements, []).append(r.id)
    return owners


def measurements_agree(ctx: Context, target: str | None) -> Iterator[Finding]:
    """The run's measurements file is readable and every manifest metric is its value."""
    assert target is not None
    _, man = ctx.documents()
    index, run = ctx.recorded(target)
    where = json_where(MANIFEST_FILE, "runs", index)
    if run.measurements is None:
        yield Finding(
            f"run {run.id} reports metrics ({', '.join(sorted(run.metrics))}) but records no "
            "measurements file" + v1(man, "its metrics"), where=f"{where}.measurements",
            expected="the run's measurements JSON Lines, whose metrics line the manifest copies",
            hint=measurements_hint(run),
            code="measurements-agree.no-measurements")
        return
    owners = ctx.memo("evidence.measurements-owners", lambda: _measurements_owners(man))
    sharing = sorted(r for r in owners[run.measurements] if r != run.id)
    if sharing:
        yield Finding(
            f"run {run.id} shares its measurements file {run.measurements} with "
            f"{', '.join(sharing)}", where=f"{where}.measurements",
            hint="each run's evidence is its own measurements file",
            code="measurements-agree.shared-file")
    found = ctx.measurements(run.measurements)
    if isinstance(found, Unreadable):
        yield from _unreadable(run, found, where)
        return
    if not run.metrics:
        return
    if found.metrics is None:
        yield Finding(
            f"the measurements {found.path} of run {run.id} have no metrics line: the "
            f"manifest's metrics ({', '.join(sorted(run.metrics))}) are not evidenced",
            where=found.path, expected='a line {"metrics": {...}} with the final metrics',
            hint="write the run's final metrics into its measurements (RunRecorder.set_metrics)"
            "; the manifest copies them",
            code="measurements-agree.no-metrics-line")
        return
    for name, stated in sorted(run.metrics.items()):
        metric = found.metrics.get(name)
        if metric is None:
            yield Finding(
                f"run {run.id}'s metric {name!r} is not in its measurements {found.path}",
                where=f"{where}.metrics.{name}",
                found=f"the file's metrics: {sorted(found.metrics)}",
                hint="report only metrics the run measured; the file is the evidence",
                code="measurements-agree.metric-missing")
        elif not measurements.same_at_precision(stated, metric):
            yield Finding(
                f"run {run.id}'s {name} is {show(stated)} in the manifest but "
                f"{_metric_text(metric)} in its measurements",
                where=f"{where}.metrics.{name} ({found.path}:{metric.line})",
                expected=_metric_text(metric)
                + (f" (to the file's {metric.decimals} decimals)" if metric.decimals else ""),
                found=show(stated),
                hint="the measurements are the evidence and the manifest a copy: state the "
                "file's value",
                code="measurements-agree.metric-differs")


def _metric_text(metric: measurements.Metric) -> str:
    value = metric.value
    if isinstance(value, float) and metric.decimals is not None and metric.decimals >= 0 \
            and math.isfinite(value):
        return f"{value:.{metric.decimals}f}"
    return repr(value) if isinstance(value, str) else show(value)


def _unreadable(run: RunRecord, found: Unreadable, where: str) -> Iterator[Finding]:
    hint = f"one JSON object per line: points, one metrics line, checked inputs ({CONTRACT})"
    for problem in found.problems[:SHOWN]:
        message = (f"are not usable: {problem.message}" if problem.line is not None
                   else problem.message)
        yield Finding(f"the measurements {found.path} of run {run.id} {message}",
                      where=problem.where(found.path), hint=problem.fix or hint,
                      code="measurements-agree.unreadable")
    rest = len(found.problems) - SHOWN + found.more
    if rest > 0:
        yield Finding(f"... and {rest} more problem{'s' if rest > 1 else ''} in {found.path}",
                      where=f"{where}.measurements",
                      code="measurements-agree.more")


KINDS: dict[str, Kind] = {
    "measurements-agree.no-measurements": Kind(
        rule="a run reports metrics but records no measurements file",
        fix="record the run's measurements file (RunRecorder writes runs/<id>/measurements.jsonl)"),
    "measurements-agree.shared-file": Kind(
        rule="a run shares its measurements file with another run",
        fix="each run's evidence is its own measurements file"),
    "measurements-agree.unreadable": Kind(
        rule="a run's measurements file cannot be read: a line that is not JSON, a repeated key, "
        "a non-numeric value, a second metrics line...",
        fix="one JSON object per line: points, one metrics line, checked inputs"),
    "measurements-agree.more": Kind(
        rule="the measurements file has more problems than the ones shown one by one",
        fix="fix the problems shown, then run the check again for the rest"),
    "measurements-agree.no-metrics-line": Kind(
        rule="the run's measurements have no metrics line, so the manifest's metrics are not "
        "evidenced",
        fix="write the run's final metrics into its measurements (RunRecorder.set_metrics)"),
    "measurements-agree.metric-missing": Kind(
        rule="a metric the manifest reports for a run is not in its measurements file",
        fix="report only metrics the run measured; the file is the evidence"),
    "measurements-agree.metric-differs": Kind(
        rule="a manifest metric differs from its measurements file's value (exact for integers, "
        "to the file's decimals for floats)",
        fix="the measurements are the evidence and the manifest a copy: state the file's value"),
}

CHECK = Check("measurements-agree", "a run's metrics are the values of its measurements file",
              measurements_agree, scope="run", targets=measurements_targets,
              kinds=KINDS)
