"""The lot's end forecast from a journal (issue 37): injected moments, synthetic journals."""

from __future__ import annotations

import copy
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

import jsonschema
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_itera.core.campaign import plan_from, schema
from pytest_itera.core.lot_forecast import LotForecast, forecast_lot
from pytest_itera.watch.status import status_json
from tests.watch.journal import moments, played


def example_plan() -> dict[str, Any]:
    """The example campaign's plan (example_campaign/plan.py), without building its files."""
    from example_campaign.make_corpus import CORPORA
    from example_campaign.plan import CorpusFacts, build_plan, corpus_path

    facts = [CorpusFacts(c.id, corpus_path(c.id), "0" * 64, c.examples, 1000) for c in CORPORA]
    # a copy: build_plan hands out the module's own step list
    return copy.deepcopy(build_plan(facts, {run: "0" * 64 for run in _run_ids()}))


def _run_ids() -> list[str]:
    from example_campaign.plan import RUNS

    return list(RUNS)


DROPS = {"decide-after-pilot": ["variant-deep"]}


def judged(plan: dict[str, Any], events: list[dict[str, Any]], now: datetime,
           lead: int = 0) -> LotForecast:
    return forecast_lot(plan_from(plan), events, now, lead=lead)


def test_the_example_replayed_event_by_event_never_warns() -> None:
    plan = example_plan()
    events = played(plan, drops=DROPS)
    for moment in moments(events):
        fc = judged(plan, events, moment, lead=2)
        assert fc.warning() is None, (moment, fc.warning())
        assert fc.on_track
        assert not fc.late_musts


def slowed() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    plan = example_plan()
    return plan, played(plan, drops=DROPS, slow={"training": 1.6})


def test_a_slowed_variant_warns_before_the_variants_step_starts() -> None:
    plan, events = slowed()
    starts = {e["run"]: datetime.fromisoformat(e["at"]) for e in events
              if e["event"] == "run-start"}
    warned = next(m for m in moments(events) if judged(plan, events, m, lead=2).warning())
    fc = judged(plan, events, warned, lead=2)
    assert warned < starts["variant-wide"]
    assert fc.drop
    assert fc.drop_fits
    assert all(plan_from(plan).run(r).category != "must" for r in fc.drop)  # type: ignore[union-attr]
    assert not set(fc.drop) & set(starts).intersection(
        e["run"] for e in events if e["event"] == "run-start"
        and datetime.fromisoformat(e["at"]) <= warned)
    assert fc.retrieval_start is not None
    assert fc.retrieval_start > warned
    text = fc.warning()
    assert text is not None
    assert f"drop {', '.join(fc.drop)}" in text
    assert fc.retrieval_start.strftime("%Y-%m-%dT%H:%M:%SZ") in text


def test_the_warning_turns_at_the_pilots_end() -> None:
    """The first measure of the training rate is the pilot's: the warning turns there."""
    plan, events = slowed()
    pilot_end = next(datetime.fromisoformat(e["at"]) for e in events
                     if e["event"] == "accepted" and e["run"] == "pilot")
    assert judged(plan, events, pilot_end - timedelta(seconds=1), lead=2).warning() is None
    assert judged(plan, events, pilot_end, lead=2).warning() is not None


def test_a_campaign_that_fits_never_warns_even_a_little_slow() -> None:
    plan = example_plan()
    events = played(plan, drops=DROPS, slow={"training": 1.1})
    assert all(judged(plan, events, m).on_track for m in moments(events))


def test_a_restarts_lost_time_is_counted_once() -> None:
    """A step journaled by the recorder, restarted after 3 h lost: the forecast end moves
    by those 3 h, never by 6."""
    plan = example_plan()
    base = played(plan, drops=DROPS)
    control = next(datetime.fromisoformat(e["at"]) for e in base
                   if e["event"] == "run-start" and e["run"] == "control")
    before = [e for e in base if datetime.fromisoformat(e["at"]) <= control]
    t = control + timedelta(hours=2)
    plain = [*before, {"event": "step-start", "step": "train-control", "at": _iso(control)}]
    gap = {"since": _iso(t), "until": _iso(t + timedelta(hours=3)), "hours": 3.0}
    resumed = [*plain, {"event": "step", "step": "train-control", "hours": 2.0,
                        "started_at": _iso(control), "at": _iso(t), "interrupted": gap}]
    now = t + timedelta(hours=3)
    one = judged(plan, [*plain[:-1], {**plain[-1]}], t)
    two = judged(plan, resumed, now)
    assert two.lost_hours == 3
    assert two.end - one.end == timedelta(hours=3)
    assert one.margin is not None
    assert two.margin == one.margin - 3


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


