"""What closure does besides writing: the checks ``CampaignRecorder.close`` runs on the record
before the manifest exists (every planned run has an outcome, an accepted run is not a run
its own evidence stops, a resume names a listed checkpoint, the shipped bases are unchanged),
the blocks it computes (the runs' outcomes, the derived schedule), the files it lists, and
:class:`Closure`, what close() returns."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_itera.core.campaign import PLAN_FILE
from pytest_itera.core.journal import JOURNAL_FILE
from pytest_itera.record import tally
from pytest_itera.record.base import RecordError, sha256_file, walk_files
from pytest_itera.record.run import RunRecorder
from pytest_itera.record.steps import Interruption

if TYPE_CHECKING:
    from pytest_itera.core.campaign import Decision, Plan
    from pytest_itera.files.push import Pushed
    from pytest_itera.report.verify import Problem, Verdict

__all__ = [
    "Closure",
    "check_metrics_line",
    "check_run",
    "check_sources",
    "conclusion_block",
    "derived_schedule",
    "file_changes",
    "included_expenses",
    "list_files",
    "metrics_rows",
    "outcomes",
    "plan_model",
    "run_records",
    "with_metrics_table",
]


def plan_model(root: Path) -> Plan:
    from pytest_itera.core.campaign import load_campaign

    plan = load_campaign(root).plan
    if plan is None:
        raise RecordError(f"{PLAN_FILE} does not load; it was changed after freezing")
    return plan


def outcomes(runs: Iterable[RunRecorder]) -> list[tally.RunOutcome]:
    out = []
    for run in runs:
        record = run.record
        reason = record.get("stop", {}).get("reason") or record.get("rejection")
        if run.outcome == "dropped":
            reason = f"dropped by decision {record.get('decision')}"
        out.append(tally.RunOutcome(run.id, run.outcome, record.get("corpus"), reason))
    return out


def included_expenses(expenses: Iterable[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    listed = [dict(e) for e in expenses or ()]
    for expense in listed:
        if "source" not in expense:
            raise RecordError(f"expense {expense.get('label')!r} has no source: make it "
                              "with rec.expense(label, amount, file=..., reference=...)")
    return listed


def derived_schedule(
    plan: Plan,
    runs: Mapping[str, RunRecorder],
    hours: Mapping[str, Decimal],
    explanations: Mapping[str, str] | None,
    interruptions: Iterable[Interruption] = (),
) -> dict[str, Any]:
    """The manifest's schedule from the step timings; each step interrupted (its process
    died, the step resumed) says so in its deviation, with the hours of the gap, which are
    not in its observed hours."""
    explained = dict(explanations or {})
    planned = {s.id for s in plan.schedule.steps}
    for step_id in explained:
        if step_id not in planned:
            raise RecordError(f"explanations: step {step_id!r} is not in the plan "
                              f"(steps: {', '.join(sorted(planned))})")
    observed = dict(hours)
    for step in plan.schedule.steps:
        run = runs.get(step.run) if step.run is not None else None
        why = _run_explains(run)
        if run is None or why is None:
            continue
        if run.outcome == "dropped":
            observed.setdefault(step.id, Decimal(0))  # it did not run
        if step.id in tally.unexplained(plan, observed, explained):
            explained[step.id] = why
    for gap in interruptions:
        said = explained.get(gap.step)
        explained[gap.step] = gap.describe() if said is None else f"{said}; {gap.describe()}"
    return tally.schedule_block(plan, observed, explained)


def _run_explains(run: RunRecorder | None) -> str | None:
    """Why a stopped, rejected or dropped run's step took less than planned, from its
    record (a run abandoned with its cause needs no other explanation)."""
    if run is None:
        return None
    record = run.record
    if run.outcome == "dropped":
        return f"{run.id} was dropped by decision {record['decision']}: the step did not run"
    if run.outcome == "stopped":
        stop = record["stop"]
        at = f" at step {stop['step']}" if "step" in stop else ""
        return f"{run.id} was stopped by {stop['rule']}{at}: {stop['reason']}"
    if run.outcome == "rejected":
        return f"{run.id} was rejected: {record['rejection']}"
    return None


def run_records(
    plan: Mapping[str, Any],
    runs: Mapping[str, RunRecorder],
    check: Callable[[RunRecorder], None],
) -> list[dict[str, Any]]:
    """The manifest's runs, in plan order: each planned run has an outcome and passes
    ``check``."""
    missing = [r["id"] for r in plan["runs"] if runs.get(r["id"]) is None]
    missing += [i for i, r in runs.items() if r.outcome is None and i not in missing]
    if missing:
        raise RecordError(
            f"planned runs without an outcome: {', '.join(missing)}; accept, stop, reject "
            "or drop each (a drop needs a decision)"
        )
    for run in runs.values():
        check(run)
    return [runs[r["id"]].record for r in plan["runs"]]


def check_run(
    run: RunRecorder,
    role: str,
    checkpoints: Iterable[Mapping[str, Any]],
    corpus_ids: Iterable[str],
) -> None:
    record = run.record
    if run.outcome == "accepted":
        triggered = run.triggered()
        if triggered is not None:
            rule, verdict = triggered
            raise RecordError(
                f"run {run.id!r} is accepted but {verdict.detail} (stop rule {rule.id!r}): "
                "it is not a deliverable, and an accepted run cannot be stopped; record a "
                "run's evidence before accept(), which refuses such a run: call "
                f"run.stop(rule={rule.id!r}, reason=...) instead"
            )
        if (
            role in ("control", "variant")
            and record.get("predictions")
            and ("corpus" not in record)
        ):
            raise RecordError(
                f"run {run.id!r}: name the corpus its predictions cover "
                f"(set_predictions(..., corpus=...)); the plan has "
                f"{', '.join(corpus_ids)}"
            )
    if run.outcome == "stopped":
        _check_stop(run)
    resumed = record.get("resumed_from")
    if resumed is not None:
        listed = [c for c in checkpoints if c["path"] == resumed["checkpoint"]]
        if not any(c["kind"] == "resume" and c["run"] != run.id for c in listed):
            raise RecordError(
                f"run {run.id!r} resumed from {resumed['checkpoint']}, which is "
                "not a listed resume checkpoint of another run (add_checkpoint "
                "with kind='resume')"
            )


def _check_stop(run: RunRecorder) -> None:
    """The stop as the stop-rules check judges it, on all the run's evidence."""
    stop = run.record["stop"]
    rule = run.stop_rule(stop["rule"])
    verdict = run.verdict(rule)
    if verdict is not None:
        run.refuse_stop(rule, verdict, stop.get("step"), closing=True)


