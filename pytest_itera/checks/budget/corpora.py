"""Corpora identified by content for budget-consistent's deliverable count (R7).

Plan corpora with the same sha256 are one corpus by their bytes. Beyond the bytes, two
corpora with the same example IDs and the same label per ID are one deliverable
(:mod:`pytest_itera.files.corpora`): a corpus re-serialised (keys reordered, whitespace,
CSV instead of JSON Lines) and delivered under a second id counts once.

The label is the corpus field the plan declares as the truth (``itera-plan/3``: the
decision metric's ``computation.label_field``). Where no label field is declared, or a
corpus record has none, two corpora are compared by their example IDs alone, and the count
says so (and how to make the labels count: declare the label field).

Only corpora that could be the same are read: delivered ones whose planned example counts
are equal. A campaign with one corpus, or corpora of different sizes, reads nothing more.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from pytest_itera.checks.context import Context
from pytest_itera.core.campaign import Corpus, Plan
from pytest_itera.core.money import Delivery
from pytest_itera.files.corpora import CorpusContent, corpus_content
from pytest_itera.files.predictions import UnreadableIds


def label_field(plan: Plan) -> str | None:
    """The corpus field holding each example's label, where the plan declares one."""
    computation = getattr(plan.decision, "computation", None)  # itera-plan/3
    found = getattr(computation, "label_field", None)
    return found if isinstance(found, str) else None


def content_of(ctx: Context, plan: Plan, corpus: Corpus) -> CorpusContent | None:
    """The corpus's content (read once per Context), or None when it cannot be read."""
    def read() -> CorpusContent | None:
        path = ctx.regular_file(corpus.path)
        if isinstance(path, str):
            return None
        try:
            return corpus_content(Path(path), corpus.id_field, label_field(plan))
        except (OSError, UnreadableIds):
            return None  # predictions-cover-corpus says why

    return ctx.memo(f"corpus-content:{corpus.id}", read)


def merge_same_content(
    ctx: Context, plan: Plan, deliveries: Sequence[Delivery]
) -> tuple[list[Delivery], dict[str, str]]:
    """The deliveries with each corpus's content key replaced by the first delivered corpus
    of the same content (see the module), and, per corpus id so merged, how they are one."""
    firsts: dict[str, Corpus] = {}  # content key (sha256) -> its first delivered corpus
    for d in deliveries:
        corpus = plan.corpus_by_id(d.corpus)
        if corpus is not None:
            firsts.setdefault(d.content, corpus)
    merged: dict[str, str] = {}  # content key -> the content key it is the same as
    how: dict[str, str] = {}
    keys = list(firsts)
    for i, key in enumerate(keys):
        for earlier in keys[:i]:
            if earlier in merged or firsts[earlier].examples != firsts[key].examples:
                continue
            same = _same(ctx, plan, firsts[earlier], firsts[key])
            if same is not None:
                merged[key] = earlier
                how[firsts[key].id] = how[firsts[earlier].id] = same
                break
    out = [dataclasses.replace(d, content=merged.get(d.content, d.content)) for d in deliveries]
    for d in deliveries:  # every corpus id of a merged content says how
        if merged.get(d.content) is not None:
            how.setdefault(d.corpus, how[firsts[d.content].id])
    return out, how


def _same(ctx: Context, plan: Plan, a: Corpus, b: Corpus) -> str | None:
    """How corpora ``a`` and ``b`` are one by content, or None when they are not."""
    first, second = content_of(ctx, plan, a), content_of(ctx, plan, b)
    if first is None or second is None or not first.same_as(second):
        return None
    if first.pairs is not None and second.pairs is not None:
        return f" (other bytes, the same {first.examples} example IDs and the same " \
            f"{label_field(plan)!r} label per ID)"
    why = "the plan declares no label field (itera-plan/3: decision.computation." \
        "label_field)" if label_field(plan) is None else next(
        f"{c.path}: {content.unlabelled}" for c, content in ((a, first), (b, second))
        if content.pairs is None)
    return f" (other bytes, the same {first.examples} example IDs; labels not compared: {why})"
