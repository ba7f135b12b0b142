"""What happened to one planned run: :class:`RunRecorder`, obtained from
``CampaignRecorder.run``. Its evidence (points, checked inputs, metrics) becomes the run's
measurements file at closure."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pytest_itera.checks.budget.deliverables import planned_elsewhere
from pytest_itera.checks.runs.predictions_cover_corpus import coverage_problems, shared_predictions
from pytest_itera.checks.runs.stop_records import STOPPED_DELIVERS_NOTHING
from pytest_itera.checks.stop_rules import (
    MEASURED_KINDS,
    RuleVerdict,
    measured,
    rule_parameters_problem,
    triggers,
)
from pytest_itera.core.campaign import StopRule
from pytest_itera.core.findings import render_all
from pytest_itera.core.text import says_nothing
from pytest_itera.files.measurements import (
    Measurements,
    Unreadable,
    parse_measurements,
    read_measurements,
)
from pytest_itera.record.base import (
    Campaign,
    Outcome,
    RecordError,
    check_relpath,
    json_number,
    jsonl_text,
    sha256_file,
)

__all__ = ["OpenRun", "RunRecorder"]


@dataclass(frozen=True)
class OpenRun:
    """A run started and without an outcome (what :meth:`CampaignRecorder.open_runs`
    returns): where a script continuing the campaign picks it up."""

    id: str
    started_at: str
    last_step: int | None  # the last step it logged (None: none)
    # Its last journaled checkpoint save (path, run, sha256 or tree_sha256, step, at), or None.
    last_save: Mapping[str, Any] | None


class RunRecorder:
    """What happened to one planned run; obtained from :meth:`CampaignRecorder.run`.

    The run's evidence is its measurements file (docs/contract-v2.md): the points
    given to :meth:`log`, the inputs given to :meth:`check_input` and the metrics of
    :meth:`set_metrics`, written at closure to ``runs/<id>/measurements.jsonl``. A
    script that writes its own file names it with :meth:`set_measurements` instead;
    its metrics line must then equal the recorded metrics.
    """

    def __init__(self, campaign: Campaign, run_id: str) -> None:
        self._campaign = campaign
        self.id = run_id
        self.record: dict[str, Any] = {"id": run_id}
        self._points: list[dict[str, Any]] = []
        self._inputs: list[dict[str, Any]] = []
        self._external_measurements = False  # set_measurements: the script wrote the file
        self._predictions_sha256: str | None = None  # the last journaled predictions' sha256

    @property
    def outcome(self) -> Outcome | None:
        outcome: Outcome | None = self.record.get("outcome")
        return outcome

    @property
    def external_measurements(self) -> bool:
        """The script wrote the run's measurements file itself (:meth:`set_measurements`)."""
        return self._external_measurements

    @property
    def measurements_path(self) -> str:
        """Where the recorder writes this run's measurements file."""
        return f"runs/{self.id}/measurements.jsonl"

    @property
    def last_step(self) -> int | None:
        """The last step logged (None before the first :meth:`log`)."""
        step: int | None = self._points[-1]["step"] if self._points else None
        return step

    @property
    def started_at(self) -> str | None:
        """When the run started (None before :meth:`start`): a script that continues a
        campaign from its journal asks before starting a run again."""
        started: str | None = self.record.get("started_at")
        return started

    def start(self, at: datetime | str | None = None) -> None:
        if self.started_at is not None:
            raise RecordError(
                f"run {self.id!r} already started at {self.started_at}; a run starts once "
                "(ask run.started_at when continuing a campaign from its journal)")
        when = self._campaign.now(at)
        self._campaign._event("run-start", run=self.id, at=when)
        self.record["started_at"] = when

    def set_config(self, relpath: str) -> str:
        """Record the run's config file; returns its sha256 (must equal the plan's)."""
        digest = self._campaign.file_sha256(relpath, field=f"runs[{self.id}].config")
        planned = self._campaign.planned_run(self.id).get("config_sha256")
        if planned != digest:
            raise RecordError(
                f"run {self.id!r}: config {relpath} has sha256 {digest}, the plan froze "
                f"{planned}; a changed configuration needs a new run ID"
            )
        self._campaign._event("config", run=self.id, path=relpath)
        self.record.update(config=relpath, config_sha256=digest)
        return digest

    # ---- evidence

    def log(self, step: int, **values: float) -> None:
        """A point of each named series at ``step`` (steps never go back).

        A non-finite value is evidence, not an error: it is written as the string
        ``"NaN"``, ``"Infinity"`` or ``"-Infinity"`` (JSON has no NaN), and a
        non-finite-loss stop rule reads it."""
        self._own_measurements()
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise RecordError(f"run {self.id!r}: step {step!r} is not a non-negative integer")
        for name, value in values.items():
            if name == "step" or isinstance(value, bool) or not isinstance(value, int | float):
                raise RecordError(f"run {self.id!r}: {name}={value!r} is not a series value")
        last = self._points[-1]["step"] if self._points else None
        if last is not None and step < last:
            if self._logged(step, values):
                return  # the same point again: a script continued from its journal
            raise RecordError(
                f"run {self.id!r}: step {step} logged after step {last}; a run resumed "
                f"from an earlier checkpoint calls run.rewind({step - 1}) first")
        self._campaign._event(
            "log", run=self.id, step=step, values={k: json_number(v) for k, v in values.items()})
        if last == step:
            self._points[-1].update(values)
        else:
            self._points.append({"step": step, **values})

    def _logged(self, step: int, values: Mapping[str, float]) -> bool:
        point = next((p for p in self._points if p["step"] == step), None)
        return point is not None and all(
            name in point and _same_value(point[name], value) for name, value in values.items())

    def rewind(self, step: int) -> None:
        """Forget the points logged after ``step``: the run resumed from a checkpoint saved
        at ``step`` (after a crash, say), and those steps are trained again."""
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise RecordError(f"run {self.id!r}: rewind step {step!r} is not a step")
        self._campaign._event("rewind", run=self.id, step=step)
        self._points = [p for p in self._points if p["step"] <= step]

    def series(self, name: str) -> list[tuple[int, float]]:
        """The logged points of one series, in step order."""
        return [(p["step"], float(p[name])) for p in self._points if name in p]

    def check_input(
        self,
        input: str,
        *,
        sha256: str | None = None,
        examples: int | None = None,
        bytes: int | None = None,
    ) -> None:
        """What this run (a data check) measured on an input: a corpus id or a path."""
        self._own_measurements()
        checked: dict[str, Any] = {"input": input}
        for key, value in (("sha256", sha256), ("examples", examples), ("bytes", bytes)):
            if value is not None:
                checked[key] = value
        if len(checked) == 1:
            raise RecordError(
                f"run {self.id!r}: check_input({input!r}) records nothing: give "
                "its sha256, example count and/or bytes"
            )
        self._campaign._event("input", run=self.id, checked=checked)
        self._inputs.append(checked)

    def set_metrics(self, **values: float) -> None:
        for name, value in values.items():
            if not isinstance(value, int | float) or not math.isfinite(value):
                raise RecordError(f"run {self.id!r}: metric {name}={value!r} is not finite")
        self._campaign._event("metrics", run=self.id, values=dict(values))
        self.record.setdefault("metrics", {}).update(values)

    def set_measurements(self, relpath: str) -> None:
        """A measurements file the script wrote itself (instead of :meth:`log`)."""
        if self._points or self._inputs:
            raise RecordError(
                f"run {self.id!r}: its measurements are logged through the "
                f"recorder (written to {self.measurements_path} at closure)"
            )
        self._campaign.file_sha256(relpath, field=f"runs[{self.id}].measurements")
        self._campaign._event("measurements", run=self.id, path=relpath)
        self.record["measurements"] = relpath
        self._external_measurements = True

    def _own_measurements(self) -> None:
        if self._external_measurements:
            raise RecordError(
                f"run {self.id!r}: its measurements file "
                f"{self.record['measurements']} was written by the script; log "
                "into it there, or let the recorder write it"
            )

    def set_predictions(self, relpath: str, *, corpus: str | None = None) -> None:
        """The run's predictions file and the plan corpus it covers (default: the corpus the
        plan gives the run, or the plan's only corpus). Journaled with its sha256; called
        again (a campaign reopened to replace the predictions), with the sha256 it replaces."""
        if self.outcome == "stopped":
            raise RecordError(f"run {self.id!r} was stopped: {STOPPED_DELIVERS_NOTHING}, so it "
                              "records no predictions")
        digest = self._campaign.file_sha256(relpath, field=f"runs[{self.id}].predictions")
        corpus = corpus if corpus is not None else self._campaign.planned_corpus(self.id)
        self._refuse_shared_predictions(relpath)
        self._refuse_incomplete_predictions(relpath, corpus)
        replaced = self._predictions_sha256
        facts = {"replaces": replaced} if replaced not in (None, digest) else {}
        self._campaign._event("predictions", run=self.id, path=relpath, sha256=digest, **facts)
        self._predictions_sha256 = digest
        self.record["predictions"] = relpath
        if corpus is not None:
            self.set_corpus(corpus)

    def _refuse_shared_predictions(self, relpath: str) -> None:
        """RecordError where ``predictions-cover-corpus`` will fail this run: another run
        already records this predictions file (the check's own rule)."""
        problem = shared_predictions(self.id, relpath, self._campaign.predictions_owners(relpath),
                                     f"runs[{self.id}].predictions")
        if problem is not None:
            raise RecordError(f"run {self.id!r}: {relpath} is another run's predictions, as "
                              f"the plugin would report (predictions-cover-corpus):\n"
                              f"{problem.render()}")

    def _replay_predictions(self, relpath: str, sha256: str | None) -> None:
        """A journaled predictions event, taken as journaled: the file may have been
        replaced since (a reopened campaign), or removed for a new one."""
        self._predictions_sha256 = sha256
        self.record["predictions"] = relpath
        corpus = self.record.get("corpus") or self._campaign.planned_corpus(self.id)
        if corpus is not None:
            self.set_corpus(corpus)

    def set_corpus(self, corpus: str) -> None:
        """The plan corpus this run's predictions cover: what it delivers when accepted."""
        known = self._campaign.corpus_ids()
        if corpus not in known:
            raise RecordError(
                f"run {self.id!r}: corpus {corpus!r} is not a corpus of the plan "
                f"(corpora: {', '.join(known)})"
            )
        planned = planned_elsewhere(self._campaign.plan_model, self.id, corpus)
        if planned is not None:
            raise RecordError(
                f"run {self.id!r}: the plan gives it corpus {planned!r}, not "
                f"{corpus!r}; a run on another corpus needs a new run ID"
            )
        self._campaign._event("corpus", run=self.id, corpus=corpus)
        self.record["corpus"] = corpus

    def resumed_from(self, checkpoint: str, step: int) -> None:
        """The resume check's evidence: it resumed from ``checkpoint`` (a resume checkpoint
        of another run, listed with :meth:`CampaignRecorder.add_checkpoint` before
        closure) saved at ``step``."""
        check_relpath(checkpoint, field=f"runs[{self.id}].resumed_from.checkpoint")
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise RecordError(f"run {self.id!r}: resume step {step!r} is not a step")
        self._campaign._event("resumed-from", run=self.id, checkpoint=checkpoint, step=step)
        self.record["resumed_from"] = {"checkpoint": checkpoint, "step": step}

    # ---- outcome

    def accept(
        self,
        *,
        corpus: str | None = None,
        deliverable: str | None = None,
        at: datetime | str | None = None,
    ) -> None:
        """The run passed its checks. ``corpus`` (``deliverable``, its /1 name, is kept as an
        alias) names the corpus its predictions cover, when set_predictions did not."""
        named = corpus if corpus is not None else deliverable
        self._ending("accepted")
        self._refuse_incomplete_predictions(self.record.get("predictions"),
                                            named or self.record.get("corpus"))
        if named is not None:
            self.set_corpus(named)
        self._refuse_triggered()
        self._end("accepted", at)

    def _refuse_incomplete_predictions(self, relpath: str | None, corpus_id: str | None) -> None:
        """RecordError where ``predictions-cover-corpus`` will fail this run: predictions
        that miss, repeat or add IDs of the frozen corpus they cover (judged by the check's
        own rule, once the corpus is known and in the folder as the plan froze it). A
        journal being replayed is not judged again: what it records was recorded."""
        if relpath is None or corpus_id is None or self._campaign._replaying:
            return  # no predictions yet, or their corpus is named later (accept(corpus=))
        corpus = self._campaign.plan_model.corpus_by_id(corpus_id)
        target = self._campaign.root / corpus.path if corpus is not None else None
        if corpus is None or target is None or not target.is_file() \
                or sha256_file(target)[0] != corpus.sha256:
            return  # the check says what is wrong with the corpus itself
        problems = coverage_problems(self._campaign.root, corpus, relpath)
        if problems:
            raise RecordError(f"run {self.id!r}: {relpath} is not a complete prediction of "
                              f"the frozen corpus {corpus.id!r}, as the plugin would report "
                              f"(predictions-cover-corpus):\n{render_all(problems)}")

    def stop(
        self, rule: str, reason: str, *, step: int | None = None, at: datetime | str | None = None
    ) -> None:
        """The run was stopped by ``rule``, a stop rule the plan declared before the runs.

        For a non-finite-loss rule whose series this run logged, ``step`` defaults to
        (and must equal) the first step where the series is not finite. Predictions recorded
        before the stop stay in the folder as evidence; the run's record names none (a
        stopped run delivers nothing: no predictions, no corpus)."""
        declared = [r["id"] for r in self._campaign.plan.get("stop_rules", [])]
        if rule not in declared:
            raise RecordError(
                f"run {self.id!r}: stop rule {rule!r} is not declared in the plan "
                f"(declared: {', '.join(declared) or 'none'}); stop rules precede the runs"
            )
        if says_nothing(reason):
            raise RecordError(f"run {self.id!r}: a stop needs a reason")
        step = self._stop_step(rule, step)
        when = self._end("stopped", at, rule=rule, reason=reason, step=step)
        # A stopped run delivers nothing (stop-records.delivers): predictions it wrote before
        # the rule fired stay in the folder as evidence, not as its delivery.
        for delivery in ("predictions", "corpus"):
            self.record.pop(delivery, None)
        stop: dict[str, Any] = {"rule": rule, "reason": reason, "at": when}
        if step is not None:
            stop["step"] = step
        self.record["stop"] = stop

    def _stop_step(self, rule_id: str, step: int | None) -> int | None:
        """The stop step, refused where the check would fail it: a non-finite-loss rule
        that does not fire on the evidence logged so far, or fires at another step (the
        first non-finite one is the default)."""
        rule = self.stop_rule(rule_id)
        verdict = self.verdict(rule) if rule.kind == "non_finite_loss" else None
        if verdict is None or verdict.status in ("unproven", "not_evaluated"):
            return step  # judged at closure, on all the evidence
        self.refuse_stop(rule, verdict, step)
        return step if step is not None else verdict.step

    def refuse_stop(
        self, rule: StopRule, verdict: RuleVerdict, step: int | None, *, closing: bool = False
    ) -> None:
        """RecordError where the stop-rules check fails a run stopped by ``rule`` at ``step``
        whose evidence gives ``verdict``: the rule does not fire, or fires at another step
        (at closure a missing step is one: there is no default left to fill in)."""
        if verdict.status == "clear":
            raise RecordError(
                f"run {self.id!r}: stop rule {rule.id!r} did not fire on its "
                f"evidence: {verdict.detail}"
            )
        if (rule.kind == "non_finite_loss" and verdict.status == "triggered"
                and (step is not None or closing) and step != verdict.step):
            shown = "none" if step is None else step
            raise RecordError(
                f"run {self.id!r}: stop step {shown} is not where the "
                f"{rule.parameters['series']!r} series first becomes non-finite "
                f"(step {verdict.step})"
            )

    def stop_rule(self, rule_id: str) -> StopRule:
        """A declared stop rule of the plan, typed."""
        return next(r for r in self._campaign.plan_model.stop_rules if r.id == rule_id)

    def evidence(self) -> Measurements | Unreadable | None:
        """The run's measurements as the checks will read them: what the recorder will write,
        through the measurements reader, or the script's own file; None when there are none."""
        if self._external_measurements:
            relpath = self.record["measurements"]
            return read_measurements(self._campaign.root / relpath, relpath)
        rows = self.measurement_rows()
        if not rows:
            return None
        return parse_measurements(jsonl_text(rows).encode("utf-8"), self.measurements_path)

    def verdict(
        self, rule: StopRule, found: Measurements | Unreadable | None = None
    ) -> RuleVerdict | None:
        """``rule`` judged on the run's evidence (``found``, read when not given) by the
        stop-rules check's own function; None for a rule not read from the measurements, or
        when there are none to read."""
        if rule.kind not in MEASURED_KINDS or rule_parameters_problem(rule) is not None:
            return None
        found = found if found is not None else self.evidence()
        if not isinstance(found, Measurements):
            return None  # none, or unreadable: the checks say so
        return measured(rule, found, self._campaign.planned_run(self.id).get("role"))

    def reject(self, reason: str, *, at: datetime | str | None = None) -> None:
        if says_nothing(reason):
            raise RecordError(f"run {self.id!r}: a rejection needs a reason")
        self._end("rejected", at, reason=reason)
        self.record["rejection"] = reason

    def _drop(self, decision_id: str) -> None:
        self._set_outcome("dropped")
        self.record["decision"] = decision_id

    def _ending(self, outcome: Outcome) -> None:
        if "started_at" not in self.record:
            raise RecordError(f"run {self.id!r}: call start() before recording its outcome")
        if self.outcome is not None:
            raise RecordError(f"run {self.id!r} is already {self.outcome}, not {outcome}")

    def _end(self, outcome: Outcome, at: datetime | str | None, **facts: Any) -> str:
        self._ending(outcome)
        when = self._campaign.now(at)
        self._campaign._event(outcome, run=self.id, at=when, **facts)
        self._set_outcome(outcome)
        self.record["ended_at"] = when
        return when

    def _set_outcome(self, outcome: Outcome) -> None:
        if self.outcome is not None:
            raise RecordError(f"run {self.id!r} is already {self.outcome}, not {outcome}")
        self.record["outcome"] = outcome

    # ---- at closure

    def measurement_rows(self) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = [{"checked_input": dict(c)} for c in self._inputs]
        rows += [{k: json_number(v) for k, v in p.items()} for p in self._points]
        if self.record.get("metrics"):
            rows.append({"metrics": dict(self.record["metrics"])})
        return rows

    def triggered(self) -> tuple[StopRule, RuleVerdict] | None:
        """The first declared stop rule this run's evidence triggers, as the check judges it."""
        found = self.evidence()
        for rule in self._campaign.plan_model.stop_rules:
            verdict = self.verdict(rule, found)
            if verdict is not None and verdict.status == "triggered":
                return rule, verdict
        return None


    def _refuse_triggered(self) -> None:
        """RecordError where ``stop-rules-applied`` will fail this run once accepted: its own
        evidence triggers a declared rule (judged by the check's own rule, with its words).
        A journal being replayed is not judged again (close() still refuses such a run)."""
        found = None if self._campaign._replaying else self.triggered()
        if found is not None:
            rule, verdict = found
            raise RecordError(
                f"{triggers(self.id, rule, verdict)}, as the plugin would report "
                "(stop-rules-applied): a run whose own evidence triggers a declared stop rule "
                f"is stopped, not accepted; call run.stop(rule={rule.id!r}, reason=...) instead")


def _same_value(logged: Any, value: float) -> bool:
    if isinstance(logged, float) and math.isnan(logged):
        return isinstance(value, float) and math.isnan(value)
    return bool(logged == value)