def check_sources(budget: Mapping[str, Any], file_sha256: Callable[..., str]) -> None:
    """Every expense's receipt file is in the campaign (``file_sha256`` refuses it if not)."""
    for kind in ("included_expenses", "external_expenses"):
        for expense in budget.get(kind, ()):
            file = expense.get("source", {}).get("file")
            if file is not None:
                file_sha256(file, field=f"budget.{kind} {expense.get('label')!r}")


def check_metrics_line(root: Path, run: RunRecorder) -> None:
    relpath = run.record["measurements"]
    found = None
    for line in (root / relpath).read_text("utf-8").splitlines():
        row = json.loads(line) if line.strip() else None
        if isinstance(row, dict) and "metrics" in row:
            found = row["metrics"]
    if found != run.record["metrics"]:
        raise RecordError(
            f"run {run.id!r}: the metrics line of {relpath} is {found!r}, the "
            f"manifest would say {run.record['metrics']!r}: the manifest is a "
            "copy of the measurements"
        )


def file_changes(
    before: Iterable[Mapping[str, Any]], after: Iterable[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """What a reopening changed, file by file, between the manifest it replaced and the new
    listing: ``replaced`` (old and new sha256), ``added``, ``removed`` (the journal, which
    always grows, is left out)."""
    old = {f["path"]: f["sha256"] for f in before if isinstance(f, Mapping) and "path" in f}
    new = {f["path"]: f["sha256"] for f in after}
    changes: list[dict[str, Any]] = []
    for path in sorted(old.keys() | new.keys()):
        if path == JOURNAL_FILE or old.get(path) == new.get(path):
            continue
        if path not in new:
            changes.append({"path": path, "change": "removed", "old_sha256": old[path]})
        elif path not in old:
            changes.append({"path": path, "change": "added", "sha256": new[path]})
        else:
            changes.append({"path": path, "change": "replaced", "old_sha256": old[path],
                            "sha256": new[path]})
    return changes


def list_files(root: Path) -> list[dict[str, Any]]:
    files, empty = [], []
    for relpath, full in walk_files(root):
        digest, size = sha256_file(full)
        if size == 0:
            empty.append(relpath)
        files.append({"path": relpath, "bytes": size, "sha256": digest})
    if empty:
        raise RecordError(f"empty files in the campaign: {', '.join(empty)}; fill or remove")
    return files


class Closure:
    """What :meth:`CampaignRecorder.close` returns: the manifest written, and the verdict
    the checks gave (None with ``check=False``), and (``push_to=``) the push's outcome
    (``pushed.complete``: the store holds exactly the manifest's files). Path methods
    (``read_text``, ``parent``, ``name``) reach the manifest's path, as when close()
    returned it."""

    def __init__(self, manifest: Path, result: Verdict | None, pin: str | None = None,
                 pushed: Pushed | None = None) -> None:
        self.manifest = manifest
        self.result = result
        self.pin = pin  # the journal's pin at the closure (CampaignRecorder.pin)
        self.pushed = pushed  # close(push_to=): what the store holds, verified in place

    @property
    def verdict(self) -> str | None:
        return None if self.result is None else self.result.verdict

    @property
    def findings(self) -> tuple[Problem, ...]:
        return () if self.result is None else self.result.findings

    @property
    def accepted(self) -> bool:
        return self.result is not None and self.result.accepted

    def __fspath__(self) -> str:
        return str(self.manifest)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.manifest, name)

    def __repr__(self) -> str:
        return f"Closure({str(self.manifest)!r}, verdict={self.verdict!r})"


# ------------------------------------------------ the conclusion and the metrics table

TABLE_SUFFIXES = (".md", ".markdown", ".txt")


def _numbers(runs: Iterable[RunRecorder]) -> list[tuple[RunRecorder, dict[str, float]]]:
    out = []
    for run in runs:
        metrics = {k: float(v) for k, v in (run.record.get("metrics") or {}).items()
                   if isinstance(v, (int, float)) and not isinstance(v, bool)}
        out.append((run, metrics))
    return out


def _shown(value: float) -> str:
    """A value as the conclusion writes it: always with its decimals (a whole number is a
    count to a reader of text), at the precision the record holds."""
    text = format(value, ".10g")
    return text if any(c in text for c in ".en") else text + ".0"


def conclusion_block(plan: Plan, runs: Iterable[RunRecorder],
                     given: Mapping[str, Any] | None, language: str) -> dict[str, Any]:
    """The manifest's conclusion: ``given`` as written; its ``meets_threshold`` computed
    when absent (the accepted variants whose recorded decision metric meets the threshold:
    ``Decision.meets``, as the checks judge it) and its ``text`` rendered from the list when
    absent."""
    if language not in SENTENCES:
        raise RecordError(f"close(language={language!r}): the conclusion is rendered in "
                          f"{' or '.join(SENTENCES)}; give conclusion['text'] for another")
    decision = plan.decision
    compared = [(run, values[decision.metric]) for run, values in _numbers(runs)
                if run.outcome == "accepted" and (planned := plan.run(run.id)) is not None
                and planned.role == "variant" and decision.metric in values]
    block = dict(given or {})
    if "meets_threshold" not in block:
        block["meets_threshold"] = [run.id for run, value in compared if decision.meets(value)]
    if block.get("text") is None:
        block["text"] = _sentence(list(block["meets_threshold"]), compared, decision,
                                  SENTENCES[language])
    return block


@dataclass(frozen=True)
class _Sentences:
    """How the conclusion is written in one language."""

    meets: str  # "{runs} {verb} the threshold ({rule})"
    verbs: tuple[str, str]  # one run, several
    joined: str  # between the runs' names
    values: str  # before the listed runs' values
    negative: str  # "... ({rule})"
    fails: str  # "{run} ... ({metric} {value})"


SENTENCES = {
    "en": _Sentences("{runs} {verb} the threshold ({rule})", ("meets", "meet"), " and ", ": ",
                     "Negative result: no variant meets the threshold ({rule})",
                     "{run} does not meet it ({metric} {value})"),
    "fr": _Sentences("{runs} {verb} le seuil ({rule})", ("atteint", "atteignent"), " et ", " : ",
                     "Résultat négatif : aucune variante n'atteint le seuil ({rule})",
                     "{run} n'atteint pas le seuil ({metric} {value})"),
}


def _sentence(listed: list[str], compared: list[tuple[RunRecorder, float]],
              decision: Decision, words: _Sentences) -> str:
    metric = decision.metric
    rule = f"{metric} {'>=' if decision.direction == 'higher' else '<='} " \
        f"{_shown(decision.threshold)}"
    values = {run.id: value for run, value in compared}
    if listed:
        head = words.meets.format(runs=words.joined.join(listed), rule=rule,
                                  verb=words.verbs[len(listed) > 1])
        shown = ", ".join(f"{r} {_shown(values[r])}" if len(listed) > 1 else _shown(values[r])
                          for r in listed if r in values)
        parts = [head + (f"{words.values}{metric} {shown}" if shown else "")]
    else:
        parts = [words.negative.format(rule=rule)]
    parts += [words.fails.format(run=run.id, metric=metric, value=_shown(value))
              for run, value in compared if run.id not in listed]
    return ". ".join(parts) + "."


def metrics_rows(runs: Iterable[RunRecorder]) -> list[tuple[str, str, float]]:
    """(run, metric, value) for every numeric metric the runs recorded, in record order."""
    return [(run.id, name, value) for run, values in _numbers(runs)
            for name, value in values.items()]


def with_metrics_table(text: str, rows: list[tuple[str, str, float]]) -> str:
    """The analysis ``text`` with its itera-metrics table (re)written from ``rows``."""
    from pytest_itera.core import metrics_table

    return metrics_table.replace_in(text, metrics_table.render(rows))
