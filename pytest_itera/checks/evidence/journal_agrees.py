"""journal-agrees: the recorder's journal is evidence too (R8, issue 24 points 2, 8, 12).

Where the recorder's journal (``itera-journal.jsonl``) is listed in the manifest, every event
it holds must agree with the manifest and the files: a contradiction names the journal line.

- runs: a run's first ``run-start`` is its ``started_at``; its last outcome event
  (``accepted``, ``stopped``, ``rejected``, or a ``decide`` that drops it) is its outcome (a
  run the journal says was stopped is never accepted), with the stop's rule and step, and
  that event's ``at`` is its ``ended_at`` (the recorder writes both at once: a run's end
  moved in the manifest moves what is judged after it, a decision or the next run);
- metrics: each value the journal records last for a run is the manifest's (and so, through
  measurements-agree, the measurements file's);
- predictions: the file a run's last ``predictions`` event names is the manifest's, with the
  sha256 journaled;
- checkpoints: the last save of a listed file has its sha256 (``files[].sha256``), its run is
  the checkpoint's run, and the step it holds is the step the reload child reads
  (``ReloadResult.step``) where both are known;
- resume: a ``resumed_from`` is the last one journaled, and the checkpoint it names is, by
  content, a save the journal records of the checkpoint's run at that step;
- step timings: the hours journaled per step are the manifest's observed hours (to the
  hundredth of an hour the manifest may round to);
- decisions: each journaled decision is in the manifest with its text, drops and moment;
- rehearsal: a journal whose first line began a rehearsal goes with a manifest that says
  ``"rehearsal": true`` (a rehearsal is never turned into an acceptance by editing it);
- clock: a journal that says ``"clock": "played"`` goes with a manifest that says so too
  (the journal's mark decides the verdict either way: PLAYED CLOCK, never ACCEPTED);
- bases: the revision and tree digest a ``base`` or ``training-base`` event records are the
  ``base_revision`` and ``base_digest`` of the adapters on that base (a ``training-base``
  also pins the adapters of its run that name no ``base_path``);
- closure: the manifest is the one the recorder wrote at its last ``close`` event (the
  event's ``manifest_digest``, :func:`pytest_itera.core.journal.manifest_digest`): a manifest
  edited or replaced without a ``reopen`` event, or a campaign reopened and not closed
  again, is refused (the way back is ``rec.reopen(reason=...)``, docs/recorder.md);
- the chain: each line's ``prev`` is the sha256 of the line before it (the first line's, of
  ``plan.json``): a line removed, inserted or rewritten breaks it at the line after it; each
  ``--itera-journal-pin LINE:DIGEST`` is the digest of that line (a journal rewritten whole,
  chained again, differs from a pin taken before);
- a plan that says ``"recorded": true`` (the recorder freezes it so) commits the campaign to
  its journal: a journal missing, unchained or cut short of its closure is refused.

The journal is streamed once by :mod:`.journal_facts` (memory grows with the runs, files and
saves, not with the logged points); the findings on the journal as a file (missing, chain,
pins, closure cut off) are :mod:`.journal_chain`'s. A line that cannot be read is said, never
skipped silently.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from decimal import Decimal
from typing import Any

from pytest_itera.checks.context import Check, Context
from pytest_itera.checks.evidence.journal_chain import chain_findings, no_journal
from pytest_itera.checks.evidence.journal_facts import (
    Event,
    JournalFacts,
    at,
    is_number,
    read_journal_facts,
)
from pytest_itera.checks.model import Kind
from pytest_itera.core.campaign import MANIFEST_FILE, Manifest, aware_moment
from pytest_itera.core.findings import Finding
from pytest_itera.core.findings import where as json_where
from pytest_itera.core.journal import JOURNAL_FILE, manifest_digest
from pytest_itera.core.schedule import in_hours
from pytest_itera.files import measurements

__all__ = ["CHECK", "KINDS", "journal_agrees", "journal_listed"]

CHECK_ID = "journal-agrees"
_ROUNDING = Decimal("0.01")  # the manifest's observed hours may be rounded to it


# ================================================================== the check


def journal_listed(ctx: Context) -> list[str]:
    """One item for the journal, when the manifest lists it or the plan says the campaign is
    recorded (then a journal left out is refused), or when a pin asks for it."""
    man, plan = ctx.campaign.manifest, ctx.campaign.plan
    listed = man is not None and any(f.path == JOURNAL_FILE for f in man.files)
    recorded = man is not None and plan is not None and plan.recorded
    return [JOURNAL_FILE] if listed or recorded or ctx.options.journal_pins else []


def journal_agrees(ctx: Context, _target: str | None) -> Iterator[Finding]:
    """Every event of the listed journal agrees with the manifest and the files."""
    plan, man = ctx.documents()
    listed = any(f.path == JOURNAL_FILE for f in man.files)
    if not listed:
        yield from no_journal(plan.recorded, bool(ctx.options.journal_pins))
        return
    path = ctx.regular_file(JOURNAL_FILE)
    if isinstance(path, str):
        return  # files-intact says what is wrong with a listed file
    pins = ctx.options.journal_pins
    facts = ctx.memo("journal-agrees:facts",
                     lambda: read_journal_facts(path, [line for line, _ in pins]))
    yield from chain_findings(ctx, plan.recorded, facts)
    for line, why in facts.unreadable:
        yield Finding(
            f"cannot compare {JOURNAL_FILE} line {line} with the manifest: it {why}",
            where=at(line), code=f"{CHECK_ID}.unreadable",
            hint="ship the journal as the recorder wrote it (a recorder continuing the "
            "campaign cuts a torn last line off and records that it did)")
    if facts.rehearsal is not None and not man.rehearsal:
        yield Finding(
            f"{JOURNAL_FILE} began this campaign as a rehearsal, but the manifest does not say "
            "so", where=at(facts.rehearsal.line), code=f"{CHECK_ID}.rehearsal",
            expected=f"\"rehearsal\": true in {MANIFEST_FILE}", found="no rehearsal",
            hint="a rehearsal is never accepted: run the campaign for real in a new folder "
            "(CampaignRecorder without rehearsal=True)")
    if facts.played is not None and not man.played_clock:
        yield Finding(
            f"{JOURNAL_FILE} records this campaign on a played clock (an injected clock=), "
            "but the manifest does not say so", where=at(facts.played.line),
            code=f"{CHECK_ID}.clock", expected=f"\"clock\": \"played\" in {MANIFEST_FILE}",
            found="no clock" if man.clock is None else f"\"clock\": {man.clock!r}",
            hint="hours a played clock gave were never measured: record the campaign on the "
            "real clock (CampaignRecorder without clock=) in a new folder")
    yield from _runs(man, facts)
    yield from _metrics(ctx, man, facts)
    yield from _predictions(man, facts)
    yield from _checkpoints(ctx, man, facts)
    yield from _resumes(man, facts)
    yield from _step_hours(man, facts)
    yield from _decisions(man, facts)
    yield from _bases(man, facts)
    yield from _closure(ctx, facts)


_WAY_BACK = ("a closed campaign changes only through a reopening that says why: "
             "rec.reopen(reason=...), change the files, then close() again (docs/recorder.md, "
             "'The way back')")


def _closure(ctx: Context, facts: JournalFacts) -> Iterator[Finding]:
    """The manifest is the one written at the journal's last closure, not reopened since."""
    event = facts.closure
    if event is None:
        return  # a journal of an older recorder: it records no closure
    if event.facts["event"] == "reopen":
        yield Finding(
            f"the campaign was reopened ({event.facts.get('reason')!r}) and not closed "
            f"again: {MANIFEST_FILE} is the manifest that reopening replaces",
            where=at(event.line), code=f"{CHECK_ID}.reopened",
            hint="finish the repair and close() again: the recorder writes the new manifest")
        return
    found = ctx.memo("journal-agrees:manifest-digest", lambda: _manifest_digest(ctx))
    written = event.facts.get("manifest_digest")
    if isinstance(written, str) and found != written:
        yield Finding(
            f"{MANIFEST_FILE} is not the manifest the recorder wrote when it closed the "
            f"campaign (closed_at {event.facts.get('closed_at')}): it was edited or "
            "replaced without a reopen record", where=at(event.line),
            code=f"{CHECK_ID}.manifest-replaced", expected=written, found=str(found),
            hint=_WAY_BACK)


