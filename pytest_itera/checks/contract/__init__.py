"""Contract checks: manifest, plan-frozen, expected-ids, analysis-present (R2, R5, R8, R9)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterator, Mapping, Sequence

from pytest_itera.checks.common.documents import manifest, must_roles
from pytest_itera.checks.common.measured import quoted_values
from pytest_itera.checks.context import Check, Context
from pytest_itera.checks.prose import ADVISES
from pytest_itera.checks.prose.placeholders import placeholder_lines, placeholder_only
from pytest_itera.checks.prose.quotes import equal as quotes_equal
from pytest_itera.checks.prose.quotes import exact_misquotes, loose_misquotes, shown_values
from pytest_itera.checks.prose.reload_paths import MissingPath, missing_paths
from pytest_itera.core import metrics_table
from pytest_itera.core.campaign import (
    MANIFEST_FILE,
    PLAN_FILE,
    AdapterRecord,
    CheckpointRecord,
    DecisionRecord,
    Manifest,
    Plan,
)
from pytest_itera.core.findings import Finding
from pytest_itera.core.findings import where as json_where
from pytest_itera.core.text import is_blank, says_nothing


def plan_frozen(ctx: Context, _target: str | None) -> Iterator[Finding]:
    """The plan is byte-identical to what the manifest recorded (and to any pin given from
    outside the campaign), and predates every recorded moment."""
    plan, man = ctx.documents()
    if man.plan.path != PLAN_FILE:
        yield Finding(
            f"the manifest records the plan as {man.plan.path!r}",
            where=json_where(MANIFEST_FILE, "plan", "path"),
            expected=repr(PLAN_FILE),
            found=repr(man.plan.path),
            code="plan-frozen.plan-path",
        )
    facts = ctx.facts(PLAN_FILE)
    if facts.error is not None or facts.sha256 is None:
        yield Finding(f"cannot hash {PLAN_FILE}: {facts.error}", where=PLAN_FILE,
                      code="plan-frozen.unreadable")
    else:
        if facts.sha256 != man.plan.sha256:
            yield Finding(
                "plan.json changed after it was frozen (its sha256 differs from the manifest's "
                "record)",
                where=json_where(MANIFEST_FILE, "plan", "sha256"),
                expected=man.plan.sha256,
                found=facts.sha256,
                hint="restore the plan as frozen; "
                "record changes as deviations and decisions in the manifest",
                code="plan-frozen.sha256",
            )
        yield from _pins(ctx, plan, facts.sha256)
        yield from _journal_pin(ctx, facts.sha256)
    yield from _moments_before_freeze(plan, man)


_JOURNAL_HEAD = 64 * 1024  # the plan event is the journal's first line, a few hundred bytes


def _journal_pin(ctx: Context, sha256: str) -> Iterator[Finding]:
    """The recorder's journal (listed in the campaign) opens with the plan it froze: its
    sha256, written before any run started, is evidence the manifest cannot rewrite."""
    import json

    from pytest_itera.core.journal import JOURNAL_FILE

    man = ctx.campaign.manifest
    if man is None or not any(f.path == JOURNAL_FILE for f in man.files):
        return
    path = ctx.regular_file(JOURNAL_FILE)
    if isinstance(path, str):
        return  # files-intact says what is wrong with a listed file
    try:
        with open(path, "rb") as fh:
            head = fh.read(_JOURNAL_HEAD).split(b"\n", 1)[0]
        first = json.loads(head)
    except (OSError, ValueError):
        return  # an unreadable journal is the plan gate's plan-journal item
    if not isinstance(first, dict) or first.get("event") != "plan":
        return
    frozen = first.get("sha256")
    if isinstance(frozen, str) and frozen != sha256:
        at = first.get("at")
        yield Finding(
            f"plan.json is not the plan the recorder froze: {JOURNAL_FILE} line 1 recorded "
            f"its sha256{f' at {at}' if isinstance(at, str) else ''}, before any run",
            where=f"{JOURNAL_FILE}:1", expected=frozen, found=sha256,
            hint="restore the plan as frozen; record changes as deviations and decisions in "
            "the manifest (R9: the initial plan is never rewritten)",
            code="plan-frozen.journal-sha256")


def _pins(ctx: Context, plan: Plan, sha256: str) -> Iterator[Finding]:
    """The plan's sha256 against the pins given from outside the writer's reach."""
    pinned = ctx.options.plan_sha256
    if pinned is not None:  # --itera-plan-sha256, or a notebook's Options
        if sha256 != pinned:
            yield Finding(
                "plan.json is not the plan given by --itera-plan-sha256",
                where=PLAN_FILE,
                expected=pinned,
                found=sha256,
                code="plan-frozen.pin-sha256",
            )
        return
    pins = ctx.options.plan_pins
    if not pins and ctx.options.other_pins:
        keys = ", ".join(map(repr, ctx.options.other_pins))
        yield Finding(
            f"itera_plan_sha256 pins no plan for this campaign (folder {ctx.root.name!r}, "
            f"id {plan.campaign!r})",
            where=PLAN_FILE,
            expected=f"a line '{ctx.root.name} = <sha256>' or '{plan.campaign} = <sha256>'",
            found=f"pins for {keys}",
            hint="pin the sha256 of the campaign's frozen plan.json in the ini file before the "
            "campaign starts (a campaign whose id changed is not the pinned one)",
            code="plan-frozen.no-pin",
        )
    for pin in pins:
        if sha256 != pin.sha256:
            yield Finding(
                f"plan.json is not the plan pinned by {pin.origin}",
                where=PLAN_FILE,
                expected=pin.sha256,
                found=sha256,
                hint="restore the plan as frozen when the pin was written; a changed plan is "
                "a new campaign with its own pin",
                code="plan-frozen.pin-sha256",
            )


def _moments_before_freeze(plan: Plan, man: Manifest) -> Iterator[Finding]:
    """Every recorded moment lies at or after frozen_at (R5: stop rules before the trials).

    A run's end or stop proves it ran even when its start is not recorded.
    """
    frozen = plan.frozen_at
    if frozen is None:
        return  # a draft: the manifest item says so
    moments = [("the manifest was closed", "$.closed_at", man.closed_at), *man.moments()]
    for what, path, moment in moments:
        if moment < frozen:
            yield Finding(
                f"{what} before the plan (and its stop rules) was frozen",
                where=f"{MANIFEST_FILE} {path}",
                expected=f"at or after {frozen.isoformat()}",
                found=moment.isoformat(),
                hint=f"stop rules are written before any run starts ({PLAN_FILE} $.frozen_at): "
                "a plan frozen after the trials is not the plan they followed; freeze the plan "
                "first",
                code="plan-frozen.before-freeze",
            )


def expected_ids(ctx: Context, _target: str | None) -> Iterator[Finding]:
    """Every planned run accounted for, no unplanned or repeated IDs, the must-category complete."""
    plan, man = ctx.documents()
    yield from _repeated(PLAN_FILE, "$.runs", [r.id for r in plan.runs])
    yield from _repeated(MANIFEST_FILE, "$.runs", [r.id for r in man.runs])
    recorded = {r.id for r in man.runs}
    planned = {r.id for r in plan.runs}
    for planned_run in plan.runs:
        if planned_run.id not in recorded:
            yield Finding(
                f"planned run {planned_run.id} is unaccounted for",
                where=json_where(MANIFEST_FILE, "runs"),
                hint="record it as accepted, stopped, rejected or dropped (with the decision)",
                code="expected-ids.unaccounted",
            )
    added = {rid for d in man.schedule.decisions for rid in d.adds}
    for i, run in enumerate(man.runs):
        if run.id not in planned and run.id not in added:
            yield Finding(
                f"run {run.id} is not in the plan",
                where=json_where(MANIFEST_FILE, "runs", i, "id"),
                hint="a run added after freezing needs a decision that adds it "
                "(schedule.decisions[].adds)",
                code="expected-ids.unplanned",
            )
    yield from must_roles(plan)
    yield from _dangling_runs(man, recorded)
    yield from _outcome_records(plan, man)
    yield from _decisions_agree(man)


def _repeated(file: str, where: str, ids: list[str]) -> Iterator[Finding]:
    for run_id, count in sorted(Counter(ids).items()):
        if count > 1:
            yield Finding(
                f"run id {run_id} appears {count} times",
                where=f"{file} {where}",
                hint="each run has its own id; a new configuration gets a new id",
                code="expected-ids.repeated",
            )


def _dangling_runs(man: Manifest, recorded: set[str]) -> Iterator[Finding]:
    records: list[tuple[str, Sequence[CheckpointRecord | AdapterRecord]]] = [
        ("checkpoints", man.checkpoints),
        ("adapters", man.adapters),
    ]
    for field_name, items in records:
        for i, record in enumerate(items):
            if record.run not in recorded:
                yield Finding(
                    f"{field_name[:-1]} {record.path} belongs to unknown run {record.run}",
                    where=json_where(MANIFEST_FILE, field_name, i, "run"),
                    code="expected-ids.unknown-run",
                )


def _outcome_records(plan: Plan, man: Manifest) -> Iterator[Finding]:
    """A dropped run names the decision that dropped it; a rejected run says why (R2, R9)."""
    decisions = {d.id: d for d in man.schedule.decisions}
    for i, run in enumerate(man.runs):
        where = json_where(MANIFEST_FILE, "runs", i)
        if run.outcome == "dropped":
            yield from _dropped(plan, run.id, run.decision, decisions, where)
        elif run.outcome == "rejected" and says_nothing(run.rejection):
            yield Finding(
                f"rejected run {run.id} does not say why",
                where=f"{where}.rejection",
                hint="record the cause of the rejection (it is shown with the cost)",
                code="expected-ids.rejection-unexplained",
            )


def _dropped(
    plan: Plan,
    run_id: str,
    decision: str | None,
    decisions: Mapping[str, DecisionRecord],
    where: str,
) -> Iterator[Finding]:
    if decision is None:
        yield Finding(
            f"dropped run {run_id} names no decision",
            where=f"{where}.decision",
            hint="a run is dropped at a decision point: record the decision "
            "(schedule.decisions, with drops) and name it here",
            code="expected-ids.drop-without-decision",
        )
    elif decision not in decisions:
        yield Finding(
            f"dropped run {run_id} names decision {decision!r}, which is not recorded",
            where=f"{where}.decision",
            expected=f"one of {sorted(decisions)}",
            hint="record the decision in manifest.json schedule.decisions",
            code="expected-ids.drop-decision-unknown",
        )
    elif run_id not in decisions[decision].drops:
        yield Finding(
            f"dropped run {run_id} names decision {decision!r}, which does not drop it",
            where=f"{where}.decision",
            found=f"drops {list(decisions[decision].drops)}",
            hint=f"list {run_id} in that decision's drops",
            code="expected-ids.drop-decision-disagrees",
        )
    planned = plan.run(run_id)
    if planned is not None and planned.category == "must":
        yield Finding(
            f"must-category run {run_id} was dropped",
            where=f"{where}.outcome",
            hint="only optional (useful or exploratory) runs are dropped at a decision "
            "point; without the must runs the question cannot be concluded",
            code="expected-ids.must-dropped",
        )


def _decisions_agree(man: Manifest) -> Iterator[Finding]:
    for i, decision in enumerate(man.schedule.decisions):
        for run_id in decision.drops:
            run = man.run(run_id)
            if run is not None and run.outcome != "dropped":
                yield Finding(
                    f"decision {decision.id} drops run {run_id}, recorded as {run.outcome}",
                    where=json_where(MANIFEST_FILE, "schedule", "decisions", i, "drops"),
                    hint="a dropped run has outcome 'dropped'; correct the run or the decision",
                    code="expected-ids.drop-decision-disagrees",
                )


def analysis_present(ctx: Context, _target: str | None) -> Iterator[Finding]:
    """A real error analysis naming every compared run, and reload instructions naming every
    deliverable artifact; neither missing, empty, blank nor a placeholder (R1, R8)."""
    man = ctx.campaign.manifest
    assert man is not None
    plan = ctx.campaign.plan  # None: the 'manifest' item says why; names are not checked
    for field_name, label in (
        ("analysis", "error analysis"),
        ("reload_instructions", "reload instructions"),
    ):
        relpath = getattr(man, field_name)
        problem = _text_problem(ctx, relpath)
        if problem is not None:
            yield Finding(
                f"the {label} {relpath} {problem}",
                where=json_where(MANIFEST_FILE, field_name),
                hint=f"write the {label} into the campaign folder and list it in the manifest",
                code="analysis-present.unusable",
            )
            continue
        if ctx.options.fast:
            continue  # a quick look reads no content
        text = _read_text(ctx, relpath)
        if text is None:
            continue  # unreadable: files-intact reports it
        yield from placeholder_findings(label, relpath, text)
        if plan is None:
            continue
        if field_name == "analysis":
            yield from _analysis_names(plan, man, relpath, text)
            yield from _analysis_quotes(ctx, man, relpath, text)
        else:
            yield from _reload_names(plan, man, relpath, text)
            yield from _reload_paths(ctx, relpath, text)


def _analysis_quotes(ctx: Context, man: Manifest, relpath: str, text: str
                     ) -> Iterator[Finding]:
    """The analysis's ``itera-metrics`` table holds the runs' measured values, and a number
    quoted for a run's metric named in its clause is that metric's value (both decide); a
    number after a run's id, or in a table row it heads, is one of its metrics (advises)."""
    values = quoted_values(ctx, man)
    tables = metrics_table.parse(text)
    yield from _metrics_tables(tables, relpath, values)
    plan = ctx.documents()[0]
    exact = exact_misquotes(text, values, ignore=(plan.decision.threshold,))
    for quote, value in exact:
        yield Finding(
            f"the error analysis {relpath} quotes {quote.written} for {quote.run}'s "
            f"{quote.metric} (line {quote.line}), which is {value:g}",
            where=f"{relpath}:{quote.line}",
            expected=f"{quote.run}'s {quote.metric} {value:g}", found=quote.written,
            hint="write the analysis from the measurements (they are the evidence): quote the "
            "values they hold, at the precision written",
            code="analysis-present.quoted-value")
    judged = {(q.run, q.line, q.written) for q, _ in exact}
    for quote, held in loose_misquotes(_without_tables(text, tables), values):
        if (quote.run, quote.line, quote.written) in judged:
            continue
        column = f" under {quote.metric!r}" if quote.metric is not None else ""
        yield Finding(
            f"the error analysis {relpath} quotes {quote.written} for {quote.run}{column} "
            f"(line {quote.line}), a value none of its measured metrics holds",
            where=f"{relpath}:{quote.line}",
            expected=f"one of {quote.run}'s metrics: {shown_values(held)}",
            found=quote.written,
            hint="write the analysis from the measurements (they are the evidence): quote the "
            "values they hold, at the precision written; a number for a step, a split or a "
            "subset is no misquote" + ADVISES,
            code="analysis-present.quoted-value", advisory=True)


