"""``python -m pytest_itera check DIR`` and ``new-plan DIR``."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_itera.cli import main, plan_skeleton
from pytest_itera.core.campaign import validate
from tests.recorded import record
from tests.runner import REPO, Itera


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cli") / "camp"
    record(root, check=False)
    return root


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_itera", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=300, check=False)


@pytest.fixture(scope="module")
def checked(recorded: Path) -> subprocess.CompletedProcess[str]:
    """``check`` on the recorded campaign, run once: the plugin says the same in every mode."""
    return cli("check", str(recorded))


@pytest.fixture(scope="module")
def new_plan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``new-plan next`` run once (the three xdist modes gate its plan): the folder."""
    folder = tmp_path_factory.mktemp("new-plan") / "next"
    done = cli("new-plan", str(folder))
    assert done.returncode == 0, done.stderr
    (folder.parent / "stdout.txt").write_text(done.stdout)  # beside the plan, not in it
    return folder


def test_check_prints_the_plugins_summary(
    recorded: Path, checked: subprocess.CompletedProcess[str], itera: Itera
) -> None:
    done = checked
    assert done.returncode == 0, done.stdout + done.stderr
    plugin = itera(campaign=str(recorded))
    summary = done.stdout.splitlines()
    assert summary[0] == "campaign tiny-2026-11: ACCEPTED — 73/73 checks"
    for line in summary:  # the plugin says the same, line for line
        assert line in plugin.outlines


def test_check_fails_a_damaged_campaign_saying_why(recorded: Path, tmp_path: Path) -> None:
    copy = tmp_path / "camp"
    shutil.copytree(recorded, copy)
    (copy / "analysis.md").write_text("changed after closure\n")
    done = cli("check", str(copy))
    assert done.returncode == 1
    assert "FAILED camp/manifest.json::files-intact[analysis.md]" in done.stdout
    assert "REJECTED" in done.stdout


def test_check_of_a_missing_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(tmp_path / "nowhere")]) == 4
    assert "not a folder" in capsys.readouterr().err


def test_new_plan_writes_a_plan_the_plan_gate_accepts(new_plan: Path, itera: Itera) -> None:
    plan = json.loads((new_plan / "plan.json").read_text())
    assert validate("plan", plan) == []
    assert "frozen_at" not in plan  # a draft: freeze_plan sets it
    said = (new_plan.parent / "stdout.txt").read_text()
    assert "CampaignRecorder.freeze_plan (which sets frozen_at)" in said
    # a truncation rule is edited with its corpus entry (freeze_plan refuses them apart)
    assert "the corpus-truncated rule's examples with corpora[0].examples" in said
    [truncated] = [r for r in plan["stop_rules"] if r["kind"] == "input_truncated"]
    assert truncated["description"] == "examples is corpora[0].examples: edit both together"
    assert plan["campaign"] == "next"
    assert plan["budget"]["lots"][0]["price"] == "47.14"
    assert plan["schedule"]["sequential_hours"] == 48
    assert {r["role"] for r in plan["runs"]} == {
        "control", "data_check", "resume_check", "pilot", "variant"}
    assert all(r["parameters"] for r in plan["stop_rules"])
    gate = itera("--itera-plan", str(new_plan / "plan.json"), campaign=None)
    gate.assert_outcomes(passed=3)
    gate.stdout.fnmatch_lines(["*48 h from preparation to retrieval in the 72 h window*",
                               "  a draft (no frozen_at): CampaignRecorder.freeze_plan sets *"])


def test_new_plan_never_overwrites(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["new-plan", str(tmp_path)]) == 0
    before = (tmp_path / "plan.json").read_bytes()
    assert main(["new-plan", str(tmp_path)]) == 1
    assert "never overwritten" in capsys.readouterr().err
    assert (tmp_path / "plan.json").read_bytes() == before


def test_the_skeleton_is_schema_valid_once_frozen() -> None:
    assert validate("plan", {**plan_skeleton(), "frozen_at": "2026-01-05T08:00:00Z"}) == []
