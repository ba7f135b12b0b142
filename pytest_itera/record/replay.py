"""Continuing a campaign from its journal: each event is replayed through the recorder's public
methods, their checks included, so a continued campaign is in the state the script left it.
A torn last line (cut off, never replayed) is recorded and warned about."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from pytest_itera.core.journal import JOURNAL_FILE, TornLine
from pytest_itera.record.base import RecordError, from_json_number
from pytest_itera.record.run import RunRecorder
from pytest_itera.record.steps import STEP_EVENTS, StepClock

__all__ = ["CLOSURE_EVENTS", "JournalWarning", "Journaled", "replay"]

# A closure ({"event": "close", "manifest_digest": ..., "closed_at": ...}) and a reopening
# ({"event": "reopen", "reason": ..., "manifest_sha256": ..., "at": ...}).
CLOSURE_EVENTS = frozenset({"close", "reopen"})


class JournalWarning(UserWarning):
    """The journal had a torn last line: it was cut off, not replayed, and recorded."""


class Journaled(Protocol):
    """What replaying a journal drives of the campaign recorder."""

    torn: TornLine | None
    _replaying: bool
    _steps: StepClock

    def _event(self, name: str, **facts: Any) -> None: ...
    def _adopt_plan(self, digest: str) -> None: ...
    def run(self, run_id: str) -> RunRecorder: ...
    # The campaign-level events replay through these (their signatures are the recorder's).
    @property
    def decide(self) -> Callable[..., None]: ...
    @property
    def add_checkpoint(self) -> Callable[..., None]: ...
    @property
    def add_adapter(self) -> Callable[..., None]: ...
    def _replay_checkpoint(self, facts: Mapping[str, Any]) -> None: ...
    def _replay_base(self, facts: Mapping[str, Any]) -> None: ...
    def _replay_closure(self, kind: str, line: int, facts: Mapping[str, Any]) -> None: ...


def replay(rec: Journaled, events: list[dict[str, Any]]) -> None:
    """Replay a journal's events into ``rec`` (nothing is journaled again meanwhile)."""
    if events[0].get("event") != "plan":
        raise RecordError(f"{JOURNAL_FILE} does not start with the frozen plan; it is not "
                          "this recorder's journal")
    rec._replaying = True
    closed_at: int | None = None  # the line of a closure not reopened since
    try:
        for number, event in enumerate(events, 1):
            kind = event.get("event")
            if closed_at is not None and kind != "reopen":
                raise RecordError(
                    f"{JOURNAL_FILE} line {number} ({kind!r}) follows the closure of line "
                    f"{closed_at} without a reopen record: the journal was edited")
            try:
                _apply(rec, event, number)
            except (RecordError, KeyError, TypeError, ValueError) as exc:
                raise RecordError(
                    f"{JOURNAL_FILE} line {number} ({kind!r}) cannot be "
                    f"replayed: {exc}") from exc
            rec._steps.seen(event.get("at"))  # the running steps were alive then
            closed_at = number if kind == "close" else None if kind == "reopen" else closed_at
    finally:
        rec._replaying = False
    rec._steps.inherit()  # a step still running was left open by a process that died
    if rec.torn is not None:  # the record says what was lost, and when it was found
        rec._event("torn", line=rec.torn.line, bytes=rec.torn.bytes, text=rec.torn.text)
        warnings.warn(rec.torn.describe(), JournalWarning, stacklevel=3)


def _apply(rec: Journaled, event: Mapping[str, Any], line: int) -> None:
    """Replay one journal event through the public methods (their checks included)."""
    kind, facts = event["event"], {k: v for k, v in event.items() if k not in ("event", "prev")}
    if kind in CLOSURE_EVENTS:
        rec._replay_closure(kind, line, facts)
    elif kind == "plan":
        rec._adopt_plan(facts["sha256"])
    elif kind in STEP_EVENTS:
        rec._steps.apply(kind, facts)
    elif kind in _CAMPAIGN_EVENTS:
        _CAMPAIGN_EVENTS[kind](rec, facts)
    elif kind in _RUN_EVENTS:
        _RUN_EVENTS[kind](rec.run(facts.pop("run")), facts)
    elif kind not in ("torn", "file", "resumed", "clock"):  # evidence only: a file changed
        # after a reopening, the time no process ran before a continuation, a played clock
        raise RecordError(f"unknown event {kind!r}")


def _run_start(run: RunRecorder, f: dict[str, Any]) -> None:
    run.start(f["at"])


def _run_config(run: RunRecorder, f: dict[str, Any]) -> None:
    run.set_config(f["path"])


def _run_stop(run: RunRecorder, f: dict[str, Any]) -> None:
    run.stop(f["rule"], f["reason"], step=f.get("step"), at=f["at"])


_RUN_EVENTS: dict[str, Callable[[RunRecorder, dict[str, Any]], None]] = {
    "run-start": _run_start,
    "config": _run_config,
    "log": lambda run, f: run.log(
        f["step"], **{k: from_json_number(v) for k, v in f["values"].items()}),
    "rewind": lambda run, f: run.rewind(f["step"]),
    "input": lambda run, f: run.check_input(**f["checked"]),
    "metrics": lambda run, f: run.set_metrics(**f["values"]),
    "measurements": lambda run, f: run.set_measurements(f["path"]),
    "predictions": lambda run, f: run._replay_predictions(f["path"], f.get("sha256")),
    "corpus": lambda run, f: run.set_corpus(f["corpus"]),
    "resumed-from": lambda run, f: run.resumed_from(f["checkpoint"], f["step"]),
    "accepted": lambda run, f: run.accept(at=f["at"]),
    "stopped": _run_stop,
    "rejected": lambda run, f: run.reject(f["reason"], at=f["at"]),
}
_CAMPAIGN_EVENTS: dict[str, Callable[[Journaled, dict[str, Any]], None]] = {
    "decide": lambda rec, f: rec.decide(f["id"], f["text"], drops=f.get("drops", ()),
                                        adds=f.get("adds", ()), at=f["at"]),
    # A listing (with its format) or, from itera-journal/1 recorders on, one save of it.
    "checkpoint": lambda rec, f: rec._replay_checkpoint(f),
    "base": lambda rec, f: rec._replay_base(f),
    "training-base": lambda rec, f: None,  # evidence for the checks, no state
    "adapter": lambda rec, f: rec.add_adapter(f.pop("path"), **f),
}
