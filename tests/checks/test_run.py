"""checks/engine.py, the one engine: which (check, target) pairs a folder has and in what order,
what each evaluates to, and the one failure text. In-process on real campaign folders
(CampaignBuilder), then the same broken campaign through ``check_campaign`` and through a
pytest session: the same failing pairs with the same messages.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_itera.checks import Check, Context, Options, contract, item_name
from pytest_itera.checks import files as file_checks
from pytest_itera.checks.context import blocked_by_contract
from pytest_itera.checks.engine import (
    FILES_IN_FULL,
    Outcome,
    evaluate,
    in_order,
    judge,
    outcomes,
    pairs,
)
from pytest_itera.checks.model import ITEM_ORDER
from pytest_itera.core.campaign import load_campaign
from pytest_itera.core.findings import Finding
from pytest_itera.report.verify import check_campaign
from tests.factory import CampaignBuilder
from tests.runner import Itera, only_xdist

# The families that judge without reloading a checkpoint: the engine is what is tested here,
# not the reload server (the pytest-vs-verify comparison below runs every check).
CHECKS = {c.id: c for c in (*contract.CHECKS, *file_checks.CHECKS)}


@pytest.fixture
def contexts() -> Iterator[list[Context]]:
    made: list[Context] = []
    yield made
    for ctx in made:
        ctx.close()


def context(root: Path, made: list[Context], **kwargs: object) -> Context:
    ctx = Context(load_campaign(root), Options(), CHECKS, **kwargs)  # type: ignore[arg-type]
    made.append(ctx)
    return ctx


def failing(ctx: Context) -> dict[str, str]:
    return {o.name: o.message for o in outcomes(ctx) if o.failed}


# ------------------------------------------------------------------ pairs and their order


def test_a_good_campaign_passes_every_pair_in_item_order(
    tmp_path: Path, contexts: list[Context]
) -> None:
    ctx = context(CampaignBuilder(tmp_path / "c").write(), contexts)
    found = list(outcomes(ctx))
    assert [(o.check, o.target) for o in found] == [(c.id, t) for c, t in pairs(ctx)]
    assert not any(o.failed for o in found)
    assert all(o.message == "" and o.files is None for o in found)
    # The checks by order then id, each check's targets sorted, every check present.
    order = [c.id for c in in_order(CHECKS.values())]
    assert list(dict.fromkeys(o.check for o in found)) == order
    assert order == [c for c in ITEM_ORDER if c in CHECKS]  # every built-in check has its row
    for check in CHECKS.values():
        targets = [o.target for o in found if o.check == check.id]
        assert targets == ([None] if check.targets is None else sorted(targets))  # type: ignore[type-var]
    assert {o.name for o in found} >= {"manifest", "files-intact[RELOAD.md]",
                                       "no-temp-paths[plan.json]"}
    assert all(o.name == item_name(o.check, o.target) for o in found)


def test_the_plan_gates_checks_are_not_a_closed_campaigns_pairs(
    tmp_path: Path, contexts: list[Context]
) -> None:
    plan_only = Check("plan-probe", "a plan-gate check", lambda ctx, t: [Finding("no")],
                      scope="plan")
    ctx = Context(load_campaign(CampaignBuilder(tmp_path / "c").write()), Options(),
                  {**CHECKS, plan_only.id: plan_only})
    contexts.append(ctx)
    assert "plan-probe" not in {c.id for c, _ in pairs(ctx)}
    assert pairs(ctx, [plan_only]) == [(plan_only, None)]  # the plan gate names its checks


# ------------------------------------------------------------------ broken campaigns


def test_changed_files_fail_their_items_with_every_finding(
    tmp_path: Path, contexts: list[Context]
) -> None:
    root = CampaignBuilder(tmp_path / "c").write()
    (root / "RELOAD.md").write_bytes(b"changed")
    ctx = context(root, contexts)
    found = failing(ctx)
    message = found["files-intact[RELOAD.md]"].split("\n")
    assert message[0] == "files-intact[RELOAD.md]: 2 problems"
    assert message[1] == ("manifest.json $.files[0].bytes: RELOAD.md is 7 bytes, the manifest "
                          "says 171")
    assert message[4] == "    fix:      the file is truncated or changed: retrieve it again"
    assert message[5] == ("manifest.json $.files[0].sha256: RELOAD.md does not have the sha256 "
                          "recorded in the manifest")
    assert "files-intact[analysis.md]" not in found
    outcome = evaluate(ctx, CHECKS["files-intact"], "RELOAD.md")
    assert outcome.failed
    assert outcome.scope == "file"
    assert len(outcome.findings) == 2
    assert outcome.findings == judge(ctx).findings("files-intact", "RELOAD.md")  # computed once


def test_a_plan_that_does_not_load_leaves_one_item_per_check_saying_why(
    tmp_path: Path, contexts: list[Context]
) -> None:
    root = CampaignBuilder(tmp_path / "c").write()
    (root / "plan.json").write_text("{")
    ctx = context(root, contexts)
    found = failing(ctx)
    assert found["manifest"].startswith(
        "manifest: 1 problem\nplan.json:1:2 $: not JSON: Expecting property name")
    blocked = [c for c in in_order(CHECKS.values())
               if blocked_by_contract(ctx.campaign, c) is not None]
    assert blocked  # every check that needs the plan: one item each, no target
    for check in blocked:
        assert [t for c, t in pairs(ctx) if c is check] == [None]
        assert found[check.id] == (
            f"{check.id}: 1 problem\nnot judged: manifest failed (plan.json did not load)\n"
            "    fix:      fix the problems reported by the 'manifest' item first")
        # One cause, one failure: the others say whose failure they wait on.
        outcome = evaluate(ctx, check, None)
        assert outcome.not_judged == "not judged: manifest failed (plan.json did not load)"
        assert outcome.owners == ("manifest",)
    assert evaluate(ctx, CHECKS["manifest"], None).not_judged is None


def test_a_folder_target_fails_with_its_failing_files_of_all_it_stands_for(
    tmp_path: Path, contexts: list[Context]
) -> None:
    builder = CampaignBuilder(tmp_path / "c")
    for name in ("a", "b", "c"):
        builder.files[f"logs/{name}.log"] = f"log {name}\n".encode()
    root = builder.write()
    (root / "logs/a.log").write_bytes(b"")
    (root / "logs/c.log").write_bytes(b"other\n")
    ctx = context(root, contexts, group_files_above=2)
    outcome = evaluate(ctx, CHECKS["files-intact"], "logs/*")
    assert outcome.of == 3
    assert outcome.files is not None
    assert [path for path, _ in outcome.files] == ["logs/a.log", "logs/c.log"]
    assert outcome.findings == tuple(f for _, found in outcome.files for f in found)
    lines = outcome.message.split("\n")
    # a.log: its size and its sha256; c.log (as long as before): its sha256.
    assert lines[0] == "files-intact[logs/*]: 3 problems in 2 of 3 files"
    assert lines[1].endswith("logs/a.log is 0 bytes, the manifest says 6")
    assert failing(ctx)["files-intact[logs/*]"] == outcome.message


# ------------------------------------------------------------------ the failure text


def test_failure_text_counts_problems_and_strips_control_characters() -> None:
    two = (Finding("first\x1b[31m"), Finding("second"))
    assert Outcome("c", "t\x07", "file", two).message == (
        "c[t\\x07]: 2 problems\nfirst\\x1b[31m\nsecond")
    assert Outcome("c", None, "campaign", (Finding("one"),)).message == "c: 1 problem\none"
    assert Outcome("c", None, "campaign").message == ""


def test_a_folder_failure_shows_the_first_files_in_full_then_names_the_rest() -> None:
    files = tuple((f"logs/{i:02}.log", (Finding(f"bad {i}", where=f"logs/{i:02}.log"),))
                  for i in range(FILES_IN_FULL + 2))
    findings = tuple(f for _, found in files for f in found)
    lines = Outcome("files-intact", "logs/*", "file", findings, files, of=30).message.split("\n")
    assert lines[0] == f"files-intact[logs/*]: {FILES_IN_FULL + 2} problems in 22 of 30 files"
    assert lines[1] == "logs/00.log: bad 0"
    assert lines[FILES_IN_FULL] == "logs/19.log: bad 19"
    assert lines[FILES_IN_FULL + 1:] == [
        "... and 2 more failing files (every finding is in the JSON report):",
        "  logs/20.log: bad 20", "  logs/21.log: bad 21"]


# ------------------------------------------------------------------ one engine, two front ends


# Whether the items run in one process or on workers, pytest says what check_campaign says.
@only_xdist("absent", "on")
def test_check_campaign_and_pytest_fail_the_same_pairs_with_the_same_messages(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    root = campaign.write()
    (root / "RELOAD.md").write_bytes(b"changed")
    (root / "analysis.md").write_bytes(b"")
    campaign.seal()
    verdict = check_campaign(root)
    _, document = itera.reported(root)
    in_process = {(c.check, c.target): c.message
                  for c in verdict.report.checks if c.outcome == "failed"}
    in_pytest = {(c["check"], c["target"]): c["message"]
                 for c in document["checks"] if c["outcome"] == "failed"}
    assert in_pytest == in_process
    assert {("files-intact", "RELOAD.md"), ("files-intact", "analysis.md"),
            ("no-empty-files", None)} <= in_process.keys()
    assert verdict.verdict == document["verdict"] == "rejected"
    # The same pairs ran, failing or not, in the same order.
    assert [(c["check"], c["target"]) for c in document["checks"]] == [
        (c.check, c.target) for c in verdict.report.checks]
