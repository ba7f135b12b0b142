"""Run checks: stop-records, config-identity, predictions-cover-corpus, conclusion-consistent.

R1 (a decision on a frozen corpus, a negative result is a result), R2 (roles
and categories) and R5 (stop rules before the runs; a stopped run keeps its ID
and reason; a changed configuration gets a new ID). Registered as the plugin
``itera.runs``.

Predictions and the corpus are streamed (:mod:`pytest_itera.files.predictions`): a
process holds the corpus IDs (once, memoised per Context), one byte per corpus
ID for "seen", counters and the first few examples of each problem, never a
whole predictions file.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pytest_itera.checks.common import scoring
from pytest_itera.checks.common.corpus_ids import (
    corpus_ids,
    counted,
    file_sha256,
    ids_text,
    index_lines,
    lines_text,
    more,
    reason,
    run_corpus,
)
from pytest_itera.checks.common.measured import (
    Measured,
    decision_metric,
    judged_metrics,
    meets,
    quoted_values,
)
from pytest_itera.checks.context import Check, Context
from pytest_itera.checks.prose import ADVISES
from pytest_itera.checks.prose import conclusion as conclusion_prose
from pytest_itera.checks.prose.quotes import (
    exact_misquotes,
    loose_misquotes,
    mentions,
    shown_values,
)
from pytest_itera.checks.stop_rules import PREDICTING_ROLES
from pytest_itera.core.campaign import MANIFEST_FILE, PLAN_FILE, Corpus, Manifest, Plan, RunRecord
from pytest_itera.core.findings import Finding
from pytest_itera.core.findings import where as json_where
from pytest_itera.core.text import is_blank, says_nothing
from pytest_itera.files.predictions import (
    Coverage,
    UnreadableIds,
    cover,
    read_ids,
)

# ------------------------------------------------------------- stop-records


def stop_targets(ctx: Context) -> Iterable[str]:
    """Stopped runs, and any run carrying a stop record (an accepted one must fail)."""
    _, man = ctx.documents()
    return {r.id for r in man.runs if r.outcome == "stopped" or r.stop is not None}


def stop_records(ctx: Context, target: str | None) -> Iterator[Finding]:
    """A stopped run cites a planned rule, says why and when, and is not counted as accepted."""
    assert target is not None
    plan, man = ctx.documents()
    index, run = ctx.recorded(target)
    where = json_where(MANIFEST_FILE, "runs", index)
    if run.outcome != "stopped":
        yield _not_stopped(run, where)
        return
    if run.stop is None:
        yield Finding(f"stopped run {run.id} has no stop record", where=f"{where}.stop",
                      expected="{rule, reason, step or at}",
                      hint="record the stop rule that fired, why, and at which step or time",
                      code="stop-records.no-stop-record")
        return
    yield from _stop_fields(plan, run, where)
    yield from _stop_timing(plan, man, run, where)
    yield from _counted_as_accepted(man, run, where)
    yield from stopped_delivers(man, index, run)


def _not_stopped(run: RunRecord, where: str) -> Finding:
    assert run.stop is not None
    if run.outcome == "accepted":
        return Finding(
            f"run {run.id} was stopped by rule {run.stop.rule!r} but is counted as accepted",
            where=f"{where}.outcome", expected="'stopped'", found="'accepted'",
            hint="a stopped run keeps its ID and reason, is not an accepted deliverable, "
            "and still counts as an expense: record its outcome as 'stopped'",
            code="stop-records.stopped-but-accepted")
    return Finding(
        f"run {run.id} carries a stop record but its outcome is {run.outcome!r}",
        where=f"{where}.outcome", expected="'stopped'", found=repr(run.outcome),
        hint="a run stopped by a rule has outcome 'stopped'; otherwise remove the stop record",
        code="stop-records.stop-record-on-unstopped")


def _stop_fields(plan: Plan, run: RunRecord, where: str) -> Iterator[Finding]:
    assert run.stop is not None
    declared = [r.id for r in plan.stop_rules]
    if is_blank(run.stop.rule):
        yield Finding(f"stopped run {run.id} does not name the stop rule that fired",
                      where=f"{where}.stop.rule", expected=f"one of {declared}",
                      hint="cite the id of a stop rule declared in plan.json",
                      code="stop-records.no-rule")
    elif run.stop.rule not in declared:
        yield Finding(f"stopped run {run.id} cites stop rule {run.stop.rule!r}, "
                      "which the plan does not declare",
                      where=f"{where}.stop.rule", expected=f"one of {declared}",
                      found=repr(run.stop.rule),
                      hint="stop rules are written in the plan before any run starts; a rule "
                      "invented afterwards is not a stop rule: record the run as rejected instead",
                      code="stop-records.undeclared-rule")
    if says_nothing(run.stop.reason):
        yield Finding(f"stopped run {run.id} has no stop reason", where=f"{where}.stop.reason",
                      hint="say what was observed (e.g. 'training loss was nan at step 14')",
                      code="stop-records.no-reason")
    if run.stop.step is None and run.stop.at is None:
        yield Finding(f"stopped run {run.id} does not say when it was stopped",
                      where=f"{where}.stop", expected="a step or an 'at' timestamp",
                      hint="record the step (or the time) at which the rule fired",
                      code="stop-records.no-time")


def _stop_timing(plan: Plan, man: Manifest, run: RunRecord, where: str) -> Iterator[Finding]:
    """The rule predates the first run (plan-frozen says so too), and the stop follows the start."""
    assert run.stop is not None
    started = [(r.started_at, r.id) for r in man.runs if r.started_at is not None]
    if started and plan.frozen_at is not None and min(started)[0] < plan.frozen_at:
        first_at, first_id = min(started)
        yield Finding(
            f"stop rule {run.stop.rule!r} of run {run.id} was declared after the runs began: "
            f"the plan was frozen at {plan.frozen_at.isoformat()}, run {first_id} started at "
            f"{first_at.isoformat()}",
            where=json_where(PLAN_FILE, "frozen_at"),
            hint="stop rules are written before any run starts (see the plan-frozen item)",
            code="stop-records.rule-after-start")
    if run.stop.at is not None and run.started_at is not None and run.stop.at < run.started_at:
        yield Finding(f"run {run.id} was stopped before it started", where=f"{where}.stop.at",
                      expected=f"at or after {run.started_at.isoformat()}",
                      found=run.stop.at.isoformat(),
                      code="stop-records.stop-before-start")
    if run.stop.at is not None and run.ended_at is not None and run.stop.at > run.ended_at:
        yield Finding(
            f"run {run.id} was stopped at {run.stop.at.isoformat()}, after it ended at "
            f"{run.ended_at.isoformat()}", where=f"{where}.stop.at",
            expected=f"at or before {run.ended_at.isoformat()} (ended_at)",
            found=run.stop.at.isoformat(),
            hint="a run ends when its stop rule fires: record the moment the rule fired as "
            "stop.at and the run's end at or after it (the recorder's stop() writes both)",
            code="stop-records.stop-after-end")


def _counted_as_accepted(man: Manifest, run: RunRecord, where: str) -> Iterator[Finding]:
    if run.id in man.conclusion.meets_threshold:
        yield Finding(f"stopped run {run.id} is listed as meeting the threshold",
                      where=json_where(MANIFEST_FILE, "conclusion", "meets_threshold"),
                      hint="a stopped run is not an accepted deliverable: remove it from the "
                      "conclusion (it stays an expense)",
                      code="stop-records.meets-threshold")
    if run.deliverable is not None:
        yield Finding(f"stopped run {run.id} records a deliverable ({run.deliverable!r})",
                      where=f"{where}.deliverable",
                      hint="a stopped run delivers nothing (it stays an expense): "
                      "remove its deliverable",
                      code="stop-records.deliverable")


def stopped_delivers(man: Manifest, index: int, run: RunRecord) -> Iterator[Finding]:
    """A stopped run delivers nothing: no predictions, no corpus, no adapter, and no
    checkpoint but one, the evidence of where it stopped (issue 24, point 6)."""
    where = json_where(MANIFEST_FILE, "runs", index)
    fix = ("a stopped run delivers nothing (it stays an expense): remove its {what} from the "
           "manifest (and the folder), or, if the rule did not fire, record the run as accepted")
    if run.predictions is not None:
        yield Finding(f"stopped run {run.id} records predictions ({run.predictions})",
                      where=f"{where}.predictions", expected="no predictions",
                      hint=fix.format(what="predictions"), code="stop-records.delivers")
    if run.corpus is not None:
        yield Finding(f"stopped run {run.id} records the corpus its predictions cover "
                      f"({run.corpus!r})", where=f"{where}.corpus", expected="no corpus",
                      hint=fix.format(what="corpus"), code="stop-records.delivers")
    for i, adapter in enumerate(man.adapters):
        if adapter.run == run.id:
            yield Finding(f"stopped run {run.id} ships adapter {adapter.path}",
                          where=json_where(MANIFEST_FILE, "adapters", i),
                          expected="no adapter of a stopped run",
                          hint=fix.format(what="adapter"), code="stop-records.delivers")
    mine = [(i, c) for i, c in enumerate(man.checkpoints) if c.run == run.id]
    if len(mine) > 1:
        # One checkpoint may stay: the evidence of where the run stopped (its last save).
        extra = mine[:-1]
        yield Finding(
            f"stopped run {run.id} ships {len(mine)} checkpoints "
            f"({', '.join(c.path for _, c in mine)}): only one, the evidence of where it "
            "stopped, may stay",
            where=json_where(MANIFEST_FILE, "checkpoints", extra[0][0]),
            expected=f"at most one checkpoint of run {run.id}", found=str(len(mine)),
            hint=fix.format(what=f"other checkpoint{'s' if len(extra) > 1 else ''} ("
                            + ", ".join(c.path for _, c in extra) + ")"),
            code="stop-records.delivers")


# ---------------------------------------------------------- config-identity


def config_targets(ctx: Context) -> Iterable[str]:
    """Every run that ran (it must have a config) and any dropped run that records one."""
    _, man = ctx.documents()
    return {r.id for r in man.runs
            if r.outcome != "dropped" or r.config is not None or r.config_sha256 is not None}


def config_identity(ctx: Context, target: str | None) -> Iterator[Finding]:
    """The config file's bytes are the ones the plan froze under this run ID."""
    assert target is not None
    plan = ctx.documents()[0]
    index, run = ctx.recorded(target)
    where = json_where(MANIFEST_FILE, "runs", index)
    if run.config is None:
        yield Finding(f"run {run.id} records no config file", where=where,
                      expected="config: the path of the configuration it ran with",
                      hint="a run that used the machine ships its parameters, so that its "
                      "identity can be checked against the plan: record config (RunRecorder."
                      "set_config)",
                      code="config-identity.no-config")
        return
    actual, problem = file_sha256(ctx, run.config)
    if actual is None:
        yield Finding(f"config {run.config} of run {run.id} {problem}", where=f"{where}.config",
                      hint="ship the run's configuration inside the campaign folder",
                      code="config-identity.unreadable")
        return
    if run.config_sha256 is not None and run.config_sha256 != actual:
        yield Finding(f"config {run.config} of run {run.id} changed after the run recorded it",
                      where=f"{where}.config_sha256", expected=run.config_sha256, found=actual,
                      hint="restore the configuration the run used",
                      code="config-identity.sha256")
    planned = plan.run(run.id)
    if planned is not None and planned.config_sha256 != actual:
        pindex = plan.runs.index(planned)
        yield Finding(
            f"run {run.id} ran a configuration other than the one planned under its ID: "
            "a new configuration after a fix needs a new ID",
            where=f"{where}.config ({json_where(PLAN_FILE, 'runs', pindex, 'config_sha256')})",
            expected=planned.config_sha256, found=f"{actual} ({run.config})",
            hint="keep the planned config under the old ID (with its own outcome) and record "
            "the changed one as a new run added by a decision (schedule.decisions[].adds)",
            code="config-identity.other-config")


