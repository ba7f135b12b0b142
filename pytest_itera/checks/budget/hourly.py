"""Hourly billing written in words (R4), in every text of plan.json and manifest.json.

Every string of both budgets (offers, GPU names, expense labels, source references) is
searched strictly; in the rest of both documents (notes, explanations, decisions,
conclusion) a phrase counts only in a sentence that also states an amount. A reading of
words (:mod:`pytest_itera.checks.prose.hourly`), so an advisory: a lot priced by the hour is
refused from its structure by :mod:`.lots`, an expense by :mod:`.receipts`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pytest_itera.checks.context import Context
from pytest_itera.checks.prose.hourly import HOURLY_PHRASES, HourlyMatcher, Phrase
from pytest_itera.core.campaign import (
    MANIFEST_FILE,
    PLAN_FILE,
)
from pytest_itera.core.findings import Finding

# Budget strings that are not money-bearing text: paths and codes. rejection_cause is
# prose (scanned as such).
_NOT_TEXT = frozenset({"file", "currency"})


_PROSE_KEYS = frozenset({"rejection_cause"})


_NOT_PROSE = frozenset({
    "format", "campaign", "frozen_at", "closed_at", "started_at", "ended_at", "at", "id",
    "path", "sha256", "config", "config_sha256", "predictions", "measurements", "outcome",
    "role", "category", "kind", "resource", "corpus", "run", "lot", "step", "after", "drops",
    "adds", "checkpoint", "claims", "resume_state", "files", "base_model", "base_revision",
    "base_path", "base_digest", "analysis", "reload_instructions", "rule", "metric",
    "direction", "meets_threshold", "id_field", "file", "plan", "metrics",
})


def hourly_findings(ctx: Context) -> Iterator[Finding]:
    """Every text of plan.json and manifest.json that bills by the hour."""
    matcher = ctx.memo("hourly-phrases", lambda: _matcher(ctx))
    yield from hourly_billing_in(ctx.campaign.plan_data, ctx.campaign.manifest_data, matcher)


def hourly_billing_in(
    plan_data: Any, manifest_data: Any, matcher: HourlyMatcher | None = None
) -> Iterator[Finding]:
    """Every text of the two documents (parsed JSON) that writes a rate per hour: a reading
    of words, so an advisory. What decides is structure: the lot against its catalogue offer
    and its hours (lot_findings), an expense against a catalogue lot (expense-prorata)."""
    matcher = matcher or HourlyMatcher()
    for file, data in ((PLAN_FILE, plan_data), (MANIFEST_FILE, manifest_data)):
        for path, text, prose in _texts(data, "$", in_budget=False):
            hit = matcher.find(text, prose=prose)
            if hit is None:
                continue
            yield Finding(
                f"hourly billing: {text!r} states a rate per hour ({hit.found!r})",
                where=f"{file} {path}",
                expected="fixed prices: a lot's price covers its whole duration",
                found=repr(hit.found),
                hint="lots are fixed-price for their whole duration (R4): record the lot's "
                "price and days as its offer states them, never a rate per hour or hours x "
                "a rate",
                code="budget-consistent.hourly-billing",
                advisory=True,
            )


def _matcher(ctx: Context) -> HourlyMatcher:
    extra = tuple(Phrase.literal(p) for p in ctx.options.hourly_phrases)
    return HourlyMatcher((*HOURLY_PHRASES, *extra))


def _texts(node: Any, path: str, *, in_budget: bool) -> Iterator[tuple[str, str, bool]]:
    """(JSON path, string, is prose) for every text: strict inside a budget, prose outside.

    Identifiers, paths, digests, timestamps and enumerations are not text: their keys are
    skipped (outside a budget), any other key (a note, an explanation, a field this module
    does not know) is searched."""
    if isinstance(node, str):
        yield path, node, not in_budget
    elif isinstance(node, dict):
        for key, value in node.items():
            sub = f"{path}.{key}"
            if key in (_NOT_TEXT if in_budget else _NOT_PROSE):
                continue
            if in_budget and key in _PROSE_KEYS:
                yield from _texts(value, sub, in_budget=False)
            else:
                budget = in_budget or (path == "$" and key == "budget")
                yield from _texts(value, sub, in_budget=budget)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _texts(value, f"{path}[{i}]", in_budget=in_budget)