def _without_tables(text: str, tables: list[metrics_table.Table]) -> str:
    """``text`` with its itera-metrics tables' rows blanked (line numbers kept): they are
    judged exactly, not read again."""
    lines = text.splitlines()
    for table in tables:
        for row in table.rows:
            lines[row.line - 1] = ""
    return "\n".join(lines)


def _metrics_tables(tables: list[metrics_table.Table], relpath: str,
                    values: dict[str, dict[str, float]]) -> Iterator[Finding]:
    """Each row of an ``itera-metrics`` table: a run of the manifest, one of its metrics, and
    that metric's value at the precision written."""
    for table in tables:
        for number, problem in table.problems:
            yield Finding(f"the error analysis {relpath}'s itera-metrics table: {problem} "
                          f"(line {number})", where=f"{relpath}:{number}",
                          hint="write the table as rec.close() does: | run | metric | value |",
                          code="analysis-present.metrics-table")
        for row in table.rows:
            where = f"{relpath}:{row.line}"
            held = values.get(row.run)
            if held is None:
                yield Finding(f"the error analysis {relpath}'s itera-metrics table names run "
                              f"{row.run!r} (line {row.line}), which the manifest does not "
                              "record", where=where, expected=", ".join(values) or "no run",
                              code="analysis-present.metrics-table",
                              hint="a row per recorded run: its id as the manifest writes it")
                continue
            if row.metric not in held:
                yield Finding(f"the error analysis {relpath}'s itera-metrics table gives "
                              f"{row.run}'s {row.metric!r} (line {row.line}), a metric its "
                              "measurements do not hold", where=where,
                              expected=shown_values(held) or "no metric",
                              code="analysis-present.metrics-table",
                              hint="a row per measured metric, named as the measurements "
                              "name it")
                continue
            value = held[row.metric]
            try:
                equal = quotes_equal(row.value, value)
            except ValueError:
                equal = False
            if not equal:
                yield Finding(f"the error analysis {relpath}'s itera-metrics table gives "
                              f"{row.run}'s {row.metric} as {row.value} (line {row.line}), "
                              f"which is {value:g}", where=where,
                              expected=f"{value:g}", found=row.value,
                              code="analysis-present.metrics-table",
                              hint="let rec.close() write the table from the measurements, or "
                              "copy their values at the precision written")


