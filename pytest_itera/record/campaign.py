"""The producer API: what a training script calls to write a campaign folder.

A script freezes ``plan.json`` before its first run, records each run (start,
files, metrics, stop, acceptance), the decisions that drop runs, checkpoints and
adapters, then closes the campaign, which writes ``manifest.json`` with every
file's size and sha256::

    rec = CampaignRecorder(Path("out"))
    rec.freeze_plan(plan)                      # itera-plan/2: validated, atomic, never rewritten
    run = rec.run("control")
    run.start()
    for step, loss in enumerate(losses, 1):
        run.log(step, loss=loss)               # the evidence: runs/control/measurements.jsonl
    rec.write_jsonl("runs/control/predictions.jsonl", rows)
    run.set_predictions("runs/control/predictions.jsonl", corpus="my-corpus")
    run.set_metrics(accuracy=0.91)             # copied into the measurements file's metrics line
    run.accept()
    rec.close(analysis="analysis.md", reload_instructions="RELOAD.md", ...)

The documents follow ``itera-plan/2`` / ``itera-manifest/2`` (docs/contract-v2.md).
Each run's measurements file (JSON Lines: its series, the inputs it checked, its
final metrics) is written at closure from what the run logged, so the manifest's
metrics and the file's are the same numbers. The recorder refuses what the
plugin would reject on the run's own evidence, judged by the checks' own rules
(:mod:`pytest_itera.checks.stop_rules` on the rows it will write): an accepted run
whose evidence triggers a declared stop rule, a stop its evidence does not trigger
or whose step is not where the series became non-finite, a resume check that names
no listed resume checkpoint of another run, an included expense without its source.

The roles live in their own modules: :mod:`~pytest_itera.record.run` (a run's
recorder), :mod:`~pytest_itera.record.steps` (step timings),
:mod:`~pytest_itera.record.close` (what closure checks and computes),
:mod:`~pytest_itera.record.replay` (continuing from the journal) and
:mod:`~pytest_itera.record.base` (errors, atomic writes, paths); this module holds
the campaign recorder, and the package (:mod:`pytest_itera.record`) exports the public
names of them all.

Every write is atomic (a temporary file in the same folder, fsync, ``os.replace``);
every recorded path is a relative POSIX path inside the folder; no string that
points into a temporary folder is ever recorded. A *complete* resume checkpoint is
written and restored by :mod:`pytest_itera.record.resume`.

torch is imported inside the functions that need it: the pytest process imports
this package and must not pay for torch.
"""
from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterable, Mapping
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO

from pytest_itera.checks.artifacts.resume_complete import parts_problems
from pytest_itera.checks.budget.sources import states_amount
from pytest_itera.checks.prose.labels import EXPENSE_KINDS
from pytest_itera.checks.schedule.timeline import (
    Save,
    Saves,
    Span,
    saves_after_starts,
    saves_during_other_runs,
    span,
)
from pytest_itera.checks.stop_rules import contradicts_corpus
from pytest_itera.core.campaign import (
    MANIFEST_FILE,
    MANIFEST_FORMAT,
    PLAN_FILE,
    PLAN_FORMAT,
    PLAN_FORMATS,
    CheckpointRecord,
    aware_moment,
    json_path,
    plan_from,
)
from pytest_itera.core.findings import render_all
from pytest_itera.core.journal import (
    JOURNAL_FILE,
    JOURNAL_FORMAT,
    PLAYED_CLOCK,
    REAL_CLOCK,
    Journal,
    TornLine,
    is_played,
    manifest_digest,
)
from pytest_itera.core.lot_forecast import LotForecast, forecast_lot
from pytest_itera.core.schedule import as_hours
from pytest_itera.core.text import is_blank, says_nothing
from pytest_itera.record import close as closing
from pytest_itera.record import tally
from pytest_itera.record.base import (
    BASE_RECORD,
    Clock,
    RecordError,
    atomic_write_bytes,
    atomic_write_json,
    atomic_write_text,
    check_relpath,
    dumps_json,
    jsonl_text,
    refuse_temp_strings,
    require_commit,
    sha256_file,
    shipped_tree_digest,
    timestamp,
    validate,
)
from pytest_itera.record.close import Closure
from pytest_itera.record.replay import replay
from pytest_itera.record.run import OpenRun, RunRecorder
from pytest_itera.record.steps import Interruption, OpenStep, StepClock, StepTimer
from pytest_itera.reload.formats import DEFAULT_TIMEOUT

if TYPE_CHECKING:
    from pytest_itera.core.campaign import Plan
    from pytest_itera.files.push import Pushed
    from pytest_itera.report.verify import Verdict

_LOG = logging.getLogger("pytest_itera.record")


