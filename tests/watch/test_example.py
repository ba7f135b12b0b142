"""The example campaign (built once per session, tests/conftest.py) replayed event by event,
and the next campaign's plan drawn from it (issue 37's "done when")."""

from __future__ import annotations

import json
import shutil
from datetime import timedelta
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


def test_the_example_judged_with_its_files_fires_no_rule_and_every_checkpoint_reloads(
        example_campaign: Path) -> None:
    """The real example: its journal's series, its checkpoints reloaded in the reload
    server, its predictions against its corpora: nothing more to say than its recorded
    stop (variant-hot-lr's, which its journal's series triggers and records)."""
    from pytest_itera.watch.judged import Judged
    from pytest_itera.watch.status import verdict

    folder = open_folder(example_campaign)
    events, _ = read_events(example_campaign)
    last = max(m for e in events if (m := moment_of(e)) is not None)
    with Judged() as judged:
        fc = judge(folder, last, lead=2, replay=True, judged=judged)
    assert fc.facts.rules == ()
    assert fc.facts.checkpoints
    assert {c.state for c in fc.facts.checkpoints} == {"reloads"}, fc.facts.checkpoints
    assert fc.facts.predictions
    assert all(p.covers for p in fc.facts.predictions), fc.facts.predictions
    assert fc.facts.failing_musts == ()
    assert [r.run for r in fc.rules] == ["variant-hot-lr"]  # the stop its journal records
    assert verdict(fc) == 1  # a stop rule fired, as the first round said; nothing else


def test_the_example_replayed_says_the_rule_its_series_fires_before_the_stop_is_journaled(
        example_campaign: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A second before its stop event, variant-hot-lr's journaled loss is already infinite:
    watch says the rule, the step and the journal line, and --once exits 1."""
    events, _ = read_events(example_campaign)
    stop = next(e for e in events if e["event"] == "stopped")
    stopped_at = moment_of(stop)
    assert stopped_at is not None
    before = stopped_at - timedelta(seconds=1)
    line = next(i for i, e in enumerate(events, 1) if e["event"] == "log"
                and e["run"] == stop["run"] and e["step"] == stop["step"])
    assert main(["watch", str(example_campaign), "--once", "--lead", "2",
                 "--now", before.strftime("%Y-%m-%dT%H:%M:%SZ")]) == 1
    assert (f"  stop rule non-finite-loss (non_finite_loss) fires on variant-hot-lr at step "
            f"14 (itera-journal.jsonl:{line}): its 'loss' series is Infinity at step 14; the "
            "journal records no stop yet") in capsys.readouterr().out.splitlines()


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