def _manifest_digest(ctx: Context) -> str | None:
    try:
        data = json.loads((ctx.root / MANIFEST_FILE).read_bytes())
    except (OSError, ValueError, RecursionError):
        return None
    return manifest_digest(data) if isinstance(data, dict) else None


def _file_sha256(man: Manifest) -> dict[str, str]:
    return {f.path: f.sha256 for f in man.files}


def _runs(man: Manifest, facts: JournalFacts) -> Iterator[Finding]:
    for run_id, event in sorted(facts.started.items()):
        position = man.run_position(run_id)
        if position is None:
            yield Finding(
                f"{JOURNAL_FILE} records that run {run_id} started, but the manifest has no "
                f"run {run_id}", where=at(event.line), code=f"{CHECK_ID}.run-missing",
                expected=f"run {run_id} in {MANIFEST_FILE} $.runs",
                hint="record every run the journal started in the manifest (close() does)")
            continue
        yield from _run_moment(run_id, position, man.runs[position].started_at, event,
                               "started_at")
    for run_id, event in sorted(facts.outcome.items()):
        position = man.run_position(run_id)
        journaled = event.facts["event"]
        if position is None:
            continue
        run = man.runs[position]
        if run.outcome != journaled:
            yield Finding(
                f"{JOURNAL_FILE} records run {run_id} as {journaled} last, but the manifest "
                f"records it {run.outcome}", where=at(event.line),
                code=f"{CHECK_ID}.run-outcome", expected=journaled, found=run.outcome,
                hint="a run's outcome is the last one the recorder journaled: a stopped run "
                "is never accepted (start a new run ID for a new attempt)")
            continue
        yield from _run_moment(run_id, position, run.ended_at, event, "ended_at")
        if journaled == "stopped" and run.stop is not None:
            rule, step = event.facts.get("rule"), event.facts.get("step")
            if rule != run.stop.rule or (step is not None and step != run.stop.step):
                yield Finding(
                    f"{JOURNAL_FILE} records run {run_id} stopped by {rule!r} at step {step}, "
                    f"the manifest by {run.stop.rule!r} at step {run.stop.step}",
                    where=at(event.line), code=f"{CHECK_ID}.run-stop",
                    expected=f"{rule!r} at step {step}",
                    found=f"{run.stop.rule!r} at step {run.stop.step}",
                    hint="write the stop the recorder journaled")


