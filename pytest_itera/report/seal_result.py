"""The result a seal carries, and its recomputation when the seal is verified (issue 38.4).

The record goes inside the statement that is signed: ``predicate.itera.result`` of
model-signing's in-toto statement. Not a second statement beside it: a model-signing bundle
carries one DSSE envelope, which its verifier checks against the folder and whose predicate
fields it does not know it ignores (``itera`` is that predicate's extension point), so a
second envelope would need a format of our own around the bundle and would no longer be
model-signing's. One envelope: the bytes and the result are signed together.

The record (``schemas/seal-result.schema.json``, validated when written and read): the
plan's sha256, the journal's chain head (``<line>:<digest>``, as a pin), the verdict, the
decision (metric, direction, threshold, the plan's computation), each compared run's
decision metric as the checks judge it (:func:`~pytest_itera.checks.common.measured.judged_metrics`:
its value, how it was computed, the sha256 of its predictions and of its frozen corpus) and
the manifest's conclusion. :func:`findings` recomputes each value with the same function
from the files as they are now, and compares every field with what the folder says: a
value edited and signed again with the same key is found, though every digest holds.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from pytest_itera.checks.common.corpus_ids import file_sha256, run_corpus
from pytest_itera.checks.common.measured import judged_metrics, report_intervals
from pytest_itera.checks.context import Context
from pytest_itera.core.campaign import MANIFEST_FILE, PLAN_FILE, schema
from pytest_itera.core.findings import Finding
from pytest_itera.core.journal import JOURNAL_FILE, line_digest

__all__ = ["NO_RESULT", "RESULT_FORMAT", "conclusion_lines", "findings", "problems", "record"]

RESULT_FORMAT = "itera-seal-result/1"
NO_RESULT = "this seal records no result: verified for bytes only"


@cache
def _validator() -> Any:
    import jsonschema

    found = schema("seal-result")
    return jsonschema.validators.validator_for(found)(found)


def problems(result: object) -> list[str]:
    """Why ``result`` breaks the seal-result schema (each with its JSON path); [] when not."""
    return [f"$.{'.'.join(map(str, e.absolute_path))}: {e.message}" if e.absolute_path
            else e.message for e in _validator().iter_errors(result)]


# ------------------------------------------------------------------ writing


def record(ctx: Context, verdict: str) -> dict[str, Any]:
    """The result of the accepted campaign of ``ctx``, as the checks judged it."""
    plan, man = ctx.documents()
    decision = plan.decision
    made = {
        "format": RESULT_FORMAT,
        "plan_sha256": man.plan.sha256,
        "journal": journal_head(ctx.root),
        "verdict": verdict,
        "decision": {"metric": decision.metric, "direction": decision.direction,
                     "threshold": decision.threshold,
                     "computation": _computation(ctx)},
        "runs": _runs(ctx),
        "conclusion": _conclusion(man.conclusion.meets_threshold, man.conclusion.text),
    }
    wrong = problems(made)
    if wrong:  # a record this code made breaks its own schema: never sealed so
        raise ValueError(f"the seal's result breaks its schema: {'; '.join(wrong)}")
    return made


def journal_head(root: Path) -> dict[str, Any] | None:
    """The journal's last whole line and its digest (:func:`~pytest_itera.core.journal.
    line_digest`: what ``Journal.pin`` gives), read without touching the file (``Journal.open``
    would cut a torn tail off); None when there is no journal."""
    try:
        data = (root / JOURNAL_FILE).read_bytes()
    except FileNotFoundError:
        return None
    whole = data[: data.rfind(b"\n") + 1].splitlines()
    return {"line": len(whole), "digest": line_digest(whole[-1])} if whole else None


def _runs(ctx: Context) -> list[dict[str, Any]]:
    """Each compared run's sealed record, a variant's with its interval (how sure its gain over
    the control is: the paired bootstrap the conclusion is judged on), or why it has none."""
    judged = judged_metrics(ctx)
    intervals = report_intervals(ctx, judged)
    runs = []
    for run, measured in judged:
        entry = _run(ctx, run, measured)
        if run.id in intervals:
            entry["interval"] = intervals[run.id]
        runs.append(entry)
    return runs


def _run(ctx: Context, run: Any, measured: Any) -> dict[str, Any]:
    plan, _ = ctx.documents()
    corpus = run_corpus(plan, run)
    value = measured.value
    return {
        "run": run.id,
        "value": value if value is not None and math.isfinite(value) else None,
        "source": measured.source,
        "predictions": run.predictions,
        "predictions_sha256": _digest(ctx, run.predictions),
        "corpus": corpus.path,
        "corpus_sha256": _digest(ctx, corpus.path),
    }


def _digest(ctx: Context, relpath: str | None) -> str | None:
    return None if relpath is None else file_sha256(ctx, relpath)[0]


def _computation(ctx: Context) -> Any:
    """How the decision metric is computed, as the frozen plan.json writes it (None: the plan
    says not, before itera-plan/3)."""
    data = ctx.campaign.plan_data
    decision = data.get("decision") if isinstance(data, dict) else None
    return decision.get("computation") if isinstance(decision, dict) else None


def _conclusion(meets: Any, text: str) -> dict[str, Any]:
    return {"meets_threshold": list(meets), "text": text}


# ------------------------------------------------------------------ verifying


def findings(ctx: Context, itera: Mapping[str, Any], where: str) -> Iterator[Finding]:
    """What differs between the sealed result and the folder's: each sealed value against
    its recomputation, each digest against the file now, the plan's threshold and the
    manifest's conclusion against the sealed ones."""
    result = itera.get("result")
    if result is None:
        return
    wrong = problems(result)
    if wrong:
        yield Finding("the result the seal records breaks its schema (seal-result): "
                      f"{'; '.join(wrong[:3])}", where=where, code="seal.result-schema",
                      hint="a seal is written by --itera-seal; one edited by hand cannot be "
                      "trusted: seal the accepted folder again")
        return
    yield from _run_findings(ctx, result, where)
    yield from _document_findings(ctx, result, where)


def _differs(what: str, sealed: object, now: object, where: str) -> Finding:
    return Finding(f"{what}: the seal records one value, the folder gives another",
                   where=where, expected=str(sealed), found=str(now),
                   code="seal.result-evidence",
                   hint="the sealed result is not this folder's: restore the sealed folder, "
                   "or accept and seal it again")


def _document_findings(ctx: Context, result: Mapping[str, Any], where: str) -> Iterator[Finding]:
    plan, man = ctx.documents()
    sealed_journal = result["journal"]
    head = journal_head(ctx.root)
    if sealed_journal is not None:
        sealed_journal = {"line": int(sealed_journal["line"]), "digest": sealed_journal["digest"]}
    pairs = [
        ("the plan's sha256", result["plan_sha256"], man.plan.sha256, MANIFEST_FILE),
        (f"the chain head of {JOURNAL_FILE}", _pin(sealed_journal), _pin(head), JOURNAL_FILE),
        ("the decision's threshold", result["decision"]["threshold"], plan.decision.threshold,
         PLAN_FILE),
        ("the decision's metric", result["decision"]["metric"], plan.decision.metric, PLAN_FILE),
        ("the conclusion", result["conclusion"],
         _conclusion(man.conclusion.meets_threshold, man.conclusion.text), MANIFEST_FILE),
    ]
    for what, sealed, now, place in pairs:
        if sealed != now:
            yield _differs(f"{what} ({place})", sealed, now, where)


def _pin(head: Mapping[str, Any] | None) -> str | None:
    return None if head is None else f"{head['line']}:{head['digest']}"


def _run_findings(ctx: Context, result: Mapping[str, Any], where: str) -> Iterator[Finding]:
    """Each sealed run's value recomputed by the checks' own function, from its files."""
    metric = result["decision"]["metric"]
    now = {entry["run"]: entry for entry in _runs(ctx)}
    sealed = {entry["run"]: entry for entry in result["runs"]}
    for run_id in sorted(set(now) - set(sealed)):
        yield _differs(f"run {run_id}: compared now, not in the sealed result", "no run",
                       run_id, where)
    for run_id, entry in sealed.items():
        if run_id not in now:
            yield _differs(f"run {run_id}: sealed, no longer a compared run", run_id, "no run",
                           where)
            continue
        redone = now[run_id]
        if entry.get("interval") != redone.get("interval"):
            yield _differs(f"run {run_id}: its interval (recomputed with the sealed seed)",
                           entry.get("interval"), redone.get("interval"), where)
        for name in ("predictions_sha256", "corpus_sha256"):
            if entry[name] != redone[name]:
                yield _differs(f"run {run_id}: the sha256 of {redone[name[:-7]]}", entry[name],
                               redone[name], where)
        if entry["value"] != redone["value"]:
            yield Finding(
                f"run {run_id}'s {metric}: sealed {entry['value']!r}, recomputed "
                f"{redone['value']!r} ({redone['source']})", where=where,
                expected=repr(entry["value"]), found=repr(redone["value"]),
                code="seal.result-metric",
                hint="the seal's value is not what the sealed predictions and corpus give: "
                "the result was edited after the checks judged it; seal the accepted folder "
                "again")


def _shown(value: float | None) -> str:
    """A sealed value for the terminal: 4 significant digits (the seal keeps it exact)."""
    return "none" if value is None else f"{value:.4g}"


def _interval(entry: Mapping[str, Any]) -> str:
    """A sealed variant's interval, for the terminal ("" when it has none)."""
    found = entry.get("interval")
    if not isinstance(found, Mapping):
        return ""
    return (f" (gain {found['gain']:+.4g}, {found['level'] * 100:g} % interval "
            f"[{found['low']:+.4g}, {found['high']:+.4g}]"
            f"{'' if found['decisive'] else ', not decisive'})")


def conclusion_lines(itera: Mapping[str, Any]) -> list[str]:
    """What the seal says the campaign concluded, for the terminal (the note when it records
    no result)."""
    result = itera.get("result")
    if not isinstance(result, Mapping) or problems(result):
        return [] if isinstance(result, Mapping) else [NO_RESULT]
    decision = result["decision"]
    values = ", ".join(f"{entry['run']} {_shown(entry['value'])}{_interval(entry)}"
                       for entry in result["runs"])
    meets = ", ".join(result["conclusion"]["meets_threshold"]) or "none"
    return [f"sealed result: {decision['metric']} ({decision['direction']}, threshold "
            f"{decision['threshold']!r}) recomputed from the sealed predictions: {values}; "
            f"meets the threshold: {meets}",
            f"sealed conclusion: {result['conclusion']['text']}"]