# -------------------------------------------------- the frozen corpus


# ------------------------------------------------- predictions-cover-corpus


def predictions_targets(ctx: Context) -> Iterable[str]:
    """Accepted runs with predictions, and accepted controls/variants (which must have them)."""
    plan, man = ctx.documents()
    out = set()
    for run in man.runs:
        planned = plan.run(run.id)
        role = planned.role if planned is not None else None
        if run.outcome == "accepted" and (run.predictions is not None or role in PREDICTING_ROLES):
            out.add(run.id)
    return out


def predictions_cover_corpus(ctx: Context, target: str | None) -> Iterator[Finding]:
    """The run's predictions name each frozen-corpus example exactly once."""
    assert target is not None
    plan = ctx.documents()[0]
    index, run = ctx.recorded(target)
    where = json_where(MANIFEST_FILE, "runs", index, "predictions")
    if run.predictions is None:
        yield Finding(f"accepted run {run.id} has no predictions", where=where,
                      hint="a compared run (control or variant) delivers its predictions on the "
                      "frozen corpus (R1): write them and record the file",
                      code="predictions-cover-corpus.no-predictions")
        return
    yield from _not_its_own(ctx, run, where)
    moved = _corpus_moved(plan, run, json_where(MANIFEST_FILE, "runs", index, "corpus"))
    if moved is not None:
        yield moved
        return
    frozen = run_corpus(plan, run)
    corpus = corpus_ids(ctx, frozen)
    yield from corpus.blocking
    if corpus.blocking:
        return
    yield from corpus.notes
    inside = ctx.regular_file(run.predictions)
    if isinstance(inside, str):
        yield Finding(f"predictions {run.predictions} of run {run.id} {inside}", where=where,
                      code="predictions-cover-corpus.predictions-unreadable")
        return
    try:
        coverage = scoring.scan(ctx, plan, run.predictions, inside, frozen, corpus).coverage
    except (OSError, UnreadableIds) as exc:
        yield Finding(f"predictions {run.predictions} {reason(exc)}", where=run.predictions,
                      hint=f"write JSON Lines objects or CSV rows with the {frozen.id_field!r}"
                      " field of the corpus",
                      code="predictions-cover-corpus.predictions-unreadable")
        return
    yield from _coverage_findings(coverage, run.predictions, len(corpus.ids), frozen.path)