def _metrics(ctx: Context, man: Manifest, facts: JournalFacts) -> Iterator[Finding]:
    for (run_id, name), (line, value) in sorted(facts.metrics.items()):
        position = man.run_position(run_id)
        if position is None or not is_number(value):
            continue
        run = man.runs[position]
        stated = run.metrics.get(name)
        if stated is not None and stated != value:
            yield _metric_differs(run_id, name, line, value, stated, json_where(
                MANIFEST_FILE, "runs", position, "metrics", name), "the manifest")
            continue
        written = _file_metric(ctx, run.measurements, name)
        if written is not None and not measurements.same_at_precision(value, written):
            yield _metric_differs(run_id, name, line, value, written.value,
                                  f"{run.measurements}:{written.line}", str(run.measurements))


def _file_metric(ctx: Context, relpath: str | None, name: str) -> measurements.Metric | None:
    if relpath is None:
        return None
    found = ctx.measurements(relpath)
    if not isinstance(found, measurements.Measurements) or found.metrics is None:
        return None  # measurements-agree says why the file cannot be read
    return found.metrics.get(name)


def _metric_differs(run_id: str, name: str, line: int, value: Any, stated: Any, where: str,
                    document: str) -> Finding:
    return Finding(
        f"run {run_id}'s {name} is {stated!r} in {document}, but {JOURNAL_FILE} recorded "
        f"{value!r} when the run measured it",
        where=at(line), code=f"{CHECK_ID}.metric", expected=repr(value), found=repr(stated),
        hint=f"write the value the run measured ({where}, and wherever else it is copied)")


