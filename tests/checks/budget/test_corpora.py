"""Issue 24, point 10: corpora are identified by content, not bytes (budget-consistent).

Two corpora with the same example IDs and the same label per ID are one deliverable: a corpus
re-serialised (keys reordered, whitespace, CSV instead of JSON Lines) and delivered under a
second corpus id is refused by the deliverable count, which names both corpora and how they
are the same. Judged in-process (tests/checks/judging.py's ``judge``) on campaigns
written by the factory; the digests themselves on files.
"""

from __future__ import annotations

import json
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


@pytest.mark.parametrize("how", sorted(RESERIALISED))
def test_a_reserialised_corpus_counted_as_a_second_deliverable_is_refused(
    campaign: CampaignBuilder, how: str
) -> None:
    add_corpus(campaign, "corpus-b", data=RESERIALISED[how]())
    deliver(campaign, "control", "tiny-corpus")
    deliver(campaign, "variant-a", "corpus-b")
    budget(campaign, accepted_deliverables=2, cost_per_deliverable="23.57")
    found = expect_finding(
        judge(campaign, BUDGET), "budget-consistent.accepted-deliverables",
        where="manifest.json $.budget.accepted_deliverables", says=(
            "one corpus under several ids (same content)",
            "'corpus-b' is 'tiny-corpus' (other bytes, the same 4 example IDs and the same "
            "'label' label per ID)"))
    assert (found.expected, found.found) == ("1 (corpus-b = tiny-corpus)", "2")


def test_a_csv_copy_of_a_jsonl_corpus_is_the_same_deliverable(campaign: CampaignBuilder) -> None:
    expect_finding(deliver_a_copy(campaign, "corpus/corpus-b.csv", _csv(ROWS)),
                   "budget-consistent.accepted-deliverables",
                   says="'corpus-b' is 'tiny-corpus' (other bytes, the same 4 example IDs")


def test_the_copy_declared_as_one_deliverable_passes(campaign: CampaignBuilder) -> None:
    add_corpus(campaign, "corpus-b", data=RESERIALISED["keys-reordered"]())
    deliver(campaign, "variant-a", "corpus-b")
    expect_no_finding(judge(campaign, BUDGET))


def test_corpora_with_other_example_ids_are_two_deliverables(campaign: CampaignBuilder) -> None:
    add_corpus(campaign, "corpus-b")  # the same texts and labels under other IDs
    deliver(campaign, "control", "tiny-corpus")
    deliver(campaign, "variant-a", "corpus-b")
    budget(campaign, accepted_deliverables=2, cost_per_deliverable="23.57")
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
