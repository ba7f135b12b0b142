"""The rules of ``journal-agrees`` (pytest_itera/checks/evidence/journal_agrees.py): each break
refused, with its honest twin.

Where the cases come from (the files they were first written in):

Issue 24, point 8 (and the journal parts of points 2 and 12): the recorder's journal is
evidence too. Each contradiction alone, on the factory's good /2 campaign with a listed
journal that agrees with it, and its honest twin; judged in process (``judge``).

The journal is a hash chain from the plan to the closure, and a recorded campaign commits to
it: a line rewritten, removed or cut off, a journal deleted, or one rewritten whole and chained
again before a pin, is refused with the line (journal-agrees).
"""
from __future__ import annotations

import hashlib
import json
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from pytest_itera.checks.model import Options
from pytest_itera.core.journal import JOURNAL_FILE, line_digest, manifest_digest
from pytest_itera.record import CampaignRecorder
from tests.checks.campaigns import (
    AGREES,
    decided,
    honest,
    journal_save,
    journaled,
)
from tests.checks.judging import Found, expect_finding, expect_no_finding, judge
from tests.factory import (
    CONTROL_CKPT,
    RESUME_CKPT,
    RESUME_SAVED_AT,
    RESUMED_AT,
    RUN_TIMES,
    CampaignBuilder,
    expect_each,
    sha256,
)
from tests.record.test_record import CONFIG, CORPUS, finish, make_plan
from tests.runner import XDIST_MODES, Itera

BASE = "runs/variant-a/base"
REVISION = "a" * 40


@pytest.fixture
def campaign(tmp_path: Any) -> CampaignBuilder:
    return CampaignBuilder(tmp_path / "out")


def test_a_journal_that_agrees_passes(campaign: CampaignBuilder) -> None:
    expect_no_finding(journaled(campaign, *honest(campaign)))


def test_an_old_journal_without_contents_passes(campaign: CampaignBuilder) -> None:
    events = [{"event": "checkpoint", "path": CONTROL_CKPT, "run": "control",
               "format": "torch", "kind": "resume"}]
    expect_no_finding(journaled(campaign, *events))


def test_a_journaled_metric_the_manifest_contradicts_is_refused(
    campaign: CampaignBuilder
) -> None:
    campaign.set_metric("control", "accuracy", 0.9)  # manifest and measurements agree
    found = expect_finding(journaled(campaign, *honest(campaign)), "journal-agrees.metric",
        says="run control's accuracy is 0.9 in")
    assert found.where == f"{JOURNAL_FILE}:4"


def test_a_journaled_metric_the_measurements_file_contradicts_is_refused(
    campaign: CampaignBuilder
) -> None:
    events = [*honest(campaign), {"event": "metrics", "run": "control",
                                  "values": {"steps": 40}}]
    campaign.measurements["control"][-1]["metrics"]["steps"] = 41  # the manifest omits it
    found = expect_finding(journaled(campaign, *events), "journal-agrees.metric",
        says="runs/control/measurements.jsonl")
    assert found.where == f"{JOURNAL_FILE}:11"
    campaign.measurements["control"][-1]["metrics"]["steps"] = 40
    campaign.files.pop("runs/control/measurements.jsonl")
    expect_no_finding(journaled(campaign, *events))


def test_a_run_the_journal_stopped_is_not_accepted(campaign: CampaignBuilder) -> None:
    events = [*honest(campaign), {"event": "stopped", "run": "control", "rule": "nan",
                                  "reason": "loss NaN", "step": 3, "at": RUN_TIMES["control"][1]}]
    found = expect_finding(journaled(campaign, *events), "journal-agrees.run-outcome",
        says="itera-journal.jsonl records run control as stopped")
    assert found.where == f"{JOURNAL_FILE}:11"


def test_a_run_start_the_manifest_moved_is_refused(campaign: CampaignBuilder) -> None:
    events = honest(campaign)
    events[1]["at"] = "2026-11-20T09:00:00Z"
    expect_finding(journaled(campaign, *events), "journal-agrees.run-start",
        says=("2026-11-20T09:00:00+00:00", "2026-11-20T10:00:00+00:00"))