_MAX_TEXT = 4 * 1024 * 1024


def placeholder_findings(label: str, relpath: str, text: str) -> Iterator[Finding]:
    """A text that is nothing but a placeholder decides (it is no output, like an empty
    file); a placeholder inside a real text ("# TODO pin torch" in a snippet) advises."""
    only = placeholder_only(text)
    if only is not None:
        yield Finding(
            f"the {label} {relpath} is a placeholder ({only.marker!r} on line {only.line})",
            where=f"{relpath}:{only.line}",
            hint=f"write the {label} itself before closing; a placeholder is not an output",
            code="analysis-present.placeholder",
        )
        return
    lines = placeholder_lines(text)
    if lines:
        shown = ", ".join(f"{p.marker!r} (line {p.line})" for p in lines[:5])
        more = f" and {len(lines) - 5} more" if len(lines) > 5 else ""
        yield Finding(
            f"the {label} {relpath} holds {len(lines)} placeholder line(s): {shown}{more}",
            where=f"{relpath}:{lines[0].line}", found=shown + more,
            hint=f"finish the {label} before closing, or reword the line if it is not a "
            "placeholder" + ADVISES,
            code="analysis-present.placeholder-line", advisory=True,
        )


def _read_text(ctx: Context, relpath: str) -> str | None:
    """The file's text (its first few MiB), decoded leniently; None when it cannot be read."""
    from pathlib import Path

    resolved = ctx.regular_file(relpath)
    if not isinstance(resolved, Path):
        return None
    try:
        with resolved.open("rb") as handle:
            data = handle.read(_MAX_TEXT)
    except OSError:
        return None
    return data.decode("utf-8", "replace")


