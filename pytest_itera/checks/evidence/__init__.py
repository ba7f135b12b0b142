"""Evidence checks: rules-declared, measurements-agree, stop-rules-applied, role-evidence.

R2 (a decision point after the pilot; the data check and the resume check prove their
roles), R5 (stop rules written before the trials and applied to every run) and R6 (a
resume reproduces its reference run). Registered as the plugin ``itera.evidence``.

The manifest is a copy; the evidence is each run's measurements file
(:mod:`pytest_itera.files.measurements`), the files of the folder and the data check's
records. The run-scoped checks here are part of ``Context.run_failures``: an accepted
run that fails one of them is not counted as an accepted deliverable.

A stop rule of kind ``other`` (free-form parameters) is not evaluated: it never fails a
run, and the terminal summary says which rules were not evaluated. A
``pytest_itera_stop_rule`` hook implementation may judge any rule (``other`` included)
by returning a :class:`RuleVerdict`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from pathlib import Path

from pytest_itera.checks.common.rules_declared import CONTRACT, rules_declared, v1_rule
from pytest_itera.checks.context import Check, Context
from pytest_itera.checks.evidence.journal_agrees import journal_agrees, journal_listed
from pytest_itera.checks.stop_rules import (
    MEASURED_KINDS,
    RuleVerdict,
    input_corpus,
    measured,
    rule_parameters_problem,
    show,
    triggers,
)
from pytest_itera.core.campaign import (
    MANIFEST_FILE,
    PLAN_FILE,
    CheckpointRecord,
    Corpus,
    Manifest,
    Plan,
    ResumedFrom,
    RunRecord,
    StopRule,
)
from pytest_itera.core.findings import Finding
from pytest_itera.core.findings import where as json_where
from pytest_itera.files import measurements
from pytest_itera.files.measurements import Measurements, Series, Unreadable

_SHOWN = 5  # problems of an unreadable file shown one by one

def _role(plan: Plan, run_id: str) -> str | None:
    planned = plan.run(run_id)
    return planned.role if planned is not None else None


def _v1(man: Manifest, what: str) -> str:
    """The sentence that tells a /1 manifest what it cannot prove, or ""."""
    if man.version >= 2:
        return ""
    return (f"; itera-manifest/1 cannot prove {what}: re-close the campaign with "
            f"itera-manifest/2 ({CONTRACT})")


# ------------------------------------------------------------ the run's evidence


def run_measurements(ctx: Context, run: RunRecord) -> Measurements | str:
    """The run's measurements, or why there are none (a sentence about "its measurements")."""
    if run.measurements is None:
        return f"run {run.id} records no measurements file (runs[].measurements)"
    found = ctx.measurements(run.measurements)
    if isinstance(found, Unreadable):
        return f"its measurements cannot be read: {found.summary()}"
    return found


# ------------------------------------------------------------- stop rule parameters


# ------------------------------------------------------------- evaluating the rules


def evaluate(ctx: Context, rule: StopRule, run_id: str) -> RuleVerdict:
    """One declared stop rule on one run, from the run's own evidence."""
    plan, man = ctx.documents()
    run = man.run(run_id)
    assert run is not None
    hooked = _hook_verdict(ctx, rule, run)
    if hooked is not None:
        return hooked
    if rule.kind == "other":
        return RuleVerdict("not_evaluated", f"stop rule {rule.id!r} has kind 'other' "
                           "(free-form parameters): pytest-itera does not evaluate it")
    problem = rule_parameters_problem(rule)
    if problem is not None:
        detail, hint = v1_rule(plan, rule, problem)
        return RuleVerdict("unproven", detail, where=f"{PLAN_FILE} $.stop_rules", hint=hint)
    if rule.kind in MEASURED_KINDS:
        return _on_measurements(ctx, plan, rule, run)
    if rule.kind == "input_truncated":
        return _truncated_on(ctx, plan, rule, run)
    if rule.kind == "no_resume":
        target = str(rule.parameters["resume_check"])
        if run.id != target:
            return RuleVerdict("clear", f"it applies to the resume check {target}")
        return resume_verdict(ctx, run.id)
    return RuleVerdict("not_evaluated", f"stop rule {rule.id!r} has kind {rule.kind!r}, "
                       "which pytest-itera does not know")