def _predictions(man: Manifest, facts: JournalFacts) -> Iterator[Finding]:
    shipped = _file_sha256(man)
    for run_id, event in sorted(facts.predictions.items()):
        run = man.run(run_id)
        journaled, digest = event.facts.get("path"), event.facts.get("sha256")
        if run is None or run.predictions is None:
            continue
        if journaled != run.predictions:
            yield Finding(
                f"run {run_id}'s predictions are {run.predictions} in the manifest, "
                f"{journaled} in {JOURNAL_FILE}", where=at(event.line),
                code=f"{CHECK_ID}.predictions", expected=str(journaled), found=run.predictions,
                hint="ship the predictions the run recorded")
        elif isinstance(digest, str) and shipped.get(run.predictions, digest) != digest:
            yield Finding(
                f"the predictions {run.predictions} of run {run_id} are not the file the "
                f"recorder journaled: sha256 {shipped[run.predictions]} shipped, {digest} "
                "journaled", where=at(event.line), code=f"{CHECK_ID}.predictions",
                expected=digest, found=shipped[run.predictions],
                hint="ship the predictions the run wrote (and record any new file with "
                "RunRecorder.set_predictions)")


def _checkpoints(ctx: Context, man: Manifest, facts: JournalFacts) -> Iterator[Finding]:
    shipped = _file_sha256(man)
    listed = {c.path: c for c in man.checkpoints}
    for ckpt_path, event in sorted(facts.saves.items()):
        digest, run = event.facts.get("sha256"), event.facts.get("run")
        record = listed.get(ckpt_path)
        if record is not None and record.run != run:
            yield Finding(
                f"checkpoint {ckpt_path} is run {record.run}'s in the manifest, but "
                f"{JOURNAL_FILE} records its last save by run {run}",
                where=at(event.line), code=f"{CHECK_ID}.checkpoint-run",
                expected=str(run), found=record.run,
                hint="list each checkpoint under the run that saved it")
        if isinstance(digest, str) and ckpt_path in shipped and shipped[ckpt_path] != digest:
            yield Finding(
                f"checkpoint {ckpt_path} is not the file its last journaled save wrote: "
                f"sha256 {shipped[ckpt_path]} shipped, {digest} saved",
                where=at(event.line), code=f"{CHECK_ID}.checkpoint-sha256",
                expected=digest, found=shipped[ckpt_path],
                hint="ship the checkpoint as the run saved it; journal each save "
                "(CampaignRecorder.checkpoint_saved) when a file is written again")
            continue
        step = event.facts.get("step")
        if record is None or not isinstance(step, int) or ctx.options.fast:
            continue
        stored = ctx.reload(record.path, record.format).step
        if stored is not None and stored != step:
            yield Finding(
                f"checkpoint {ckpt_path} stores step {stored}, but {JOURNAL_FILE} records "
                f"that it was saved at step {step}",
                where=at(event.line), code=f"{CHECK_ID}.checkpoint-step",
                expected=str(step), found=str(stored),
                hint="ship the checkpoint the run saved at that step")


def _resumes(man: Manifest, facts: JournalFacts) -> Iterator[Finding]:
    shipped = _file_sha256(man)
    listed = {c.path: c for c in man.checkpoints}
    journals_content = bool(facts.by_content)
    for position, run in enumerate(man.runs):
        resumed = run.resumed_from
        if resumed is None:
            continue
        where = json_where(MANIFEST_FILE, "runs", position, "resumed_from")
        event = facts.resumed.get(run.id)
        if event is not None and (event.facts.get("checkpoint"), event.facts.get("step")) != (
                resumed.checkpoint, resumed.step):
            yield Finding(
                f"run {run.id} resumed from {resumed.checkpoint} at step {resumed.step} by "
                f"the manifest, from {event.facts.get('checkpoint')} at step "
                f"{event.facts.get('step')} by {JOURNAL_FILE}", where=at(event.line),
                code=f"{CHECK_ID}.resumed-from",
                expected=f"{event.facts.get('checkpoint')} at step {event.facts.get('step')}",
                found=f"{resumed.checkpoint} at step {resumed.step}",
                hint="write the resume the recorder journaled")
        source = listed.get(resumed.checkpoint)
        digest = shipped.get(resumed.checkpoint)
        if not journals_content or source is None or digest is None:
            continue
        saves = [e for e in facts.by_content.get(digest, ()) if e.facts.get("run") == source.run]
        if not saves:
            yield Finding(
                f"the checkpoint {resumed.checkpoint} that run {run.id} resumed from is not a "
                f"checkpoint of run {source.run}: {JOURNAL_FILE} records no save of run "
                f"{source.run} with its content (sha256 {digest})", where=where,
                code=f"{CHECK_ID}.resume-source",
                expected=f"a save of run {source.run} with sha256 {digest}",
                found="none",
                hint="resume from a checkpoint the reference run saved (the recorder journals "
                "each save's sha256 and step: CampaignRecorder.checkpoint_saved)")
            continue
        steps = {int(e.facts["step"]) for e in saves if isinstance(e.facts.get("step"), int)}
        if steps and resumed.step not in steps:
            yield Finding(
                f"run {run.id} resumed from {resumed.checkpoint} at step {resumed.step}, but "
                f"run {source.run} saved that content at step "
                f"{', '.join(str(s) for s in sorted(steps))}", where=where,
                code=f"{CHECK_ID}.resume-step", expected=", ".join(str(s) for s in sorted(steps)),
                found=str(resumed.step),
                hint="record the step the checkpoint was saved at (RunRecorder.resumed_from)")