PLAN = example_plan()
EVENTS = played(PLAN, drops=DROPS, slow={"training": 1.3}, close=False)
MOMENTS = moments(EVENTS)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, len(MOMENTS) - 1), st.floats(0, 30), st.floats(0, 30))
def test_more_elapsed_time_without_progress_never_improves_the_forecast(
        index: int, first: float, more: float) -> None:
    events = [e for e in EVENTS if datetime.fromisoformat(e["at"]) <= MOMENTS[index]]
    early = MOMENTS[index] + timedelta(hours=first)
    late = early + timedelta(hours=more)
    a, b = forecast_lot(plan_from(PLAN), events, early), forecast_lot(plan_from(PLAN), events,
                                                                       late)
    assert b.end >= a.end
    assert a.margin is not None
    assert b.margin is not None
    assert b.margin <= a.margin


def test_decimal_hours_are_exact() -> None:
    fc = judged(PLAN, EVENTS, MOMENTS[3])
    assert isinstance(fc.margin, Decimal)


def test_a_training_run_that_saves_too_rarely_is_said() -> None:
    """The example's policy allows 4 h of loss with a 0.05 h save: 3.95 h between saves."""
    often = played(PLAN, drops=DROPS, interval=2)
    rarely = played(PLAN, drops=DROPS, interval=5)
    control_end = next(datetime.fromisoformat(e["at"]) for e in often
                       if e["event"] == "accepted" and e["run"] == "control")
    assert judged(PLAN, often, control_end).saves == ()
    gaps = judged(PLAN, rarely, control_end).saves
    assert [g.run for g in gaps] == ["control"]
    assert gaps[0].hours == 5
    assert gaps[0].allowed == Decimal("3.95")
    assert "run control went 5 h without a checkpoint save" in gaps[0].describe()


def test_two_lots_in_turn_each_have_their_end() -> None:
    """A second lot starts with the first event of its steps; each lot has its margin."""
    plan = example_plan()
    plan["budget"]["lots"] = [{**plan["budget"]["lots"][0], "id": "first"},
                              {**plan["budget"]["lots"][0], "id": "second"}]
    plan["budget"]["lots"][1]["days"] = 3
    second = {"train-control-noisy", "train-variant-wide-noisy", "validate", "write-outputs"}
    for step in plan["schedule"]["steps"]:
        if "lot" in step:
            step["lot"] = "second" if step["id"] in second else "first"
    events = played(plan, drops=DROPS)
    noisy = next(datetime.fromisoformat(e["at"]) for e in events
                 if e["event"] == "run-start" and e["run"] == "control-noisy")
    fc = judged(plan, events, noisy)
    lots = {lot.lot: lot for lot in fc.lots}
    assert lots["first"].engaged
    assert lots["second"].engaged
    assert lots["second"].start == noisy
    assert lots["second"].end == noisy + timedelta(days=3)
    assert fc.on_track


STATUS = jsonschema.Draft202012Validator(schema("watch-status"))
KINDS = ["plan", "run-start", "accepted", "stopped", "rejected", "decide", "step-start", "step",
         "resumed", "checkpoint", "close", "reopen", "log", "torn"]
VALUES = st.one_of(st.none(), st.booleans(), st.integers(-5, 50), st.floats(allow_nan=True),
                   st.text(max_size=8), st.sampled_from(["2026-01-05T10:00:00Z",
                                                         "2026-01-06T03:00:00+00:00",
                                                         "2026-01-04T00:00:00Z", "not a time"]),
                   st.sampled_from(_run_ids()), st.sampled_from(
                       [s["id"] for s in PLAN["schedule"]["steps"]] + ["nope"]),
                   st.lists(st.sampled_from([*_run_ids(), 3]), max_size=2),
                   st.fixed_dictionaries({"since": st.just("2026-01-05T10:00:00Z"),
                                          "until": st.sampled_from(["2026-01-05T12:00:00Z",
                                                                    "2026-02-01T00:00:00Z"]),
                                          "hours": st.one_of(st.floats(), st.text())}))
EVENT = st.builds(lambda kind, extra: {"event": kind, **extra}, st.sampled_from(KINDS),
                  st.dictionaries(st.sampled_from(["at", "run", "step", "hours", "drops", "runs",
                                                   "interrupted", "rule", "format"]), VALUES))


@settings(max_examples=150, deadline=None)
@given(st.lists(EVENT, max_size=25), st.integers(0, 120))
def test_any_journal_is_judged_without_a_crash(events: list[dict[str, Any]],
                                               hours: int) -> None:
    fc = forecast_lot(plan_from(PLAN), events, MOMENTS[0] + timedelta(hours=hours), lead=1)
    STATUS.validate(status_json(fc))  # every hour, moment and state within its schema