def _hook_verdict(ctx: Context, rule: StopRule, run: RunRecord) -> RuleVerdict | None:
    """A ``pytest_itera_stop_rule`` implementation's verdict, asked before the built-ins."""
    ask = ctx.options.stop_rule_hook
    if ask is None:
        return None
    found: Measurements | Unreadable | None = (
        None if run.measurements is None else ctx.measurements(run.measurements))
    try:
        verdict = ask(rule, run, found, ctx.campaign)
    except Exception as exc:  # a user's hook: its failure is this run's finding
        return RuleVerdict("unproven", f"the pytest_itera_stop_rule hook raised "
                           f"{type(exc).__name__}: {exc}")
    if verdict is None or isinstance(verdict, RuleVerdict):
        return verdict
    return RuleVerdict("unproven", "the pytest_itera_stop_rule hook returned "
                       f"{type(verdict).__name__}, not a RuleVerdict or None")


def _on_measurements(ctx: Context, plan: Plan, rule: StopRule, run: RunRecord) -> RuleVerdict:
    """A rule read from the run's own measurements: loaded here, judged by the one rule
    (:func:`pytest_itera.checks.stop_rules.measured`) the recorder also applies."""
    found = run_measurements(ctx, run)
    if isinstance(found, str):
        return RuleVerdict("unproven", found, hint=_measurements_hint(run))
    return measured(rule, found, _role(plan, run.id))


def _measurements_hint(run: RunRecord) -> str:
    if run.measurements is None:
        return ("record the run's measurements file: its series, final metrics and checked "
                f"inputs (RunRecorder writes runs/{run.id}/measurements.jsonl; {CONTRACT})")
    return f"write the measurements as JSON Lines ({CONTRACT}, 'Measurements file')"


# -------------------------------------------------------------- input_truncated


def _truncated_on(ctx: Context, plan: Plan, rule: StopRule, run: RunRecord) -> RuleVerdict:
    """A truncated input concerns the data checks, and every run that consumes it."""
    name = str(rule.parameters["input"])
    corpus = input_corpus(plan, name)
    role = _role(plan, run.id)
    if corpus is not None and role != "data_check":
        recorded = plan.corpus_by_id(run.corpus) if run.corpus is not None else None
        mine = recorded or plan.corpus_of(run.id)
        if mine is not None and mine.id != corpus.id:
            return RuleVerdict("clear", f"run {run.id} works on corpus {mine.id}, not {name}")
    index = plan.stop_rules.index(rule)
    return ctx.memo(f"evidence:input:{index}", lambda: input_verdict(ctx, plan, rule))


def input_verdict(ctx: Context, plan: Plan, rule: StopRule) -> RuleVerdict:
    """The input as the folder holds it and as the data checks recorded it, against the rule."""
    _, man = ctx.documents()
    p = rule.parameters
    name = str(p["input"])
    corpus = input_corpus(plan, name)
    path = corpus.path if corpus is not None else name
    aliases = (name, path, corpus.id if corpus is not None else "")
    expected = {k: p[k] for k in ("examples", "bytes", "sha256") if k in p}
    observed: list[tuple[str, str, object, str]] = []  # (source, field, value, where)
    folder = _in_folder(ctx, path, corpus)
    if folder is not None:
        observed += [(f"{path} in the folder", k, v, path) for k, v in folder.items()]
    for run in man.runs:
        if _role(plan, run.id) != "data_check" or run.outcome == "dropped":
            continue
        found = run_measurements(ctx, run)
        record = found.checked(*aliases) if isinstance(found, Measurements) else None
        if record is None:
            continue
        assert isinstance(found, Measurements)
        where = f"{found.path}:{record.line}"
        source = f"the data check {run.id}'s record"
        for key in ("examples", "bytes", "sha256"):
            value = getattr(record, key)
            if value is not None:
                observed.append((source, key, value, where))
    for source, key, value, where in observed:
        if key in expected and value != expected[key]:
            return RuleVerdict("triggered", f"input {name!r}: {source} has {key} {value}, the "
                               f"rule expects {expected[key]}", where=where)
    unseen = sorted(set(expected) - {key for _, key, _, _ in observed})
    if unseen:
        return RuleVerdict(
            "unproven", f"no evidence of the {', '.join(unseen)} of input {name!r}: "
            + ("it is not a file of the campaign folder" if folder is None
               else "the folder's file cannot tell") + " and no data check recorded it",
            hint=f"have the data check record what it measured on {name!r} (a checked_input "
            f"line with {', '.join(sorted(expected))}; {CONTRACT})")
    return RuleVerdict("clear", f"input {name!r} has the expected "
                       + ", ".join(f"{k} {v}" for k, v in sorted(expected.items())))


