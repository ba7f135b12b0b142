"""The resume comparison: does the resume check reproduce its reference run after the resume?

The reference is the run whose listed resume checkpoint the resume check resumed from; after
the resume step, each series both measure must agree at the steps both hold, within
``checkpoint_policy.resume_tolerance``. The verdict is memoised: the ``no_resume`` stop rule
(stop-rules-applied), role-evidence and the report (:mod:`pytest_itera.report.evidence`)
read the same one.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from pytest_itera.checks.context import Context
from pytest_itera.checks.evidence.run_evidence import (
    measurements_file,
    measurements_hint,
    run_measurements,
    v1,
)
from pytest_itera.checks.stop_rules import (
    RuleVerdict,
    show,
)
from pytest_itera.core.campaign import (
    MANIFEST_FILE,
    CheckpointRecord,
    Manifest,
    ResumedFrom,
    RunRecord,
)
from pytest_itera.core.findings import where as json_where
from pytest_itera.files.measurements import Measurements, Series


def resume_verdict(ctx: Context, run_id: str) -> RuleVerdict:
    """Does the resume check reproduce its reference run after the resume? (memoised)"""
    return ctx.memo(f"evidence:resume:{run_id}", lambda: _resume(ctx, run_id))


def _resume(ctx: Context, run_id: str) -> RuleVerdict:
    plan, man = ctx.documents()
    index, run = ctx.recorded(run_id)
    where = json_where(MANIFEST_FILE, "runs", index, "resumed_from")
    origin = run.resumed_from
    if origin is None:
        return RuleVerdict(
            "unproven", f"run {run.id} records no resumed_from (the checkpoint it resumed "
            "from and its step)" + v1(man, "a resume"), where=where,
            hint='record resumed_from: {"checkpoint": "<a listed resume checkpoint of another '
            'run>", "step": N}, and the series the resumed run measured')
    listed = [c for c in man.checkpoints if c.kind == "resume" and c.run != run.id]
    others = ", ".join(c.path for c in listed) or "none listed"
    record = resumed_checkpoint(man, origin)
    if record is None or record.kind != "resume" or record.run == run.id:
        why = ("which is not a checkpoint listed in the manifest" if record is None
               else "a weights checkpoint, which cannot resume training"
               if record.kind != "resume" else "its own checkpoint")
        return RuleVerdict(
            "unproven", f"run {run.id} resumed from {origin.checkpoint}, {why}",
            where=f"{where}.checkpoint",
            hint=f"a resume check resumes a listed resume checkpoint of another run in a new "
            f"process (listed: {others})")
    reference = man.run(record.run)
    if reference is None:
        return RuleVerdict("unproven", f"checkpoint {record.path} belongs to run "
                           f"{record.run}, which the manifest does not record", where=where)
    mine, theirs = run_measurements(ctx, run), run_measurements(ctx, reference)
    if isinstance(mine, str):
        return RuleVerdict("unproven", mine, hint=measurements_hint(run),
                           subjects=measurements_file(run))
    if isinstance(theirs, str):
        return RuleVerdict("unproven", f"the reference run {reference.id}: {theirs}",
                           hint=measurements_hint(reference), subjects=measurements_file(reference))
    tolerance = plan.checkpoint_policy.resume_tolerance
    compared, divergence = _compare(mine, theirs, origin.step, tolerance)
    if divergence is not None:
        name, step, value, ref_value, line = divergence
        return RuleVerdict(
            "triggered", f"after resuming {record.path} at step {origin.step}, its {name!r} "
            f"is {show(value)} at step {step} where {reference.id}'s is {show(ref_value)} "
            f"(tolerance {tolerance:g})", step=step, where=f"{mine.path}:{line}")
    if not compared:
        return RuleVerdict(
            "unproven", f"nothing to compare: after step {origin.step} its series "
            f"({', '.join(sorted(mine.series)) or 'none'}) share no step with "
            f"{reference.id}'s ({', '.join(sorted(theirs.series)) or 'none'})",
            where=mine.path,
            hint=f"after the resume, log the same series as {reference.id} (e.g. the loss) at "
            "the same steps: they must match its values")
    return RuleVerdict("clear", f"{compared} points after step {origin.step} match "
                       f"{reference.id}'s within {tolerance:g}")


def resumed_checkpoint(man: Manifest, origin: ResumedFrom) -> CheckpointRecord | None:
    """The manifest's record of the checkpoint a resume check resumed from, or None."""
    return next((c for c in man.checkpoints
                 if c.path.rstrip("/") == origin.checkpoint.rstrip("/")), None)


def resume_reference(man: Manifest, run: RunRecord) -> RunRecord | None:
    """The run whose listed resume checkpoint ``run`` resumed from (its reference), or None
    when the resume names no such checkpoint (:func:`resume_verdict` says why)."""
    record = resumed_checkpoint(man, run.resumed_from) if run.resumed_from else None
    if record is None or record.kind != "resume" or record.run == run.id:
        return None
    return man.run(record.run)


def _compare(
    mine: Measurements, theirs: Measurements, after: int, tolerance: float
) -> tuple[int, tuple[str, int, float, float, int] | None]:
    """(points compared, the earliest divergence: name, step, value, reference, line)."""
    compared = 0
    first: tuple[str, int, float, float, int] | None = None
    for name, series, reference in shared_series(mine, theirs):
        for step, value, ref_value, line in aligned(series, reference, after):
            compared += 1
            if not _close(value, ref_value, tolerance):
                if first is None or step < first[1]:
                    first = (name, step, value, ref_value, line)
                break  # the rest of this series cannot diverge earlier
    return compared, first


def shared_series(
    mine: Measurements, theirs: Measurements
) -> Iterator[tuple[str, Series, Series]]:
    """(name, mine, theirs) for each series both files measure, by name."""
    for name in sorted(mine.series):
        reference = theirs.series.get(name)
        if reference is not None:
            yield name, mine.series[name], reference


def aligned(
    series: Series, reference: Series, after: int
) -> Iterator[tuple[int, float, float, int]]:
    """(step, value, reference value, line) for the steps after ``after`` both series hold."""
    ref_steps, ref_values = reference.steps, reference.values
    j = 0
    for step, value, line in series.points():
        if step <= after:
            continue
        while j < len(ref_steps) and ref_steps[j] < step:
            j += 1
        if j == len(ref_steps):
            return
        if ref_steps[j] == step:
            yield step, value, ref_values[j], line


def _close(value: float, reference: float, tolerance: float) -> bool:
    if math.isfinite(value) and math.isfinite(reference):
        return abs(value - reference) <= tolerance
    return (math.isnan(value) and math.isnan(reference)) or value == reference