def _step_hours(man: Manifest, facts: JournalFacts) -> Iterator[Finding]:
    observed = {s.id: s for s in man.schedule.steps}
    for step_id, (line, hours) in sorted(facts.hours.items()):
        step = observed.get(step_id)
        if step is None:
            yield Finding(
                f"{JOURNAL_FILE} times step {step_id} ({in_hours(hours)}), but the manifest's "
                "schedule has no such step", where=at(line), code=f"{CHECK_ID}.step-hours",
                hint="write every timed step's observed hours in the manifest (close() does)")
            continue
        stated = Decimal(str(step.observed_hours))
        if abs(stated - hours) > _ROUNDING:
            yield Finding(
                f"step {step_id} took {in_hours(hours)} by {JOURNAL_FILE}, {in_hours(stated)} "
                "by the manifest", where=at(line), code=f"{CHECK_ID}.step-hours",
                expected=in_hours(hours), found=in_hours(stated),
                hint="write the hours the recorder timed (the journal's step events)")


def _run_moment(run_id: str, position: int, recorded: datetime | None, event: Event,
                field: str) -> Iterator[Finding]:
    """A run's ``started_at`` is its first ``run-start`` event's moment, and its ``ended_at``
    its outcome event's: the recorder writes both at once (a dropped run's ``decide`` carries
    no end)."""
    journaled = aware_moment(event.facts.get("at"))
    if recorded is None or journaled is None or recorded == journaled:
        return
    start = field == "started_at"
    told = "" if start else f" (its {event.facts['event']} event)"
    yield Finding(
        f"run {run_id} {'started' if start else 'ended'} at {journaled.isoformat()} by "
        f"{JOURNAL_FILE}{told}, at {recorded.isoformat()} by the manifest",
        where=at(event.line), code=f"{CHECK_ID}.run-{'start' if start else 'end'}",
        expected=journaled.isoformat(), found=recorded.isoformat(),
        hint=f"write the {'start' if start else 'end'} the recorder journaled ("
        f"{json_where(MANIFEST_FILE, 'runs', position, field)})"
        + ("" if start else ": what followed the run (a decision, the next run) is judged on "
           "it"))


def _decisions(man: Manifest, facts: JournalFacts) -> Iterator[Finding]:
    recorded = {d.id: d for d in man.schedule.decisions}
    for event in facts.decisions:
        decision_id = event.facts["id"]
        decision = recorded.get(decision_id)
        if decision is None:
            yield Finding(
                f"{JOURNAL_FILE} records decision {decision_id}, but the manifest does not",
                where=at(event.line), code=f"{CHECK_ID}.decision",
                hint="record every decision the journal holds in the manifest (close() does)")
        elif decision.text != event.facts.get("text") or set(decision.drops) != set(
                event.facts.get("drops") or ()):
            yield Finding(
                f"decision {decision_id} in the manifest is not the one {JOURNAL_FILE} records "
                "(its text or the runs it drops differ)", where=at(event.line),
                code=f"{CHECK_ID}.decision",
                expected=f"{event.facts.get('text')!r}, drops {event.facts.get('drops') or []}",
                found=f"{decision.text!r}, drops {list(decision.drops)}",
                hint="a decision is written once, when it is taken: write it as journaled")
            continue
        journaled = aware_moment(event.facts.get("at"))
        if decision is not None and decision.at is not None and journaled is not None \
                and decision.at != journaled:
            yield Finding(
                f"decision {decision_id} was taken at {journaled.isoformat()} by "
                f"{JOURNAL_FILE}, at {decision.at.isoformat()} by the manifest",
                where=at(event.line), code=f"{CHECK_ID}.decision-at",
                expected=journaled.isoformat(), found=decision.at.isoformat(),
                hint="a decision is written once, when it is taken: write the moment the "
                "recorder journaled")