def _in_folder(ctx: Context, path: str, corpus: Corpus | None) -> dict[str, object] | None:
    """What the folder's copy of an input measures: bytes, sha256 and (a corpus) examples."""
    resolved = ctx.regular_file(path)
    if isinstance(resolved, str):
        return None
    facts = ctx.facts(path)
    if facts.error is not None:
        return None
    out: dict[str, object] = {"bytes": facts.size}
    if facts.sha256 is not None:
        out["sha256"] = facts.sha256
    if corpus is not None:
        count = _count_examples(ctx, resolved, corpus)
        if count is not None:
            out["examples"] = count
    return out


def _count_examples(ctx: Context, path: Path, corpus: Corpus) -> int | None:
    def count() -> int | None:
        from pytest_itera.files.predictions import UnreadableIds, read_ids

        try:
            return len({rec.id for rec in read_ids(path, corpus.id_field) if rec.id is not None})
        except (OSError, UnreadableIds):
            return None

    result: int | None = ctx.memo(f"evidence:examples:{corpus.id}", count)
    return result


# ------------------------------------------------------------------- the resume


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
            "from and its step)" + _v1(man, "a resume"), where=where,
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
        return RuleVerdict("unproven", mine, hint=_measurements_hint(run))
    if isinstance(theirs, str):
        return RuleVerdict("unproven", f"the reference run {reference.id}: {theirs}",
                           hint=_measurements_hint(reference))
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


# ------------------------------------------------------------ stop-rules-applied


def stop_rules_targets(ctx: Context) -> Iterable[str]:
    """Every run that ran to an outcome the rules judge: accepted and stopped runs."""
    _, man = ctx.documents()
    return {r.id for r in man.runs if r.outcome in ("accepted", "stopped")}


def stop_rules_applied(ctx: Context, target: str | None) -> Iterator[Finding]:
    """Every declared rule, evaluated on the run's own evidence, agrees with its outcome."""
    assert target is not None
    plan, man = ctx.documents()
    index, run = ctx.recorded(target)
    where = json_where(MANIFEST_FILE, "runs", index)
    if run.outcome == "accepted":
        yield from _accepted(ctx, plan, man, run, where)
    elif run.outcome == "stopped":
        yield from _stopped(ctx, plan, run, where)