def test_a_journaled_run_the_manifest_lacks_is_refused(campaign: CampaignBuilder) -> None:
    events = [*honest(campaign), {"event": "run-start", "run": "ghost",
                                  "at": RUN_TIMES["control"][0]}]
    finding = expect_finding(journaled(campaign, *events), "journal-agrees.run-missing",
                             where=f"{JOURNAL_FILE}:11", says="records that run ghost started, "
                             "but the manifest has no run ghost")
    assert finding.expected == "run ghost in manifest.json $.runs"


def _stopped(campaign: CampaignBuilder, rule: str) -> Found:
    """control stopped by non-finite-loss at step 3 in the manifest; ``rule`` in the journal."""
    control = campaign.run_record("control")
    control.update(outcome="stopped", stop={"rule": "non-finite-loss", "reason": "loss NaN",
                                            "step": 3})
    events = [e for e in honest(campaign) if e["event"] != "accepted"]
    return journaled(campaign, *events, {"event": "stopped", "run": "control", "rule": rule,
                                         "step": 3, "at": RUN_TIMES["control"][1]})


def test_a_stop_the_manifest_rewrote_is_refused(campaign: CampaignBuilder) -> None:
    finding = expect_finding(_stopped(campaign, "divergence"), "journal-agrees.run-stop",
                             where=f"{JOURNAL_FILE}:10",
                             says="records run control stopped by 'divergence' at step 3, the "
                             "manifest by 'non-finite-loss' at step 3")
    assert finding.expected == "'divergence' at step 3"


def test_the_stop_the_recorder_journaled_passes(campaign: CampaignBuilder) -> None:
    expect_no_finding(_stopped(campaign, "non-finite-loss"), "journal-agrees.run-stop")


def test_a_resume_the_manifest_moved_is_refused(campaign: CampaignBuilder) -> None:
    events = honest(campaign)
    events[6] = dict(events[6], step=RESUMED_AT + 1)
    finding = expect_finding(journaled(campaign, *events), "journal-agrees.resumed-from",
                             where=f"{JOURNAL_FILE}:7",
                             says=f"run resume-check resumed from {CONTROL_CKPT} at step "
                             f"{RESUMED_AT} by the manifest")
    assert finding.found == f"{CONTROL_CKPT} at step {RESUMED_AT}"


@pytest.mark.parametrize(("plan_event", "code", "says"), [
    pytest.param({"rehearsal": True}, "journal-agrees.rehearsal",
                 "began this campaign as a rehearsal, but the manifest does not say so",
                 id="rehearsal"),
    pytest.param({"clock": "played"}, "journal-agrees.clock",
                 "records this campaign on a played clock", id="played-clock"),
])
def test_a_journal_that_says_more_than_the_manifest_is_refused(
        campaign: CampaignBuilder, plan_event: dict[str, Any], code: str, says: str) -> None:
    events = honest(campaign)
    events[0] = {**events[0], **plan_event}
    expect_finding(journaled(campaign, *events), code, where=f"{JOURNAL_FILE}:1", says=says)


def test_a_checkpoint_that_is_not_its_last_save_is_refused(campaign: CampaignBuilder) -> None:
    events = honest(campaign)
    events[5] = journal_save(campaign, CONTROL_CKPT, "control", RESUMED_AT, data=b"another save")
    found = journaled(campaign, *events)
    first = expect_finding(found, "journal-agrees.checkpoint-sha256", says=(
        f"checkpoint {CONTROL_CKPT} is not the file its last journaled save wrote",
        f"{sha256(campaign.files[CONTROL_CKPT])} shipped, {sha256(b'another save')} saved"))
    assert first.where == f"{JOURNAL_FILE}:6"
    # the resume source is then no save of the control's either (identity by content)
    assert {f.code for f in found} == {"journal-agrees.checkpoint-sha256",
                                       "journal-agrees.resume-source"}
    expect_finding(found, "journal-agrees.resume-source", says=(
        f"the checkpoint {CONTROL_CKPT} that run resume-check resumed from is not a "
        "checkpoint of run control", "records no save of run control with its content"))


