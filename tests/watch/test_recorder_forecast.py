"""``rec.forecast()`` and the callbacks' warning: typed, logged once per change."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from pytest_itera.core.lot_forecast import LotForecast
from pytest_itera.record import CampaignRecorder
from pytest_itera.record.integrations._common import ForecastWarner
from tests.watch.test_lot_forecast import example_plan


class Played:
    """An injected clock the test moves."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def recorder(root: Path) -> tuple[CampaignRecorder, Played]:
    clock = Played()
    rec = CampaignRecorder(root, clock=clock)
    rec.freeze_plan(example_plan())
    return rec, clock


def test_the_recorder_returns_the_typed_forecast(tmp_path: Path) -> None:
    rec, _ = recorder(tmp_path / "out")
    fc = rec.forecast(lead=2)
    assert isinstance(fc, LotForecast)
    assert fc.on_track
    assert fc.lead == 2
    assert fc.rental_start == datetime(2026, 1, 5, 12, 0, tzinfo=UTC)


def test_the_warning_is_logged_once_per_change_never_per_step(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    rec, clock = recorder(tmp_path / "out")
    warner = ForecastWarner(rec, lead=2)
    caplog.set_level(logging.INFO, logger="pytest_itera.core.lot_forecast")
    assert warner.check() is None
    clock.now += timedelta(hours=30)  # the rental ran 30 h before the data check began
    rec.run("data-check").start()
    for _ in range(5):
        warner.check()
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "drop variant-deep, variant-wide" in warnings[0].getMessage()
    assert "start the retrieval by 2026-01-08T09:00:00Z" in warnings[0].getMessage()
