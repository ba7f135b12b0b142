"""stop-rules-applied: every declared stop rule holds on every run's own evidence (R5).

Each rule is evaluated (:func:`evaluate`) on each accepted and stopped run: a
``pytest_itera_stop_rule`` hook first, then the built-in kinds on the run's measurements, the
input's file and the data checks' records, or the resume comparison. A run whose evidence
triggers a rule cannot be accepted; a stopped run's rule must be triggered by its evidence,
at its stop step, and it logs and saves nothing after it. A rule of kind ``other`` is never
evaluated and never fails: :func:`not_evaluated` gives the terminal summary's lines.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from pytest_itera.checks.common.rules_declared import CONTRACT, v1_rule
from pytest_itera.checks.context import Check, Context
from pytest_itera.checks.evidence.resume import resume_verdict
from pytest_itera.checks.evidence.run_evidence import (
    measurements_file,
    measurements_hint,
    planned_role,
    run_measurements,
    v1,
)
from pytest_itera.checks.model import Kind
from pytest_itera.checks.stop_rules import (
    MEASURED_KINDS,
    RuleVerdict,
    input_corpus,
    measured,
    rule_parameters_problem,
    triggers,
)
from pytest_itera.core.campaign import (
    MANIFEST_FILE,
    PLAN_FILE,
    Corpus,
    Manifest,
    Plan,
    RunRecord,
    StopRule,
)
from pytest_itera.core.findings import Finding
from pytest_itera.core.findings import where as json_where
from pytest_itera.files.measurements import Measurements, Unreadable


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
        return RuleVerdict("unproven", found, hint=measurements_hint(run),
                           subjects=measurements_file(run))
    return measured(rule, found, planned_role(plan, run.id))


def _truncated_on(ctx: Context, plan: Plan, rule: StopRule, run: RunRecord) -> RuleVerdict:
    """A truncated input concerns the data checks, and every run that consumes it."""
    name = str(rule.parameters["input"])
    corpus = input_corpus(plan, name)
    role = planned_role(plan, run.id)
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
        if planned_role(plan, run.id) != "data_check" or run.outcome == "dropped":
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
            f"accepted run {run.id}: {found}" + v1(man, "that its stop rules were applied"),
            where=f"{where}.measurements", hint=measurements_hint(run),
            subjects=measurements_file(run), code="stop-rules-applied.no-measurements")
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
                subjects=verdict.subjects,
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
                subjects=verdict.subjects,
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


def not_evaluated(plan: Plan) -> list[str]:
    """One line per declared rule that pytest-itera does not evaluate (kind ``other``)."""
    return [f"stop rule {r.id!r} (kind 'other', free-form parameters) was not evaluated"
            for r in plan.stop_rules if r.kind == "other"]


KINDS: dict[str, Kind] = {
    "stop-rules-applied.no-measurements": Kind(
        rule="the measured stop rules cannot be evaluated on an accepted run: it has no "
        "readable measurements file",
        fix="record the run's measurements file: its series, final metrics and checked inputs"),
    "stop-rules-applied.accepted-triggers": Kind(
        rule="a declared stop rule, evaluated on an accepted run's own evidence, is triggered",
        fix="record the run as stopped (outcome 'stopped', stop {rule, reason, step}); a fixed "
        "configuration is a new run with a new ID"),
    "stop-rules-applied.unproven": Kind(
        rule="a stop rule cannot be evaluated on an accepted or stopped run (no such series, "
        "no evidence of the input, an itera-plan/1 free-form rule...)",
        fix="record the evidence the rule reads, as the finding says (e.g. log the 'loss' "
        "series at every step)"),
    "stop-rules-applied.after-stop": Kind(
        rule="a stopped run logs a series point after its stop step: it went on training past "
        "the rule that stopped it",
        fix="record the stop at the step it really stopped, or give the new configuration a new "
        "run ID"),
    "stop-rules-applied.checkpoint-after-stop": Kind(
        rule="a stopped run lists a checkpoint that stores a step after its stop step (not "
        "with --itera-fast)",
        fix="ship the checkpoint it saved at or before its stop, or give the new configuration "
        "a new run ID"),
    "stop-rules-applied.stop-not-triggered": Kind(
        rule="a stopped run cites a stop rule that its own evidence does not trigger",
        fix="cite the rule its own measurements trigger; a run ended for another cause is "
        "'rejected' with that cause"),
    "stop-rules-applied.stop-step": Kind(
        rule="a run stopped by a non_finite_loss rule records a stop step that is not the first "
        "non-finite step of its series",
        fix="the stop step is the first step whose value is NaN or ±inf"),
}

CHECK = Check("stop-rules-applied", "every declared stop rule holds on every run's own evidence",
              stop_rules_applied, scope="run", targets=stop_rules_targets,
              kinds=KINDS)