def _accepted(
    ctx: Context, plan: Plan, man: Manifest, run: RunRecord, where: str
) -> Iterator[Finding]:
    rules = list(plan.stop_rules)
    measured = [r for r in rules if r.kind in MEASURED_KINDS
                and rule_parameters_problem(r) is None and not _hooked(ctx)]
    found = run_measurements(ctx, run)
    if measured and isinstance(found, str):
        ids = ", ".join(repr(r.id) for r in measured)
        yield Finding(
            f"stop rule{'s' if len(measured) > 1 else ''} {ids} cannot be evaluated on "
            f"accepted run {run.id}: {found}" + _v1(man, "that its stop rules were applied"),
            where=f"{where}.measurements", hint=_measurements_hint(run),
            code="stop-rules-applied.no-measurements")
        rules = [r for r in rules if r not in measured]
    for rule in rules:
        verdict = evaluate(ctx, rule, run.id)
        if verdict.status == "triggered":
            yield Finding(
                f"accepted {triggers(run.id, rule, verdict)}", where=verdict.where or where,
                expected="a run whose own evidence triggers a declared stop rule is stopped, "
                "not accepted", found=f"outcome 'accepted' ({where}.outcome)",
                hint="record it as stopped (outcome 'stopped', stop {rule, reason, step}): it "
                "keeps its ID and stays an expense; a fixed configuration is a new run with a "
                "new ID",
                code="stop-rules-applied.accepted-triggers")
        elif verdict.status == "unproven":
            yield Finding(
                f"stop rule {rule.id!r} ({rule.kind}) cannot be evaluated on accepted run "
                f"{run.id}: {verdict.detail}", where=verdict.where or where, hint=verdict.hint,
                code="stop-rules-applied.unproven")


def _past_the_stop(ctx: Context, run: RunRecord, where: str) -> Iterator[Finding]:
    """A stopped run ends at its stop (R5): its measurements log no step after it."""
    stop = run.stop
    found = run_measurements(ctx, run)
    if stop is None or stop.step is None or isinstance(found, str):
        return  # stop-records asks for the step; the measurements are judged apart
    for name in sorted(found.series):
        series = found.series[name]
        later = [(step, line) for step, _, line in series.points() if step > stop.step]
        if not later:
            continue
        last = series.last()
        assert last is not None
        yield Finding(
            f"stopped run {run.id} logged {name!r} at {len(later)} step(s) after its stop "
            f"at step {stop.step} (up to step {last[0]}): it went on training past the rule "
            f"{stop.rule!r} that stopped it",
            where=f"{found.path}:{later[0][1]}",
            expected=f"no {name!r} point after step {stop.step} ({where}.stop.step)",
            found=f"steps {later[0][0]} to {last[0]}",
            hint="a run stops when its rule fires: record the stop at the step it really "
            "stopped, or, when it went on after a fix, give the new configuration a new run "
            "ID (R5)",
            code="stop-rules-applied.after-stop")


def _saved_past_the_stop(ctx: Context, run: RunRecord, where: str) -> Iterator[Finding]:
    """A stopped run's checkpoint (its evidence) stores no step after its stop (R5, v3): the
    measurements may end at the stop while the model trained on."""
    stop, man = run.stop, ctx.campaign.manifest
    if stop is None or stop.step is None or man is None or ctx.options.fast:
        return
    for index, record in enumerate(man.checkpoints):
        if record.run != run.id:
            continue
        stored = ctx.reload(record.path, record.format).step
        if stored is None or stored <= stop.step:
            continue
        yield Finding(
            f"stopped run {run.id}'s checkpoint {record.path} stores step {stored}, after its "
            f"stop at step {stop.step}: the model went on training past the rule "
            f"{stop.rule!r} that stopped it",
            where=json_where(MANIFEST_FILE, "checkpoints", index),
            expected=f"a step at or before {stop.step} ({where}.stop.step)",
            found=f"step {stored} (the step its progress stores)",
            hint="a run stops when its rule fires: ship the checkpoint it saved at or before "
            "its stop, or, when it went on after a fix, give the new configuration a new run "
            "ID (R5)",
            code="stop-rules-applied.checkpoint-after-stop")


def _hooked(ctx: Context) -> bool:
    return ctx.options.stop_rule_hook is not None


