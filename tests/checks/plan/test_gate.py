"""The plan gate (--itera-plan): the seed's plan before renting, its figures for real.

48 h from preparation to retrieval in a 72 h window leave 24 h uncommitted; grown by
30 h to 78 h, the plan overflows the 3-day lot by 6 h, and is told the 7-day lot's price
or the exploratory run to drop.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_itera.cli import plan_skeleton
from tests.factory import expect, expect_each, tree_digest
from tests.plans import grown_by_30, seed_plan, write
from tests.plans import step as plan_step
from tests.runner import Itera


def test_the_seeds_48_hours_in_a_72_hour_window_pass_with_24_uncommitted(
    itera: Itera, pytester: pytest.Pytester,
) -> None:
    write(pytester.path / "out", seed_plan())
    result = itera.gate("-rA")
    result.assert_outcomes(passed=3)
    expect(result,
           "*pytest-itera: before renting*",
           "plan out/plan.json (seed-2026-12): 48 h from preparation to retrieval in the 72 h "
           "window: 24 h uncommitted",
           "  retrieve * gpu0 * 44 * 48",
           "  window edge * 72",
           "  lot rtx4090-3d (3 days, 47.14 USD): spans 48 h of 72 h",
           "    lots that fit 48 h of RTX 4090: 3-day 47.14 USD (24 h idle) | 7-day 110.00 USD "
           "(120 h idle) | 30-day 390.00 USD (672 h idle)")
    expect_each(result, "PASSED out/plan.json::plan-valid",  # in the order they finish
                "PASSED out/plan.json::plan-frozen-ready",
                "PASSED out/plan.json::plan-schedule-fits")
    assert result.ret == 0


def test_a_draft_without_frozen_at_is_judged_and_told_who_sets_it(
    itera: Itera, pytester: pytest.Pytester,
) -> None:
    """new-plan writes a draft: the gate judges it (no "'frozen_at' is a required property"),
    and says freeze_plan will set it."""
    plan = seed_plan()
    del plan["frozen_at"]
    write(pytester.path / "out", plan)
    result = itera.gate()
    result.assert_outcomes(passed=3)
    expect(result, "  a draft (no frozen_at): CampaignRecorder.freeze_plan sets it when it "
           "freezes the plan, before the first run")
    assert "required property" not in result.stdout.str()


def test_grown_by_30_hours_it_overflows_the_3_day_lot_and_is_told_both_ways_out(
    itera: Itera, pytester: pytest.Pytester,
) -> None:
    write(pytester.path / "out", grown_by_30(seed_plan()))
    result = itera.gate()
    result.assert_outcomes(passed=2, failed=1)
    expect(result,
           "plan.json $.schedule.steps (lot 'rtx4090-3d'): lot 'rtx4090-3d': 78 h exceeds the "
           "3-day lot (72 h) by 6 h: consider the 7-day lot (110.00 USD) or a reduced protocol",
           "    expected: at most 72 h on the lot",
           "    found:    78 h",
           "    fix:      rent the 7-day lot at 110.00 USD (+62.86 USD over the 3-day lot's "
           "47.14 USD, 90 h idle); or reduce the protocol: drop exploratory run 'variant-b' "
           "(6 h of planned steps): the schedule then takes 72 h and fits the window and the "
           "lots*",
           "FAILED out/plan.json::plan-schedule-fits - *")
    assert "/h" not in result.stdout.str()  # never an hourly price
    expect(result, "*pytest-itera: before renting*", "plan out/plan.json*: 78 h *",
           "    lots that fit 78 h of RTX 4090: 7-day 110.00 USD (90 h idle) | 30-day "
           "390.00 USD (642 h idle)")


def test_useful_runs_are_dropped_only_when_exploratory_ones_are_not_enough(
    itera: Itera, pytester: pytest.Pytester,
) -> None:
    plan = grown_by_30(seed_plan())
    plan_step(plan, "train-control")["hours"] += 4  # 82 h: variant-b's 6 h are not enough
    plan["schedule"].update(sequential_hours=82, uncommitted_hours=-10)
    write(pytester.path / "out", plan)
    expect(itera.gate(), "*reduce the protocol: drop exploratory run 'variant-b', useful run "
           "'variant-a' (14 h of planned steps): the schedule then takes 68 h and fits*")


def test_the_stated_hours_are_checked(itera: Itera, pytester: pytest.Pytester) -> None:
    plan = seed_plan()
    plan["schedule"]["uncommitted_hours"] = 30
    write(pytester.path / "out", plan)
    expect(itera.gate(), "plan.json $.schedule.uncommitted_hours: uncommitted_hours says 30 h, "
           "but the 72 h window minus the 48 h makespan leaves 24 h")


def test_checkpoint_interval_plus_save_cost_within_the_tolerable_loss(
    itera: Itera, pytester: pytest.Pytester,
) -> None:
    plan = seed_plan()
    plan["checkpoint_policy"].update(interval_hours=2, save_hours=0.5)
    plan_step(plan, "save-ckpt")["hours"] = 0
    write(pytester.path / "out", plan)
    result = itera.gate()
    expect(result, "*the schedule plans 0 h for checkpoint_save (step 'save-ckpt')",
           "*a crash can lose 2.5 h of work (interval 2 h + 0.5 h per save), more than "
           "the tolerable 2 h")


def test_a_plan_that_is_not_frozen_ready_is_told_what_the_closure_will_need(
    itera: Itera, pytester: pytest.Pytester,
) -> None:
    plan = seed_plan()
    plan["runs"][1]["category"] = "useful"  # the data check
    plan["stop_rules"][1]["parameters"]["resume_check"] = "control"
    del plan["checkpoint_policy"]["storage"]
    plan["schedule"]["steps"] = [s for s in plan["schedule"]["steps"] if s["id"] != "decide"]
    plan_step(plan, "train-control")["after"] = ["train-pilot"]
    plan["schedule"].update(sequential_hours=47, uncommitted_hours=25)
    write(pytester.path / "out", plan)
    result = itera.gate("-k", "frozen")
    result.assert_outcomes(failed=1)
    expect(result,
           "plan-frozen-ready: 5 problems",
           "plan.json $.runs: the must category has no data check run",
           "plan.json $.stop_rules[1].parameters.resume_check: stop rule 'no-resume' "
           "(no_resume) names 'control', which is not a planned resume check",
           "plan.json $.decision.point: the plan has a pilot (pilot) but fixes no decision "
           "point after it",
           "*",
           "plan.json $.decision.point: the plan fixes no decision point",
           "*",
           "plan.json $.checkpoint_policy.storage: the checkpoint policy does not say where "
           "checkpoints live")


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('{"format": "itera-plan/2",\n  "campaign": ', "plan.json:2:15 $: not JSON: *"),
        (None, "plan.json:*:* $.schedule.window_hours: *"),
        ("cycle", "plan.json:*:* $.schedule.steps[0].after: the schedule cannot be computed: "
                  "dependency cycle: *"),
    ],
    ids=["not-json", "schema-invalid", "cycle"],
)
def test_a_broken_plan_gets_one_failing_item_with_its_json_path_and_line(
    itera: Itera, pytester: pytest.Pytester, text: str | None, where: str
) -> None:
    plan = seed_plan()
    folder = write(pytester.path / "out", plan)
    if text is None:
        plan["schedule"]["window_hours"] = "72"
    elif text == "cycle":
        plan_step(plan, "prepare")["after"] = ["retrieve"]  # a cycle through every step
    if text in (None, "cycle"):
        (folder / "plan.json").write_text(json.dumps(plan, indent=2))
    else:
        (folder / "plan.json").write_text(text)
    result = itera.gate("-rf")
    result.assert_outcomes(failed=1)
    expect(result, where, "FAILED out/plan.json::plan-valid*")


def test_a_plan_file_any_name_anywhere(itera: Itera, tmp_path: Path) -> None:
    """A draft plan outside the rootdir: readable node ids, no journal looked up."""
    draft = tmp_path / "drafts" / "big-plan.json"
    draft.parent.mkdir()
    draft.write_text(json.dumps(grown_by_30(seed_plan())))
    result = itera.gate("-rf", plan=str(draft))
    result.assert_outcomes(passed=2, failed=1)
    expect(result, f"FAILED *{draft.name}::plan-schedule-fits*")


def test_the_ini_twin_and_two_plans(itera: Itera, pytester: pytest.Pytester) -> None:
    write(pytester.path / "a", seed_plan())
    write(pytester.path / "b", grown_by_30(seed_plan()))
    pytester.makeini("[pytest]\nitera_plan =\n    a\n    b/plan.json\n")
    result = itera(campaign=None)
    result.assert_outcomes(passed=5, failed=1)
    expect(result, "FAILED b/plan.json::plan-schedule-fits*")


def test_the_campaign_folder_is_never_written(itera: Itera, pytester: pytest.Pytester) -> None:
    folder = write(pytester.path / "out", grown_by_30(seed_plan()))
    before = tree_digest(folder)
    itera.gate().assert_outcomes(passed=2, failed=1)
    assert tree_digest(folder) == before


def test_a_truncation_rule_that_contradicts_its_corpus_entry_fails_plan_valid(
    itera: Itera, pytester: pytest.Pytester,
) -> None:
    """The new-plan draft with its corpus entry edited (48 examples) and its corpus-truncated
    rule left at 600: judged before renting, not after a campaign that cannot be accepted."""
    plan = plan_skeleton("guide")  # a draft, as new-plan writes it
    plan["corpora"][0]["examples"] = 48
    write(pytester.path / "out", plan)
    result = itera.gate("-rf")
    result.assert_outcomes(failed=1)  # the other items need a valid plan
    expect(result,
           "plan.json:*:* $.stop_rules[2].parameters.examples: stop rule 'corpus-truncated' "
           "(input_truncated) expects 600 examples of corpus 'corpus-v1', but the plan's "
           "corpora[0] freezes 48: the frozen corpus would trigger the rule",
           "    expected: 48, the corpus entry's examples",
           "    found:    600",
           "    fix:      edit the rule's parameters.examples together with "
           "corpora[0].examples (both 48, when the corpus entry is right)",
           "FAILED out/plan.json::plan-valid*")
    plan["stop_rules"][2]["parameters"]["examples"] = 48  # the way through
    write(pytester.path / "out", plan)
    itera.gate().assert_outcomes(passed=3)


def test_the_summary_says_which_hours_run_off_the_lot(tmp_path: Path) -> None:
    """78 h in the window but 74 h on the lot: the 4 h of preparation come before the lot."""
    from pytest_itera.checks.plan.summary import summary_lines
    from pytest_itera.core.campaign import load_campaign
    from pytest_itera.core.money import example_catalogue
    from tests.factory import CampaignBuilder

    builder = CampaignBuilder(tmp_path / "camp")
    next(s for s in builder.plan["schedule"]["steps"]
         if s["id"] == "train-variant-a")["hours"] = 44
    plan = load_campaign(builder.write()).plan
    assert plan is not None
    lines = summary_lines("plan.json", plan, example_catalogue())
    at = lines.index("  lot rtx4090-3d (3 days, 47.14 USD): spans 74 h of 72 h: 2 h OVER the lot")
    assert lines[0].endswith("78 h from preparation to retrieval in the 72 h window: 6 h OVER "
                             "the window")
    assert lines[at + 1] == ("    the lot runs from 4 h to 78 h of the 78 h schedule; off the "
                             "lot: prepare, 4 h before it")
