"""The journal is a hash chain from the plan to the closure, and a recorded campaign commits to
it: a line rewritten, removed or cut off, a journal deleted, or one rewritten whole and chained
again before a pin, is refused with the line (journal-agrees)."""

from __future__ import annotations

import hashlib
import json
from itertools import pairwise
from pathlib import Path

from pytest_itera.core.journal import JOURNAL_FILE, line_digest
from pytest_itera.record import CampaignRecorder
from pytest_itera.report.verify import Problem, builtin_checks, check_campaign
from tests.record.test_record import CONFIG, CORPUS, finish, make_plan


def recorded(tmp_path: Path) -> tuple[CampaignRecorder, str]:
    """A campaign the recorder wrote and closed (tests/record/test_record.py's), and its pin."""
    rec = CampaignRecorder(tmp_path / "camp")
    rec.write_bytes("corpus.jsonl", CORPUS)
    rec.write_bytes("configs/control.json", CONFIG)
    rec.freeze_plan(make_plan())
    finish(rec)
    pin = rec.pin()
    assert pin is not None
    return rec, pin


def lines(rec: CampaignRecorder) -> list[bytes]:
    return (rec.root / JOURNAL_FILE).read_bytes().splitlines(keepends=True)


def ship(rec: CampaignRecorder, journal: list[bytes] | None) -> None:
    """Replace the journal (None: delete it) and list it in the manifest as it now is, as a
    forger would: the manifest's files agree with the folder."""
    path = rec.root / JOURNAL_FILE
    manifest = json.loads((rec.root / "manifest.json").read_text("utf-8"))
    if journal is None:
        path.unlink()
        manifest["files"] = [f for f in manifest["files"] if f["path"] != JOURNAL_FILE]
    else:
        data = b"".join(journal)
        path.write_bytes(data)
        for entry in manifest["files"]:
            if entry["path"] == JOURNAL_FILE:
                entry.update(bytes=len(data), sha256=hashlib.sha256(data).hexdigest())
    (rec.root / "manifest.json").write_text(json.dumps(manifest), "utf-8")


def judged(rec: CampaignRecorder, *pins: tuple[int, str]) -> list[Problem]:
    registry = {"journal-agrees": builtin_checks()["journal-agrees"]}
    verdict = check_campaign(rec.root, checks=registry, journal_pins=tuple(pins))
    return list(verdict.findings)


def codes(found: list[Problem]) -> list[tuple[str | None, str | None]]:
    return [(p.finding.code, p.finding.where) for p in found]


def rechained(journal: list[bytes], start: int) -> list[bytes]:
    """The journal with every prev from line ``start`` on computed again (a careful forger)."""
    out = journal[:start - 1]
    for raw in journal[start - 1:]:
        event = json.loads(raw)
        event["prev"] = line_digest(out[-1])
        out.append((json.dumps(event, separators=(",", ":")) + "\n").encode())
    return out


def test_the_recorder_chains_every_line_from_the_plan(tmp_path: Path) -> None:
    rec, pin = recorded(tmp_path)
    journal = lines(rec)
    plan = json.loads((rec.root / "plan.json").read_text("utf-8"))
    assert plan["recorded"] is True
    assert json.loads(journal[0])["prev"] == rec.plan_sha256
    for before, line in pairwise(journal):
        assert json.loads(line)["prev"] == line_digest(before)
    assert pin == f"{len(journal)}:{line_digest(journal[-1])}"
    assert judged(rec, (len(journal), line_digest(journal[-1])), (1, line_digest(journal[0]))) \
        == []


def test_a_rewritten_line_breaks_the_chain_at_the_next(tmp_path: Path) -> None:
    rec, _ = recorded(tmp_path)
    journal = lines(rec)
    number = next(i for i, raw in enumerate(journal, 1) if b'"event":"metrics"' in raw)
    journal[number - 1] = journal[number - 1].replace(b'"accuracy":0.9', b'"accuracy":0.95')
    ship(rec, journal)
    found = [p for p in judged(rec) if p.finding.code == "journal-agrees.chain"]
    assert [p.finding.where for p in found] == [f"{JOURNAL_FILE}:{number + 1}"]
    assert found[0].finding.message.startswith(
        f"{JOURNAL_FILE} line {number + 1} does not chain: its prev ")


def test_a_removed_line_breaks_the_chain(tmp_path: Path) -> None:
    rec, _ = recorded(tmp_path)
    journal = lines(rec)
    del journal[3]
    ship(rec, journal)
    assert ("journal-agrees.chain", f"{JOURNAL_FILE}:4") in codes(judged(rec))