def _stopped(ctx: Context, plan: Plan, run: RunRecord, where: str) -> Iterator[Finding]:
    stop = run.stop
    rule = next((r for r in plan.stop_rules if stop is not None and r.id == stop.rule), None)
    if stop is None or rule is None:
        return  # stop-records says the record or the rule is missing
    yield from _past_the_stop(ctx, run, where)
    yield from _saved_past_the_stop(ctx, run, where)
    verdict = evaluate(ctx, rule, run.id)
    if verdict.status == "clear":
        yield Finding(
            f"stopped run {run.id} cites stop rule {rule.id!r} ({rule.kind}), but its evidence "
            f"does not trigger it: {verdict.detail}", where=f"{where}.stop.rule",
            hint="a stop cites the rule that its own measurements trigger; a run ended for "
            "another cause is recorded as 'rejected' with that cause",
            code="stop-rules-applied.stop-not-triggered")
    elif verdict.status == "unproven":
        yield Finding(
            f"stop rule {rule.id!r} ({rule.kind}) cannot be checked on stopped run {run.id}: "
            f"{verdict.detail}", where=verdict.where or where, hint=verdict.hint,
            code="stop-rules-applied.unproven")
    elif verdict.status == "triggered" and rule.kind == "non_finite_loss":
        series = rule.parameters.get("series")
        if stop.step != verdict.step:
            yield Finding(
                f"stopped run {run.id} records stop step "
                f"{stop.step if stop.step is not None else 'none'}, but its {series!r} series "
                f"is first non-finite at step {verdict.step}",
                where=f"{where}.stop.step", expected=str(verdict.step),
                found=str(stop.step) if stop.step is not None else "no step",
                hint="the stop step is the first step whose value is NaN or ±inf "
                f"({verdict.where})",
                code="stop-rules-applied.stop-step")


# ------------------------------------------------------------ measurements-agree


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
            "measurements file" + _v1(man, "its metrics"), where=f"{where}.measurements",
            expected="the run's measurements JSON Lines, whose metrics line the manifest copies",
            hint=_measurements_hint(run),
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
    for problem in found.problems[:_SHOWN]:
        message = (f"are not usable: {problem.message}" if problem.line is not None
                   else problem.message)
        yield Finding(f"the measurements {found.path} of run {run.id} {message}",
                      where=problem.where(found.path), hint=problem.fix or hint,
                      code="measurements-agree.unreadable")
    rest = len(found.problems) - _SHOWN + found.more
    if rest > 0:
        yield Finding(f"... and {rest} more problem{'s' if rest > 1 else ''} in {found.path}",
                      where=f"{where}.measurements",
                      code="measurements-agree.more")


# ----------------------------------------------------------------- role-evidence


def role_targets(ctx: Context) -> Iterable[str]:
    """Accepted runs whose planned role must be proven: data checks and resume checks."""
    plan, man = ctx.documents()
    return {r.id for r in man.runs if r.outcome == "accepted"
            and _role(plan, r.id) in ("data_check", "resume_check")}


def role_evidence(ctx: Context, target: str | None) -> Iterator[Finding]:
    """The resume check reproduces its reference; the data check recorded the planned data."""
    assert target is not None
    plan, man = ctx.documents()
    index, run = ctx.recorded(target)
    where = json_where(MANIFEST_FILE, "runs", index)
    if _role(plan, run.id) == "resume_check":
        verdict = resume_verdict(ctx, run.id)
        if verdict.status == "triggered":
            yield Finding(
                f"resume check {run.id} does not reproduce its reference run: {verdict.detail}",
                where=verdict.where or where,
                expected="the resumed series equal the reference run's at the same steps, within "
                f"checkpoint_policy.resume_tolerance ({plan.checkpoint_policy.resume_tolerance:g})",
                hint="a usable resume restores the model, optimizer, progress, scheduler, RNG "
                "and data position in a new process; find which part is missing or differs",
                code="role-evidence.resume-not-reproduced")
        elif verdict.status == "unproven":
            yield Finding(f"resume check {run.id} does not prove a resume: {verdict.detail}",
                          where=verdict.where or where, hint=verdict.hint,
                          code="role-evidence.resume-unproven")
        yield from resume_resolution(ctx, run)
    else:
        yield from _data_check(ctx, plan, man, run, where)