def _predictions_owners(man: Manifest) -> dict[str, list[str]]:
    """Predictions file -> the runs that record it (one pass, not one per run)."""
    owners: dict[str, list[str]] = {}
    for r in man.runs:
        if r.predictions is not None:
            owners.setdefault(r.predictions, []).append(r.id)
    return owners


def _not_its_own(ctx: Context, run: RunRecord, where: str) -> Iterator[Finding]:
    """A run's predictions are its own file (R1), as its measurements are."""
    assert run.predictions is not None
    _, man = ctx.documents()
    owners = ctx.memo("runs.predictions-owners", lambda: _predictions_owners(man))
    found = shared_predictions(run.id, run.predictions, owners.get(run.predictions, ()), where)
    if found is not None:
        yield found


def shared_predictions(run_id: str, relpath: str, recorded_by: Iterable[str],
                       where: str) -> Finding | None:
    """The finding when ``relpath``, the predictions of ``run_id``, is also another run's
    (``recorded_by``: every run recording that file): two runs naming one predictions file
    deliver one run's work twice. The recorder refuses it through this function. (Two files
    with the same bytes are not refused: two models may well predict every example alike.)"""
    sharing = sorted(r for r in set(recorded_by) if r != run_id)
    if not sharing:
        return None
    return Finding(
        f"run {run_id} shares its predictions file {relpath} with {', '.join(sharing)}: they "
        "are not its own predictions",
        where=where, expected=f"predictions that run {run_id}'s own model wrote",
        found=f"the file {', '.join(sharing)} also records",
        hint="each compared run delivers the predictions of its own model (R1), in its own "
        "file: write them from the run's model, or record the run as rejected",
        code="predictions-cover-corpus.shared-file")


