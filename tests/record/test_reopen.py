"""Issue 26, point 2: the way back after a rejection. A closed campaign is reopened with a
reason (journaled with the sha256 of the manifest it replaces), repaired, and closed again:
each file replaced is journaled with its old and new sha256, and the reports say
"reopened once: <reason>"."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_itera.core.journal import JOURNAL_FILE
from pytest_itera.record import CampaignRecorder, RecordError
from pytest_itera.report.verify import check_campaign
from tests import factory as F
from tests import recorded
from tests.factory import unchained

PREDICTIONS = "runs/variant-a/predictions.jsonl"
REASON = "RELOAD.md left out variant-a's weights"


def events(root: Path, kind: str) -> list[dict[str, Any]]:
    lines = (root / JOURNAL_FILE).read_text("utf-8").splitlines()
    return [e for e in map(lambda line: unchained(json.loads(line)), lines)
            if e["event"] == kind]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def rejected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The recorded campaign closed with reload instructions that leave out variant-a's
    weights (the recorder cannot know: the checks reject it after closure)."""
    whole = F.default_files_v2

    def short() -> dict[str, bytes]:
        files = whole()
        files["RELOAD.md"] = b"".join(line for line in files["RELOAD.md"].splitlines(
            keepends=True) if b"variant-a" not in line)
        return files

    monkeypatch.setattr(F, "default_files_v2", short)
    closed = recorded.record(tmp_path / "camp")
    assert closed.verdict == "rejected"
    monkeypatch.setattr(F, "default_files_v2", whole)
    return tmp_path / "camp"


def repair(rec: CampaignRecorder) -> None:
    """RELOAD.md as it should be; variant-a's predictions written again (the same rows in
    another order: another file, the same verdict) and recorded again."""
    rec.write_bytes("RELOAD.md", F.default_files_v2()["RELOAD.md"])
    rows = F.default_files_v2()[PREDICTIONS].splitlines(keepends=True)
    rec.write_bytes(PREDICTIONS, b"".join(reversed(rows)))
    rec.run("variant-a").set_predictions(PREDICTIONS)


def test_a_rejected_campaign_is_reopened_repaired_and_accepted(
    rejected: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old_manifest, old_predictions = sha256(rejected / "manifest.json"), sha256(
        rejected / PREDICTIONS)
    rec = CampaignRecorder(rejected)
    with pytest.raises(RecordError, match=r"the campaign is closed: .*; to change it, reopen "
                       r"it: rec\.reopen\(reason=\.\.\.\), change the files, then close\(\) "
                       r"again \(docs/recorder\.md, 'The way back'\)"):
        repair(rec)
    assert rec.reopen(reason=REASON) == old_manifest
    repair(rec)
    closed = recorded.conclude(rec, check=True)

    assert closed.verdict == "accepted", "\n".join(p.render() for p in closed.findings)
    assert f"  reopened once: {REASON}" in (
        capsys.readouterr().out.splitlines())
    [reopen] = events(rejected, "reopen")
    assert (reopen["reason"], reopen["manifest_sha256"]) == (REASON, old_manifest)
    new_predictions = sha256(rejected / PREDICTIONS)
    assert events(rejected, "predictions")[-1]["replaces"] == old_predictions
    assert events(rejected, "predictions")[-1]["sha256"] == new_predictions
    changed = {e["path"]: e for e in events(rejected, "file")}
    assert set(changed) == {"RELOAD.md", PREDICTIONS}
    assert changed[PREDICTIONS] == {"event": "file", "path": PREDICTIONS, "change": "replaced",
                                    "old_sha256": old_predictions, "sha256": new_predictions}
    assert [e["event"] for e in map(json.loads, (rejected / JOURNAL_FILE).read_text()
                                    .splitlines())][-1] == "close"
    assert len(events(rejected, "close")) == 2
    verdict = check_campaign(rejected)
    assert verdict.report.reopened == (REASON,)
    assert verdict.report.reopened_text == f"reopened once: {REASON}"


def test_a_reopening_survives_a_new_process(rejected: Path) -> None:
    CampaignRecorder(rejected).reopen(reason=REASON)
    rec = CampaignRecorder(rejected)  # the process that reopened it died
    assert rec.reopenings == [REASON]
    repair(rec)
    assert recorded.conclude(rec, check=True).verdict == "accepted"
    again = CampaignRecorder(rejected)
    with pytest.raises(RecordError, match="the campaign is already closed; to change it, reopen"):
        recorded.conclude(again, check=False)
    again.reopen(reason="a second look")
    assert check_campaign(rejected).report.reopened_text == (
        f"reopened 2 times: {REASON}; a second look")


def test_a_deleted_manifest_leads_to_reopen(rejected: Path) -> None:
    """The issue's dead end: deleting manifest.json to change a closed campaign."""
    (rejected / "manifest.json").unlink()
    rec = CampaignRecorder(rejected)
    with pytest.raises(RecordError, match=(
            r"the campaign was closed \(itera-journal\.jsonl line \d+, closed_at \S+\) but "
            r"manifest\.json is not there \(deleted, or the closure was interrupted\); to "
            r"change it, reopen it: rec\.reopen\(reason=\.\.\.\)")):
        recorded.conclude(rec, check=False)
    assert rec.reopen(reason=REASON) is None  # no manifest to name
    repair(rec)
    assert recorded.conclude(rec, check=True).verdict == "accepted"


def test_a_reopening_needs_a_closed_campaign_and_a_reason(rejected: Path) -> None:
    rec = CampaignRecorder(rejected)
    with pytest.raises(RecordError, match=r"a reopening needs its reason"):
        rec.reopen(reason=" ")
    rec.reopen(reason=REASON)
    with pytest.raises(RecordError, match="the campaign is not closed: there is nothing to "
                       "reopen"):
        rec.reopen(reason=REASON)


def test_a_journal_that_goes_on_after_its_closure_is_refused(rejected: Path) -> None:
    journal = rejected / JOURNAL_FILE
    with journal.open("a") as handle:
        handle.write('{"event":"log","run":"control","step":9,"values":{"loss":0.1}}\n')
    with pytest.raises(RecordError, match=r"\('log'\) follows the closure of line \d+ without "
                       "a reopen record: the journal was edited"):
        CampaignRecorder(rejected)
