"""analysis-present (R1, R8): the error analysis and the reload instructions are real texts,
not empty, blank or placeholders; the analysis names every compared run and quotes their
measured values, the reload instructions name every deliverable artifact and only files the
folder holds. Readings of human words advise (:data:`pytest_itera.checks.prose.ADVISES`);
exact names and the itera-metrics table decide."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence

from pytest_itera.checks.common.measured import quoted_values
from pytest_itera.checks.context import Check, Context
from pytest_itera.checks.model import Kind
from pytest_itera.checks.prose import ADVISES
from pytest_itera.checks.prose.placeholders import placeholder_lines, placeholder_only
from pytest_itera.checks.prose.quotes import equal as quotes_equal
from pytest_itera.checks.prose.quotes import exact_misquotes, loose_misquotes, shown_values
from pytest_itera.checks.prose.reload_paths import MissingPath, missing_paths
from pytest_itera.core import metrics_table
from pytest_itera.core.campaign import MANIFEST_FILE, Manifest, Plan
from pytest_itera.core.findings import Finding
from pytest_itera.core.findings import where as json_where
from pytest_itera.core.text import is_blank


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
            subjects=tuple(m.path for m in read), code="analysis-present.reload-path-missing",
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
            subjects=tuple(m.path for m in mentioned), code="analysis-present.reload-path",
            advisory=True,
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


KINDS: dict[str, Kind] = {
    "analysis-present.unusable": Kind(
        rule="the error analysis or the reload instructions are missing, not a regular file, "
        "unreadable, empty or blank",
        fix="write the text into the campaign folder and list it in the manifest"),
    "analysis-present.placeholder": Kind(
        rule="the error analysis or the reload instructions are nothing but a placeholder "
        "(TODO, TBD, lorem ipsum, à compléter...)",
        fix="write the text itself before closing; a placeholder is not an output"),
    "analysis-present.placeholder-line": Kind(
        rule="the error analysis or the reload instructions hold placeholder lines inside real "
        "text",
        fix="finish the text before closing, or reword the line if it is not a placeholder",
        advisory=True),
    "analysis-present.runs-unnamed": Kind(
        rule="the error analysis does not name every compared run (the control and each "
        "accepted variant)",
        fix="say where and why each compared run errs: which examples, which kinds of error"),
    "analysis-present.artifacts-unnamed": Kind(
        rule="the reload instructions do not name, by path, every deliverable artifact of an "
        "accepted control or variant",
        fix="say how to reload each deliverable artifact: its path, its format and the call "
        "that loads it"),
    "analysis-present.reload-path-missing": Kind(
        rule="the reload instructions read a file of the campaign that the folder does not "
        "hold",
        fix="correct the path, or ship (and list) the file"),
    "analysis-present.reload-path": Kind(
        rule="the reload instructions mention a path of the campaign that the folder does not "
        "hold",
        fix="if the reload reads it, ship it or correct the path; name an output as one "
        "(--output, >, torch.save)",
        advisory=True),
    "analysis-present.metrics-table": Kind(
        rule="a row of the analysis's itera-metrics table is not three cells, or gives an "
        "unrecorded run, an unmeasured metric or another value",
        fix="let rec.close() write the table from the measurements: | run | metric | value |"),
    # Decides for a clause naming one run and one metric; advises (advisory findings) for a
    # number after a run's id or in a free table row.
    "analysis-present.quoted-value": Kind(
        rule="the error analysis quotes, for a run and one of its metrics, a number that metric "
        "does not hold",
        advises_when="the number only follows a run's id or sits in a free table row, and none "
        "of its metrics holds it",
        fix="quote the values the measurements hold, at the precision written"),
}

CHECK = Check(
    "analysis-present",
    "error analysis and reload instructions present",
    analysis_present,
    needs=frozenset({"manifest"}),
    fast=True,
    kinds=KINDS,
)