def _bases(man: Manifest, facts: JournalFacts) -> Iterator[Finding]:
    for event in facts.bases:
        folder, run = event.facts["folder"], event.facts.get("run")
        revision, digest = event.facts.get("revision"), event.facts.get("tree_sha256")
        for index, adapter in enumerate(man.adapters):
            on_base = adapter.base_path == folder
            trained = event.facts["event"] == "training-base" and adapter.run == run \
                and adapter.base_path is None
            if not (on_base or trained):
                continue
            where = json_where(MANIFEST_FILE, "adapters", index)
            if isinstance(revision, str) and adapter.base_revision != revision:
                yield Finding(
                    f"adapter {adapter.path} names base revision {adapter.base_revision}, but "
                    f"{JOURNAL_FILE} records base {folder} at revision {revision}"
                    + (f" when run {run} started training" if run else ""),
                    where=at(event.line), code=f"{CHECK_ID}.base-revision",
                    expected=revision, found=str(adapter.base_revision),
                    hint=f"pin the adapter to the base it was trained on ({where}.base_revision)")
            if on_base and isinstance(digest, str) and adapter.base_digest is not None \
                    and adapter.base_digest != digest:
                yield Finding(
                    f"the base {folder} of adapter {adapter.path} is not the folder "
                    f"{JOURNAL_FILE} recorded: tree digest {adapter.base_digest} in the "
                    f"manifest, {digest} journaled", where=at(event.line),
                    code=f"{CHECK_ID}.base-digest", expected=digest,
                    found=adapter.base_digest,
                    hint="ship the base the adapter was trained on, unchanged")