def _analysis_names(plan: Plan, man: Manifest, relpath: str, text: str) -> Iterator[Finding]:
    from pytest_itera.checks.prose.quotes import mentions

    compared = [r.id for r in man.runs if r.outcome == "accepted" and _compared(plan, r.id)]
    missing = [run_id for run_id in compared if not mentions(text, run_id)]
    if missing:
        yield Finding(
            f"the error analysis {relpath} does not name {', '.join(missing)}",
            where=relpath,
            expected=f"every compared run named: {', '.join(compared)}",
            hint="say where and why each compared run (the control and each accepted variant) "
            "errs: which examples, which kinds of error",
            code="analysis-present.runs-unnamed",
        )


def _reload_names(plan: Plan, man: Manifest, relpath: str, text: str) -> Iterator[Finding]:
    """Each accepted control/variant's artifacts: every adapter and weights checkpoint, or
    (when it has only resume checkpoints) at least one of those."""
    deliver = {r.id for r in man.runs if r.outcome == "accepted" and _compared(plan, r.id)}
    missing: list[str] = []
    for run_id in sorted(deliver):
        finals = [a.path for a in man.adapters if a.run == run_id]
        finals += [c.path for c in man.checkpoints if c.run == run_id and c.kind == "weights"]
        resumes = [c.path for c in man.checkpoints if c.run == run_id and c.kind == "resume"]
        missing += [p for p in finals if not _names_path(text, p)]
        if not finals and resumes and not any(_names_path(text, p) for p in resumes):
            missing.append(" or ".join(resumes))
    if missing:
        yield Finding(
            f"the reload instructions {relpath} do not name {', '.join(missing)}",
            where=relpath,
            expected="each deliverable artifact (checkpoint or adapter of an accepted control "
            "or variant) named by its path in the campaign",
            hint="say how to reload each deliverable artifact: its path, its format and the "
            "call that loads it",
            code="analysis-present.artifacts-unnamed",
        )