class CampaignRecorder:
    """Writes one campaign folder: ``plan.json`` first, ``manifest.json`` at closure.

    ``clock`` returns the current time (an aware datetime). Left out, the recorder reads the
    real clock (``datetime.now(UTC)``) and the observed hours are measured. Given, it is a
    *played clock* (a fixed or simulated one, to make a folder reproducible or to play the
    planned hours on a CPU): the journal and the manifest say ``"clock": "played"`` and the
    verdict is PLAYED CLOCK, never ACCEPTED. ``rehearsal=True`` rehearses the
    campaign on any machine at any speed (a CPU run of the real script): the journal and the
    manifest say so, the observed hours are recorded but not judged against the plan, and
    every other check judges it as at closure; its verdict is REHEARSED, never ACCEPTED.
    """

    def __init__(self, root: Path, *, clock: Clock | None = None,
                 rehearsal: bool = False) -> None:
        self.root = Path(root)
        self._clock = clock or (lambda: datetime.now(UTC))
        played_here = clock is not None  # this process reads a played clock
        self.plan: dict[str, Any] = {}
        self.plan_sha256: str | None = None
        self._runs: dict[str, RunRecorder] = {}
        self._checkpoints: list[dict[str, Any]] = []
        self._adapters: list[dict[str, Any]] = []
        self._saves: dict[str, dict[str, Any]] = {}  # path -> its last journaled save
        self._last_save: dict[str, dict[str, Any]] = {}  # run -> its last journaled save
        self._bases: dict[str, dict[str, str]] = {}  # folder -> model, revision (record_base)
        self._decisions: list[dict[str, Any]] = []
        self._written: set[str] = set()  # measurements files the recorder wrote
        self._steps = StepClock(self)
        self._closed = False
        self._replaying = False
        #: The last closure record of the journal (line, facts) while it is not reopened.
        self._closure: tuple[int, dict[str, Any]] | None = None
        self._reopened = False  # the last closure record is a reopening
        #: The reason of each reopening, in order (:meth:`reopen`).
        self.reopenings: list[str] = []
        self.journal = Journal.open(self.root)
        #: A torn last journal line found when continuing (cut off, never replayed), or None.
        self.torn: TornLine | None = self.journal.torn
        #: A rehearsal: the journal's first line and the manifest say so; its hours are not
        #: judged against the plan, and its verdict is REHEARSED, never ACCEPTED.
        self.rehearsal = self._rehearsal(rehearsal)
        journal_played = any(is_played(e) for e in self.journal.events)
        #: The campaign is recorded on a played clock (``clock=`` given, in this process or
        #: in one its journal records): its observed hours were not measured.
        self.played_clock = played_here or journal_played
        #: A played clock continuing a real-clock journal: journaled before its first event.
        self._clock_unjournaled = played_here and bool(self.journal.events) and not journal_played
        if self.journal.events:
            replay(self, self.journal.events)
            self._journal_pause()
        # Closed when the manifest is there and no reopening followed the last closure (a
        # journal of an older recorder has no closure records: the manifest says it all).
        self._closed = (self.root / MANIFEST_FILE).exists() and not self._reopened

    # ---- continuing

    def _journal_pause(self) -> None:
        """Continuing a journal that leaves runs open outside any open step (a process died
        between two steps of a run): journal the time no process ran, from the journal's last
        moment to now, as an interruption of those runs (``resumed``), so that their recorded
        span is not taken for work (plan-vs-actual.run-span). An open step journals its own
        interruption when it resumes."""
        runs = [r.id for r in self.open_runs()]
        if not runs or self._steps.running or self._closure is not None:
            return
        since = self.last_moment()
        now = self._clock()
        if since is None or now.tzinfo is None or now <= since:
            return
        self._event("resumed", runs=runs, at=self.now(now),
                    interrupted={"since": self.now(since), "until": self.now(now),
                                 "hours": round((now - since).total_seconds() / 3600, 4)})

    def open_steps(self) -> tuple[OpenStep, ...]:
        """The steps started and not ended. When continuing a campaign, a step a dead process
        left open is ``inherited``: ``rec.step(id)`` (start or end) resumes it, journaling
        the hours it worked up to the last moment the journal records and the interruption
        since (docs/recorder.md, "Continue from anywhere")."""
        return self._steps.open_steps()

    def open_runs(self) -> tuple[OpenRun, ...]:
        """The runs started and without an outcome, each with its last logged step and its
        last journaled checkpoint save: where a continuing script resumes it (load that save,
        ``run.rewind(save step)``, train on)."""
        return tuple(
            OpenRun(run.id, run.started_at, run.last_step, self._last_save.get(run.id))
            for run in self._runs.values()
            if run.started_at is not None and run.outcome is None)

    @property
    def interruptions(self) -> tuple[Interruption, ...]:
        """Every interruption of a step the journal records (:meth:`open_steps`)."""
        return tuple(self._steps.interruptions)

    def _rehearsal(self, asked: bool) -> bool:
        """A campaign continued is what its journal began: a rehearsal stays one, and a
        campaign begun for real never becomes one."""
        if not self.journal.events:
            return asked
        journaled = self.journal.events[0].get("rehearsal") is True
        if asked and not journaled:
            raise RecordError(f"{JOURNAL_FILE} began this campaign for real (line 1 is not a "
                              "rehearsal): rehearse in another folder")
        return journaled

    # ---- the journal

    def _event(self, name: str, **facts: Any) -> None:
        """Append one event to the journal (nothing while replaying it)."""
        if self._replaying:
            return
        self._refuse_closed("the campaign is closed: its manifest lists every file as it is")
        self._append(name, facts)

    def _refuse_closed(self, closed: str) -> None:
        if self._closed:
            raise RecordError(f"{closed}; to change it, {_THE_WAY_BACK}")
        if self._closure is not None:
            line, facts_closed = self._closure
            raise RecordError(
                f"the campaign was closed ({JOURNAL_FILE} line {line}, closed_at "
                f"{facts_closed.get('closed_at')}) but {MANIFEST_FILE} is not there (deleted, "
                f"or the closure was interrupted); to change it, {_THE_WAY_BACK}")

    def _append(self, name: str, facts: Mapping[str, Any]) -> None:
        if self._clock_unjournaled:
            self._clock_unjournaled = False
            self._append("clock", {"clock": PLAYED_CLOCK, "at": self.now()})
        event = {"event": name, **facts}
        refuse_temp_strings(event, JOURNAL_FILE)
        self.journal.append(event)

    def _replay_closure(self, kind: str, line: int, facts: Mapping[str, Any]) -> None:
        if kind == "close":
            self._closure, self._reopened = (line, dict(facts)), False
        else:
            self._closure, self._reopened = None, True
            self.reopenings.append(str(facts.get("reason")))

    def _adopt_plan(self, digest: str) -> None:
        target = self.root / PLAN_FILE
        if not target.is_file() or sha256_file(target)[0] != digest:
            raise RecordError(f"{PLAN_FILE} is missing or is not the plan the journal froze "
                              f"(sha256 {digest}); a plan is never edited")
        self.plan = json.loads(target.read_text("utf-8"))
        self.plan_sha256 = digest

    @cached_property
    def plan_model(self) -> Plan:
        """The frozen plan, typed (as the checks read it)."""
        self._require_plan()
        return plan_from(self.plan)

    def now(self, at: datetime | str | None = None) -> str:
        return timestamp(at if at is not None else self._clock())

    @property
    def checkpoints(self) -> tuple[Mapping[str, Any], ...]:
        """The checkpoint records so far (what the manifest will list)."""
        return tuple(self._checkpoints)

    @property
    def saves(self) -> Mapping[str, Mapping[str, Any]]:
        """Each checkpoint path's last journaled save (run, sha256 or tree_sha256, step, at)."""
        return dict(self._saves)

    @property
    def adapters(self) -> tuple[Mapping[str, Any], ...]:
        """The adapter records so far (what the manifest will list)."""
        return tuple(self._adapters)

    # ---- plan

    def freeze_plan(self, plan: Mapping[str, Any]) -> str:
        """Validate and write ``plan.json`` (``itera-plan/2``) once; returns its sha256.

        ``format`` defaults to ``itera-plan/2`` and ``frozen_at`` to now. A plan
        already frozen in the folder is adopted when it is the same plan, refused
        when it differs. A corpus already in the folder must have the plan's sha256, and
        an ``input_truncated`` rule the example count and sha256 of its corpus entry.
        """
        data = {"format": PLAN_FORMAT, **plan}
        if data["format"] not in PLAN_FORMATS:
            raise RecordError(
                f"the recorder writes {PLAN_FORMAT}, not {data['format']!r} (or itera-plan/3, "
                "which declares how metrics are recomputed): list "
                "the frozen corpora under 'corpora' (docs/contract-v2.md)"
            )
        data.setdefault("frozen_at", self.now())
        data.setdefault("recorded", True)  # the plan commits to its journal
        validate("plan", data, PLAN_FILE, hints=_float_money(data))
        refuse_temp_strings(data, PLAN_FILE)
        self._check_plan(data)
        target = self.root / PLAN_FILE
        continued = self.plan_sha256 is not None  # already adopted from the journal
        if target.exists():
            data = self._adopt_existing(target, plan, data, draft=not continued)
        else:
            atomic_write_json(target, data)
        self.plan = data
        self.plan_sha256 = sha256_file(target)[0]
        if not continued:
            rehearsing = {"rehearsal": True} if self.rehearsal else {}
            self.journal.chain_start = self.plan_sha256  # the chain starts at the plan
            self._event("plan", format=JOURNAL_FORMAT, sha256=self.plan_sha256,
                        at=self.now(), **rehearsing,
                        clock=PLAYED_CLOCK if self.played_clock else REAL_CLOCK)
        return self.plan_sha256

    def _check_plan(self, data: Mapping[str, Any]) -> None:
        ids = [c["id"] for c in data["corpora"]]
        if len(set(ids)) != len(ids):
            raise RecordError(f"plan corpora: ids repeat ({', '.join(ids)})")
        for i, corpus in enumerate(data["corpora"]):
            check_relpath(corpus["path"], field=f"plan corpora[{i}].path")
            on_disk = self.root / corpus["path"]
            if on_disk.is_file() and sha256_file(on_disk)[0] != corpus["sha256"]:
                raise RecordError(
                    f"plan corpora[{i}]: {corpus['path']} in the folder does not "
                    f"have the sha256 {corpus['sha256']} the plan freezes"
                )
        runs = {r["id"] for r in data["runs"]}
        for run in data["runs"]:
            if run.get("corpus") is not None and run["corpus"] not in ids:
                raise RecordError(
                    f"plan run {run['id']!r}: corpus {run['corpus']!r} is not one "
                    f"of the plan's corpora ({', '.join(ids)})"
                )
        for rule in data["stop_rules"]:
            check = rule.get("parameters", {}).get("resume_check")
            if rule["kind"] == "no_resume" and check not in runs:
                raise RecordError(
                    f"stop rule {rule['id']!r}: resume_check {check!r} is not a planned run"
                )
        typed = plan_from(data)
        for stop_rule in typed.stop_rules:
            contradiction = contradicts_corpus(typed, stop_rule)
            if contradiction is not None:
                raise RecordError(f"plan: {contradiction.detail}; {contradiction.fix}")

    def _adopt_existing(
        self, target: Path, given: Mapping[str, Any], data: dict[str, Any], *, draft: bool
    ) -> dict[str, Any]:
        """The plan in the folder when it is ``data``; a draft of it (no ``frozen_at``, as
        ``new-plan`` writes it, and nothing journaled yet) is frozen now."""
        existing = json.loads(target.read_text("utf-8"))
        comparable = dict(existing)
        if "frozen_at" not in given or "frozen_at" not in existing:
            comparable["frozen_at"] = data["frozen_at"]
        if "recorded" not in given and "recorded" not in existing:
            if draft and "frozen_at" not in existing:
                comparable["recorded"] = data["recorded"]  # a draft, frozen now: recorded
            else:
                data.pop("recorded", None)  # frozen before plans said so: adopted as it is
        if comparable != data:
            raise RecordError(
                f"{target.name} is already frozen with different content; a plan is never edited "
                "after freezing: record a decision, or start a new campaign with a new ID"
            )
        if draft and "frozen_at" not in existing:
            atomic_write_json(target, data)
            return data
        existing_data: dict[str, Any] = existing
        return existing_data

    def planned_run(self, run_id: str) -> Mapping[str, Any]:
        self._require_plan()
        for run in self.plan["runs"]:
            if run["id"] == run_id:
                found: Mapping[str, Any] = run
                return found
        planned = ", ".join(r["id"] for r in self.plan["runs"])
        raise RecordError(f"run {run_id!r} is not in the plan (planned: {planned})")

    def corpus_ids(self) -> list[str]:
        self._require_plan()
        return [c["id"] for c in self.plan["corpora"]]

    def planned_corpus(self, run_id: str) -> str | None:
        """The corpus the plan gives ``run_id``: its own, else the plan's only corpus."""
        self.planned_run(run_id)
        corpus = self.plan_model.corpus_of(run_id)
        return None if corpus is None else corpus.id

    def _require_plan(self) -> None:
        if self.plan_sha256 is None:
            raise RecordError("freeze the plan (freeze_plan) before recording any run")

    # ---- runs and decisions

    def run(self, run_id: str) -> RunRecorder:
        """The recorder of a planned run (the same object on every call)."""
        self.planned_run(run_id)
        return self._runs.setdefault(run_id, RunRecorder(self, run_id))

    def predictions_owners(self, relpath: str) -> list[str]:
        """The runs recorded so far whose predictions are the file ``relpath``."""
        return [rid for rid, run in self._runs.items() if run.record.get("predictions") == relpath]

    def decide(
        self,
        decision_id: str,
        text: str,
        *,
        drops: Iterable[str] = (),
        adds: Iterable[str] = (),
        at: datetime | str | None = None,
    ) -> None:
        """Record a decision; the runs in ``drops`` become ``dropped`` by it."""
        if any(d["id"] == decision_id for d in self._decisions):
            raise RecordError(f"decision {decision_id!r} is already recorded")
        if says_nothing(text):
            raise RecordError(f"decision {decision_id!r} needs a text")
        drops, adds = list(drops), list(adds)
        for run_id in drops:
            self._droppable(run_id)
        decision: dict[str, Any] = {"id": decision_id, "at": self.now(at), "text": text}
        self._event("decide", id=decision_id, text=text, drops=drops, adds=adds,
                    at=decision["at"])
        if not self._replaying:
            _LOG.info("decision %s journaled; journal pin %s (write it where the campaign "
                      "cannot rewrite it: --itera-journal-pin proves the journal up to here)",
                      decision_id, self.pin())
        for run_id in drops:
            self.run(run_id)._drop(decision_id)
        if drops:
            decision["drops"] = drops
        if adds:
            decision["adds"] = adds
        self._decisions.append(decision)

    def _droppable(self, run_id: str) -> None:
        planned = self.planned_run(run_id)
        if planned.get("category") == "must":
            raise RecordError(
                f"run {run_id!r} is a must run ({planned['role']}): a decision never drops "
                "a must run; stop it with a declared rule (run.stop) or reject it with a "
                "reason (run.reject), so the campaign says why it has no result")
        run = self.run(run_id)
        if run.outcome is not None:
            raise RecordError(f"run {run_id!r} is already {run.outcome}, not dropped")

    # ---- step timings

    def step(self, step_id: str, *, hours: float | None = None) -> StepTimer:
        """Time a planned step: ``with rec.step("train-control"): ...``, or ``.start()`` and
        ``.end()``; ``hours=`` records work done off this machine (a human drafting the
        analysis). close() turns the timings into the manifest's observed hours."""
        return self._steps.timer(step_id, hours)

    @property
    def observed_hours(self) -> Mapping[str, Decimal]:
        """Observed hours per step so far: the steps timed and ended, and the hours a step
        resumed after its process died worked before (it is still running). To skip the
        steps a dead process finished, ask :attr:`finished_steps`."""
        return dict(self._steps.hours)

    @property
    def finished_steps(self) -> Mapping[str, Decimal]:
        """The steps the journal closed (timed and ended), with their observed hours: what a
        script that continues a campaign skips (``if "setup" not in rec.finished_steps:``).
        Timing one of them again is refused."""
        return self._steps.finished()

    def forecast(self, *, lead: float | Decimal = 0, now: datetime | None = None
                 ) -> LotForecast:
        """The lot's end forecast from the journal so far, typed (what ``python -m
        pytest_itera watch`` judges): each run's progress, each lot's margin after ``lead``
        hours, what to drop when it is negative (``.warning()``), the last safe moment to
        start the retrieval. ``now`` defaults to the recorder's clock."""
        self._require_plan()
        return forecast_lot(self.plan_model, self.journal.events, now or self._clock(),
                            lead=as_hours(lead))

    def last_moment(self) -> datetime | None:
        """The last moment the journal records (any event's time), or None when it records
        none. A played clock that continues a campaign starts there: a step left open
        resumes no earlier, and the time since is an interruption, never work."""
        moments = [moment for e in self.journal.events
                   if (moment := aware_moment(e.get("at"))) is not None]
        return max(moments, default=None)

    # ---- files

    def path(self, relpath: str) -> Path:
        """Where to write ``relpath`` inside the campaign (for libraries that write files,
        ``torch.save(obj, rec.path("runs/a/last.pt"))``): its parent folder is created."""
        target = self.root / check_relpath(relpath, field="path")
        target.parent.mkdir(parents=True, exist_ok=True)
        return target

    def write_bytes(self, relpath: str, data: bytes) -> Path:
        target = self.path(relpath)
        atomic_write_bytes(target, data)
        return target

    def write_text(self, relpath: str, text: str) -> Path:
        return self.write_bytes(relpath, text.encode("utf-8"))

    def write_json(self, relpath: str, data: Any) -> Path:
        refuse_temp_strings(data, relpath)
        return self.write_text(relpath, dumps_json(data))

    def write_jsonl(self, relpath: str, rows: Iterable[Any]) -> Path:
        return self.write_text(relpath, jsonl_text(rows))

    def file_sha256(self, relpath: str, *, field: str) -> str:
        """The sha256 of a file the manifest will point at; it must exist and not be empty."""
        target = self.root / check_relpath(relpath, field=field)
        if not target.is_file():
            raise RecordError(f"{field}: {relpath} does not exist in the campaign folder")
        digest, size = sha256_file(target)
        if size == 0:
            raise RecordError(f"{field}: {relpath} is empty")
        return digest

    def checkpoint_saved(
        self,
        relpath: str,
        *,
        run: str,
        step: int | None = None,
        at: datetime | str | None = None,
    ) -> str:
        """Journal one save of a checkpoint (call it after every save, a file overwritten at
        each save included): its sha256 (a folder: its tree digest), the step it holds when
        known, and the moment. The checks compare the last save of each file with the file
        shipped, and time the interval between a run's saves. Returns the digest."""
        self.planned_run(run)
        save = self._save_facts(relpath, run, step, at)
        self._refuse_save_before_start(relpath, run, save["at"])
        self._event("checkpoint", **save)
        self._saves[relpath] = self._last_save[run] = save
        return str(save.get("sha256") or save.get("tree_sha256"))

    def _save_facts(self, relpath: str, run: str, step: int | None,
                    at: datetime | str | None) -> dict[str, Any]:
        target = self.root / check_relpath(relpath, field="checkpoints.path")
        if not target.exists():
            raise RecordError(f"checkpoint {relpath} does not exist in the campaign folder")
        if step is not None and (isinstance(step, bool) or not isinstance(step, int)
                                 or step < 0):
            raise RecordError(f"checkpoint {relpath}: step {step!r} is not a step")
        save: dict[str, Any] = {"path": relpath, "run": run}
        if target.is_dir():
            save["tree_sha256"] = shipped_tree_digest(target)
        else:
            save["sha256"] = sha256_file(target)[0]
        if step is not None:
            save["step"] = step
        save["at"] = self.now(at)
        return save

    def _refuse_save_before_start(self, relpath: str, run: str, at: str) -> None:
        """RecordError where ``plan-vs-actual`` will refuse the save at closure: a checkpoint
        is saved by its own run while it runs, after the run's start (the check's function)."""
        started = self._runs[run].started_at if run in self._runs else None
        if started is None:
            raise RecordError(
                f"checkpoint {relpath}: run {run!r} has not started; a checkpoint is saved by "
                f"its own run while it runs: call rec.run({run!r}).start() before the run's "
                "first save (the plugin refuses a save timed before its run's start: "
                "plan-vs-actual.save-before-start)")
        start, moment = aware_moment(started), aware_moment(at)
        if start is None or moment is None:
            return  # the journal's own check says so
        for finding in saves_after_starts([Span(run, 0, start, start, "ended_at")],
                                          Saves((Save(run, relpath, moment, 0),))):
            raise RecordError(f"{finding.message}, as the plugin would report "
                              f"(plan-vs-actual.save-before-start); {finding.hint}")
        self._refuse_save_during_other_run(relpath, run, moment)

    def _refuse_save_during_other_run(self, relpath: str, run: str, moment: datetime) -> None:
        """RecordError where ``plan-vs-actual`` will refuse the save at closure: one GPU
        trains one run at a time, so a run saves outside the span of every other run that
        names its GPU (the check's function). Judged on the runs that have ended: a span
        still open ends when its run says so."""
        ended = []
        for index, (other_id, other) in enumerate(self._runs.items()):
            stop = other.record.get("stop")
            life = span(other_id, index, aware_moment(other.started_at),
                        aware_moment(other.record.get("ended_at")),
                        aware_moment(stop.get("at")) if isinstance(stop, dict) else None)
            if other_id != run and life is not None:
                ended.append(life)
        if not ended:
            return
        for finding in saves_during_other_runs(self.plan_model, ended,
                                               Saves((Save(run, relpath, moment, 0),))):
            raise RecordError(f"{finding.message}, as the plugin would report "
                              f"(plan-vs-actual.save-during-run); {finding.hint}")

    def add_checkpoint(
        self,
        relpath: str,
        *,
        run: str,
        format: str,
        kind: Literal["resume", "weights"],
        claims: Iterable[str] = (),
        step: int | None = None,
    ) -> None:
        """List a checkpoint in the manifest; the event journals its content (sha256), the
        step it holds and the moment it was saved: the moment of its last journaled save
        (:meth:`checkpoint_saved`) when the file still holds that save, else now."""
        self.planned_run(run)
        record: dict[str, Any] = {"path": relpath, "run": run, "format": format, "kind": kind}
        claims = list(claims)
        if claims:
            record["claims"] = claims
        if any(c["path"] == relpath for c in self._checkpoints):
            raise RecordError(f"checkpoint {relpath} is already recorded")
        if kind == "resume" and claims:
            self._refuse_uncovered(relpath, run, format, claims)
        save = self._save_facts(relpath, run, step, None)
        last = self._saves.get(relpath)
        if last is not None and last["run"] == run and all(
                last.get(k) == save.get(k) for k in ("sha256", "tree_sha256")):
            save["at"] = last["at"]  # the file holds that save: it was saved then
            if step is None and "step" in last:
                save["step"] = last["step"]
        self._refuse_save_before_start(relpath, run, save["at"])
        self._event("checkpoint", **record, **{k: v for k, v in save.items() if k not in record})
        self._saves[relpath] = self._last_save[run] = save
        self._checkpoints.append(record)

    def _refuse_uncovered(self, relpath: str, run: str, fmt: str, claims: list[str]) -> None:
        """RecordError where ``resume-complete`` will fail a resume checkpoint holding the
        parts it claims: they do not cover the run's resume state (the check's own rule)."""
        record = CheckpointRecord(relpath, run, fmt, "resume", tuple(claims))
        problems = parts_problems(self.plan_model, record, claims)
        if problems:
            raise RecordError(
                f"checkpoint {relpath}: its parts do not cover the resume state the plan "
                f"requires of run {run!r}, as the plugin would report (resume-complete):\n"
                + render_all(problems))

    def _replay_checkpoint(self, facts: Mapping[str, Any]) -> None:
        """A journaled checkpoint event: a listing (it has a format) or a save. The facts
        are taken as journaled: the file may have been overwritten since."""
        path, run = facts["path"], facts["run"]
        self.planned_run(run)
        if not (self.root / check_relpath(path, field="checkpoints.path")).exists():
            raise RecordError(f"checkpoint {path} does not exist in the campaign folder")
        if "format" in facts:
            record = {k: facts[k] for k in ("path", "run", "format", "kind", "claims")
                      if k in facts}
            if any(c["path"] == path for c in self._checkpoints):
                raise RecordError(f"checkpoint {path} is already recorded")
            self._checkpoints.append(record)
        self._saves[path] = self._last_save[run] = {
            k: v for k, v in facts.items()
            if k in ("path", "run", "sha256", "tree_sha256", "step", "at")}

    def record_base(self, folder: str, *, model: str, revision: str) -> str:
        """Ship a base model in the campaign: write ``<folder>/itera-base.json`` with its name
        and the 40-hex commit it was fetched at (or built as); returns the folder's tree
        digest, which :meth:`add_adapter` records as ``base_digest``."""
        require_commit(revision, f"base {folder}")
        if is_blank(model):
            raise RecordError(f"base {folder}: a base needs its model name")
        if not (self.root / check_relpath(folder, field="base folder")).is_dir():
            raise RecordError(f"base {folder} is not a folder in the campaign")
        self.write_json(f"{folder}/{BASE_RECORD}", {"model": model, "revision": revision})
        digest = shipped_tree_digest(self.root / folder)
        self._event("base", folder=folder, model=model, revision=revision, tree_sha256=digest)
        self._bases[folder] = {"model": model, "revision": revision}
        return digest

    def _replay_base(self, facts: Mapping[str, Any]) -> None:
        self._bases[facts["folder"]] = {"model": facts["model"], "revision": facts["revision"]}

    def training_bases(self, run: str) -> None:
        """Journal, as ``run``'s training starts, each base recorded with
        :meth:`record_base`: its revision and its tree digest now (the integrations call it;
        the checks compare them with the adapters' ``base_revision`` and ``base_digest``)."""
        self.planned_run(run)
        for folder, facts in sorted(self._bases.items()):
            if (self.root / folder).is_dir():
                self._event("training-base", run=run, folder=folder, model=facts["model"],
                            revision=facts["revision"],
                            tree_sha256=shipped_tree_digest(self.root / folder), at=self.now())

    def add_adapter(
        self,
        relpath: str,
        *,
        run: str,
        base_model: str,
        base_revision: str,
        base_path: str | None = None,
    ) -> None:
        """An adapter pinned to its base by a 40-hex commit; a base shipped in the campaign
        (``base_path``, a folder) is also pinned by its tree digest, and the revision its
        ``itera-base.json`` records (see :meth:`record_base`) must be ``base_revision``."""
        check_relpath(relpath, field="adapters.path")
        self.planned_run(run)
        require_commit(base_revision, f"adapter {relpath}: base_revision")
        record: dict[str, Any] = {
            "path": relpath,
            "run": run,
            "base_model": base_model,
            "base_revision": base_revision,
        }
        if base_path is not None:
            record.update(
                base_path=base_path, base_digest=self._base_digest(relpath, base_path, record)
            )
        self._event("adapter", **{k: v for k, v in record.items() if k != "base_digest"})
        self._adapters.append(record)

    def _base_digest(self, adapter: str, base: str, record: Mapping[str, Any]) -> str:
        folder = self.root / check_relpath(base, field="adapters.base_path")
        if not folder.is_dir():
            raise RecordError(
                f"adapter {adapter}: base_path {base} is not a folder in the "
                "campaign (ship the whole base folder, pinned by its tree digest)"
            )
        recorded = folder / BASE_RECORD
        if recorded.is_file():
            facts = json.loads(recorded.read_text("utf-8"))
            for key, field in (("revision", "base_revision"), ("model", "base_model")):
                if facts.get(key) != record[field]:
                    raise RecordError(
                        f"adapter {adapter}: {base}/{BASE_RECORD} records {key} "
                        f"{facts.get(key)!r}, the adapter's {field} is {record[field]!r}: the "
                        "adapter was trained on another base"
                    )
        return shipped_tree_digest(folder)

    def expense(
        self, label: str, amount: str, *, file: str | None = None, reference: str | None = None,
        kind: str | None = None, issued_on: str | date | None = None,
        issued_by: str | None = None, amount_as_written: str | None = None,
    ) -> dict[str, Any]:
        """An included expense for ``close(budget=...)``: the amount as billed, with its
        provenance (a receipt/invoice file in the campaign and/or an order reference).
        A text receipt must show the amount.

        The structured facts decide where the receipt's text would otherwise be read:
        ``kind`` (paid, tax, transfer, rate; estimate, derived, refund and credit are not
        amounts paid), ``issued_on`` (the receipt's date, ISO), ``issued_by`` and
        ``amount_as_written`` (each as the receipt writes it: a text receipt must state it)."""
        if not isinstance(amount, str):
            raise RecordError(
                f"expense {label!r}: the amount {amount!r} is a {type(amount).__name__}; money "
                f"is a decimal string as billed: write \"{amount}\"")
        if is_blank(label):
            raise RecordError("an expense needs a label")
        if not (file or not is_blank(reference)):
            raise RecordError(
                f"expense {label!r}: give its receipt file or its order reference; "
                "an amount without provenance is an estimate"
            )
        if kind is not None and kind not in EXPENSE_KINDS:
            raise RecordError(f"expense {label!r}: kind {kind!r} is not one of "
                              f"{', '.join(EXPENSE_KINDS)}")
        if isinstance(issued_on, date):
            issued_on = issued_on.isoformat()
        if issued_on is not None:
            try:
                date.fromisoformat(issued_on)
            except ValueError:
                raise RecordError(f"expense {label!r}: issued_on {issued_on!r} is not an ISO "
                                  "date (YYYY-MM-DD)") from None
        facts = {"issued_by": issued_by, "amount_as_written": amount_as_written}
        expense: dict[str, Any] = {"label": label, "amount": amount, "source": {}}
        if kind is not None:
            expense["kind"] = kind
        if file is not None:
            self.file_sha256(file, field=f"expense {label!r} source.file")
            try:
                text = (self.root / file).read_text("utf-8")
            except UnicodeDecodeError:
                text = None
            if text is not None and not _states(text, amount):
                raise RecordError(
                    f"expense {label!r}: the receipt {file} does not show the "
                    f"amount {amount}; record the amount billed"
                )
            flat = " ".join(text.split()).casefold() if text is not None else None
            for name, value in facts.items():
                if value is not None and flat is not None \
                        and " ".join(value.split()).casefold() not in flat:
                    raise RecordError(f"expense {label!r}: the receipt {file} does not state "
                                      f"its {name} {value!r}; record it as the receipt writes it")
            expense["source"]["file"] = file
        if reference is not None:
            expense["source"]["reference"] = reference
        if issued_on is not None:
            expense["source"]["issued_on"] = issued_on
        expense["source"] |= {k: v for k, v in facts.items() if v is not None}
        return expense

    # ---- closure

    def close(
        self,
        *,
        analysis: str,
        reload_instructions: str,
        conclusion: Mapping[str, Any] | None = None,
        expenses: Iterable[Mapping[str, Any]] | None = None,
        explanations: Mapping[str, str] | None = None,
        closed_at: datetime | str | None = None,
        budget: Mapping[str, Any] | None = None,
        schedule: Mapping[str, Any] | None = None,
        check: bool = True,
        out: TextIO | None = None,
        language: str = "en",
        metrics_table: bool = True,
        push_to: str | None = None,
    ) -> Closure:
        """Write the measurements files, then ``manifest.json``: every file hashed, every
        planned run accounted for with its evidence, the budget and the schedule computed
        from the record (:mod:`pytest_itera.record.tally`); then run the checks on the folder
        (:meth:`check`), print their findings to ``out`` (stdout) and return them.

        ``expenses``: the included expenses (:meth:`expense`), added to the engaged total.
        ``explanations``: ``{step id: why}`` for steps that deviated from the plan (steps
        of stopped and dropped runs are explained from their records). ``budget`` /
        ``schedule`` replace the computed blocks (the checks then judge them as given).
        ``check=False`` writes the manifest without running the checks.

        ``conclusion``: ``{"meets_threshold": [...], "text": ...}``; either may be left out:
        the list is then computed from the recorded decision metrics (the accepted variants
        that meet the threshold), the text rendered from the list, in ``language`` ("en", or
        "fr"), so that no reading of words judges it. ``metrics_table``: a Markdown or text
        analysis gets its ``itera-metrics`` table (run, metric, value as recorded), written
        before hashing and replaced at each closure; the checks judge it row by row.

        ``push_to``: ``s3://bucket/prefix/``: the closed campaign is then uploaded there and
        verified in place (:mod:`pytest_itera.files.push`, as ``python -m pytest_itera push``),
        whatever the verdict (the evidence of a rejected campaign is retrieved too); its lines
        are printed to ``out``, its outcome is ``closure.pushed`` (``.complete``).
        """
        self._require_plan()
        self._refuse_closed("the campaign is already closed")
        self._steps.require_ended()
        self.file_sha256(analysis, field="analysis")
        self.file_sha256(reload_instructions, field="reload_instructions")
        runs = closing.run_records(self.plan, self._runs, self._check_run)
        plan = closing.plan_model(self.root)
        conclusion = closing.conclusion_block(plan, self._runs.values(), conclusion, language)
        if metrics_table:
            self._write_metrics_table(analysis)
        if budget is None:
            budget = tally.budget_block(
                plan, closing.outcomes(self._runs.values()), closing.included_expenses(expenses))
        elif expenses is not None:
            raise RecordError("give the included expenses in budget= or in expenses=, not both")
        closing.check_sources(budget, self.file_sha256)
        self._check_bases()
        schedule = self._schedule(
            schedule if schedule is not None
            else closing.derived_schedule(plan, self._runs, self._steps.hours, explanations,
                                          self._steps.interruptions))
        self._write_measurements()
        manifest = {
            "format": MANIFEST_FORMAT,
            "campaign": self.plan["campaign"],
            "closed_at": self.now(closed_at),
            "plan": {"path": PLAN_FILE, "sha256": self._plan_unchanged()},
            "files": closing.list_files(self.root),
            "runs": runs,
            "checkpoints": self._checkpoints,
            "adapters": self._adapters,
            "analysis": analysis,
            "reload_instructions": reload_instructions,
            "conclusion": dict(conclusion),
            "budget": dict(budget),
            "schedule": schedule,
            **({"rehearsal": True} if self.rehearsal else {}),
            **({"clock": PLAYED_CLOCK} if self.played_clock else {}),
        }
        validate("manifest", manifest, MANIFEST_FILE)
        refuse_temp_strings(manifest, MANIFEST_FILE)
        target = self.root / MANIFEST_FILE
        self._journal_closure(target, manifest)
        atomic_write_json(target, manifest)
        self._closed = True
        result = None
        if check:
            result = self.check()
            print("\n".join([*result.lines(), f"  journal pin: {self.pin()} (--itera-journal-pin "
                             "proves the journal up to the closure)"]), file=out or sys.stdout)
        pushed = None if push_to is None else self._push(push_to, out or sys.stdout)
        return Closure(target, result, self.pin(), pushed)

    def _push(self, url: str, out: TextIO) -> Pushed:
        """The closed folder, uploaded and verified; a push that cannot start is its one
        problem (the manifest is written: the campaign stays closed, the push can be rerun
        with ``python -m pytest_itera push``)."""
        from pytest_itera.files.push import Pushed, PushError, push

        try:
            pushed = push(self.root, url, out=sys.stderr)
        except PushError as exc:
            pushed = Pushed(url, 0, problems=[f"{exc}; then run: python -m pytest_itera push "
                                              f"{self.root} {url}"])
        print("\n".join(pushed.lines()), file=out)
        return pushed

    def _write_metrics_table(self, analysis: str) -> None:
        """The analysis (a Markdown or text file in UTF-8) with the runs' itera-metrics table;
        another kind of file is left as it is."""
        if not analysis.lower().endswith(closing.TABLE_SUFFIXES):
            return
        target = self.root / analysis
        try:
            text = target.read_text("utf-8")
        except UnicodeDecodeError:
            return
        rows = closing.metrics_rows(self._runs.values())
        if not rows:
            return
        updated = closing.with_metrics_table(text, rows)
        if updated != text:
            atomic_write_text(target, updated)

    def _journal_closure(self, target: Path, manifest: dict[str, Any]) -> None:
        """Journal what changed since the manifest a reopening replaces (each file replaced,
        added or removed, with its sha256s), then the closure with the digest of the manifest
        about to be written; the manifest's entry for the journal is then brought up to date
        (it cannot be inside the digest: the journal holds it)."""
        if self._reopened and target.is_file():
            old = json.loads(target.read_text("utf-8"))
            for change in closing.file_changes(old.get("files", ()), manifest["files"]):
                self._event("file", **change)
        self._event("close", manifest_digest=manifest_digest(manifest),
                    closed_at=manifest["closed_at"], at=self.now())
        self._closure, self._reopened = (len(self.journal.events), {
            "closed_at": manifest["closed_at"]}), False
        digest, size = sha256_file(self.journal.path)
        manifest["files"] = [
            {**f, "bytes": size, "sha256": digest} if f["path"] == JOURNAL_FILE else f
            for f in manifest["files"]]

    def pin(self) -> str | None:
        """``<line>:<digest>`` of the journal's last line (None before the plan is frozen).
        Write it where the campaign cannot rewrite it — the CI log, a notebook, the
        provider's order note: ``pytest --itera-journal-pin LINE:DIGEST`` then refuses a
        journal rewritten up to that line, even one chained again. close() prints it, and each
        decision logs it (logger ``pytest_itera.record``)."""
        return self.journal.pin()

    def reopen(self, *, reason: str, at: datetime | str | None = None) -> str | None:
        """Reopen a closed campaign to repair it (after a REJECTED verdict, say): the journal
        records the reopening with ``reason`` and the sha256 of the manifest it replaces
        (returned; None when manifest.json was deleted). Replace or add files, record what
        changed (``run.set_predictions`` again journals the new predictions with the sha256
        they replace), then :meth:`close` again: it journals every file replaced, added or
        removed (old and new sha256) and writes the new manifest. The reports say "reopened
        once: <reason>" (docs/recorder.md, "The way back")."""
        self._require_plan()
        if says_nothing(reason):
            raise RecordError("a reopening needs its reason (what the checks found, what will "
                              "change): rec.reopen(reason=...)")
        target = self.root / MANIFEST_FILE
        if not self._closed and self._closure is None:
            raise RecordError("the campaign is not closed: there is nothing to reopen; "
                              "record what changed and close() it")
        old = sha256_file(target)[0] if target.is_file() else None
        self._append("reopen", {"reason": reason, "manifest_sha256": old,
                                "at": self.now(at)})
        self._closed, self._closure, self._reopened = False, None, True
        self.reopenings.append(reason)
        return old

    def check(
        self, *, python: str | None = None, timeout: float = DEFAULT_TIMEOUT
    ) -> Verdict:
        """Run the plugin's checks on the folder as it stands, in this process (reloads in
        a fresh one, like the plugin's): what ``pytest --itera-campaign`` will say."""
        # Imported here: the checks' engine and the report renderers, a quarter of a
        # second at start-up, which a script that never calls check() does not pay.
        from pytest_itera.report.verify import check_campaign

        return check_campaign(self.root, python=python, timeout=timeout)


    def _schedule(self, schedule: Mapping[str, Any]) -> dict[str, Any]:
        decisions = [*schedule.get("decisions", ()), *self._decisions]
        return {**schedule, "decisions": decisions} if decisions else dict(schedule)

    def _plan_unchanged(self) -> str:
        digest = sha256_file(self.root / PLAN_FILE)[0]
        if digest != self.plan_sha256:
            raise RecordError(f"{PLAN_FILE} changed on disk after freezing; it is never edited")
        return digest

    def _check_run(self, run: RunRecorder) -> None:
        closing.check_run(run, self.planned_run(run.id)["role"], self._checkpoints,
                          self.corpus_ids())

    def _check_bases(self) -> None:
        for record in self._adapters:
            if "base_path" in record and (
                self._base_digest(record["path"], record["base_path"], record)
                != record["base_digest"]
            ):
                raise RecordError(
                    f"adapter {record['path']}: the shipped base "
                    f"{record['base_path']} changed after add_adapter"
                )

    def _write_measurements(self) -> None:
        for run in self._runs.values():
            if run.external_measurements:
                if run.record.get("metrics"):
                    closing.check_metrics_line(self.root, run)
                continue
            rows = run.measurement_rows()
            if not rows:
                continue
            relpath = run.measurements_path
            self._writable(run.id, relpath, rows)
            self.write_jsonl(relpath, rows)
            self._written.add(relpath)
            run.record["measurements"] = relpath


    def _writable(self, run_id: str, relpath: str, rows: list[dict[str, Any]]) -> None:
        """A run's measurements file may be written unless the script wrote one there: this
        process wrote it, a closure of this journal did (reopened since), or it already
        holds what the journal says."""
        target = self.root / relpath
        if relpath in self._written or self._reopened or not target.exists() or (
                target.read_bytes() == jsonl_text(rows).encode("utf-8")):
            return
        raise RecordError(
            f"run {run_id!r}: {relpath} exists, does not hold what the journal records of "
            "the run, and no closure in the journal wrote it: a file the script wrote itself "
            "is named with set_measurements; if a closure of an older recorder wrote it and "
            f"manifest.json was deleted to change the campaign, put the manifest back and "
            f"{_THE_WAY_BACK}")


_THE_WAY_BACK = ("reopen it: rec.reopen(reason=...), change the files, then close() "
                 "again (docs/recorder.md, 'The way back')")


def _float_money(plan: Mapping[str, Any]) -> dict[str, str]:
    """A price given as a number, by JSON path: what to write instead (SPEC: money)."""
    hints: dict[str, str] = {}
    budget = plan.get("budget")
    if not isinstance(budget, Mapping):
        return hints
    for kind, key in (("lots", "price"), ("external_expenses", "amount")):
        items = budget.get(kind)
        for i, item in enumerate(items if isinstance(items, list) else []):
            value = item.get(key) if isinstance(item, Mapping) else None
            if isinstance(value, int | float) and not isinstance(value, bool):
                hints[json_path(["budget", kind, i, key])] = (
                    f"the number {value!r} is not money: money is a decimal string, never "
                    f"a float (it would round); write \"{value}\"")
    return hints


def _states(text: str, amount: str) -> bool:
    """Whether a receipt's text shows ``amount`` as the budget check reads it ("12.50" is
    shown by "12,50 \u20ac"); an amount that is not a decimal is left to the schema."""
    try:
        return states_amount(text, Decimal(amount))
    except (InvalidOperation, ValueError):
        return amount in text