def resume_resolution(ctx: Context, run: RunRecord) -> Iterator[Finding]:
    """The resume check compares at the reference's resolution (issue 24, point 5): each
    series it shares with its reference run holds every step the reference logged after the
    resume step, up to the resume check's last logged step. A sparser log (every 10th step)
    could hide a divergence between two of its points."""
    _, man = ctx.documents()
    origin = run.resumed_from
    if origin is None:
        return  # the resume verdict says so
    record = resumed_checkpoint(man, origin)
    usable = record is not None and record.kind == "resume" and record.run != run.id
    reference = man.run(record.run) if usable and record is not None else None
    if reference is None:
        return  # the resume verdict says what the checkpoint is not
    mine, theirs = run_measurements(ctx, run), run_measurements(ctx, reference)
    if isinstance(mine, str) or isinstance(theirs, str):
        return
    end = max((max(s.steps) for s in mine.series.values() if len(s)), default=None)
    if end is None:
        return
    after = origin.step
    for name in sorted(mine.series):
        ref = theirs.series.get(name)
        if ref is None:
            continue
        wanted = list(dict.fromkeys(s for s in ref.steps if after < s <= end))
        logged = {s for s in mine.series[name].steps if after < s <= end}
        missing = [s for s in wanted if s not in logged]
        if not missing:
            continue
        shown = ", ".join(str(s) for s in missing[:_SHOWN]) + (", …" if len(missing) > _SHOWN
                                                               else "")
        yield Finding(
            f"resume check {run.id} does not log {name!r} at the resolution of {reference.id}: "
            f"{reference.id} logged it at {len(wanted)} steps after the resume step {after} "
            f"(up to step {end}, the resume check's last), the resume check at "
            f"{len(wanted) - len(missing)} of them; {len(missing)} missing: {shown}",
            where=mine.path,
            expected=f"a {name!r} point at every step {reference.id} logged from {after + 1} "
            f"to {end}",
            found=f"{len(wanted) - len(missing)} of {len(wanted)} steps",
            hint=f"log the resumed run's series at every step {reference.id} logged "
            "(RunRecorder.log(step, ...)): a sparser log cannot show that the resume "
            "reproduces the run between its points",
            code="role-evidence.resume-resolution")


def _data_check(
    ctx: Context, plan: Plan, man: Manifest, run: RunRecord, where: str
) -> Iterator[Finding]:
    found = run_measurements(ctx, run)
    if isinstance(found, str):
        yield Finding(f"data check {run.id} does not prove the data: {found}"
                      + _v1(man, "what the data check checked"),
                      where=f"{where}.measurements", hint=_measurements_hint(run),
                      code="role-evidence.data-unproven")
        return
    planned = plan.run(run.id)
    named = planned.corpus if planned is not None else None
    # The corpus it names, else every frozen corpus (one, most of the time).
    corpora = [c for c in plan.corpora if c.id == named] or list(plan.corpora)
    for corpus in corpora:
        yield from _checked_corpus(run, found, corpus)
    for rule in plan.stop_rules:
        if rule.kind == "input_truncated" and rule_parameters_problem(rule) is None:
            yield from _checked_rule_input(ctx, plan, man, run, found, rule, corpora)


def _checked_corpus(run: RunRecord, found: Measurements, corpus: Corpus) -> Iterator[Finding]:
    record = found.checked(corpus.id, corpus.path)
    if record is None:
        yield Finding(
            f"data check {run.id} records no check of corpus {corpus.id} ({corpus.path})",
            where=found.path,
            expected=f'a line {{"checked_input": {{"input": "{corpus.id}", "sha256": '
            f'"{corpus.sha256[:12]}…", "examples": {corpus.examples}}}}}',
            hint="the data check proves the data: record the digest and the example count it "
            "measured on the frozen corpus",
            code="role-evidence.corpus-unchecked")
        return
    at = f"{found.path}:{record.line}"
    for key, planned in (("sha256", corpus.sha256), ("examples", corpus.examples)):
        value = getattr(record, key)
        if value is None:
            yield Finding(f"data check {run.id}'s record of corpus {corpus.id} has no {key}",
                          where=at, expected=f"{key} {planned}",
                          hint=f"record the {key} the data check measured",
                          code="role-evidence.corpus-record-incomplete")
        elif value != planned:
            yield Finding(
                f"data check {run.id} measured corpus {corpus.id} with {key} {value}, but the "
                f"plan froze {planned}", where=at, expected=str(planned), found=str(value),
                hint="the data check ran on another corpus than the frozen one: check the "
                "data (truncated? re-exported?) before concluding",
                code="role-evidence.corpus-differs")