def test_a_journaled_step_the_checkpoint_does_not_store_is_refused(
    campaign: CampaignBuilder
) -> None:
    events = honest(campaign)
    events[7] = journal_save(campaign, RESUME_CKPT, "resume-check", 3)
    found = expect_finding(journaled(campaign, *events), "journal-agrees.checkpoint-step",
                           says=(f"checkpoint {RESUME_CKPT} stores step {RESUME_SAVED_AT}",
                                 "saved at step 3"))
    assert found.where == f"{JOURNAL_FILE}:8"


def test_a_resume_from_another_runs_checkpoint_is_refused(campaign: CampaignBuilder) -> None:
    events = honest(campaign)
    events[4:6] = [journal_save(campaign, CONTROL_CKPT, "variant-a", RESUMED_AT)]
    campaign.manifest["checkpoints"][0]["run"] = "control"
    found = journaled(campaign, *events)
    assert {f.code for f in found} == {"journal-agrees.checkpoint-run",
                                       "journal-agrees.resume-source"}
    source = expect_finding(found, "journal-agrees.resume-source",
                            where="manifest.json $.runs[2].resumed_from")
    assert source.hint is not None
    assert "checkpoint_saved" in source.hint


def test_a_resume_step_the_reference_did_not_save_at_is_refused(
    campaign: CampaignBuilder
) -> None:
    events = honest(campaign)
    events[5] = journal_save(campaign, CONTROL_CKPT, "control", 3, format="torch", kind="resume")
    events[4] = journal_save(campaign, CONTROL_CKPT, "control", 3, data=b"an earlier save")
    expect_finding(journaled(campaign, *events), "journal-agrees.resume-step", says=(
        f"run resume-check resumed from {CONTROL_CKPT} at step 2, but run "
        "control saved that content at step 3"))


def test_a_torn_line_is_said_not_skipped(campaign: CampaignBuilder) -> None:
    found = expect_finding(
        journaled(campaign, *honest(campaign), raw=b'{"event":"metr'), "journal-agrees.unreadable",
        says="cannot compare itera-journal.jsonl line 11 with")
    assert found.where == f"{JOURNAL_FILE}:11"


def test_a_line_that_is_not_an_event_is_said(campaign: CampaignBuilder) -> None:
    found = expect_finding(
        journaled(campaign, *honest(campaign), raw=b"[1, 2]\n"), "journal-agrees.unreadable")
    assert "line 11" in found.message
    assert "not a journal event" in found.message


def test_predictions_that_are_not_the_journaled_file_are_refused(
    campaign: CampaignBuilder
) -> None:
    path = "runs/control/predictions.jsonl"
    event = {"event": "predictions", "run": "control", "path": path,
             "sha256": sha256(b"other predictions")}
    found = expect_finding(journaled(campaign, event), "journal-agrees.predictions")
    assert found.message.startswith(f"the predictions {path} of run control are not the file "
                                    "the recorder journaled")
    honest_event = {**event, "sha256": sha256(campaign.files[path])}
    campaign.files.pop(JOURNAL_FILE)
    expect_no_finding(journaled(campaign, honest_event))


def test_step_hours_the_manifest_changed_are_refused(campaign: CampaignBuilder) -> None:
    events = [{"event": "step", "step": "train-control", "hours": 10},
              {"event": "step", "step": "train-control", "hours": 3}]
    found = expect_finding(journaled(campaign, *events), "journal-agrees.step-hours",
        says=("13 h", "14 h"))
    assert found.where == f"{JOURNAL_FILE}:2"


def test_a_decision_missing_from_the_manifest_is_refused(campaign: CampaignBuilder) -> None:
    event = {"event": "decide", "id": "d1", "text": "drop it", "drops": [], "adds": [],
             "at": "2026-11-20T10:00:00Z"}
    expect_finding(journaled(campaign, event), "journal-agrees.decision",
        says="itera-journal.jsonl records decision d1, but the")


