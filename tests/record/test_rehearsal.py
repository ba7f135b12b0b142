"""A rehearsal (issue 26, item 4): the campaign's own script run on any machine at any speed.

As the user met it: the campaign of tests/recorded.py rehearsed on a CPU with the real clock,
each step taking 36 seconds, is REJECTED by plan-vs-actual, one finding per step; each says
how long the step ran (never "did not run") and names the recorder's argument that explains
it. The way through: ``CampaignRecorder(root, rehearsal=True)``; the journal and the manifest
say so, the hours are recorded but not judged against the plan, every other check runs as at
closure, and the verdict is REHEARSED, never ACCEPTED.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from pytest_itera.cli import main
from pytest_itera.record import CampaignRecorder, RecordError
from pytest_itera.report.verify import check_campaign
from tests import recorded
from tests.factory import copied_without, expect
from tests.plugin.test_report import validate_report
from tests.record.test_record import CONFIG, CORPUS, make_plan
from tests.runner import Itera


def quick(rec: CampaignRecorder, step_id: str) -> None:
    """Each step as a CPU rehearsal times it: 36 seconds (0.01 h), whatever the plan says."""
    step = next(s for s in rec.plan["schedule"]["steps"] if s["id"] == step_id)
    if step["resource"] == "human":
        rec.step(step_id, hours=0.01)
        return
    rec.step(step_id).start(at=recorded.T0).end(at=recorded.T0 + timedelta(seconds=36))


@pytest.fixture(scope="module")
def rehearsed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("rehearsal") / "camp"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(recorded, "timed", quick)
        closure = recorded.record(root, check=False, rehearsal=True)
    return closure.manifest.parent


def test_a_cpu_run_with_the_real_clock_is_rejected_saying_how_long_each_step_ran(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(recorded, "timed", quick)
    closure = recorded.record(tmp_path / "camp")
    assert closure.result is not None
    assert closure.result.verdict == "rejected"
    out = capsys.readouterr().out
    assert "did not run" not in out
    expect_lines = [
        "  manifest.json $.schedule.deviations: step 'setup' ran 0.01 h of 2 h planned, less "
        "than half and no explanation",
        "      fix:      explain it when closing: rec.close(explanations={\"setup\": \"what "
        "stopped it, and what was decided\"}) (the recorder writes schedule.deviations)",
    ]
    for line in expect_lines:
        assert line in out.splitlines(), out
    assert "schedule.deviations (what stopped it" not in out  # the manifest is not edited


def test_a_rehearsal_is_rehearsed_never_accepted(rehearsed: Path, itera: Itera) -> None:
    manifest = json.loads((rehearsed / "manifest.json").read_text())
    assert manifest["rehearsal"] is True
    first = json.loads((rehearsed / "itera-journal.jsonl").read_text().splitlines()[0])
    assert (first["event"], first["rehearsal"]) == ("plan", True)
    assert {s["id"]: s["observed_hours"] for s in manifest["schedule"]["steps"]}["setup"] \
        == 0.01  # recorded as they were
    result, data = itera.reported(rehearsed)
    assert result.ret == 0  # every check passed
    assert data["verdict"] == "rehearsed"
    validate_report(data)  # "rehearsed" is in the JSON report's schema
    expect(result, "campaign tiny-2026-11: REHEARSED — */* checks (a rehearsal: its observed "
           "hours are not judged against the plan; a rehearsal is never ACCEPTED)")
    gate = itera("--itera-require-accepted", campaign=str(rehearsed))
    assert gate.ret == pytest.ExitCode.TESTS_FAILED
    expect(gate, "*--itera-require-accepted: exit status 1: campaign tiny-2026-11: REHEARSED*")


def test_python_m_pytest_itera_rehearse(rehearsed: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rehearse", str(rehearsed)]) == 0
    assert main(["check", str(rehearsed)]) == 1  # check wants ACCEPTED
    assert "REHEARSED" in capsys.readouterr().out


def test_a_rehearsal_turned_into_a_campaign_by_editing_the_manifest_is_refused(
    rehearsed: Path, tmp_path: Path,
) -> None:
    verdict = check_campaign(copied_without(rehearsed, tmp_path / "camp", "rehearsal"))
    assert verdict.verdict == "rejected"
    found = [p.finding for p in verdict.findings]
    assert any(f.code == "journal-agrees.rehearsal" and f.message ==
               "itera-journal.jsonl began this campaign as a rehearsal, but the manifest does "
               "not say so" for f in found), found


def test_a_rehearsal_continues_as_a_rehearsal_and_a_real_campaign_never_becomes_one(
    tmp_path: Path,
) -> None:
    def frozen(root: Path, rehearsal: bool) -> CampaignRecorder:
        rec = CampaignRecorder(root, rehearsal=rehearsal)
        rec.write_bytes("corpus.jsonl", CORPUS)
        rec.write_bytes("configs/control.json", CONFIG)
        rec.freeze_plan(make_plan())
        return rec

    frozen(tmp_path / "rehearsal", True)
    assert CampaignRecorder(tmp_path / "rehearsal").rehearsal is True
    frozen(tmp_path / "real", False)
    with pytest.raises(RecordError, match="began this campaign for real"):
        CampaignRecorder(tmp_path / "real", rehearsal=True)


def test_a_step_that_ran_under_a_second_is_never_written_as_not_run() -> None:
    from decimal import Decimal

    from pytest_itera.core.campaign import plan_from
    from pytest_itera.record import tally

    block = tally.schedule_block(plan_from(make_plan()), {"train": Decimal("0.00002")}, {})
    assert block["steps"] == [{"id": "train", "observed_hours": 0.0001}]
    assert block["observed_hours"] == 0.0001
