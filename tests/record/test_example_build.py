"""The example campaign: built for real, twice, and held to the closure checks."""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import zipfile
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from pytest_itera.core.campaign import Campaign, load_campaign
from tests.factory import EXAMPLE_START, built_example, unchained

CONTRACT = ("plan.json", "manifest.json")


@pytest.fixture(scope="module")
def root(example_campaign: Path) -> Path:
    return example_campaign  # tests/conftest.py: one build per session


@pytest.fixture(scope="module")
def second(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A second build, only for the determinism test (one extra build per session)."""
    return built_example(tmp_path_factory.mktemp("second") / "campaign")


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
               ("manifest.json", "schedule/observed.json", "itera-journal.jsonl")), differing
    assert "plan.json" not in differing
    assert not [p for p in differing if p.endswith("predictions.jsonl")]
    # The journal hashes each .pt save as it is written: only those sha256s differ (and the
    # chain, each line's prev, from the first of them on).
    lines = [first["itera-journal.jsonl"].read_text("utf-8").splitlines(),
             again["itera-journal.jsonl"].read_text("utf-8").splitlines()]
    assert len(lines[0]) == len(lines[1])
    for one, other in zip(*lines, strict=True):
        a, b = unchained(json.loads(one)), unchained(json.loads(other))
        if a != b:
            if a["event"] == "close":  # the digest of a manifest that hashes the .pt files
                assert {**a, "manifest_digest": ""} == {**b, "manifest_digest": ""}
                continue
            assert a["event"] == "checkpoint", (one, other)
            assert a["path"].endswith(".pt"), (one, other)
            assert {**a, "sha256": ""} == {**b, "sha256": ""}


def test_a_non_empty_output_folder_is_refused(tmp_path: Path) -> None:
    """In this process: the refusal comes before any training (a SystemExit whose message
    Python prints to stderr, exit status 1), no new interpreter needed to see it."""
    from example_campaign.__main__ import main

    out = tmp_path / "campaign"
    out.mkdir()
    (out / "old.txt").write_text("previous results\n")
    with pytest.raises(SystemExit) as refused:
        main(["--out", str(out), "--start", EXAMPLE_START])
    assert isinstance(refused.value.code, str)  # a message: exit status 1
    assert "is not empty; a campaign folder is written once" in refused.value.code
    assert sorted(p.name for p in out.iterdir()) == ["old.txt"]


# ------------------------------------------------------------- evidence


def role(campaign: Campaign, run_id: str) -> str:
    return str(plan(campaign).run(run_id).role)


def rows_of(campaign: Campaign, relpath: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (campaign.root / relpath).read_text().splitlines()]


def series(campaign: Campaign, run_id: str, name: str = "loss") -> list[tuple[int, float]]:
    """A run's series from its measurements file, non-finite strings read as floats."""
    run = manifest(campaign).run(run_id)
    return [(row["step"], float(row[name])) for row in rows_of(campaign, run.measurements)
            if name in row]


def metrics_line(campaign: Campaign, run_id: str) -> dict[str, Any] | None:
    rows = rows_of(campaign, manifest(campaign).run(run_id).measurements)
    found = [row["metrics"] for row in rows if "metrics" in row]
    assert len(found) <= 1
    return found[0] if found else None


def test_the_documents_are_the_v2_contract(root: Path) -> None:
    plan_data = json.loads((root / "plan.json").read_text())
    manifest_data = json.loads((root / "manifest.json").read_text())
    assert plan_data["format"] == "itera-plan/3"
    assert plan_data["decision"]["computation"] == {
        "kind": "accuracy", "label_field": "label", "prediction_field": "prediction",
        "where": {"split": "test"}, "relative_to": "control"}
    assert manifest_data["format"] == "itera-manifest/2"
    assert "corpus" not in plan_data
    assert all("deliverable" not in run for run in manifest_data["runs"])


def test_every_run_with_metrics_has_them_in_its_measurements(campaign: Campaign) -> None:
    for run in manifest(campaign).runs:
        if run.outcome == "dropped":
            assert run.measurements is None
            continue
        assert run.measurements == f"runs/{run.id}/measurements.jsonl", run.id
        assert metrics_line(campaign, run.id) == dict(run.metrics), run.id


def test_every_training_run_logs_its_loss_series(campaign: Campaign) -> None:
    for run_id in ("pilot", "control", "variant-wide", "variant-hot-lr", "control-noisy",
                   "variant-wide-noisy"):
        steps = [s for s, _ in series(campaign, run_id)]
        assert steps == list(range(1, len(steps) + 1)), run_id
        if manifest(campaign).run(run_id).outcome == "accepted":
            assert steps[-1] == manifest(campaign).run(run_id).metrics["steps"], run_id


# ------------------------------------------------------------------ runs


def test_runs_have_the_planned_outcomes(campaign: Campaign) -> None:
    outcomes = {r.id: r.outcome for r in manifest(campaign).runs}
    assert outcomes == {
        "data-check": "accepted", "pilot": "accepted", "control": "accepted",
        "resume-check": "accepted", "variant-wide": "accepted",
        "variant-hot-lr": "stopped", "variant-deep": "dropped",
        "control-noisy": "accepted", "variant-wide-noisy": "accepted",
    }
    roles = {r.id: (r.role, r.category) for r in plan(campaign).runs}
    assert roles["control"] == roles["control-noisy"] == ("control", "must")
    assert roles["data-check"] == ("data_check", "must")
    assert roles["resume-check"] == ("resume_check", "must")
    assert roles["variant-deep"] == ("variant", "exploratory")


def test_configs_match_the_planned_hashes_and_name_their_corpus(campaign: Campaign) -> None:
    for run in manifest(campaign).runs:
        if run.outcome == "dropped":
            continue
        planned = plan(campaign).run(run.id)
        data = (campaign.root / run.config).read_bytes()
        assert run.config_sha256 == planned.config_sha256 == hashlib.sha256(data).hexdigest()
        if planned.corpus is not None:
            assert json.loads(data)["corpus"] == planned.corpus


def test_the_stop_rules_have_machine_readable_parameters(campaign: Campaign) -> None:
    rules = {r.id: (r.kind, dict(r.parameters)) for r in plan(campaign).stop_rules}
    assert rules["non-finite-loss"] == ("non_finite_loss", {"series": "loss"})
    assert rules["quality-below"] == ("quality_below", {
        "metric": "validation_accuracy", "threshold": 0.5, "direction": "higher",
        "split": "validation"})
    assert rules["no-usable-resume"] == ("no_resume", {"resume_check": "resume-check"})
    for corpus in plan(campaign).corpora:
        kind, params = rules[f"{corpus.id}-truncated"]
        data = (campaign.root / corpus.path).read_bytes()
        assert kind == "input_truncated"
        assert params == {"input": corpus.id, "examples": corpus.examples, "bytes": len(data),
                          "sha256": hashlib.sha256(data).hexdigest()}


def test_the_hot_lr_variant_is_stopped_where_its_loss_became_non_finite(
    campaign: Campaign,
) -> None:
    run = manifest(campaign).run("variant-hot-lr")
    assert run.stop.rule == "non-finite-loss"
    points = series(campaign, "variant-hot-lr")
    first = next(s for s, v in points if not math.isfinite(v))
    assert run.stop.step == first == points[-1][0] > 1
    assert all(math.isfinite(v) for _, v in points[:-1])
    raw = rows_of(campaign, run.measurements)
    assert [r["loss"] for r in raw if r.get("step") == first] in (["NaN"], ["Infinity"],
                                                                   ["-Infinity"])
    assert f"at step {first} of 420" in run.stop.reason
    assert run.corpus is None
    assert run.predictions is None
    assert run.started_at >= plan(campaign).frozen_at


def test_accepted_runs_do_not_trigger_the_declared_rules(campaign: Campaign) -> None:
    for run in manifest(campaign).runs:
        if run.outcome != "accepted":
            continue
        assert all(math.isfinite(v) for _, v in series(campaign, run.id)), run.id
        if "validation_accuracy" in run.metrics:
            assert run.metrics["validation_accuracy"] >= 0.5, run.id


def test_the_dropped_run_has_a_recorded_decision(campaign: Campaign) -> None:
    run = manifest(campaign).run("variant-deep")
    decisions = {d.id: d for d in manifest(campaign).schedule.decisions}
    assert run.decision in decisions
    assert decisions[run.decision].drops == ("variant-deep",)
    assert "label-rule agreement" in decisions[run.decision].text
    pilot = manifest(campaign).run("pilot")
    assert decisions[run.decision].at >= pilot.ended_at


def test_every_recorded_moment_follows_the_frozen_plan(campaign: Campaign) -> None:
    frozen = plan(campaign).frozen_at
    moments = [manifest(campaign).closed_at]
    for run in manifest(campaign).runs:
        moments += [m for m in (run.started_at, run.ended_at) if m is not None]
        if run.stop is not None and run.stop.at is not None:
            moments.append(run.stop.at)
    moments += [d.at for d in manifest(campaign).schedule.decisions if d.at is not None]
    assert len(moments) > 10
    assert all(m > frozen for m in moments)


# ------------------------------------------------------- corpora, predictions


def test_two_distinct_frozen_corpora_are_shipped(campaign: Campaign) -> None:
    from example_campaign.make_corpus import CORPORA

    corpora = plan(campaign).corpora
    assert [c.id for c in corpora] == ["rings-600-v1", "rings-noisy-400-v1"]
    assert len({c.sha256 for c in corpora}) == 2
    for corpus, spec in zip(corpora, CORPORA, strict=True):
        data = (campaign.root / corpus.path).read_bytes()
        assert data == spec.path.read_bytes()  # the committed, frozen file
        assert hashlib.sha256(data).hexdigest() == corpus.sha256
        assert corpus.examples == spec.examples == data.count(b"\n")


def corpus_ids(campaign: Campaign, corpus_id: str) -> list[str]:
    corpus = plan(campaign).corpus_by_id(corpus_id)
    lines = (campaign.root / corpus.path).read_text().splitlines()
    return [json.loads(line)[corpus.id_field] for line in lines]


def test_predictions_cover_the_corpus_of_their_run_exactly(campaign: Campaign) -> None:
    with_predictions = [r for r in manifest(campaign).runs if r.predictions]
    assert {r.id: r.corpus for r in with_predictions} == {
        "pilot": "rings-600-v1", "control": "rings-600-v1", "variant-wide": "rings-600-v1",
        "control-noisy": "rings-noisy-400-v1", "variant-wide-noisy": "rings-noisy-400-v1",
    }
    for run in with_predictions:
        ids = corpus_ids(campaign, run.corpus)
        assert len(ids) == len(set(ids))
        rows = rows_of(campaign, run.predictions)
        assert [r["id"] for r in rows] == ids, run.id
        assert {r["split"] for r in rows} == {"train", "validation", "test"}
        assert plan(campaign).run(run.id).corpus == run.corpus


def test_the_data_check_records_each_corpus_it_measured(campaign: Campaign) -> None:
    run = manifest(campaign).run("data-check")
    checked = [row["checked_input"] for row in rows_of(campaign, run.measurements)
               if "checked_input" in row]
    expected = []
    for corpus in plan(campaign).corpora:
        data = (campaign.root / corpus.path).read_bytes()
        expected.append({"input": corpus.id, "sha256": corpus.sha256,
                         "examples": corpus.examples, "bytes": len(data)})
    assert checked == expected
    assert run.predictions is None
    assert run.corpus is None


def test_the_conclusion_follows_from_the_metrics(campaign: Campaign) -> None:
    decision = plan(campaign).decision
    scored = [r for r in manifest(campaign).runs if decision.metric in r.metrics]
    assert {r.id for r in scored} == {"variant-wide", "variant-wide-noisy"}
    meets = sorted(r.id for r in scored if r.metrics[decision.metric] >= decision.threshold)
    assert sorted(manifest(campaign).conclusion.meets_threshold) == meets
    for variant, control in (("variant-wide", "control"),
                             ("variant-wide-noisy", "control-noisy")):
        gain = manifest(campaign).run(variant).metrics
        base = manifest(campaign).run(control).metrics
        assert gain[decision.metric] == pytest.approx(gain["test_accuracy"]
                                                      - base["test_accuracy"])
        assert variant in manifest(campaign).conclusion.text
    if not meets:
        assert manifest(campaign).conclusion.text.startswith("Negative result")


# ------------------------------------------------------------- resume


def test_the_resume_check_resumed_the_controls_early_save_and_matched(
    campaign: Campaign,
) -> None:
    import torch

    run = manifest(campaign).run("resume-check")
    source = run.resumed_from
    assert source.checkpoint == "runs/control/step-105.pt"
    (listed,) = [c for c in manifest(campaign).checkpoints if c.path == source.checkpoint]
    assert (listed.run, listed.kind) == ("control", "resume")
    saved = torch.load(campaign.root / source.checkpoint, weights_only=True, mmap=True)
    assert saved["progress"]["step"] == source.step == 105
    resumed = series(campaign, "resume-check")
    control = dict(series(campaign, "control"))
    assert [s for s, _ in resumed] == list(range(106, 211))
    assert all(control[s] == v for s, v in resumed)  # exact on CPU
    report = json.loads((campaign.root / "runs/resume-check/report.json").read_text())
    assert report["losses_equal_control_bitwise"] is True
    assert "new Python process" in report["resumed_in"]
    assert run.metrics["max_abs_loss_difference"] == 0.0
    assert run.predictions is None


def test_the_resume_check_ships_a_checkpoint_covering_the_resume_state(
    campaign: Campaign,
) -> None:
    import torch

    required = set(plan(campaign).checkpoint_policy.resume_state)
    own = [c for c in manifest(campaign).checkpoints
           if c.run == "resume-check" and c.kind == "resume"]
    assert [c.path for c in own] == ["runs/resume-check/step-210.pt"]
    loaded = torch.load(campaign.root / own[0].path, weights_only=True, mmap=True)
    assert required <= set(loaded)
    assert loaded["progress"]["step"] == 210


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


def test_every_accepted_control_and_variant_ships_an_artifact(campaign: Campaign) -> None:
    owners = {c.run for c in manifest(campaign).checkpoints}
    owners |= {a.run for a in manifest(campaign).adapters}
    for run in manifest(campaign).runs:
        if run.outcome == "accepted" and role(campaign, run.id) in ("control", "variant"):
            assert run.id in owners


def shell_tree_digest(folder: Path) -> str:
    """docs/contract-v2.md's tree digest, computed the way its shell pipeline does."""
    lines = "".join(f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {rel}\n" for rel, p in
                    sorted(((p.relative_to(folder).as_posix(), p) for p in folder.rglob("*")
                            if p.is_file()), key=lambda item: item[0].encode()))
    return hashlib.sha256(lines.encode()).hexdigest()


def test_the_shipped_base_is_pinned_by_revision_and_tree_digest(campaign: Campaign) -> None:
    (adapter,) = manifest(campaign).adapters
    base = campaign.root / adapter.base_path
    assert adapter.base_path == "runs/control/base"
    assert base.is_dir()
    assert sorted(p.name for p in base.iterdir()) == [
        "config.json", "itera-base.json", "model.safetensors"]
    recorded = json.loads((base / "itera-base.json").read_text())
    config = json.loads((campaign.root / adapter.path / "adapter_config.json").read_text())
    assert re.fullmatch(r"[0-9a-f]{40}", adapter.base_revision)
    assert recorded == {"model": adapter.base_model, "revision": adapter.base_revision}
    assert config["revision"] == adapter.base_revision
    assert config["base_model_name_or_path"] == adapter.base_path
    assert adapter.base_digest == shell_tree_digest(base)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git to replay the commit")
def test_the_base_revision_is_the_git_commit_of_its_files(
    campaign: Campaign, tmp_path: Path
) -> None:
    """RELOAD.md's own commands, run: git gives the recorded revision."""
    (adapter,) = manifest(campaign).adapters
    text = (campaign.root / manifest(campaign).reload_instructions).read_text()
    block = next(b for b in re.findall(r"```bash\n(.*?)```", text, flags=re.S)
                 if "git rev-parse HEAD" in b)
    workdir = tmp_path / "copy"
    shutil.copytree(campaign.root, workdir)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    done = subprocess.run(["bash", "-euc", block], cwd=workdir, env=env, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == adapter.base_revision


def test_the_adapter_is_a_peft_lora_on_the_shipped_base(
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
    assert config["peft_type"] == "LORA"
    model = build_model(json.loads((campaign.root / "configs/control.json").read_text()))
    model.load_state_dict(load_file(campaign.root / adapter.base_path / "model.safetensors"))
    adapted = PeftModel.from_pretrained(model, str(campaign.root / adapter.path)).eval()
    corpus = plan(campaign).corpus_by_id(manifest(campaign).run("control").corpus)
    examples = [e for e in read_corpus(campaign.root / corpus.path) if e.split == "test"]
    features, labels = tensors(examples)
    with torch.no_grad():
        predicted = adapted(features).argmax(dim=1)
    accuracy = round(float((predicted == labels).float().mean()), 4)
    assert accuracy == manifest(campaign).run("control").metrics["adapter_test_accuracy"]


# ----------------------------------------------------- budget, schedule


def test_two_corpora_for_one_lot_cost_23_57_each(campaign: Campaign) -> None:
    report = manifest(campaign).budget
    (lot,) = plan(campaign).budget.lots
    assert (lot.price, lot.quantity, lot.days) == ("47.14", 1, 3)
    assert report.rental_total == str(Decimal(lot.price) * lot.quantity) == "47.14"
    sha = {c.id: c.sha256 for c in plan(campaign).corpora}
    delivered = {sha[r.corpus] for r in manifest(campaign).runs
                 if r.outcome == "accepted" and role(campaign, r.id) in ("control", "variant")}
    assert report.unit == "corpus"
    assert report.accepted_deliverables == len(delivered) == 2
    assert report.cost_per_deliverable == "23.57"


def test_the_included_expense_comes_with_its_receipt(campaign: Campaign) -> None:
    (expense,) = manifest(campaign).budget.included_expenses
    assert expense.amount == "1.20"
    assert expense.source.reference == "ORD-88213"
    listed = {f.path for f in manifest(campaign).files}
    assert expense.source.file in listed
    receipt = (campaign.root / expense.source.file).read_text()
    assert f"Total paid: {expense.amount} USD" in receipt
    assert expense.source.reference in receipt
    for word in ("estimat", "approx", "tax", "%", "/h", "hour"):
        assert word not in receipt.lower() + expense.label.lower(), word


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
    assert makespan(schedule.steps, planned) == schedule.sequential_hours == 58
    assert sum(planned.values()) > 58  # the human draft overlaps the GPU steps
    assert schedule.window_hours - schedule.sequential_hours == schedule.uncommitted_hours == 14
    required = {"setup", "data_load", "validation", "checkpoint_save", "checkpoint_restore",
                "output", "retrieval"}
    kinds = {s.kind for s in schedule.steps}
    assert {*required, "decision", "preparation"} <= kinds
    assert all(s.hours > 0 for s in schedule.steps if s.kind in required)
    policy = plan(campaign).checkpoint_policy
    assert policy.interval_hours <= policy.tolerable_loss_hours


def test_the_schedule_names_runs_and_orders_outputs_before_retrieval(
    campaign: Campaign,
) -> None:
    steps = {s.id: s for s in plan(campaign).schedule.steps}
    assert all(s.run is not None for s in steps.values() if s.kind == "training")
    retrieve = steps["retrieve"]
    assert {"write-outputs", "save-checkpoint", "restore-checkpoint"} <= set(retrieve.after)
    assert "save-checkpoint" in steps["restore-checkpoint"].after
    assert "train-pilot" in steps["decide-after-pilot"].after
    assert steps["retrieve"].resource == "network"
    assert {s.lot for s in steps.values() if s.resource not in ("human", "network")} == {
        "rtx4090-3d"}


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
    text = (campaign.root / manifest(campaign).analysis).read_text()
    for control in ("control", "control-noisy"):
        rows = rows_of(campaign, f"runs/{control}/predictions.jsonl")
        errors = [r for r in rows if r["split"] == "test" and r["label"] != r["prediction"]]
        assert f"{control} makes {len(errors)} errors on the test split." in text
        for label in ("inner", "middle", "outer"):
            wrong = sum(r["label"] == label for r in errors)
            assert any(line.startswith(f"| {label} |") and line.endswith(f"| {wrong} |")
                       for line in text.splitlines()), label


def test_the_analysis_names_every_compared_run(campaign: Campaign) -> None:
    text = (campaign.root / manifest(campaign).analysis).read_text()
    compared = [r.id for r in manifest(campaign).runs
                if r.outcome == "accepted" and role(campaign, r.id) in ("control", "variant")]
    assert sorted(compared) == ["control", "control-noisy", "variant-wide", "variant-wide-noisy"]
    for run_id in compared:
        assert re.search(rf"(?<![\w-]){re.escape(run_id)}(?![\w-])", text), run_id
    for corpus in plan(campaign).corpora:
        assert f"## {corpus.id}" in text


def test_reload_instructions_cover_every_artifact(campaign: Campaign) -> None:
    text = (campaign.root / manifest(campaign).reload_instructions).read_text()
    for record in manifest(campaign).checkpoints:
        assert f"`{record.path}`" in text
    for adapter in manifest(campaign).adapters:
        assert f"`{adapter.path}`" in text
        assert adapter.base_path in text
        assert adapter.base_digest in text
    assert "weights_only=True" in text
    assert "PeftModel.from_pretrained" in text


def test_every_save_of_the_overwritten_last_pt_is_journaled_and_judged(root: Path) -> None:
    """Issue 24, points 8 and 9: runs/control/last.pt is written every checkpoint_every_steps
    steps; the journal holds each save (sha256, step, moment on the rental's timeline), the
    last one is the file shipped, and the saves are within the tolerable loss."""
    from pytest_itera.core.journal import JOURNAL_FILE
    from pytest_itera.report.verify import builtin_checks, check_campaign

    lines = (root / JOURNAL_FILE).read_text("utf-8").splitlines()
    saves = [e for e in map(json.loads, lines)
             if e["event"] == "checkpoint" and e["path"] == "runs/control/last.pt"]
    assert [s["step"] for s in saves] == [105, 210, 315, 420, 420]  # 4 saves, then listed
    assert saves[-1]["sha256"] == hashlib.sha256(
        (root / "runs/control/last.pt").read_bytes()).hexdigest()
    assert len({s["at"] for s in saves[:4]}) == 4
    registry = {k: v for k, v in builtin_checks().items()
                if k in ("plan-vs-actual", "journal-agrees")}
    assert list(check_campaign(root, checks=registry).findings) == []