def adapter(campaign: CampaignBuilder, *, base_path: str | None) -> None:
    campaign.files[f"{BASE}/config.json"] = b"{}\n"
    campaign.files["runs/variant-a/adapter/adapter_model.safetensors"] = b"x" * 8
    record: dict[str, Any] = {"path": "runs/variant-a/adapter", "run": "variant-a",
                              "base_model": "tiny", "base_revision": REVISION}
    if base_path is not None:
        record.update(base_path=base_path, base_digest="b" * 64)
    campaign.manifest["adapters"] = [record]


def training_base(revision: str, digest: str) -> dict[str, Any]:
    return {"event": "training-base", "run": "variant-a", "folder": BASE, "model": "tiny",
            "revision": revision, "tree_sha256": digest, "at": "2026-11-21T04:00:00Z"}


def test_an_adapter_pinned_to_another_revision_than_its_training_base_is_refused(
    campaign: CampaignBuilder
) -> None:
    adapter(campaign, base_path=None)  # base_path dropped, a made-up revision kept
    expect_finding(
        journaled(campaign, training_base("c" * 40, "b" * 64)), "journal-agrees.base-revision",
        says=(f"names base revision {REVISION}", f"records base {BASE} at revision {'c' * 40}"))


def test_a_base_digest_the_journal_contradicts_is_refused(campaign: CampaignBuilder) -> None:
    adapter(campaign, base_path=BASE)
    found = expect_finding(
        journaled(campaign, training_base(REVISION, "d" * 64)), "journal-agrees.base-digest")
    assert found.message.startswith(f"the base {BASE} of adapter runs/variant-a/adapter is "
                                    "not the folder itera-journal.jsonl recorded")


def test_a_base_the_journal_agrees_with_passes(campaign: CampaignBuilder) -> None:
    adapter(campaign, base_path=BASE)
    expect_no_finding(journaled(campaign, training_base(REVISION, "b" * 64)))


# ============================================== closures and reopenings (issue 26, point 2)


def closed(campaign: CampaignBuilder, *events: dict[str, Any]) -> Found:
    """``events`` then the close event the recorder journals for the manifest as written."""
    journaled(campaign, *events)  # writes the manifest
    data = json.loads((campaign.root / "manifest.json").read_bytes())
    close = {"event": "close", "manifest_digest": manifest_digest(data),
             "closed_at": data["closed_at"], "at": data["closed_at"]}
    return journaled(campaign, *events, close)


def test_the_manifest_written_at_the_last_closure_passes(campaign: CampaignBuilder) -> None:
    expect_no_finding(closed(campaign, *honest(campaign)))


def test_a_manifest_replaced_without_a_reopen_record_is_refused(
    campaign: CampaignBuilder
) -> None:
    expect_no_finding(closed(campaign, *honest(campaign)))
    journal = campaign.files[JOURNAL_FILE]
    campaign.manifest["conclusion"]["text"] += " (edited after closure)"
    found = expect_finding(judge(campaign, AGREES), "journal-agrees.manifest-replaced")
    assert campaign.files[JOURNAL_FILE] == journal
    assert found.message.startswith(
        "manifest.json is not the manifest the recorder wrote when it closed the campaign "
        "(closed_at ")
    assert found.message.endswith("): it was edited or replaced without a reopen record")
    assert found.where == f"{JOURNAL_FILE}:{len(honest(campaign)) + 1}"
    assert found.hint is not None
    assert "rec.reopen(reason=...)" in found.hint
    assert "'The way back'" in found.hint


def test_a_campaign_reopened_and_not_closed_again_is_refused(
    campaign: CampaignBuilder
) -> None:
    reopen = {"event": "reopen", "reason": "the predictions missed one example",
              "manifest_sha256": "0" * 64, "at": "2026-11-21T10:00:00Z"}
    expect_finding(
        journaled(campaign, *honest(campaign), reopen), "journal-agrees.reopened",
        says="'the predictions missed one example'")


