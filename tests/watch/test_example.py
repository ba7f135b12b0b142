"""The example campaign (built once per session, tests/conftest.py) replayed event by event,
and the next campaign's plan drawn from it (issue 37's "done when")."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_itera.cli import main
from pytest_itera.core.campaign import PLAN_FILE, load_campaign
from pytest_itera.core.journal import read_events
from pytest_itera.core.lot_forecast import moment_of
from pytest_itera.watch.next_plan import UNCERTAINTIES_FILE
from pytest_itera.watch.status import judge, open_folder
from tests.runner import Itera
from tests.watch.test_watch_cli import tree


def test_the_example_replayed_event_by_event_never_warns(example_campaign: Path) -> None:
    folder = open_folder(example_campaign)
    events, _ = read_events(example_campaign)
    for moment in sorted({m for e in events if (m := moment_of(e)) is not None}):
        fc = judge(folder, moment, lead=2, replay=True)
        assert fc.warning() is None, (moment, fc.warning())
        assert not fc.late_musts


def test_next_plan_takes_the_observed_hours_and_passes_the_plan_gate(
        example_campaign: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        itera: Itera, pytester: pytest.Pytester) -> None:
    camp = shutil.copytree(example_campaign, tmp_path / "camp")
    before = tree(camp)
    draft = pytester.path / "out"
    assert main(["next-plan", str(camp), "--to", str(draft), "--margin", "0"]) == 0
    assert "the draft passes the plan gate" in capsys.readouterr().out
    assert tree(camp) == before
    plan = json.loads((draft / PLAN_FILE).read_text())
    assert "frozen_at" not in plan
    manifest = load_campaign(camp).manifest
    assert manifest is not None
    observed = {s.id: s.observed_hours for s in manifest.schedule.steps}
    planned = {s["id"]: s["hours"] for s in json.loads((camp / PLAN_FILE).read_text())[
        "schedule"]["steps"]}
    for step in plan["schedule"]["steps"]:  # observed, but a step that did not run fully
        expected = planned[step["id"]] if observed[step["id"]] * 2 < planned[step["id"]] \
            else observed[step["id"]]
        assert step["hours"] == expected, step
    notes = (draft / UNCERTAINTIES_FILE).read_text()
    assert "deviation of step train-variant-hot-lr: variant-hot-lr was stopped" in notes
    assert "step train-variant-deep: an estimate not measured" in notes
    assert "played clock" in notes
    itera.gate().assert_outcomes(passed=3)


def test_next_plan_never_overwrites_a_plan(example_campaign: Path, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "draft").mkdir()
    (tmp_path / "draft" / PLAN_FILE).write_text("{}")
    assert main(["next-plan", str(example_campaign), "--to", str(tmp_path / "draft")]) == 4
    assert "exists: a plan is never overwritten" in capsys.readouterr().err