def coverage_problems(root: Path, corpus: Corpus, relpath: str) -> list[Finding]:
    """What ``predictions-cover-corpus`` says of the predictions file ``relpath`` against the
    frozen ``corpus``, both in the folder ``root``: the recorder refuses them at once with
    these findings. The corpus is read as the check reads it; a corpus that is not in the
    folder, or cannot be read, is not compared here (the check says why at closure), nor is
    an unreadable predictions file."""
    try:
        ids = index_lines(read_ids(root / corpus.path, corpus.id_field), corpus.path,
                     corpus.examples, "").ids
        coverage = cover(ids, read_ids(root / relpath, corpus.id_field))
    except (OSError, UnreadableIds):
        return []
    return list(_coverage_findings(coverage, relpath, len(ids), corpus.path))


def _corpus_moved(plan: Plan, run: RunRecord, where: str) -> Finding | None:
    """The manifest says the run's predictions cover another corpus than the one the plan
    put it on (another content, not another name for the same file)."""
    planned = plan.run(run.id)
    if run.corpus is None or planned is None or planned.corpus is None:
        return None
    recorded, intended = plan.corpus_by_id(run.corpus), plan.corpus_by_id(planned.corpus)
    if recorded is None or intended is None or recorded.sha256 == intended.sha256:
        return None  # an unknown id is the contract's finding; the same bytes are one corpus
    return Finding(
        f"run {run.id} was planned on corpus {planned.corpus!r}, but the manifest says its "
        f"predictions cover {run.corpus!r}", where=where,
        expected=repr(planned.corpus), found=repr(run.corpus),
        hint="a run keeps the frozen corpus it was planned on (R1): a run on another corpus "
        "is another configuration, with its own ID in the plan (R5)",
        code="predictions-cover-corpus.corpus-moved")


