"""The accepted deliverables and the cost per deliverable (R7), decided here, not read from other
items' reports.

A deliverable is a distinct corpus (by content, see :mod:`.corpora`) delivered by an accepted
control or variant run that passed its own checks (``Context.run_failures``,
predictions-cover-corpus included): the same answer under pytest-xdist, under ``-k
budget-consistent`` alone, or in a notebook. The corpus a run delivers is its manifest
``runs[].corpus``, else the plan's corpus for it; an ``itera-manifest/1`` run's
``deliverable`` is a label, not evidence. The ratio is the rental (or the engaged total) per
accepted deliverable; with none accepted it is null and the cause is shown.
:func:`delivered_corpus` and :func:`planned_elsewhere` are also the recorder's and the
report's rules."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from pytest_itera.checks.budget.corpora import merge_same_content
from pytest_itera.checks.budget.lots import BUDGET
from pytest_itera.checks.context import Context
from pytest_itera.core.campaign import (
    BudgetReport,
    Corpus,
    Lot,
    Manifest,
    Plan,
    RunRecord,
)
from pytest_itera.core.findings import Finding
from pytest_itera.core.money import (
    DELIVERING_ROLES,
    Delivery,
    Money,
    cost_per_deliverable,
    deliverables_per_corpus,
    engaged_total,
    ratio_matches,
    ratio_problem,
    rental_total,
)
from pytest_itera.core.text import is_blank

COVERAGE_CHECK = "predictions-cover-corpus"


@dataclass(frozen=True)
class Excluded:
    """An accepted control or variant that is not an accepted deliverable, and why."""

    run: str
    reason: str

    def describe(self) -> str:
        return f"{self.run} ({self.reason})"


@dataclass(frozen=True)
class Count:
    """The accepted deliverables as this session verified them."""

    deliverables: tuple[str, ...]  # one name per distinct corpus, sorted
    counted_runs: tuple[str, ...]  # accepted control/variant runs that passed their checks
    excluded: tuple[Excluded, ...]
    same_content: tuple[tuple[str, str], ...] = ()  # (corpus id, the corpus it is a copy of)
    # itera-manifest/1: the distinct `deliverable` labels of the accepted controls/variants,
    # and how many distinct corpora (by content) their predictions cover per the plan.
    labels: tuple[str, ...] = ()
    named: int = 0
    same_how: tuple[tuple[str, str], ...] = ()  # corpus id -> how it is one by content

    @property
    def accepted(self) -> int:
        return len(self.deliverables)


def corpus_contents(plan: Plan) -> dict[str, Corpus]:
    """Corpus id -> the first plan corpus with the same content (sha256) or the same path."""
    first: dict[str, Corpus] = {}
    out: dict[str, Corpus] = {}
    for corpus in plan.corpora:
        same = first.get(f"sha256:{corpus.sha256}") or first.get(f"path:{corpus.path}")
        canonical = same or corpus
        first.setdefault(f"sha256:{corpus.sha256}", canonical)
        first.setdefault(f"path:{corpus.path}", canonical)
        out.setdefault(corpus.id, canonical)
    return out


def planned_elsewhere(plan: Plan, run_id: str, corpus_id: str) -> str | None:
    """The corpus the plan gives ``run_id`` when it is another corpus than ``corpus_id`` (not
    the same content), else None: what the recorder refuses and delivered_corpus reports."""
    planned = plan.run(run_id)
    if planned is None or planned.corpus is None:
        return None
    contents = corpus_contents(plan)
    return None if contents.get(planned.corpus) is contents.get(corpus_id) else planned.corpus


def delivered_corpus(plan: Plan, run: RunRecord) -> Corpus | str:
    """The plan corpus an accepted control/variant delivers, or why it delivers none."""
    if run.predictions is None:
        return "it has no predictions"
    if run.corpus is not None:
        corpus = plan.corpus_by_id(run.corpus)
        if corpus is None:
            return f"its corpus {run.corpus!r} is not a corpus of the plan"
        planned = planned_elsewhere(plan, run.id, corpus.id)
        if planned is not None:
            return f"it was planned on corpus {planned!r}, but the manifest says it " \
                f"delivers {run.corpus!r}"
        return corpus
    found = plan.corpus_of(run.id)
    if found is None:
        return f"the plan freezes {len(plan.corpora)} corpora and neither the plan nor the " \
            "manifest says which one its predictions cover"
    return found


def count_accepted(ctx: Context, man: Manifest) -> Count:
    """Distinct corpora delivered by accepted control/variant runs that passed their checks."""
    plan = ctx.campaign.plan
    assert plan is not None
    contents = corpus_contents(plan)
    coverage = ctx.checks.get(COVERAGE_CHECK)
    covered = set(ctx.verdicts.targets(coverage)) if coverage is not None else set()
    deliveries: list[Delivery] = []
    excluded: list[Excluded] = []
    labels: set[str] = set()
    named: set[str] = set()
    for run in man.runs:
        planned = plan.run(run.id)
        if run.outcome != "accepted" or planned is None or planned.role not in DELIVERING_ROLES:
            continue  # a data check, pilot or resume check delivers nothing; unplanned: ids
        if run.deliverable is not None:
            labels.add(run.deliverable)
        corpus = delivered_corpus(plan, run)
        if isinstance(corpus, str):
            excluded.append(Excluded(run.id, corpus))
            continue
        named.add(contents[corpus.id].sha256)
        failures = ctx.verdicts.run_failures(run.id)
        if failures:
            first = ctx.verdicts.findings(*failures[0])
            failed = ", ".join(f"{check}[{target}]" for check, target in failures)
            excluded.append(Excluded(
                run.id, f"failed {failed}: {first[0].message if first else '?'}"))
            continue
        if run.id not in covered:
            excluded.append(Excluded(
                run.id, f"that its predictions cover corpus {corpus.id!r} is not verified: the "
                f"{COVERAGE_CHECK} check is not registered (itera.runs switched off?)"))
            continue
        deliveries.append(Delivery(run.id, planned.role, corpus.id,
                                   contents[corpus.id].sha256))
    deliveries, how = merge_same_content(ctx, plan, deliveries)
    per_content = deliverables_per_corpus(deliveries)
    corpus_of = {d.run: d.corpus for d in deliveries}
    names = []
    same: list[tuple[str, str]] = []
    for runs in per_content.values():
        ids = sorted({corpus_of[r] for r in runs})
        canonical = contents[min(ids, key=[c.id for c in plan.corpora].index)].id
        names.append(ids[0] if len(ids) == 1 else " = ".join(ids))
        same += [(i, canonical) for i in ids if i != canonical]
    counted = tuple(d.run for d in deliveries)
    return Count(tuple(sorted(names)), counted, tuple(excluded), tuple(same),
                 tuple(sorted(labels)), len(named), tuple(sorted(how.items())))


def accepted_count(budget: BudgetReport, count: Count, man: Manifest) -> Iterator[Finding]:
    declared = budget.accepted_deliverables
    if declared == count.accepted:
        return
    if man.version == 1 and declared > count.accepted and len(count.labels) > count.named:
        message = (
            f"itera-manifest/1 cannot prove that the deliverables "
            f"{', '.join(map(repr, count.labels))} are {len(count.labels)} distinct corpora: "
            "runs[].deliverable is a label, and the runs' predictions cover "
            f"{count.named} corpus(es) of the plan{_diagnosis(declared, count, None)}"
        )
        hint = "re-close the campaign with itera-manifest/2: plan corpora for each corpus " \
            "and runs[].corpus naming the one each run's predictions cover"
    else:
        message = (
            f"accepted_deliverables is {declared}, but {count.accepted} distinct corpus(es) "
            f"were delivered by accepted control or variant runs that passed their checks in "
            f"this session{_diagnosis(declared, count, man)}"
        )
        hint = "count each distinct corpus once (by content) among the control and variant " \
            "runs accepted AND passing their checks; a data check, pilot or resume check " \
            "delivers nothing, a replay or a relabelled copy adds nothing, and a stopped run " \
            "is an expense, not a deliverable"
    yield Finding(
        message,
        where=f"{BUDGET}.accepted_deliverables",
        expected=f"{count.accepted}" + (f" ({', '.join(count.deliverables)})"
                                        if count.deliverables else ""),
        found=str(declared),
        hint=hint,
        code="budget-consistent.accepted-deliverables",
    )


def _diagnosis(declared: int, count: Count, man: Manifest | None) -> str:
    notes = []
    if count.excluded:
        notes.append("not counted: " + "; ".join(e.describe() for e in count.excluded))
    if count.same_content:
        notes.append("one corpus under several ids (same content): " + ", ".join(
            f"{copy!r} is {original!r}{dict(count.same_how).get(copy, '')}"
            for copy, original in count.same_content))
    accepted_runs = -1 if man is None else sum(1 for r in man.runs if r.outcome == "accepted")
    if man is not None and declared > count.accepted and declared in (
            accepted_runs, len(count.counted_runs)):
        notes.append("the declared number counts runs, but a corpus replayed counts once")
    return "; " + "; ".join(notes) if notes else ""


def ratio(budget: BudgetReport, lots: list[Lot], accepted: int) -> Iterator[Finding]:
    currency = budget.currency
    total = engaged_total(lots, currency, budget.included_expenses)
    stated = (
        None if budget.cost_per_deliverable is None
        else Money(budget.cost_per_deliverable, currency)
    )
    if accepted == 0:
        yield from _zero_accepted(budget, stated, total)
        return
    problem = ratio_problem(stated, total, accepted, budget.unit, budget.rejection_cause)
    if problem is None:
        return
    rental = rental_total(lots, currency)
    if budget.unit != "decision" and stated is not None and ratio_matches(stated, rental, accepted):
        return  # the source's own figure: the rental's share per deliverable (47.14 / 2 = 23.57)
    yield Finding(problem, where=f"{BUDGET}.cost_per_deliverable",
                  expected=_expected_ratio(budget, total, accepted),
                  found=stated.format() if stated is not None else "null",
                  hint=_ratio_hint(budget),
                  code="budget-consistent.cost-per-deliverable")


def _zero_accepted(budget: BudgetReport, stated: Money | None, total: Money) -> Iterator[Finding]:
    # Same rule for a corpus and a decision: nothing accepted still cost money (R7).
    problem = ratio_problem(stated, total, 0, "corpus", budget.rejection_cause)
    if problem is None and is_blank(budget.rejection_cause):
        problem = f"zero accepted deliverables ({total.format()} engaged) without a " \
            "rejection cause"
    if problem is not None:
        yield Finding(problem, where=f"{BUDGET}.cost_per_deliverable",
                      expected=f"null, {total.format()} engaged and a rejection_cause",
                      found=stated.format() if stated is not None else "null",
                      hint="with zero accepted deliverables the ratio is undefined: show the "
                      "engaged cost and why nothing was accepted, never a zero cost",
                      code="budget-consistent.zero-accepted")


def _expected_ratio(budget: BudgetReport, total: Money, accepted: int) -> str:
    if budget.unit == "decision":
        return "null (the conclusion is reported instead)"
    ratio = cost_per_deliverable(total, accepted)
    assert ratio is not None
    return f"{ratio.format()} = {total.format()} / {accepted}"


def _ratio_hint(budget: BudgetReport) -> str:
    if budget.unit == "decision":
        return "a research decision reports its conclusion (manifest conclusion.text), not an "\
            "artificial unit: set cost_per_deliverable to null"
    return "cost_per_deliverable is the rental (or the engaged total, lots + included "\
        "expenses) divided by the accepted deliverables, to the cent"
