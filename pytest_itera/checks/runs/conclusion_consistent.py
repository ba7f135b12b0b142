"""conclusion-consistent: the conclusion agrees with the measured metrics and the threshold.

R1: a decision on a frozen corpus, and a negative result is a result. meets_threshold
lists exactly the accepted variants whose measured decision metric (recomputed from their
predictions where the plan says how) meets the planned threshold, and the text says the
same. With ``decision.confidence`` (itera-plan/3) a variant meets the threshold only when
its paired bootstrap interval's bound does (checks/common/measured.py). The judged values and
the variants' intervals are also the report's facts (:func:`judged_facts`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from pytest_itera.checks.common.measured import (
    Measured,
    decision_interval,
    decision_metric,
    decisive,
    interval_bound,
    interval_text,
    judged_metrics,
    level_text,
    meets,
    quoted_values,
    report_intervals,
)
from pytest_itera.checks.context import Check, Context
from pytest_itera.checks.model import Kind
from pytest_itera.checks.prose import ADVISES
from pytest_itera.checks.prose import conclusion as conclusion_prose
from pytest_itera.checks.prose.quotes import (
    exact_misquotes,
    loose_misquotes,
    mentions,
    shown_values,
)
from pytest_itera.core.campaign import MANIFEST_FILE, Manifest, Plan, RunRecord
from pytest_itera.core.findings import Finding
from pytest_itera.core.findings import where as json_where
from pytest_itera.core.text import is_blank

CONCLUSION = "conclusion-consistent"
# The conclusion is judged on the measured values (recomputed where the plan says how):
# meets_threshold decides. Its text is read two ways: exactly (a sentence naming one run
# alone as meeting the threshold, a number quoted for a run's metric named in its clause)
# and loosely, by the word tables of checks/prose/conclusion.py, which advise.

SAME = "make the text and meets_threshold say the same thing"
KINDS: dict[str, Kind] = {
    f"{CONCLUSION}.unknown-run": Kind(
        rule="meets_threshold lists a run that is not a run of the manifest",
        fix="list exactly the accepted variants whose measured decision metric meets the "
        "threshold"),
    f"{CONCLUSION}.not-a-variant": Kind(
        rule="meets_threshold lists a control or another non-variant run: only variants are "
        "compared with the threshold",
        fix="list only variants in meets_threshold"),
    f"{CONCLUSION}.not-accepted": Kind(
        rule="meets_threshold lists a run whose outcome is not 'accepted'",
        fix="list only accepted runs: a stopped, rejected or dropped run cannot meet the "
        "threshold"),
    f"{CONCLUSION}.below-threshold": Kind(
        rule="meets_threshold lists a variant whose measured decision metric does not meet the "
        "threshold",
        fix="state the conclusion the measured metrics support; a negative result is a valid "
        "result"),
    f"{CONCLUSION}.not-decisive": Kind(
        rule="the plan requires a confidence (decision.confidence): meets_threshold lists a "
        "variant whose paired bootstrap interval's bound does not meet the threshold, or that "
        "has no interval (too few examples, no control)",
        fix="state the conclusion the interval supports (a gain inside its noise does not "
        "meet the threshold), or predict more examples of the frozen corpus"),
    f"{CONCLUSION}.unlisted-variant": Kind(
        rule="an accepted variant's measured decision metric meets the threshold but "
        "meets_threshold does not list it",
        fix="add the variant to meets_threshold: the conclusion states what the measured "
        "metrics show"),
    f"{CONCLUSION}.no-metric": Kind(
        rule="an accepted variant has no value for the plan's decision metric",
        fix="record the decision metric of every accepted variant in its measurements (the "
        "manifest copies it)"),
    f"{CONCLUSION}.no-text": Kind(
        rule="the conclusion has no text",
        fix="state the conclusion: the variants that meet the threshold, or the negative result"),
    f"{CONCLUSION}.quoted-value": Kind(
        rule="the text quotes a number for a run's metric that the metric does not hold at the "
        "precision written",
        advises_when="the number only follows a run's id",
        fix="quote the values the measurements hold (at the precision written), or drop the "
        "number"),
    f"{CONCLUSION}.named-unlisted": Kind(
        rule="the text names an unlisted variant as meeting the threshold in a plain sentence",
        advises_when="the claim is looser than a plain sentence",
        fix=f"{SAME}: list the variant if its measured metric meets the threshold, else say it "
        "does not"),
    f"{CONCLUSION}.negative-but-listed": Kind(
        rule="the text states a negative result, but meets_threshold lists variants",
        fix=SAME, advisory=True),
    f"{CONCLUSION}.listed-unnamed": Kind(
        rule="the text does not name a variant that meets_threshold lists",
        fix="name the variant in the text with its measured decision metric", advisory=True),
    f"{CONCLUSION}.text-denies": Kind(
        rule="the text says a variant does not meet the threshold, but meets_threshold lists it",
        fix=SAME, advisory=True),
    f"{CONCLUSION}.negative-unstated": Kind(
        rule="meets_threshold is empty, but the text does not state the negative result",
        fix="say that no variant meets the threshold (a negative result is a valid result and "
        "closes the campaign)", advisory=True),
}


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
    """:func:`judged_metrics` as plain data (``Check.facts``): {run, value, source}, and an
    accepted variant's ``interval`` (measured.report_intervals); none
    when the plan or the manifest did not load (the check was not judged)."""
    if ctx.campaign.plan is None or ctx.campaign.manifest is None:
        return []
    judged = judged_metrics(ctx)
    intervals = report_intervals(ctx, judged)
    return [{"run": run.id, "value": measured.value, "source": measured.source,
             **({"interval": intervals[run.id]} if run.id in intervals else {})}
            for run, measured in judged]


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
        elif plan.decision.confidence is not None and planned is not None \
                and planned.role == "variant":
            yield from _not_decisive(ctx, plan, run)


def _not_decisive(ctx: Context, plan: Plan, run: RunRecord) -> Iterator[Finding]:
    """With decision.confidence, a listed variant's interval bound meets the threshold."""
    boot = decision_interval(ctx, run)
    if decisive(plan, boot):
        return
    level = level_text(plan.decision.confidence)
    found = boot if isinstance(boot, str) else (
        f"{interval_text(boot)}: its bound {_number(interval_bound(plan, boot))}")
    yield Finding(f"the conclusion lists {run.id} as meeting the threshold, but it is not "
                  f"decisive at {level}: {found}",
                  where=json_where(MANIFEST_FILE, "conclusion", "meets_threshold"),
                  expected=f"the interval's bound meets {_rule(plan)}", found=found,
                  hint="state the conclusion the interval supports (a gain inside its noise "
                  "does not meet the threshold), or predict more examples of the frozen corpus",
                  code="conclusion-consistent.not-decisive")


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
        elif meets(plan, measured.value) and (
                plan.decision.confidence is None or decisive(plan, decision_interval(ctx, run))):
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


CHECK = Check(CONCLUSION,
              "the conclusion agrees with the measured metrics and the threshold, both ways",
              conclusion_consistent, facts=judged_facts, kinds=KINDS)