def test_a_journal_rewritten_and_chained_again_is_caught_by_a_pin(tmp_path: Path) -> None:
    rec, pin = recorded(tmp_path)
    journal = lines(rec)
    number = next(i for i, raw in enumerate(journal, 1) if b'"event":"metrics"' in raw)
    journal[number - 1] = journal[number - 1].replace(b'"accuracy":0.9', b'"accuracy":0.95')
    forged = rechained(journal, number + 1)
    ship(rec, forged)
    assert [p for p in judged(rec) if p.finding.code == "journal-agrees.chain"] == []
    line, digest = pin.split(":")
    found = [p for p in judged(rec, (int(line), digest)) if p.finding.code == "journal-agrees.pin"]
    assert len(found) == 1
    assert found[0].finding.message.startswith(
        f"{JOURNAL_FILE} line {line} is not the line the pin {line}:{digest[:16]}… was taken of")
    # A pin taken before the forged line still holds: the journal is proven up to there.
    early = (number - 1, line_digest(journal[number - 2]))
    assert [p for p in judged(rec, early) if p.finding.code == "journal-agrees.pin"] == []


def test_a_pin_past_the_end_is_refused(tmp_path: Path) -> None:
    rec, _ = recorded(tmp_path)
    count = len(lines(rec))
    found = [p for p in judged(rec, (count + 5, "a" * 64))
             if p.finding.code == "journal-agrees.pin"]
    assert [p.finding.message.split(",")[0] for p in found] == [
        f"the journal pin {count + 5}:{'a' * 16}… names line {count + 5}"]


def test_a_recorded_campaign_without_its_journal_is_refused(tmp_path: Path) -> None:
    rec, _ = recorded(tmp_path)
    ship(rec, None)
    found = judged(rec)
    assert codes(found) == [("journal-agrees.missing", "manifest.json")]
    assert found[0].finding.message == (
        "the plan says the campaign is recorded (\"recorded\": true, frozen with it); its "
        f"journal {JOURNAL_FILE} is missing from the manifest")


def test_a_journal_cut_short_of_its_closure_is_refused(tmp_path: Path) -> None:
    rec, _ = recorded(tmp_path)
    journal = lines(rec)
    assert json.loads(journal[-1])["event"] == "close"
    ship(rec, journal[:-1])
    assert ("journal-agrees.not-closed", f"{JOURNAL_FILE}:{len(journal) - 1}") in codes(
        judged(rec))


def test_a_recorded_campaign_with_an_unchained_journal_is_refused(tmp_path: Path) -> None:
    rec, _ = recorded(tmp_path)
    stripped = []
    for raw in lines(rec):
        event = json.loads(raw)
        del event["prev"]
        stripped.append((json.dumps(event, separators=(",", ":")) + "\n").encode())
    ship(rec, stripped)
    assert ("journal-agrees.unchained", f"{JOURNAL_FILE}:1") in codes(judged(rec))


def test_a_journal_of_an_older_recorder_is_read_as_before(tmp_path: Path) -> None:
    """No prev on its lines and a plan that does not say recorded: judged as before."""
    from tests.factory import CampaignBuilder

    campaign = CampaignBuilder(tmp_path / "out")
    campaign.files[JOURNAL_FILE] = b'{"event":"plan","sha256":"x"}\n'
    root = campaign.write()
    registry = {"journal-agrees": builtin_checks()["journal-agrees"]}
    assert check_campaign(root, checks=registry).findings == ()


def test_a_continued_journal_keeps_its_chain(tmp_path: Path) -> None:
    """A process that continues the campaign chains its first event to the last line."""
    root = tmp_path / "camp"
    rec = CampaignRecorder(root)
    rec.write_bytes("corpus.jsonl", CORPUS)
    rec.write_bytes("configs/control.json", CONFIG)
    rec.freeze_plan(make_plan())
    rec.run("control").start()
    again = CampaignRecorder(root)
    again.freeze_plan(make_plan())
    again.run("control").set_config("configs/control.json")
    journal = (root / JOURNAL_FILE).read_bytes().splitlines(keepends=True)
    for before, line in pairwise(journal):
        assert json.loads(line)["prev"] == line_digest(before)


def test_the_summary_says_when_no_journal_could_be_leaned_on(tmp_path: Path) -> None:
    """A hand-written campaign (no journal, no recorded plan) is judged, and its report says
    the recorder's evidence was not there; an older recorder's journal is said unchained; a
    chained one needs no note."""
    from pytest_itera import report
    from pytest_itera.core.campaign import load_campaign
    from pytest_itera.report.model import NO_JOURNAL_NOTE, UNCHAINED_NOTE
    from tests.factory import CampaignBuilder

    def notes(root: Path) -> tuple[str, ...]:
        return report.build(load_campaign(root), [], collected=0, fast=False).all_notes

    assert NO_JOURNAL_NOTE in notes(CampaignBuilder(tmp_path / "hand").write())
    older = CampaignBuilder(tmp_path / "older")
    older.files[JOURNAL_FILE] = b'{"event":"plan","sha256":"x"}\n'
    assert UNCHAINED_NOTE in notes(older.write())
    rec, _ = recorded(tmp_path / "rec")
    assert not {NO_JOURNAL_NOTE, UNCHAINED_NOTE} & set(notes(rec.root))