def test_a_step_resumed_after_an_interruption_counts_its_worked_hours(
    campaign: CampaignBuilder
) -> None:
    """A step whose process died: the journal's step events carry the hours worked (10 + 4
    = the manifest's 14), the interruption's 3 h are shown and not counted."""
    events: list[dict[str, Any]] = [
        {"event": "step-start", "step": "train-control", "at": "2026-11-20T00:00:00+00:00"},
        {"event": "step", "step": "train-control", "hours": 10,
         "started_at": "2026-11-20T00:00:00+00:00", "at": "2026-11-20T10:00:00+00:00",
         "interrupted": {"since": "2026-11-20T10:00:00+00:00",
                         "until": "2026-11-20T13:00:00+00:00", "hours": 3}},
        {"event": "step", "step": "train-control", "hours": 4,
         "started_at": "2026-11-20T13:00:00+00:00", "at": "2026-11-20T17:00:00+00:00"},
    ]
    expect_no_finding(journaled(campaign, *events))


# ============================================== through pytest, in the three xdist modes


@pytest.mark.parametrize("xdist", XDIST_MODES)
def test_the_journal_item_fails_in_every_xdist_mode(
    itera: Itera, pytester: pytest.Pytester
) -> None:
    """A journaled step the checkpoint does not store (read by the reload child) and a
    journaled metric the manifest contradicts: one item, the same message, any xdist mode."""
    campaign = CampaignBuilder(pytester.path / "out")
    events = honest(campaign)
    events[7] = journal_save(campaign, RESUME_CKPT, "resume-check", 3)
    events[3]["values"] = {"accuracy": 0.5}
    campaign.files[JOURNAL_FILE] = b"".join(json.dumps(e).encode() + b"\n" for e in events)
    campaign.write()
    result = itera("-rf", check=AGREES)
    result.assert_outcomes(failed=1)
    expect_each(
        result,
        "itera-journal.jsonl:4: run control's accuracy is 0.75 in the manifest, but "
        "itera-journal.jsonl recorded 0.5 when the run measured it",
        f"itera-journal.jsonl:8: checkpoint {RESUME_CKPT} stores step 4, but "
        "itera-journal.jsonl records that it was saved at step 3")


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


def pinned(rec: CampaignRecorder, *pins: tuple[int, str]) -> Found:
    """journal-agrees on the recorded campaign, under ``--itera-journal-pin`` ``pins``."""
    return judge(rec.root, AGREES, options=Options(journal_pins=tuple(pins)))


def codes(found: Found) -> list[tuple[str | None, str | None]]:
    return [(f.code, f.where) for f in found]


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
    expect_no_finding(pinned(rec, (len(journal), line_digest(journal[-1])),
                             (1, line_digest(journal[0]))))


def test_a_rewritten_line_breaks_the_chain_at_the_next(tmp_path: Path) -> None:
    rec, _ = recorded(tmp_path)
    journal = lines(rec)
    number = next(i for i, raw in enumerate(journal, 1) if b'"event":"metrics"' in raw)
    journal[number - 1] = journal[number - 1].replace(b'"accuracy":0.9', b'"accuracy":0.95')
    ship(rec, journal)
    expect_finding(pinned(rec), "journal-agrees.chain", where=f"{JOURNAL_FILE}:{number + 1}",
                   says=f"{JOURNAL_FILE} line {number + 1} does not chain: its prev ")


def test_a_removed_line_breaks_the_chain(tmp_path: Path) -> None:
    rec, _ = recorded(tmp_path)
    journal = lines(rec)
    del journal[3]
    ship(rec, journal)
    assert ("journal-agrees.chain", f"{JOURNAL_FILE}:4") in codes(pinned(rec))