def _checked_rule_input(
    ctx: Context, plan: Plan, man: Manifest, run: RunRecord, found: Measurements,
    rule: StopRule, corpora: list[Corpus],
) -> Iterator[Finding]:
    p = rule.parameters
    name = str(p["input"])
    corpus = input_corpus(plan, name)
    if corpus is not None and corpus not in corpora:
        return  # another data check's corpus
    aliases = (name, corpus.path if corpus else "", corpus.id if corpus else "")
    record = found.checked(*aliases)
    if record is None:
        if corpus is None and _recorded_elsewhere(ctx, plan, man, run, aliases):
            return
        yield Finding(
            f"data check {run.id} records no check of input {name!r}, which stop rule "
            f"{rule.id!r} declares indispensable", where=found.path,
            expected=f"a checked_input line for {name!r} with "
            + ", ".join(k for k in ("examples", "bytes", "sha256") if k in p),
            hint="the data check measures every input the plan declares, before training",
            code="role-evidence.input-unchecked")
        return
    for key in ("examples", "bytes", "sha256"):
        if key not in p:
            continue
        value = getattr(record, key)
        if value is None:
            yield Finding(f"data check {run.id}'s record of input {name!r} has no {key}, which "
                          f"stop rule {rule.id!r} declares", where=f"{found.path}:{record.line}",
                          expected=f"{key} {p[key]}",
                          code="role-evidence.input-record-incomplete")
        elif value != p[key]:
            yield Finding(
                f"data check {run.id} measured input {name!r} with {key} {value}; stop rule "
                f"{rule.id!r} expects {p[key]}", where=f"{found.path}:{record.line}",
                expected=str(p[key]), found=str(value),
                hint="the input is truncated or is not the planned one: the rule stops the runs "
                "that use it",
                code="role-evidence.input-differs")


def _recorded_elsewhere(
    ctx: Context, plan: Plan, man: Manifest, run: RunRecord, aliases: tuple[str, ...]
) -> bool:
    for other in man.runs:
        if other.id == run.id or _role(plan, other.id) != "data_check":
            continue
        found = run_measurements(ctx, other)
        if isinstance(found, Measurements) and found.checked(*aliases) is not None:
            return True
    return False


# ---------------------------------------------------------------- rules-declared


# ---------------------------------------------------------------- the summary


def not_evaluated(plan: Plan) -> list[str]:
    """One line per declared rule that pytest-itera does not evaluate (kind ``other``)."""
    return [f"stop rule {r.id!r} (kind 'other', free-form parameters) was not evaluated"
            for r in plan.stop_rules if r.kind == "other"]


CHECKS = (
    Check("rules-declared", "stop rules declared before the trials; a decision after the pilot",
          rules_declared, needs=frozenset({"plan"}), order=3),
    Check("measurements-agree", "a run's metrics are the values of its measurements file",
          measurements_agree, scope="run", targets=measurements_targets, order=23),
    Check("stop-rules-applied", "every declared stop rule holds on every run's own evidence",
          stop_rules_applied, scope="run", targets=stop_rules_targets, order=24),
    Check("role-evidence", "the data check and the resume check prove their roles",
          role_evidence, scope="run", targets=role_targets, order=25),
    Check("journal-agrees", "every event of the recorder's journal agrees with the manifest "
          "and the files", journal_agrees, scope="file", targets=journal_listed, order=26),
)


def pytest_itera_checks(config: object) -> tuple[Check, ...]:
    return CHECKS
