"""Issue 24, point 10: corpora are identified by content, not bytes (budget-consistent).

Two corpora with the same example IDs and the same label per ID are one deliverable: a corpus
re-serialised (keys reordered, whitespace, CSV instead of JSON Lines) and delivered under a
second corpus id is refused by the deliverable count, which names both corpora and how they
are the same. Judged in-process (tests/checks/judging.py's ``judge``) on campaigns
written by the factory; the digests themselves on files.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_itera.files.corpora import corpus_content, label_text
from tests.checks.campaigns import (
    BUDGET,
    add_corpus,
    budget,
    deliver,
    deliver_a_copy,
)
from tests.checks.judging import expect_finding, expect_no_finding, judge
from tests.factory import CORPUS_IDS, CampaignBuilder

LABELS = ("pos", "neg", "pos", "neg")
ROWS: list[dict[str, object]] = [{"id": i, "text": f"example {i}", "label": lab}
                                 for i, lab in zip(CORPUS_IDS, LABELS, strict=True)]


def _jsonl(rows: list[dict[str, object]], **dumps: object) -> bytes:
    return "".join(json.dumps(r, **dumps) + "\n" for r in rows).encode()  # type: ignore


def _csv(rows: list[dict[str, object]]) -> bytes:
    lines = ["label,text,id"] + [f"{r['label']},{r['text']},{r['id']}" for r in rows]
    return ("\n".join(lines) + "\n").encode()


RESERIALISED = {
    "keys-reordered": lambda: _jsonl([dict(reversed(list(r.items()))) for r in ROWS]),
    "whitespace": lambda: _jsonl(ROWS, indent=None, separators=(" ,  ", " :  ")),
    "reversed-order": lambda: _jsonl(ROWS[::-1]),
}


def second_deliverable(campaign: CampaignBuilder, data: bytes | None) -> None:
    """The control delivers tiny-corpus, variant-a corpus-b (``data``; None: the same texts and
    labels under other IDs), and the budget counts two deliverables."""
    add_corpus(campaign, "corpus-b", data=data)
    deliver(campaign, "control", "tiny-corpus")
    deliver(campaign, "variant-a", "corpus-b")
    budget(campaign, accepted_deliverables=2, cost_per_deliverable="23.57")


def copy_declared_once(campaign: CampaignBuilder) -> None:
    """variant-a delivers corpus-b, a copy of tiny-corpus: one deliverable, as declared."""
    add_corpus(campaign, "corpus-b", data=RESERIALISED["keys-reordered"]())
    deliver(campaign, "variant-a", "corpus-b")


@pytest.mark.parametrize("arrange", [
    pytest.param(lambda c: second_deliverable(c, RESERIALISED["keys-reordered"]()),
                 id="keys-reordered"),
    pytest.param(lambda c: second_deliverable(c, RESERIALISED["reversed-order"]()),
                 id="reversed-order"),
    pytest.param(lambda c: second_deliverable(c, RESERIALISED["whitespace"]()), id="whitespace"),
    pytest.param(lambda c: deliver_a_copy(c, "corpus/corpus-b.csv", _csv(ROWS)),
                 id="a-csv-copy-of-a-jsonl-corpus"),
])
def test_a_copy_counted_as_a_second_deliverable_is_refused(
    campaign: CampaignBuilder, arrange: Callable[[CampaignBuilder], object]
) -> None:
    arrange(campaign)
    found = expect_finding(
        judge(campaign, BUDGET), "budget-consistent.accepted-deliverables",
        where="manifest.json $.budget.accepted_deliverables", says=(
            "one corpus under several ids (same content)",
            "'corpus-b' is 'tiny-corpus' (other bytes, the same 4 example IDs and the same "
            "'label' label per ID)"))
    assert (found.expected, found.found) == ("1 (corpus-b = tiny-corpus)", "2")


@pytest.mark.parametrize("arrange", [
    pytest.param(copy_declared_once, id="the-copy-declared-as-one-deliverable"),
    pytest.param(lambda c: second_deliverable(c, None),
                 id="corpora-with-other-example-ids-are-two-deliverables"),
])
def test_distinct_corpora_counted_once_each_pass(
    campaign: CampaignBuilder, arrange: Callable[[CampaignBuilder], object]
) -> None:
    arrange(campaign)
    expect_no_finding(judge(campaign, BUDGET))


# ------------------------------------------------------------ the content digest


def test_content_is_ids_and_labels_whatever_the_bytes(tmp_path: Path) -> None:
    jsonl = corpus_content(_write(tmp_path, "a.jsonl", _jsonl(ROWS)), "id", "label")
    for name, data in (("b.jsonl", RESERIALISED["keys-reordered"]()),
                       ("c.jsonl", RESERIALISED["reversed-order"]()), ("d.csv", _csv(ROWS))):
        other = corpus_content(_write(tmp_path, name, data), "id", "label")
        assert other.same_as(jsonl), name
        assert other.pairs == jsonl.pairs
    relabelled: list[dict[str, object]] = [dict(r, label="neg") for r in ROWS]
    other = corpus_content(_write(tmp_path, "e.jsonl", _jsonl(relabelled)), "id", "label")
    assert other.ids == jsonl.ids
    assert not other.same_as(jsonl)  # the same IDs, other labels: another corpus
    fewer = corpus_content(_write(tmp_path, "f.jsonl", _jsonl(ROWS[:3])), "id", "label")
    assert not fewer.same_as(jsonl)


def test_without_labels_the_ids_alone_identify_a_corpus_and_say_why(tmp_path: Path) -> None:
    undeclared = corpus_content(_write(tmp_path, "a.jsonl", _jsonl(ROWS)), "id", None)
    assert (undeclared.pairs, undeclared.unlabelled) == (None, "the plan declares no label field")
    rows = [dict(r) for r in ROWS]
    del rows[2]["label"]
    missing = corpus_content(_write(tmp_path, "b.jsonl", _jsonl(rows)), "id", "label")
    assert (missing.pairs, missing.unlabelled) == (None, "line 3 has no 'label' label")
    relabelled = corpus_content(
        _write(tmp_path, "c.jsonl", _jsonl([{**r, "label": "x"} for r in ROWS])), "id", None)
    assert relabelled.same_as(undeclared)  # by IDs alone


def test_a_corpus_with_records_without_an_id_is_not_compared(tmp_path: Path) -> None:
    broken = corpus_content(_write(tmp_path, "a.jsonl", _jsonl([*ROWS, {"text": "no id"}])),
                            "id", "label")
    good = corpus_content(_write(tmp_path, "b.jsonl", _jsonl(ROWS)), "id", "label")
    assert broken.broken == 1
    assert broken.same_as(good) is None


@pytest.mark.parametrize(
    ("a", "b"),
    [(1, "1"), (1.0, "1"), ("1.0", 1), (True, "true"), ("pos", " pos "), ([1, 2], [1, 2]),
     ({"b": 1, "a": 2}, {"a": 2, "b": 1})],
)
def test_a_label_reads_the_same_from_csv_and_json(a: object, b: object) -> None:
    assert label_text(a) == label_text(b)


def test_other_labels_read_differently() -> None:
    assert label_text("1.5") != label_text("15")
    assert label_text("pos") != label_text("neg")


def _write(folder: Path, name: str, data: bytes) -> Path:
    (folder / name).write_bytes(data)
    return folder / name