def test_a_journal_rewritten_and_chained_again_is_caught_by_a_pin(tmp_path: Path) -> None:
    rec, pin = recorded(tmp_path)
    journal = lines(rec)
    number = next(i for i, raw in enumerate(journal, 1) if b'"event":"metrics"' in raw)
    journal[number - 1] = journal[number - 1].replace(b'"accuracy":0.9', b'"accuracy":0.95')
    forged = rechained(journal, number + 1)
    ship(rec, forged)
    expect_no_finding(pinned(rec), "journal-agrees.chain")
    line, digest = pin.split(":")
    expect_finding(pinned(rec, (int(line), digest)), "journal-agrees.pin", says=(
        f"{JOURNAL_FILE} line {line} is not the line the pin {line}:{digest[:16]}… was taken of"))
    # A pin taken before the forged line still holds: the journal is proven up to there.
    early = (number - 1, line_digest(journal[number - 2]))
    expect_no_finding(pinned(rec, early), "journal-agrees.pin")


def test_a_pin_past_the_end_is_refused(tmp_path: Path) -> None:
    rec, _ = recorded(tmp_path)
    count = len(lines(rec))
    expect_finding(pinned(rec, (count + 5, "a" * 64)), "journal-agrees.pin",
                   says=f"the journal pin {count + 5}:{'a' * 16}… names line {count + 5},")


def test_a_recorded_campaign_without_its_journal_is_refused(tmp_path: Path) -> None:
    rec, _ = recorded(tmp_path)
    ship(rec, None)
    found = pinned(rec)
    assert codes(found) == [("journal-agrees.missing", "manifest.json")]
    expect_finding(found, "journal-agrees.missing", says=(
        "the plan says the campaign is recorded", f"journal {JOURNAL_FILE} is missing"))


def test_a_journal_cut_short_of_its_closure_is_refused(tmp_path: Path) -> None:
    rec, _ = recorded(tmp_path)
    journal = lines(rec)
    assert json.loads(journal[-1])["event"] == "close"
    ship(rec, journal[:-1])
    expect_finding(pinned(rec), "journal-agrees.not-closed",
                   where=f"{JOURNAL_FILE}:{len(journal) - 1}", says="without the closure")


def test_a_recorded_campaign_with_an_unchained_journal_is_refused(tmp_path: Path) -> None:
    rec, _ = recorded(tmp_path)
    stripped = []
    for raw in lines(rec):
        event = json.loads(raw)
        del event["prev"]
        stripped.append((json.dumps(event, separators=(",", ":")) + "\n").encode())
    ship(rec, stripped)
    expect_finding(pinned(rec), "journal-agrees.unchained", where=f"{JOURNAL_FILE}:1",
                   says="is not chained (line 1 carries no prev)")


def test_a_journal_of_an_older_recorder_is_read_as_before(tmp_path: Path) -> None:
    """No prev on its lines and a plan that does not say recorded: judged as before."""
    from tests.factory import CampaignBuilder

    campaign = CampaignBuilder(tmp_path / "out")
    campaign.files[JOURNAL_FILE] = b'{"event":"plan","sha256":"x"}\n'
    expect_no_finding(judge(campaign, AGREES))


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


# ---------------------------------------- first written in test_one_rule_breaks.py


# ========================== R2/R9/v3: the journal's moments are the manifest's (audit3)


def test_a_run_end_moved_from_the_journaled_outcome_is_refused(
    campaign: CampaignBuilder
) -> None:
    # The journal accepted control at 01:00; the manifest ends it at 00:00, so that what
    # followed it (a decision, the next run) seems to come after its end.
    campaign.run_record("control")["ended_at"] = "2026-11-21T00:00:00Z"
    found = expect_finding(journaled(campaign, *honest(campaign)), "journal-agrees.run-end",
        says=("2026-11-21T01:00:00+00:00", "2026-11-21T00:00:00+00:00"))
    assert found.where == "itera-journal.jsonl:10"
    assert found.hint is not None
    assert found.hint.startswith("write the end the recorder journaled (manifest.json "
                                 "$.runs[0].ended_at)")


def test_a_decision_moment_moved_from_the_journal_is_refused(
    campaign: CampaignBuilder
) -> None:
    found = expect_finding(journaled(campaign, *decided(campaign, "2026-11-21T05:00:00Z")),
                           "journal-agrees.decision-at",
        says=("2026-11-21T05:00:00+00:00", "2026-11-21T04:00:00+00:00"))
    assert found.where == "itera-journal.jsonl:11"