def _coverage_findings(cov: Coverage, relpath: str, total: int, corpus: str) -> Iterator[Finding]:
    fix = f"predict every example of the frozen corpus {corpus} exactly once"
    if cov.missing:
        yield Finding(f"predictions miss {counted(cov.missing, 'ID')} of the {total} corpus IDs",
                      where=relpath,
                      found=more(", ".join(cov.missing_first), len(cov.missing_first),
                                  cov.missing), hint=fix,
                      code="predictions-cover-corpus.missing-ids")
    if cov.duplicated:
        yield Finding(f"predictions repeat corpus IDs ({counted(cov.duplicated, 'extra line')})",
                      where=f"{relpath}:{cov.duplicated_first[0][1]}",
                      found=more(ids_text(cov.duplicated_first), len(cov.duplicated_first),
                                 cov.duplicated), hint=fix,
                      code="predictions-cover-corpus.repeated-ids")
    if cov.unknown:
        yield Finding(f"predictions hold {counted(cov.unknown, 'ID')} not in the frozen corpus",
                      where=f"{relpath}:{cov.unknown_first[0][1]}",
                      found=more(ids_text(cov.unknown_first), len(cov.unknown_first),
                                 cov.unknown), hint=fix,
                      code="predictions-cover-corpus.unknown-ids")
    if cov.malformed:
        yield Finding(f"predictions have {counted(cov.malformed, 'malformed line')}",
                      where=f"{relpath}:{cov.malformed_first[0][0]}",
                      found=more(lines_text(cov.malformed_first), len(cov.malformed_first),
                                 cov.malformed),
                      hint="each line is one JSON object (or CSV row) with the corpus ID field",
                      code="predictions-cover-corpus.malformed-lines")


# ---------------------------------------------------- conclusion-consistent

CONCLUSION = "conclusion-consistent"
# The conclusion is judged on the measured values (recomputed where the plan says how):
# meets_threshold decides. Its text is read two ways: exactly (a sentence naming one run
# alone as meeting the threshold, a number quoted for a run's metric named in its clause)
# and loosely, by the word tables of checks/prose/conclusion.py, which advise.


def conclusion_consistent(ctx: Context, _target: str | None) -> Iterator[Finding]:
    """meets_threshold is exactly the accepted variants whose measured metric meets the
    planned threshold, and the text says the same."""
    plan, man = ctx.documents()
    listed = man.conclusion.meets_threshold
    yield from _listed_runs(ctx, plan, man, listed)
    yield from _unlisted_variants(ctx, plan, man, listed)
    yield from _conclusion_text(plan, man, listed)
    yield from _conclusion_quotes(ctx, plan, man)


def threshold_of(plan: Plan) -> conclusion_prose.Threshold:
    return conclusion_prose.Threshold(plan.decision.threshold,
                                      plan.decision.direction == "higher")


