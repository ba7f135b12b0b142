"""The retrieval's push counted in the lot's end (issue 41): the bytes to push at the rate the
user measured lengthen the retrieval steps left, and so the margin and the moment to start."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from pytest_itera.core.campaign import plan_from, schema
from pytest_itera.core.lot_forecast import Upload, forecast_lot, rate_of
from pytest_itera.watch.status import folder_bytes, lines, status_json
from tests.watch.journal import iso, moments, played
from tests.watch.test_lot_forecast import DROPS, example_plan

STATUS = jsonschema.Draft202012Validator(schema("watch-status"))
GIB = 1 << 30
MIB = 1 << 20


def _at_the_pilots_end() -> tuple[dict[str, Any], list[dict[str, Any]], datetime]:
    plan = example_plan()
    events = played(plan, drops=DROPS)
    pilot = next(datetime.fromisoformat(e["at"]) for e in events
                 if e["event"] == "accepted" and e["run"] == "pilot")
    return plan, events, pilot


@pytest.mark.parametrize(("size", "rate", "added"), [
    pytest.param(360 * GIB, 40 * MIB, Decimal(360 * GIB) / (40 * MIB) / 3600 - 1,
                 id="360-GiB-at-40-MiB/s-takes-2.56-h-of-a-1-h-retrieval"),
    pytest.param(1 * GIB, 40 * MIB, Decimal(0), id="1-GiB-fits-the-planned-hour"),
])
def test_the_push_lengthens_the_last_retrieval_step_by_what_it_lacks(
        size: int, rate: int, added: Decimal) -> None:
    plan, events, now = _at_the_pilots_end()
    typed = plan_from(plan)
    without = forecast_lot(typed, events, now, lead=2)
    fc = forecast_lot(typed, events, now, lead=2,
                      upload=Upload(size, Decimal(rate)))
    assert fc.push is not None
    assert fc.push.planned == Decimal(1)  # the example's 'retrieve' step, 1 h
    assert fc.push.added == added
    assert fc.push.step == ("retrieve" if added else None)
    retrieve = {s.step: s for s in fc.steps}["retrieve"]
    assert retrieve.remaining == Decimal(1) + added
    # the whole lot's margin pays it, hour for hour, and the retrieval must start earlier
    assert without.margin is not None
    assert fc.margin is not None
    assert fc.margin == pytest.approx(without.margin - added, abs=Decimal("0.0001"))
    assert without.retrieval_start is not None
    assert fc.retrieval_start is not None
    assert without.retrieval_start - fc.retrieval_start == pytest.approx(
        timedelta(hours=float(added)), abs=timedelta(seconds=1))


def test_a_push_longer_than_the_margin_turns_the_forecast_off_track() -> None:
    plan, events, now = _at_the_pilots_end()
    typed = plan_from(plan)
    without = forecast_lot(typed, events, now, lead=2)
    assert without.on_track
    assert without.margin is not None
    # a push that takes the margin and one more hour
    hours = without.margin + 2
    size = int(hours * 3600 * 40 * MIB)
    fc = forecast_lot(typed, events, now, lead=2,
                      upload=Upload(size, Decimal(40 * MIB)))
    assert not fc.on_track
    warning = fc.warning()
    assert warning is not None
    assert "start the retrieval by" in warning
    assert fc.push is not None
    assert "counted on step 'retrieve'" in fc.push.describe()


def test_a_closed_campaign_has_no_retrieval_step_left_to_count_the_push_on() -> None:
    plan = example_plan()
    events = played(plan, drops=DROPS)
    last = moments(events)[-1]
    fc = forecast_lot(plan_from(plan), events, last,
                      upload=Upload(10 * GIB, Decimal(MIB)))
    assert fc.closed
    assert fc.push is not None
    assert fc.push.steps_left == 0
    assert fc.push.added == 0
    assert "no retrieval step is left in the plan" in fc.push.describe()


def test_the_status_says_the_push_and_its_json_is_valid() -> None:
    plan, events, now = _at_the_pilots_end()
    fc = forecast_lot(plan_from(plan), events, now, lead=2,
                      upload=Upload(360 * GIB, Decimal(40 * MIB)))
    said = next(line for line in lines(fc) if line.startswith("  push: "))
    assert said.startswith("  push: the push of 360.0 GiB at 40.0 MiB/s takes 2.56 h")
    docs = (Path(__file__).parents[2] / "docs" / "watch.md").read_text("utf-8")
    assert f"\n{said}\n" in docs  # the page shows what watch prints
    doc = status_json(fc)
    STATUS.validate(doc)
    assert doc["push"]["step"] == "retrieve"
    assert doc["push"]["bytes"] == 360 * GIB
    without = status_json(forecast_lot(plan_from(plan), events, now))
    assert without["push"] is None
    STATUS.validate(without)


@pytest.mark.parametrize(("text", "rate"), [
    ("40MiB/s", 40 * MIB), ("40 MiB/s", 40 * MIB), ("300Mbit/s", 37_500_000),
    ("1.5GB/s", 1_500_000_000), ("52428800", 52_428_800), ("1 Gbit/s", 125_000_000),
    ("2KiB", 2048),
])
def test_a_rate_is_read_in_the_units_people_write(text: str, rate: int) -> None:
    assert rate_of(text) == rate


@pytest.mark.parametrize(("text", "says"), [
    ("fast", "not a rate"), ("-1MiB/s", "not a rate"), ("0MiB/s", "above 0"),
    ("40 MiB/h", "not a rate"),
])
def test_a_rate_that_is_none_is_refused(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        rate_of(text)


def test_the_folder_bytes_are_its_regular_files_links_not_followed(tmp_path: Path) -> None:
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "a.pt").write_bytes(b"x" * 1000)
    (tmp_path / "plan.json").write_bytes(b"{}")
    outside = tmp_path.parent / f"{tmp_path.name}-big"
    outside.write_bytes(b"y" * 5000)
    (tmp_path / "link.pt").symlink_to(outside)
    assert folder_bytes(tmp_path) == 1002


def test_watch_counts_a_big_folders_push_and_turns_off_track(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The CLI: the folder's bytes (a sparse 2 GiB checkpoint: no disk spent) at 16 KiB/s take
    about 36 h, more than the lot's margin: --once exits 1 and says so; without the rate, 0."""
    from pytest_itera.cli import main
    from tests.watch.test_watch_cli import campaign

    events = campaign(tmp_path / "out")
    with (tmp_path / "out" / "last.pt").open("wb") as big:
        big.truncate(2 * GIB)
    now = iso(moments(events)[6])
    before = {p: p.stat().st_mtime_ns for p in (tmp_path / "out").iterdir()}
    assert main(["watch", str(tmp_path / "out"), "--once", "--now", now, "--lead", "2"]) == 0
    capsys.readouterr()
    code = main(["watch", str(tmp_path / "out"), "--once", "--now", now, "--lead", "2",
                 "--upload-rate", "16KiB/s"])
    out = capsys.readouterr().out
    assert code == 1
    assert "push: the push of 2.0 GiB at 16.0 KiB/s takes 36.41 h" in out
    assert "counted on step 'retrieve'" in out
    assert "start the retrieval by" in out
    assert {p: p.stat().st_mtime_ns for p in (tmp_path / "out").iterdir()} == before


def test_watch_refuses_a_rate_it_cannot_read(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_itera.cli import main
    from tests.watch.test_watch_cli import campaign

    campaign(tmp_path / "out")
    with pytest.raises(SystemExit) as exit_:
        main(["watch", str(tmp_path / "out"), "--once", "--upload-rate", "fast"])
    assert exit_.value.code == 2
    assert "'fast' is not a rate (e.g. 40MiB/s, 300Mbit/s)" in capsys.readouterr().err