KINDS: dict[str, Kind] = {
    "journal-agrees.unreadable": Kind(
        rule="a line of the journal is torn, over the line limit or not an event: it cannot be "
        "compared with the manifest",
        fix="ship the journal as the recorder wrote it (a recorder continuing the campaign cuts a"
        " torn last line off)"),
    "journal-agrees.rehearsal": Kind(
        rule="the journal's first line began a rehearsal and the manifest does not say "
        '"rehearsal": true',
        fix="a rehearsal is never accepted: run the campaign for real in a new folder"),
    "journal-agrees.clock": Kind(
        rule="the journal records the campaign on a played clock and the manifest does not say "
        '"clock": "played"',
        fix="record the campaign on the real clock (CampaignRecorder without clock=) in a new "
        "folder"),
    "journal-agrees.missing": Kind(
        rule='the plan says the campaign is recorded ("recorded": true) and the manifest lists no'
        " journal",
        fix="ship the journal the recorder wrote"),
    "journal-agrees.pin": Kind(
        rule="a --itera-journal-pin names a line the journal does not have, a line whose sha256 "
        "differs, or no journal is listed",
        fix="ship the journal the pin was taken of (rec.pin() prints it), or drop the pin"),
    "journal-agrees.chain": Kind(
        rule="the journal's chain breaks: a line's prev is not the sha256 of the line before it, "
        "or line 1's not plan.json's",
        fix="ship the journal as the recorder wrote it; a repair goes through "
        "rec.reopen(reason=...)"),
    "journal-agrees.unchained": Kind(
        rule="the plan says the campaign is recorded and its journal is not chained (line 1 "
        "carries no prev)",
        fix="ship the journal the recorder wrote (each line chained to the one before)"),
    "journal-agrees.not-closed": Kind(
        rule='the plan says the campaign is recorded and its journal ends without its closure',
        fix="ship the whole journal: its last line is the close() that wrote the manifest"),
    "journal-agrees.reopened": Kind(
        rule="the journal's last closure record is a reopen: the campaign was reopened and not "
        "closed again",
        fix="finish the repair and close() again: the recorder writes the new manifest"),
    "journal-agrees.manifest-replaced": Kind(
        rule="the manifest is not the one the recorder wrote at the journal's last close event "
        "(edited or replaced without a reopening)",
        fix="a closed campaign changes only through rec.reopen(reason=...), the change, then "
        "close() again"),
    "journal-agrees.run-missing": Kind(
        rule='the journal records that a run started and the manifest has no such run',
        fix="record every run the journal started in the manifest (close() does)"),
    "journal-agrees.run-outcome": Kind(
        rule="a run's last journaled outcome (accepted, stopped, rejected, dropped by a decide) "
        "is not the manifest's",
        fix="write the outcome the recorder journaled last: a stopped run is never accepted"),
    "journal-agrees.run-stop": Kind(
        rule="the rule or step of a run's journaled stop differ from the manifest's stop",
        fix="write the stop the recorder journaled"),
    "journal-agrees.run-start": Kind(
        rule="a run's first journaled run-start is not its started_at",
        fix="write the start the recorder journaled"),
    "journal-agrees.run-end": Kind(
        rule="the moment of a run's journaled outcome event is not its ended_at",
        fix="write the end the recorder journaled: what followed the run is judged on it"),
    "journal-agrees.metric": Kind(
        rule="a metric the journal recorded last differs from the manifest's (or, where it is "
        "left out, the measurements file's)",
        fix="write the value the run measured, wherever it is copied"),
    "journal-agrees.predictions": Kind(
        rule="a run's predictions are another file than the journaled one (path or sha256)",
        fix="ship the predictions the run recorded (RunRecorder.set_predictions for a new file)"),
    "journal-agrees.checkpoint-run": Kind(
        rule='a listed checkpoint is under another run than the one its last journaled save names',
        fix="list each checkpoint under the run that saved it"),
    "journal-agrees.checkpoint-sha256": Kind(
        rule="a listed checkpoint's sha256 is not what its last journaled save wrote",
        fix="ship the checkpoint as the run saved it; journal each save "
        "(CampaignRecorder.checkpoint_saved)"),
    "journal-agrees.checkpoint-step": Kind(
        rule="a listed checkpoint stores another step than its journaled save (not with --itera-"
        "fast)",
        fix="ship the checkpoint the run saved at that step"),
    "journal-agrees.resumed-from": Kind(
        rule="a run's resumed_from differs from the one the journal records",
        fix="write the resume the recorder journaled"),
    "journal-agrees.resume-source": Kind(
        rule="the checkpoint a run resumed from is, by content, no save the journal records of "
        "that checkpoint's run",
        fix="resume from a checkpoint the reference run saved (journaled by "
        "CampaignRecorder.checkpoint_saved)"),
    "journal-agrees.resume-step": Kind(
        rule="a run resumed at another step than the journal's save of that checkpoint content",
        fix="record the step the checkpoint was saved at (RunRecorder.resumed_from)"),
    "journal-agrees.step-hours": Kind(
        rule="a step's journaled hours differ from its observed hours in the manifest (beyond "
        "0.01 h), or it is not in the schedule",
        fix="write the hours the recorder timed (the journal's step events)"),
    "journal-agrees.decision": Kind(
        rule='a journaled decision is missing from the manifest, or its text or drops differ',
        fix="a decision is written once, when it is taken: write it as journaled"),
    "journal-agrees.decision-at": Kind(
        rule="a decision's moment in the manifest is not the journaled one",
        fix="write the moment the recorder journaled"),
    "journal-agrees.base-revision": Kind(
        rule="an adapter's base_revision is not the revision a base or training-base event records",
        fix="pin the adapter to the base it was trained on (base_revision)"),
    "journal-agrees.base-digest": Kind(
        rule="an adapter's base_digest is not the tree digest the journal's base event records",
        fix="ship the base the adapter was trained on, unchanged"),
}

CHECK = Check("journal-agrees", "every event of the recorder's journal agrees with the manifest "
              "and the files", journal_agrees, scope="file", targets=journal_listed,
              kinds=KINDS)