def _conclusion_quotes(ctx: Context, plan: Plan, man: Manifest) -> Iterator[Finding]:
    """A number quoted for a run's metric named in its clause is that metric's value
    (decides); a number right after a run's id is one of its metrics (advises)."""
    text = man.conclusion.text
    values = quoted_values(ctx, man)
    where = json_where(MANIFEST_FILE, "conclusion", "text")
    exact = exact_misquotes(text, values, ignore=(plan.decision.threshold,))
    for quote, value in exact:
        assert quote.metric is not None
        yield Finding(
            f"the conclusion's text quotes {quote.written} for {quote.run}'s {quote.metric}, "
            f"which is {value:g}", where=where,
            expected=f"{quote.run}'s {quote.metric} {value:g} ({_source(man, quote.run)})",
            found=quote.written,
            hint="quote the values the measurements hold (at the precision written), or drop "
            "the number", code="conclusion-consistent.quoted-value")
    judged = {(q.run, q.written) for q, _ in exact}
    for quote, held in loose_misquotes(text, values):
        if (quote.run, quote.written) in judged:
            continue
        yield Finding(
            f"the conclusion's text quotes {quote.written} for {quote.run}, a value none of "
            f"its measured metrics holds", where=where,
            expected=f"one of {quote.run}'s metrics ({_source(man, quote.run)}): "
            f"{shown_values(held)}", found=quote.written,
            hint="quote the values the measurements hold (at the precision written), or drop "
            "the number; a number for a step, a split or a subset is no misquote" + ADVISES,
            code="conclusion-consistent.quoted-value", advisory=True)


def _source(man: Manifest, run_id: str) -> str:
    run = man.run(run_id)
    return run.measurements if run is not None and run.measurements else MANIFEST_FILE


def _conclusion_text(plan: Plan, man: Manifest, listed: tuple[str, ...]) -> Iterator[Finding]:
    text = man.conclusion.text
    where = json_where(MANIFEST_FILE, "conclusion", "text")
    if is_blank(text):
        yield Finding("the conclusion has no text", where=where,
                      hint="state the conclusion: the variants that meet the threshold, or the "
                      "negative result (no variant meets it)",
                      code="conclusion-consistent.no-text")
        return
    threshold = threshold_of(plan)
    variants = [r.id for r in plan.runs if r.role == "variant"]
    variants += [r.id for r in man.runs if plan.run(r.id) is None]
    runs = list(dict.fromkeys([*(r.id for r in plan.runs), *(r.id for r in man.runs)]))
    only = f"meets_threshold lists only {', '.join(listed)}" if listed \
        else "meets_threshold is empty"
    for run_id in variants:
        if run_id in listed:
            continue
        plain = conclusion_prose.plainly_meets(text, run_id, runs, threshold)
        clause = plain or conclusion_prose.claims_meeting(text, run_id, threshold)
        if clause is not None:
            yield Finding(f"the conclusion's text names {run_id} as meeting the threshold, but "
                          f"{only}", where=where, found=repr(_clip(clause)),
                          hint="make the text and meets_threshold say the same thing: list the "
                          "variant if its measured metric meets the threshold, else say it "
                          "does not" + ("" if plain else ADVISES),
                          code="conclusion-consistent.named-unlisted", advisory=plain is None)
    if listed:
        if conclusion_prose.says_none_meets(text):
            yield Finding("the conclusion's text states a negative result, but it lists "
                          f"{', '.join(listed)} as meeting the threshold", where=where,
                          hint="make the text and meets_threshold say the same thing" + ADVISES,
                          code="conclusion-consistent.negative-but-listed", advisory=True)
        for run_id in listed:
            if not mentions(text, run_id):
                yield Finding(f"the conclusion's text does not name {run_id}, which "
                              "meets_threshold lists", where=where, found=repr(_clip(text)),
                              hint=f"name {run_id} in the text with its measured "
                              f"{plan.decision.metric}" + ADVISES,
                              code="conclusion-consistent.listed-unnamed", advisory=True)
                continue
            clause = conclusion_prose.claims_failing(text, run_id, threshold)
            if clause is not None:
                yield Finding(f"the conclusion's text says {run_id} does not meet the "
                              "threshold, but meets_threshold lists it", where=where,
                              found=repr(_clip(clause)), code="conclusion-consistent.text-denies",
                              hint="make the text and meets_threshold say the same thing"
                              + ADVISES, advisory=True)
        return
    if variants and not conclusion_prose.states_negative(text, threshold):
        yield Finding("meets_threshold is empty, but the conclusion's text does not state the "
                      "negative result", where=where, found=repr(_clip(text)),
                      hint=f"say that no variant meets {_rule(plan)} (a negative result is a "
                      "valid result and closes the campaign)" + ADVISES,
                      code="conclusion-consistent.negative-unstated", advisory=True)