def _reload_paths(ctx: Context, relpath: str, text: str) -> Iterator[Finding]:
    """Every file of the campaign the reload instructions read is in the folder (R8: a file
    that cannot be found cannot be reloaded). A path counts as the campaign's when its first
    folder is one of the campaign's top-level folders; others (the training machine's, a
    package's) are not judged. A file the instructions read (a loader's argument, an input
    flag's value, a copy's source) decides; one they only mention advises; one their
    commands write (an output, a positional argument after the input) is not judged."""
    entries = ctx.entries()
    exists = frozenset(e.path for e in entries)
    tops = frozenset(e.path for e in entries if "/" not in e.path and e.kind == "dir")
    yield from reload_path_findings(relpath, text, exists, tops)


def reload_path_findings(relpath: str, text: str, exists: Collection[str],
                         tops: Collection[str]) -> Iterator[Finding]:
    """:func:`_reload_paths` on the facts of a folder: its paths (files and folders) and its
    top-level folders."""
    missing = missing_paths(text, exists, tops)
    read = [m for m in missing if m.decides]
    mentioned = [m for m in missing if not m.decides]
    if read:
        shown, more = _shown(read)
        yield Finding(
            f"the reload instructions {relpath} name {len(read)} file(s) the campaign "
            f"folder does not hold: {shown}{more}",
            where=f"{relpath}:{read[0].line}",
            expected="paths of files shipped in the campaign folder",
            found=shown + more,
            hint="instructions point at the files shipped with them: correct the path, or "
            "ship (and list) the file; a file that cannot be found is not a verified output",
            code="analysis-present.reload-path-missing",
        )
    if mentioned:
        shown, more = _shown(mentioned)
        yield Finding(
            f"the reload instructions {relpath} mention {len(mentioned)} path(s) the "
            f"campaign folder does not hold: {shown}{more}",
            where=f"{relpath}:{mentioned[0].line}", found=shown + more,
            hint="if the reload reads these files, ship them or correct the path; an output "
            "of the reload can be named as one (--output, >, torch.save); a reading of the "
            "instructions' words: it fails only under --itera-strict-text",
            code="analysis-present.reload-path", advisory=True,
        )


