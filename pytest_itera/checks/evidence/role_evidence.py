"""role-evidence: the data check and the resume check prove their roles (R2, R6).

The resume check resumes a listed resume checkpoint of another run and, after the resume
step, reproduces that run's series at the same steps within
``checkpoint_policy.resume_tolerance``, at the reference's resolution (:mod:`.resume`). The
data check records what it measured of each frozen corpus and of every input an
``input_truncated`` rule declares, and those are the planned values.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from pytest_itera.checks.context import Check, Context
from pytest_itera.checks.evidence.resume import resume_verdict, resumed_checkpoint
from pytest_itera.checks.evidence.run_evidence import (
    SHOWN,
    measurements_file,
    measurements_hint,
    planned_role,
    run_measurements,
    v1,
)
from pytest_itera.checks.model import Kind
from pytest_itera.checks.stop_rules import (
    input_corpus,
    rule_parameters_problem,
)
from pytest_itera.core.campaign import (
    MANIFEST_FILE,
    Corpus,
    Manifest,
    Plan,
    RunRecord,
    StopRule,
)
from pytest_itera.core.findings import Finding
from pytest_itera.core.findings import where as json_where
from pytest_itera.files.measurements import Measurements


def role_targets(ctx: Context) -> Iterable[str]:
    """Accepted runs whose planned role must be proven: data checks and resume checks."""
    plan, man = ctx.documents()
    return {r.id for r in man.runs if r.outcome == "accepted"
            and planned_role(plan, r.id) in ("data_check", "resume_check")}


def role_evidence(ctx: Context, target: str | None) -> Iterator[Finding]:
    """The resume check reproduces its reference; the data check recorded the planned data."""
    assert target is not None
    plan, man = ctx.documents()
    index, run = ctx.recorded(target)
    where = json_where(MANIFEST_FILE, "runs", index)
    if planned_role(plan, run.id) == "resume_check":
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
                          subjects=verdict.subjects, code="role-evidence.resume-unproven")
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
        shown = ", ".join(str(s) for s in missing[:SHOWN]) + (", …" if len(missing) > SHOWN
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
                      + v1(man, "what the data check checked"),
                      where=f"{where}.measurements", hint=measurements_hint(run),
                      subjects=measurements_file(run), code="role-evidence.data-unproven")
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
        if other.id == run.id or planned_role(plan, other.id) != "data_check":
            continue
        found = run_measurements(ctx, other)
        if isinstance(found, Measurements) and found.checked(*aliases) is not None:
            return True
    return False


KINDS: dict[str, Kind] = {
    "role-evidence.resume-not-reproduced": Kind(
        rule="after the resume step, the resume check's series differ from its reference run's "
        "at the same steps by more than checkpoint_policy.resume_tolerance",
        fix="a usable resume restores the model, optimizer, progress, scheduler, RNG and data "
        "position in a new process: find which part differs"),
    "role-evidence.resume-unproven": Kind(
        rule="the resume check proves no resume: no resumed_from, not a listed resume checkpoint "
        "of another run, or no step shared with the reference run",
        fix="record resumed_from (a listed resume checkpoint of another run, and its step) and "
        "log the reference run's series after it"),
    "role-evidence.resume-resolution": Kind(
        rule="the resume check misses a step its reference logged after the resume step (up to "
        "the resume check's last logged step)",
        fix="log the resumed run's series at every step the reference logged "
        "(RunRecorder.log(step, ...))"),
    "role-evidence.data-unproven": Kind(
        rule="the data check proves no data: it has no readable measurements file",
        fix="record the data check's measurements file with its checked inputs"),
    "role-evidence.corpus-unchecked": Kind(
        rule="the data check records no checked_input of its frozen corpus",
        fix="record the digest and the example count the data check measured on the frozen "
        "corpus (RunRecorder.check_input)"),
    "role-evidence.corpus-record-incomplete": Kind(
        rule="the data check's record of its corpus has no sha256 or no example count",
        fix="record the sha256 and the example count the data check measured"),
    "role-evidence.corpus-differs": Kind(
        rule="the data check measured its corpus with another sha256 or example count than the "
        "plan froze",
        fix="the data check ran on another corpus than the frozen one: check the data "
        "(truncated? re-exported?)"),
    "role-evidence.input-unchecked": Kind(
        rule="the data check records no checked_input of an input an input_truncated stop rule "
        "declares",
        fix="the data check measures every input the plan declares, before training"),
    "role-evidence.input-record-incomplete": Kind(
        rule="the data check's record of an input lacks a value (examples, bytes, sha256) its "
        "input_truncated rule declares",
        fix="record every value the rule declares for the input"),
    "role-evidence.input-differs": Kind(
        rule="the data check measured an input with another value than its input_truncated "
        "rule expects",
        fix="the input is truncated or is not the planned one: the rule stops the runs that "
        "use it"),
}

CHECK = Check("role-evidence", "the data check and the resume check prove their roles",
              role_evidence, scope="run", targets=role_targets, kinds=KINDS)