def _clip(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _rule(plan: Plan) -> str:
    sign = ">=" if plan.decision.direction == "higher" else "<="
    return f"{plan.decision.metric} {sign} {plan.decision.threshold}"


def judged_facts(ctx: Context, _target: str | None) -> list[dict[str, Any]]:
    """:func:`judged_metrics` as plain data (``Check.facts``): {run, value, source}; none
    when the plan or the manifest did not load (the check was not judged)."""
    if ctx.campaign.plan is None or ctx.campaign.manifest is None:
        return []
    return [{"run": run.id, "value": measured.value, "source": measured.source}
            for run, measured in judged_metrics(ctx)]


def _shown(metric: str, measured: Measured) -> str:
    assert measured.value is not None
    return f"{metric} = {_number(measured.value)} ({measured.source})"


def _number(value: float) -> str:
    return repr(value) if math.isfinite(value) else str(value)


def _listed_runs(
    ctx: Context, plan: Plan, man: Manifest, listed: tuple[str, ...]
) -> Iterator[Finding]:
    where = json_where(MANIFEST_FILE, "conclusion", "meets_threshold")
    metric = plan.decision.metric
    for run_id in listed:
        run, planned = man.run(run_id), plan.run(run_id)
        if run is None:
            yield Finding(f"the conclusion lists {run_id}, which is not a run of the manifest",
                          where=where,
                          code="conclusion-consistent.unknown-run")
            continue
        if planned is not None and planned.role != "variant":
            yield Finding(f"the conclusion lists {run_id}, a {planned.role.replace('_', ' ')} "
                          "run: only variants are compared with the threshold", where=where,
                          code="conclusion-consistent.not-a-variant")
        if run.outcome != "accepted":
            yield Finding(f"the conclusion lists {run_id}, whose outcome is {run.outcome!r}: "
                          "only an accepted run can meet the threshold", where=where,
                          code="conclusion-consistent.not-accepted")
            continue
        measured = decision_metric(ctx, man, run, metric)
        if measured.value is None:
            yield _no_metric(run, metric, measured)
        elif not meets(plan, measured.value):
            yield Finding(f"the conclusion lists {run_id} as meeting the threshold, but its "
                          f"{metric} is {_number(measured.value)}", where=where,
                          expected=_rule(plan), found=_shown(metric, measured),
                          hint="state the conclusion the measured metrics support; a negative "
                          "result is a valid result",
                          code="conclusion-consistent.below-threshold")


def _unlisted_variants(
    ctx: Context, plan: Plan, man: Manifest, listed: tuple[str, ...]
) -> Iterator[Finding]:
    metric = plan.decision.metric
    for planned in plan.runs:
        run = man.run(planned.id)
        if planned.role != "variant" or run is None or run.outcome != "accepted":
            continue
        if run.id in listed:
            continue  # judged with the listed runs
        measured = decision_metric(ctx, man, run, metric)
        if measured.value is None:
            yield _no_metric(run, metric, measured)
        elif meets(plan, measured.value):
            yield Finding(f"variant {run.id} meets the threshold but the conclusion does not "
                          "list it",
                          where=json_where(MANIFEST_FILE, "conclusion", "meets_threshold"),
                          expected=_rule(plan), found=_shown(metric, measured),
                          hint=f"add {run.id} to meets_threshold: the conclusion states what "
                          "the measured metrics show",
                          code="conclusion-consistent.unlisted-variant")


def _no_metric(run: RunRecord, metric: str, measured: Measured) -> Finding:
    return Finding(f"accepted variant {run.id} has no {metric!r} metric (the plan's decision "
                   "metric)", where=measured.source,
                   found=f"metrics {sorted(measured.names)}",
                   hint="record the decision metric of every accepted variant in its "
                   "measurements (the manifest copies it)",
                   code="conclusion-consistent.no-metric")


CHECKS = (
    Check("stop-records", "a stopped run cites a planned rule, a reason and when; never accepted",
          stop_records, scope="run", targets=stop_targets, order=20),
    Check("config-identity", "a run's config is the one planned under its ID", config_identity,
          scope="run", targets=config_targets, order=21),
    Check("predictions-cover-corpus", "an accepted run predicts each frozen-corpus example once",
          predictions_cover_corpus, scope="run", targets=predictions_targets, order=22),
    Check(CONCLUSION,
          "the conclusion agrees with the measured metrics and the threshold, both ways",
          conclusion_consistent, order=30, facts=judged_facts),
)


def pytest_itera_checks(config: object) -> tuple[Check, ...]:
    return CHECKS
