"""The example campaign: built for real, twice, and held to the closure checks."""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import sys
import zipfile
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from pytest_itera.campaign import Campaign, load_campaign

WORKTREE = Path(__file__).resolve().parents[1]
START = "2026-01-05T08:00:00Z"
CONTRACT = ("plan.json", "manifest.json")


def build(out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(WORKTREE)}
    return subprocess.run(
        [sys.executable, "-m", "example_campaign", "--out", str(out), *extra],
        cwd=out.parent, env=env, capture_output=True, text=True, timeout=180, check=False,
    )


def built(factory: pytest.TempPathFactory, name: str) -> Path:
    out = factory.mktemp(name) / "campaign"
    done = build(out, "--start", START)
    assert done.returncode == 0, done.stderr
    return out


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return built(tmp_path_factory, "first")


@pytest.fixture(scope="module")
def second(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A second build, only for the determinism test (one extra build per session)."""
    return built(tmp_path_factory, "second")


@pytest.fixture(scope="module")
def campaign(root: Path) -> Campaign:
    return load_campaign(root)


def files_on_disk(root: Path) -> dict[str, Path]:
    return {p.relative_to(root).as_posix(): p for p in sorted(root.rglob("*")) if p.is_file()}


def manifest(campaign: Campaign) -> Any:
    assert campaign.manifest is not None
    return campaign.manifest


def plan(campaign: Campaign) -> Any:
    assert campaign.plan is not None
    return campaign.plan


# ------------------------------------------------------------- the folder


def test_the_contract_loads_without_errors(campaign: Campaign) -> None:
    assert campaign.errors == ()
    assert manifest(campaign).plan.sha256 == hashlib.sha256(
        (campaign.root / "plan.json").read_bytes()
    ).hexdigest()


def test_every_file_is_listed_with_its_size_and_hash(campaign: Campaign) -> None:
    on_disk = files_on_disk(campaign.root)
    listed = {f.path: f for f in manifest(campaign).files}
    assert sorted(listed) == sorted(p for p in on_disk if p not in CONTRACT)
    for path, record in listed.items():
        data = on_disk[path].read_bytes()
        assert record.bytes == len(data), path
        assert record.sha256 == hashlib.sha256(data).hexdigest(), path


def test_no_file_is_empty(root: Path) -> None:
    assert [p for p, full in files_on_disk(root).items() if full.stat().st_size == 0] == []


def test_no_byte_points_into_a_temporary_folder(root: Path) -> None:
    needles = [b"/tmp", b"/var/tmp", b"/dev/shm", b"/var/folders", str(root).encode()]
    for path, full in files_on_disk(root).items():
        data = full.read_bytes()
        assert [n for n in needles if n in data] == [], path
        if path.endswith(".pt"):  # also inside each archive member (torch stores them raw)
            with zipfile.ZipFile(full) as archive:
                for member in archive.namelist():
                    inner = archive.read(member)
                    assert [n for n in needles if n in inner] == [], f"{path}:{member}"


def test_two_builds_are_identical_but_for_checkpoint_ids_and_wall_times(
    root: Path, second: Path
) -> None:
    first, again = files_on_disk(root), files_on_disk(second)
    assert sorted(first) == sorted(again)
    differing = sorted(p for p in first if first[p].read_bytes() != again[p].read_bytes())
    # torch.save writes a random serialization id; wall seconds are measured; the manifest
    # hashes both. Everything else, plan.json and predictions included, is byte-identical.
    assert all(p.endswith(".pt") for p in differing if p not in
               ("manifest.json", "schedule/observed.json")), differing
    assert "plan.json" not in differing
    assert not [p for p in differing if p.endswith("predictions.jsonl")]


def test_a_non_empty_output_folder_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "campaign"
    out.mkdir()
    (out / "old.txt").write_text("previous results\n")
    done = build(out, "--start", START)
    assert done.returncode != 0
    assert "is not empty; a campaign folder is written once" in done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["old.txt"]


# ------------------------------------------------------------------ runs


def test_runs_have_the_planned_outcomes(campaign: Campaign) -> None:
    outcomes = {r.id: r.outcome for r in manifest(campaign).runs}
    assert outcomes == {
        "data-check": "accepted", "pilot": "accepted", "control": "accepted",
        "resume-check": "accepted", "variant-wide": "accepted",
        "variant-hot-lr": "stopped", "variant-deep": "dropped",
    }
    roles = {r.id: (r.role, r.category) for r in plan(campaign).runs}
    assert roles["control"] == ("control", "must")
    assert roles["data-check"] == ("data_check", "must")
    assert roles["resume-check"] == ("resume_check", "must")
    assert roles["variant-deep"] == ("variant", "exploratory")


def test_configs_match_the_planned_hashes(campaign: Campaign) -> None:
    for run in manifest(campaign).runs:
        if run.outcome == "dropped":
            continue
        planned = plan(campaign).run(run.id).config_sha256
        data = (campaign.root / run.config).read_bytes()
        assert run.config_sha256 == planned == hashlib.sha256(data).hexdigest()


def test_the_stopped_run_cites_its_rule_and_step(campaign: Campaign) -> None:
    run = manifest(campaign).run("variant-hot-lr")
    declared = {r.id for r in plan(campaign).stop_rules}
    assert run.stop.rule == "non-finite-loss" in declared
    assert run.stop.step is not None
    assert run.stop.step > 0
    assert f"at step {run.stop.step} of 420" in run.stop.reason
    assert run.deliverable is None
    assert run.predictions is None
    assert run.started_at >= plan(campaign).frozen_at
    last = json.loads((campaign.root / run.measurements).read_text().splitlines()[-1])
    assert last["step"] == run.stop.step
    assert last["non_finite"] in ("nan", "inf", "-inf")


def test_the_dropped_run_has_a_recorded_decision(campaign: Campaign) -> None:
    run = manifest(campaign).run("variant-deep")
    decisions = {d.id: d for d in manifest(campaign).schedule.decisions}
    assert run.decision in decisions
    assert decisions[run.decision].drops == ("variant-deep",)
    assert "label-rule agreement" in decisions[run.decision].text


def test_predictions_cover_the_corpus_exactly(campaign: Campaign) -> None:
    corpus_path = campaign.root / plan(campaign).corpus.path
    assert hashlib.sha256(corpus_path.read_bytes()).hexdigest() == plan(campaign).corpus.sha256
    ids = [json.loads(line)["id"] for line in corpus_path.read_text().splitlines()]
    assert len(ids) == plan(campaign).corpus.examples == len(set(ids))
    with_predictions = [r for r in manifest(campaign).runs if r.predictions]
    assert {r.id for r in with_predictions} == {"pilot", "control", "resume-check", "variant-wide"}
    for run in with_predictions:
        lines = (campaign.root / run.predictions).read_text().splitlines()
        rows = [json.loads(line) for line in lines]
        assert [r["id"] for r in rows] == ids, run.id
        assert {r["split"] for r in rows} == {"train", "validation", "test"}


def test_the_conclusion_follows_from_the_metrics(campaign: Campaign) -> None:
    decision = plan(campaign).decision
    scored = [r for r in manifest(campaign).runs if decision.metric in r.metrics]
    meets = sorted(r.id for r in scored if r.metrics[decision.metric] >= decision.threshold)
    assert sorted(manifest(campaign).conclusion.meets_threshold) == meets
    wide = manifest(campaign).run("variant-wide").metrics
    control = manifest(campaign).run("control").metrics
    assert wide[decision.metric] == pytest.approx(wide["test_accuracy"] - control["test_accuracy"])
    if not meets:
        assert manifest(campaign).conclusion.text.startswith("Negative result")


def test_the_resume_check_resumed_in_a_new_process_and_matched(campaign: Campaign) -> None:
    report = json.loads((campaign.root / "runs/resume-check/report.json").read_text())
    assert report["continued_losses_equal_control_bitwise"] is True
    assert report["first_steps_equal_control"] is True
    assert report["resumed_steps"] == 420 - report["saved_at_step"] > 0
    rows = (campaign.root / "runs/resume-check/measurements.jsonl").read_text().splitlines()
    assert all(json.loads(row)["equal"] for row in rows)


# --------------------------------------------------- checkpoints, adapter


def test_checkpoints_load_with_weights_only_and_hold_what_they_claim(campaign: Campaign) -> None:
    import torch
    from safetensors.torch import load_file

    required = set(plan(campaign).checkpoint_policy.resume_state)
    for record in manifest(campaign).checkpoints:
        path = campaign.root / record.path
        if record.format == "torch":
            loaded = torch.load(path, weights_only=True, mmap=True)
            assert set(record.claims) == required <= set(loaded), record.path
            tensors = list(loaded["model"].values())
        else:
            tensors = list(load_file(path).values())
        assert tensors, record.path
        assert all(bool(torch.isfinite(t).all()) for t in tensors), record.path


def test_the_adapter_is_a_pinned_peft_lora(
    campaign: Campaign, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import torch
    from peft import PeftModel
    from safetensors.torch import load_file

    from example_campaign.data import read_corpus, tensors
    from example_campaign.model import build_model

    (adapter,) = manifest(campaign).adapters
    config = json.loads((campaign.root / adapter.path / "adapter_config.json").read_text())
    base = campaign.root / adapter.base_path
    assert config["peft_type"] == "LORA"
    digest = hashlib.sha256(base.read_bytes()).hexdigest()
    assert config["revision"] == adapter.base_revision == digest
    assert config["base_model_name_or_path"] == adapter.base_path
    model = build_model(json.loads((campaign.root / "configs/control.json").read_text()))
    model.load_state_dict(load_file(base))
    adapted = PeftModel.from_pretrained(model, str(campaign.root / adapter.path)).eval()
    examples = [e for e in read_corpus(campaign.root / plan(campaign).corpus.path)
                if e.split == "test"]
    features, labels = tensors(examples)
    with torch.no_grad():
        predicted = adapted(features).argmax(dim=1)
    accuracy = round(float((predicted == labels).float().mean()), 4)
    assert accuracy == manifest(campaign).run("control").metrics["adapter_test_accuracy"]


# ----------------------------------------------------- budget, schedule


def test_the_budget_is_the_lot_price_for_one_distinct_corpus(campaign: Campaign) -> None:
    report = manifest(campaign).budget
    (lot,) = plan(campaign).budget.lots
    assert (lot.price, lot.quantity, lot.days) == ("47.14", 1, 3)
    assert report.rental_total == str(Decimal(lot.price) * lot.quantity) == "47.14"
    accepted = {r.deliverable for r in manifest(campaign).runs if r.outcome == "accepted"}
    assert report.unit == "corpus"
    assert report.accepted_deliverables == len(accepted) == 1
    assert report.cost_per_deliverable == "47.14"


def makespan(steps: Any, hours: dict[str, float]) -> float:
    ends: dict[str, float] = {}
    free: dict[str, float] = {}
    for step in steps:
        start = max([ends[d] for d in step.after] + [free.get(step.resource, 0.0)])
        ends[step.id] = free[step.resource] = start + hours[step.id]
    return max(ends.values())


def test_the_schedule_fits_and_its_stated_hours_are_right(campaign: Campaign) -> None:
    schedule = plan(campaign).schedule
    planned = {s.id: s.hours for s in schedule.steps}
    assert makespan(schedule.steps, planned) == schedule.sequential_hours == 48
    assert sum(planned.values()) > 48  # the human draft overlaps the GPU steps
    assert schedule.window_hours - schedule.sequential_hours == schedule.uncommitted_hours == 24
    kinds = {s.kind for s in schedule.steps}
    assert {"setup", "data_load", "validation", "checkpoint_save", "checkpoint_restore",
            "output", "retrieval", "decision", "preparation"} <= kinds
    policy = plan(campaign).checkpoint_policy
    assert policy.interval_hours <= policy.tolerable_loss_hours


def test_observed_hours_reconcile_with_the_plan(campaign: Campaign) -> None:
    schedule = plan(campaign).schedule
    actual = manifest(campaign).schedule
    observed = {s.id: s.observed_hours for s in actual.steps}
    assert sorted(observed) == sorted(s.id for s in schedule.steps)
    assert math.isclose(actual.observed_hours, makespan(schedule.steps, observed), abs_tol=1e-3)
    explained = {d.step for d in actual.deviations}
    over = {s.id for s in schedule.steps if abs(observed[s.id] - s.hours) > 0.10 * s.hours}
    assert over == explained == {"train-variant-hot-lr", "train-variant-deep"}
    assert actual.reserved_hours == 72


# ------------------------------------------------------ analysis, reload


def test_the_analysis_states_numbers_computed_from_the_predictions(campaign: Campaign) -> None:
    rows = [json.loads(line) for line in
            (campaign.root / "runs/control/predictions.jsonl").read_text().splitlines()]
    errors = [r for r in rows if r["split"] == "test" and r["label"] != r["prediction"]]
    text = (campaign.root / manifest(campaign).analysis).read_text()
    assert f"The control makes {len(errors)} errors on the test split." in text
    for label in ("inner", "middle", "outer"):
        wrong = sum(r["label"] == label for r in errors)
        assert any(line.startswith(f"| {label} |") and line.endswith(f"| {wrong} |")
                   for line in text.splitlines()), label


def test_reload_instructions_cover_every_checkpoint(campaign: Campaign) -> None:
    text = (campaign.root / manifest(campaign).reload_instructions).read_text()
    for record in manifest(campaign).checkpoints:
        assert f"`{record.path}`" in text
    assert "weights_only=True" in text
    assert "PeftModel.from_pretrained" in text