def _shown(missing: Sequence[MissingPath]) -> tuple[str, str]:
    shown = ", ".join(f"{m.path} (line {m.line})" for m in missing[:5])
    return shown, f" and {len(missing) - 5} more" if len(missing) > 5 else ""


def _text_problem(ctx: Context, relpath: str) -> str | None:
    resolved = ctx.regular_file(relpath)
    if isinstance(resolved, str):
        return resolved
    try:
        size = resolved.stat().st_size
    except OSError as exc:
        return f"cannot be read: {exc.strerror or exc}"
    if size == 0:
        return "is empty"
    if not ctx.options.fast and _blank(ctx, relpath):
        return "holds only whitespace"
    return None


def _blank(ctx: Context, relpath: str) -> bool:
    text = _read_text(ctx, relpath)
    return text is not None and is_blank(text)


def _compared(plan: Plan, run_id: str) -> bool:
    """A control or a variant: the runs the conclusion compares (R1)."""
    planned = plan.run(run_id)
    return planned is not None and planned.role in ("control", "variant")


def _names_path(text: str, path: str) -> bool:
    bare = path.rstrip("/")
    return bare in text or bare.removeprefix("./") in text


CHECKS = (
    Check(
        "manifest",
        "plan.json and manifest.json present, JSON, schema-valid",
        manifest,
        needs=frozenset(),
        fast=True,
        order=0,
    ),
    Check("plan-frozen", "the plan is unchanged since it was frozen", plan_frozen, order=1),
    Check(
        "expected-ids",
        "planned runs accounted for, no unplanned or repeated ids",
        expected_ids,
        fast=True,
        order=2,
    ),
    Check(
        "analysis-present",
        "error analysis and reload instructions present",
        analysis_present,
        needs=frozenset({"manifest"}),
        fast=True,
        order=40,
    ),
)


def pytest_itera_checks(config: object) -> tuple[Check, ...]:
    return CHECKS
