"""What both callbacks share: paths inside the campaign, recording, series values."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pytest_itera.core.journal import JournalError
from pytest_itera.record.base import RecordError, check_relpath, sha256_file

if TYPE_CHECKING:
    from pytest_itera.record.campaign import CampaignRecorder
    from pytest_itera.record.run import RunRecorder


def campaign_relpath(rec: CampaignRecorder, path: str | Path, *, what: str) -> str:
    """``path`` (absolute, or relative to the working directory, as tools take it) as a
    relative POSIX path inside the campaign folder, else a RecordError saying where to
    point the tool instead."""
    root = rec.root.resolve()
    target = Path(path).resolve()
    try:
        relative = target.relative_to(root)
    except ValueError:
        raise RecordError(
            f"{what} {str(path)!r} is outside the campaign folder {str(root)!r}: the "
            "campaign ships only what is inside it; point the tool inside the campaign, "
            "e.g. rec.path('runs/<run id>/...')"
        ) from None
    relpath = relative.as_posix()
    if relpath == ".":
        return relpath
    return check_relpath(relpath, field=what)


def record_checkpoint(
    rec: CampaignRecorder, relpath: str, *, run: str, format: str, claims: Iterable[str],
    step: int | None = None, advice: str | None = None,
    kind: Literal["resume", "weights"] = "resume",
) -> bool:
    """Add a checkpoint (a resume one unless ``kind`` says weights: then without claims)
    once; a later save of the same path by the same run (a file the tool overwrites) is
    journaled as one more save when its content changed. A file
    another run listed (the checkpoint a run resumed from, which its tool reports again) is
    not this run's save. ``advice``: what to change in the tool's own settings, added to a
    refusal (the checks' fix speaks of listing files, which the tool does itself). Returns
    whether it was added now."""
    listed = next((c for c in rec.checkpoints if c["path"] == relpath), None)
    if listed is not None:
        last = rec.saves.get(relpath)
        if listed["run"] == run and (last is None or _changed(rec, relpath, last)):
            rec.checkpoint_saved(relpath, run=run, step=step)
        return False
    try:
        rec.add_checkpoint(relpath, run=run, format=format, kind=kind,
                           claims=list(claims) if kind == "resume" else (), step=step)
    except RecordError as exc:
        if advice is None:
            raise
        raise RecordError(f"{exc}\nWhat to do here: {advice}") from None
    return True


def _changed(rec: CampaignRecorder, relpath: str, last: Mapping[str, Any]) -> bool:
    target = rec.root / relpath
    if target.is_dir():
        return True  # a folder saved again under the same name: journal it
    return "sha256" not in last or sha256_file(target)[0] != last["sha256"]


def series_values(values: Mapping[str, Any], skip: Iterable[str] = ()) -> dict[str, float]:
    """The numeric values of a tool's log (booleans, strings, and ``skip`` left out);
    non-finite values are kept: they are evidence (the recorder writes them as "NaN"...)."""
    skipped = set(skip)
    out: dict[str, float] = {}
    for name, value in values.items():
        if name in skipped or name == "step" or isinstance(value, bool):
            continue
        number = _number(value)
        if number is not None:
            out[name] = number
    return out


def _number(value: Any) -> float | None:
    if isinstance(value, int | float):
        return float(value)
    item = getattr(value, "item", None)  # a one-element tensor or numpy scalar
    numel = getattr(value, "numel", None)
    if callable(item) and (not callable(numel) or numel() == 1):
        try:
            got = item()
        except (TypeError, ValueError, RuntimeError):
            return None
        if isinstance(got, int | float) and not isinstance(got, bool):
            return float(got)
    return None


def last_step(run: RunRecorder) -> int | None:
    """The last step the run logged (None when none)."""
    return run.last_step


def rewind_if_resumed(run: RunRecorder, step: int) -> None:
    """The tool resumed this same run from a checkpoint at ``step`` (after a crash, say):
    the points logged after it are trained again, so forget them first."""
    last = last_step(run)
    if step > 0 and last is not None and last > step:
        run.rewind(step)


def resumed_elsewhere(rec: CampaignRecorder, run: RunRecorder, relpath: str, step: int) -> None:
    """The tool resumed ``run`` from ``relpath`` at ``step``: a checkpoint of another run
    (what a resume check does) is recorded as the run's ``resumed_from``, unless the script
    recorded one; a checkpoint of the run itself (a continuation after a crash) is not."""
    if run.record.get("resumed_from") is not None:
        return
    listed = next((c for c in rec.checkpoints if c["path"] == relpath), None)
    if listed is not None and listed["run"] == run.id:
        return
    run.resumed_from(relpath, step)


def not_known(run: RunRecorder, step: int, why: str) -> None:
    """A planned resume check resumed at ``step`` from a checkpoint the callback cannot name:
    say how to record it (the checks fail a resume check without ``resumed_from``)."""
    if run.record.get("resumed_from") is not None or step <= 0:
        return
    warnings.warn(f"run {run.id!r} resumed at step {step} from {why}: record it with "
                  f"rec.run({run.id!r}).resumed_from(<checkpoint path>, {step})", stacklevel=3)


FORECAST_LOG = logging.getLogger("pytest_itera.core.lot_forecast")


class ForecastWarner:
    """The lot's end forecast in the training log: the warning when the margin turns
    negative, logged once per change (a new warning, or back on track), never per step.
    The callbacks ask at each save and each epoch, not at each batch."""

    def __init__(self, rec: CampaignRecorder, lead: float = 0) -> None:
        self.rec = rec
        self.lead = lead
        self.said: str | None = None

    def check(self) -> str | None:
        """Judge the journal now; log the warning when it changed. Returns it (None: on
        track). A journal that cannot be judged says nothing here: watch says why."""
        try:
            warning = self.rec.forecast(lead=self.lead).warning()
        except (RecordError, JournalError, ValueError):
            return self.said
        if warning != self.said:
            if warning is not None:
                FORECAST_LOG.warning("%s", warning)
            elif self.said is not None:
                FORECAST_LOG.info("pytest-itera: back on track, every lot fits")
            self.said = warning
        return warning
