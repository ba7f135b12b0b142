"""predictions-cover-corpus: an accepted run predicts each example of its frozen corpus once.

R1: a decision is taken on a frozen corpus, so every compared run (control or variant)
delivers its own model's predictions on it, all of it, once. Predictions and the corpus
are streamed (:mod:`pytest_itera.files.predictions`): a process holds the corpus IDs (once,
memoised per Context), one byte per corpus ID for "seen", counters and the first few
examples of each problem, never a whole predictions file. The recorder refuses shared and
incomplete predictions through :func:`shared_predictions` and :func:`coverage_problems`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from pytest_itera.checks.common import corpus_ids as corpus_rules
from pytest_itera.checks.common import scoring
from pytest_itera.checks.common.corpus_ids import (
    corpus_ids,
    counted,
    ids_text,
    index_lines,
    lines_text,
    more,
    reason,
    run_corpus,
)
from pytest_itera.checks.context import Check, Context
from pytest_itera.checks.model import Kind
from pytest_itera.checks.stop_rules import PREDICTING_ROLES
from pytest_itera.core.campaign import MANIFEST_FILE, Corpus, Manifest, Plan, RunRecord
from pytest_itera.core.findings import Finding
from pytest_itera.core.findings import where as json_where
from pytest_itera.files.predictions import (
    Coverage,
    UnreadableIds,
    cover,
    read_ids,
)

KINDS: dict[str, Kind] = {
    "predictions-cover-corpus.no-predictions": Kind(
        rule="an accepted control or variant run has no predictions",
        fix="write the run's predictions on the frozen corpus (R1) and record the file"),
    "predictions-cover-corpus.predictions-unreadable": Kind(
        rule="a run's predictions file is missing from the folder or cannot be read",
        fix="write JSON Lines objects or CSV rows with the corpus's id_field"),
    "predictions-cover-corpus.shared-file": Kind(
        rule="a run names another run's predictions file as its own",
        fix="write the run's predictions from its own model, in its own file, or record the run "
        "as rejected"),
    "predictions-cover-corpus.corpus-moved": Kind(
        rule="the manifest says a run's predictions cover another corpus than the one the plan "
        "put it on",
        fix="keep the run on its planned corpus (R1): a run on another corpus is another "
        "configuration, with its own ID in the plan (R5)"),
    "predictions-cover-corpus.missing-ids": Kind(
        rule="a run's predictions miss IDs of the frozen corpus",
        fix="predict every example of the frozen corpus exactly once"),
    "predictions-cover-corpus.repeated-ids": Kind(
        rule="a run's predictions repeat IDs of the frozen corpus",
        fix="predict every example of the frozen corpus exactly once"),
    "predictions-cover-corpus.unknown-ids": Kind(
        rule="a run's predictions hold IDs that are not in the frozen corpus",
        fix="predict every example of the frozen corpus exactly once"),
    "predictions-cover-corpus.malformed-lines": Kind(
        rule="lines of a run's predictions are malformed (no JSON object or CSV row with the ID)",
        fix="write each line as one JSON object (or CSV row) with the corpus ID field"),
    **corpus_rules.KINDS,
}


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


CHECK = Check("predictions-cover-corpus",
              "an accepted run predicts each frozen-corpus example once",
              predictions_cover_corpus, scope="run", targets=predictions_targets,
              kinds=KINDS)
