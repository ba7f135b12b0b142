"""The producer API: plan freezing, run records, closure, resume checkpoints."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from pytest_itera.checks.engine import judge
from pytest_itera.cli import plan_skeleton
from pytest_itera.core.campaign import MANIFEST_FILE, PLAN_FILE, load_campaign
from pytest_itera.files.scan import DEFAULT_TEMP_PATTERNS, TempMatcher, scan_file
from pytest_itera.record import (
    CampaignRecorder,
    RecordError,
    atomic_write_bytes,
    check_relpath,
    find_temp_path,
)
from pytest_itera.record.base import walk_files
from pytest_itera.record.resume import save_resume_checkpoint
from pytest_itera.record.run import RunRecorder
from tests.factory import unchained
from tests.runner import REPO

CONFIG = b'{"lr": 0.1}\n'
CORPUS = b'{"id": "a"}\n'
CORPUS_2 = b'{"id": "b"}\n{"id": "c"}\n'
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def corpus_entry(corpus_id: str, path: str, data: bytes) -> dict[str, Any]:
    return {"id": corpus_id, "path": path, "sha256": hashlib.sha256(data).hexdigest(),
            "id_field": "id", "examples": data.count(b"\n")}


def make_plan(**changes: Any) -> dict[str, Any]:
    plan: dict[str, Any] = {
        "format": "itera-plan/2",
        "campaign": "unit-campaign",
        "question": "Does the variant beat the control?",
        "decision": {"metric": "accuracy", "direction": "higher", "threshold": 0.5},
        "corpora": [corpus_entry("c1", "corpus.jsonl", CORPUS)],
        "runs": [
            {"id": "control", "role": "control", "category": "must",
             "config_sha256": hashlib.sha256(CONFIG).hexdigest()},
            {"id": "variant", "role": "variant", "category": "useful",
             "config_sha256": hashlib.sha256(CONFIG).hexdigest()},
        ],
        "stop_rules": [
            {"id": "non-finite-loss", "kind": "non_finite_loss", "parameters": {"series": "loss"}},
            {"id": "quality-below", "kind": "quality_below",
             "parameters": {"metric": "validation_accuracy", "threshold": 0.5,
                            "direction": "higher", "split": "validation"}},
        ],
        "checkpoint_policy": {"interval_hours": 1, "tolerable_loss_hours": 2,
                              "resume_state": ["model", "optimizer", "progress"]},
        "schedule": {"window_hours": 72, "steps": [
            {"id": "train", "kind": "training", "resource": "gpu0", "hours": 1}]},
        "budget": {"currency": "USD", "lots": [
            {"id": "lot", "offer": "o", "gpu": "g", "gpus_per_lot": 1, "days": 3,
             "price": "47.14", "quantity": 1}]},
    }
    plan.update(changes)
    return plan


def close_kwargs() -> dict[str, Any]:
    return {
        "analysis": "analysis.md",
        "reload_instructions": "RELOAD.md",
        "conclusion": {"meets_threshold": [], "text": "No variant meets the threshold."},
        "budget": {"currency": "USD", "lots": ["lot"], "rental_total": "47.14", "unit": "corpus",
                   "accepted_deliverables": 1, "cost_per_deliverable": "47.14"},
        "schedule": {"reserved_hours": 72, "observed_hours": 1,
                     "steps": [{"id": "train", "observed_hours": 1}]},
        "check": False,  # the checks' own verdicts are tested with close() below
    }


@pytest.fixture
def rec(tmp_path: Path) -> CampaignRecorder:
    recorder = CampaignRecorder(tmp_path / "camp")
    recorder.write_bytes("corpus.jsonl", CORPUS)
    recorder.write_bytes("configs/control.json", CONFIG)
    recorder.freeze_plan(make_plan())
    return recorder


def finish(rec: CampaignRecorder) -> Path:
    control = rec.run("control")
    control.start()
    control.set_config("configs/control.json")
    control.set_metrics(accuracy=0.9)
    control.accept()
    rec.decide("after-pilot", "variant not needed", drops=["variant"])
    rec.write_text("analysis.md", "errors\n")
    rec.write_text("RELOAD.md", "torch.load(..., weights_only=True)\n")
    return rec.close(**close_kwargs()).manifest


# ------------------------------------------------------------------ plan


def test_freeze_plan_writes_a_valid_plan_and_returns_its_hash(rec: CampaignRecorder) -> None:
    plan_file = rec.root / "plan.json"
    assert rec.plan_sha256 == hashlib.sha256(plan_file.read_bytes()).hexdigest()
    frozen_at = json.loads(plan_file.read_text())["frozen_at"]
    assert frozen_at.endswith("Z")
    assert [p.name for p in rec.root.iterdir() if p.name.endswith(".partial")] == []


def test_a_frozen_plan_is_never_rewritten(rec: CampaignRecorder) -> None:
    before = (rec.root / "plan.json").read_bytes()
    again = CampaignRecorder(rec.root)
    with pytest.raises(RecordError, match="already frozen with different content"):
        again.freeze_plan(make_plan(question="A different question?"))
    assert (rec.root / "plan.json").read_bytes() == before


def test_the_same_plan_frozen_again_is_adopted(rec: CampaignRecorder) -> None:
    again = CampaignRecorder(rec.root)
    assert again.freeze_plan(make_plan()) == rec.plan_sha256


def test_a_draft_in_the_folder_is_frozen_in_place(tmp_path: Path) -> None:
    """new-plan writes a draft (no frozen_at) where the campaign will be: freeze_plan of the
    edited draft sets frozen_at in that file, and the journal pins the frozen plan."""
    root = tmp_path / "camp"
    recorder = CampaignRecorder(root)
    recorder.write_bytes("corpus.jsonl", CORPUS)
    recorder.write_json("plan.json", make_plan(format="itera-plan/2"))  # the edited draft
    draft = json.loads((root / "plan.json").read_text())
    digest = recorder.freeze_plan(draft)
    frozen = json.loads((root / "plan.json").read_text())
    assert frozen == {**draft, "frozen_at": frozen["frozen_at"], "recorded": True}
    assert digest == hashlib.sha256((root / "plan.json").read_bytes()).hexdigest()
    assert CampaignRecorder(root).freeze_plan(draft) == digest  # continuing adopts it


def test_schema_errors_are_listed_with_their_json_paths(tmp_path: Path) -> None:
    plan = make_plan(colour="blue")
    plan["budget"]["lots"][0]["price"] = 47.14
    with pytest.raises(RecordError) as info:
        CampaignRecorder(tmp_path).freeze_plan(plan)
    message = str(info.value)
    assert message.startswith("plan.json does not follow the schema:")
    assert '$.budget.lots[0].price: the number 47.14 is not money' in message
    assert 'write "47.14"' in message
    assert "'colour' was unexpected" in message
    assert not (tmp_path / "plan.json").exists()


def test_runs_need_a_frozen_plan(tmp_path: Path) -> None:
    with pytest.raises(RecordError, match=r"freeze the plan \(freeze_plan\) before"):
        CampaignRecorder(tmp_path).run("control")


# --------------------------------------------------------------- paths


@pytest.mark.parametrize(
    ("value", "root"),
    [("/tmp/run/x.pt", "/tmp/"), ("see /var/folders/q1/T/x", "/var/folders/"),
     ("/dev/shm", "/dev/shm/"), ("C:\\Users\\me\\AppData\\Local\\Temp\\x", "AppData\\Local\\Temp"),
     ("c:\\users\\me\\appdata\\local\\temp\\x", "AppData\\Local\\Temp"), ("%TEMP%\\x", "%TEMP%")],
)
def test_temp_paths_are_found(value: str, root: str) -> None:
    assert find_temp_path(value) == root


@pytest.mark.parametrize("value", ["/tmp/run/x.pt", "runs/tmp/x.pt", "/tmpfs-note",
                                   "C:\\Users\\me\\AppData\\Local\\Temp\\x", "a.pt"])
def test_the_recorder_refuses_what_the_plugin_reports(tmp_path: Path, value: str) -> None:
    """One rule: a string the recorder lets through is one no-temp-paths passes."""
    path = tmp_path / "note.txt"
    path.write_text(value)
    facts = scan_file(path, "note.txt", TempMatcher(DEFAULT_TEMP_PATTERNS))
    reported = facts.hits[0].pattern if facts.hits else None
    assert find_temp_path(value) == reported


@pytest.mark.parametrize("value", ["runs/tmp/x.pt", "/tmpfs-note", "my/var/tmpdir", "a.pt"])
def test_ordinary_strings_are_not_temp_paths(value: str) -> None:
    assert find_temp_path(value) is None


def test_the_current_tempdir_counts_as_temporary(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", "/scratch/job42")
    assert find_temp_path("/scratch/job42/base") == "/scratch/job42/"


def test_a_plan_pointing_into_tmp_is_refused(tmp_path: Path) -> None:
    plan = make_plan()
    plan["runs"][0]["description"] = "weights cached in /tmp/hf/base"
    expected = r"\$\.runs\[0\]\.description: .* temporary folder '/tmp/'"
    with pytest.raises(RecordError, match=expected):
        CampaignRecorder(tmp_path).freeze_plan(plan)


def test_a_manifest_pointing_into_tmp_is_refused(rec: CampaignRecorder) -> None:
    rec.write_text("adapter/adapter_config.json", "{}\n")
    # Refused when recorded: neither the journal nor the manifest ever holds it.
    with pytest.raises(RecordError, match=r"\$\.base_model: '/tmp/hub/base' points into"):
        rec.add_adapter("adapter", run="control", base_model="/tmp/hub/base",
                        base_revision="a" * 40)
    assert "/tmp/hub" not in (rec.root / "itera-journal.jsonl").read_text()
    finish(rec)


@pytest.mark.parametrize(
    ("value", "why"),
    [("../escape.txt", "'..' leaves the campaign folder"), ("/abs/x.pt", "is absolute"),
     ("C:/x.pt", "is absolute"), ("runs\\x.pt", "contains a backslash"),
     ("runs//x.pt", "is not normalized"), ("./x.pt", "is not normalized"), ("", "is empty"),
     ("runs/../x.pt", "contains '..' (write the normalized path)")],
)
def test_unsafe_relative_paths_are_refused(value: str, why: str) -> None:
    with pytest.raises(RecordError, match=re.escape(why)):
        check_relpath(value, field="files.path")


def test_path_is_ready_for_a_library_to_write_to(rec: CampaignRecorder) -> None:
    target = rec.path("runs/control/ckpt/step-1.pt")
    assert target == rec.root / "runs/control/ckpt/step-1.pt"
    assert target.parent.is_dir()
    with pytest.raises(RecordError, match=r"'\.\.' leaves the campaign folder"):
        rec.path("../outside/x.pt")
    assert not (rec.root.parent / "outside").exists()


def test_writes_and_records_refuse_escaping_paths(rec: CampaignRecorder) -> None:
    with pytest.raises(RecordError, match=r"'\.\.' leaves the campaign folder"):
        rec.write_text("../escape.txt", "x")
    with pytest.raises(RecordError, match="is absolute"):
        rec.add_checkpoint("/abs/x.pt", run="control", format="torch", kind="resume")
    assert not (rec.root.parent / "escape.txt").exists()


# ---------------------------------------------------------------- runs


def test_a_stop_must_cite_a_declared_rule(rec: CampaignRecorder) -> None:
    run = rec.run("variant")
    run.start()
    with pytest.raises(RecordError, match="stop rule 'loss-spike' is not declared in the plan "
                                          r"\(declared: non-finite-loss, quality-below\)"):
        run.stop("loss-spike", "loss jumped", step=3)
    run.stop("non-finite-loss", "loss was nan", step=3)
    assert run.record["stop"]["rule"] == "non-finite-loss"
    assert run.record["stop"]["step"] == 3


def test_unplanned_runs_and_changed_configs_are_refused(rec: CampaignRecorder) -> None:
    with pytest.raises(RecordError, match=r"run 'extra' is not in the plan \(planned: control"):
        rec.run("extra")
    rec.write_text("configs/changed.json", '{"lr": 0.2}\n')
    run = rec.run("control")
    run.start()
    with pytest.raises(RecordError, match="a changed configuration needs a new run ID"):
        run.set_config("configs/changed.json")


def test_non_finite_metrics_are_refused(rec: CampaignRecorder) -> None:
    with pytest.raises(RecordError, match=r"metric loss=nan is not finite"):
        rec.run("control").set_metrics(loss=float("nan"))


# ------------------------------------------------------------- closure


def test_close_writes_a_manifest_the_loader_accepts(rec: CampaignRecorder) -> None:
    manifest_path = finish(rec)
    campaign = load_campaign(rec.root)
    assert campaign.errors == ()
    assert campaign.manifest is not None
    assert campaign.manifest.format == "itera-manifest/2"
    listed = {f.path: f for f in campaign.manifest.files}
    assert sorted(listed) == ["RELOAD.md", "analysis.md", "configs/control.json", "corpus.jsonl",
                              "itera-journal.jsonl", "runs/control/measurements.jsonl"]
    for path, record in listed.items():
        data = (rec.root / path).read_bytes()
        assert (record.bytes, record.sha256) == (len(data), hashlib.sha256(data).hexdigest())
    assert campaign.manifest.plan.sha256 == rec.plan_sha256
    variant = campaign.manifest.run("variant")
    assert variant is not None
    assert (variant.outcome, variant.decision) == ("dropped", "after-pilot")
    assert json.loads(manifest_path.read_text())["schedule"]["decisions"][0]["drops"] == ["variant"]


def test_close_refuses_runs_without_an_outcome(rec: CampaignRecorder) -> None:
    rec.write_text("analysis.md", "a\n")
    rec.write_text("RELOAD.md", "r\n")
    with pytest.raises(RecordError, match="planned runs without an outcome: control, variant"):
        rec.close(**close_kwargs())


def test_close_refuses_empty_files(rec: CampaignRecorder) -> None:
    (rec.root / "runs").mkdir()
    (rec.root / "runs" / "empty.txt").write_bytes(b"")
    with pytest.raises(RecordError, match=r"empty files in the campaign: runs/empty\.txt"):
        finish(rec)


def test_close_refuses_a_plan_edited_on_disk(rec: CampaignRecorder) -> None:
    plan_file = rec.root / "plan.json"
    plan_file.write_text(plan_file.read_text().replace("Does the", "Did the"))
    with pytest.raises(RecordError, match=r"plan\.json changed on disk after freezing"):
        finish(rec)


def test_close_refuses_symlinks(rec: CampaignRecorder) -> None:
    (rec.root / "link").symlink_to("/etc/hostname")
    with pytest.raises(RecordError, match="link is a symbolic link that leaves the campaign "
                                          "folder: the campaign must hold what it lists"):
        finish(rec)


def test_the_listed_files_are_the_tree_walks_regular_files_sorted(tmp_path: Path) -> None:
    """The manifest's file list: sorted by path across folders, the two contract documents
    left out, a link to a file inside listed; a FIFO or a link to a folder is refused."""
    for relpath in ("b.txt", "a/z.txt", "a.txt", "a/b/c.txt", PLAN_FILE, MANIFEST_FILE):
        (tmp_path / relpath).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relpath).write_text("x")
    (tmp_path / "a/last.txt").symlink_to("z.txt")
    assert walk_files(tmp_path) == [(p, tmp_path / p) for p in (
        "a.txt", "a/b/c.txt", "a/last.txt", "a/z.txt", "b.txt")]
    (tmp_path / "folder-link").symlink_to("a")
    with pytest.raises(RecordError, match=r"^folder-link is a symbolic link that points to "
                                          "something that is not a regular file"):
        walk_files(tmp_path)
    (tmp_path / "folder-link").unlink()
    os.mkfifo(tmp_path / "a/pipe")
    with pytest.raises(RecordError, match=r"^a/pipe is not a regular file$"):
        walk_files(tmp_path)


# ------------------------------------------------- itera-plan/2 evidence


def test_a_v1_plan_is_refused_the_recorder_writes_v2(tmp_path: Path) -> None:
    plan = make_plan(format="itera-plan/1")
    with pytest.raises(RecordError, match=r"writes itera-plan/2, not 'itera-plan/1'"):
        CampaignRecorder(tmp_path).freeze_plan(plan)
    plan = make_plan()
    del plan["format"]  # the default
    CampaignRecorder(tmp_path).freeze_plan(plan)
    assert json.loads((tmp_path / "plan.json").read_text())["format"] == "itera-plan/2"


def test_a_corpus_that_is_not_the_planned_one_is_refused(tmp_path: Path) -> None:
    recorder = CampaignRecorder(tmp_path)
    recorder.write_bytes("corpus.jsonl", CORPUS_2)
    with pytest.raises(RecordError, match=r"corpus\.jsonl in the folder does not have the sha256"):
        recorder.freeze_plan(make_plan())
    assert not (tmp_path / "plan.json").exists()


def test_a_truncation_rule_left_at_the_drafts_600_examples_is_refused_at_freeze(
    tmp_path: Path,
) -> None:
    """Met writing the guides: the script set the new-plan draft's corpus entry to its
    corpus (2 examples) but left the corpus-truncated rule at the draft's 600; the plan was
    frozen, and every check then failed a campaign that could never be accepted."""
    plan = plan_skeleton("guide")
    recorder = CampaignRecorder(tmp_path)
    recorder.write_bytes("data/corpus.jsonl", CORPUS_2)
    plan["corpora"][0].update(sha256=hashlib.sha256(CORPUS_2).hexdigest(), examples=2)
    with pytest.raises(RecordError, match=re.escape(
            "plan: stop rule 'corpus-truncated' (input_truncated) expects 600 examples of "
            "corpus 'corpus-v1', but the plan's corpora[0] freezes 2: the frozen corpus would "
            "trigger the rule; edit the rule's parameters.examples together with "
            "corpora[0].examples (both 2, when the corpus entry is right)")):
        recorder.freeze_plan(plan)
    assert not (tmp_path / "plan.json").exists()
    plan["stop_rules"][2]["parameters"]["examples"] = 2  # the way through
    recorder.freeze_plan(plan)
    assert (tmp_path / "plan.json").exists()


def two_corpora(tmp_path: Path, **run_corpus: str) -> CampaignRecorder:
    recorder = CampaignRecorder(tmp_path / "camp")
    recorder.write_bytes("corpus.jsonl", CORPUS)
    recorder.write_bytes("corpus-2.jsonl", CORPUS_2)
    recorder.write_bytes("configs/control.json", CONFIG)
    plan = make_plan(corpora=[corpus_entry("c1", "corpus.jsonl", CORPUS),
                              corpus_entry("c2", "corpus-2.jsonl", CORPUS_2)])
    for run in plan["runs"]:
        if run["id"] in run_corpus:
            run["corpus"] = run_corpus[run["id"]]
    recorder.freeze_plan(plan)
    return recorder


def test_a_run_naming_another_runs_predictions_file_is_refused(tmp_path: Path) -> None:
    """predictions-cover-corpus.shared-file, refused at once by the check's own function."""
    recorder = two_corpora(tmp_path, control="c1", variant="c1")
    recorder.write_text("runs/control/predictions.jsonl", '{"id": "a"}\n')
    control, variant = recorder.run("control"), recorder.run("variant")
    for run in (control, variant):
        run.start()
    control.set_predictions("runs/control/predictions.jsonl")
    with pytest.raises(RecordError) as refused:
        variant.set_predictions("runs/control/predictions.jsonl")
    assert str(refused.value) == (
        "run 'variant': runs/control/predictions.jsonl is another run's predictions, as the "
        "plugin would report (predictions-cover-corpus):\n"
        "runs[variant].predictions: run variant shares its predictions file "
        "runs/control/predictions.jsonl with control: they are not its own predictions\n"
        "    expected: predictions that run variant's own model wrote\n"
        "    found:    the file control also records\n"
        "    fix:      each compared run delivers the predictions of its own model (R1), in "
        "its own file: write them from the run's model, or record the run as rejected")
    assert "predictions" not in variant.record
    recorder.write_text("runs/variant/predictions.jsonl", '{"id": "a"}\n')  # the same bytes
    variant.set_predictions("runs/variant/predictions.jsonl")  # its own file: recorded


def test_predictions_name_the_corpus_they_cover(tmp_path: Path) -> None:
    recorder = two_corpora(tmp_path, variant="c2")
    recorder.write_text("runs/control/predictions.jsonl", '{"id": "a"}\n')
    recorder.write_text("runs/variant/predictions.jsonl", '{"id": "b"}\n{"id": "c"}\n')
    control, variant = recorder.run("control"), recorder.run("variant")
    for run in (control, variant):
        run.start()
    control.set_predictions("runs/control/predictions.jsonl")  # two corpora: no default
    variant.set_predictions("runs/variant/predictions.jsonl")  # the plan's corpus for it
    assert "corpus" not in control.record
    assert variant.record["corpus"] == "c2"
    with pytest.raises(RecordError, match=r"corpus 'c9' is not a corpus of the plan "
                                          r"\(corpora: c1, c2\)"):
        control.set_corpus("c9")
    with pytest.raises(RecordError, match="the plan gives it corpus 'c2', not 'c1'"):
        variant.set_corpus("c1")
    control.accept()
    variant.accept()
    recorder.write_text("analysis.md", "control and variant\n")
    recorder.write_text("RELOAD.md", "r\n")
    with pytest.raises(RecordError, match=r"run 'control': name the corpus its predictions "
                                          r"cover \(set_predictions\(\.\.\., corpus=\.\.\.\)\)"):
        recorder.close(**close_kwargs())
    control.set_corpus("c1")
    recorder.close(**close_kwargs())
    runs = {r["id"]: r for r in json.loads((recorder.root / "manifest.json").read_text())["runs"]}
    assert (runs["control"]["corpus"], runs["variant"]["corpus"]) == ("c1", "c2")
    assert "deliverable" not in runs["control"]


def test_the_v1_deliverable_keyword_names_the_corpus(rec: CampaignRecorder) -> None:
    run = rec.run("control")
    run.start()
    run.accept(deliverable="c1")
    assert run.record["corpus"] == "c1"
    assert "deliverable" not in run.record


def test_logged_series_inputs_and_metrics_become_the_measurements_file(
    rec: CampaignRecorder,
) -> None:
    run = rec.run("variant")
    run.start()
    run.check_input("c1", sha256=hashlib.sha256(CORPUS).hexdigest(), examples=1,
                    bytes=len(CORPUS))
    run.log(1, loss=0.5)
    run.log(1, validation_accuracy=0.75)  # the same step: one row
    run.log(2, loss=float("inf"))
    run.log(3, loss=float("nan"))
    run.set_metrics(steps=1)
    run.stop("non-finite-loss", "loss was inf")
    finish_with(rec, drop=False)
    rows = [json.loads(line) for line in
            (rec.root / "runs/variant/measurements.jsonl").read_text().splitlines()]
    assert rows == [
        {"checked_input": {"input": "c1", "sha256": hashlib.sha256(CORPUS).hexdigest(),
                           "examples": 1, "bytes": len(CORPUS)}},
        {"step": 1, "loss": 0.5, "validation_accuracy": 0.75},
        {"step": 2, "loss": "Infinity"},
        {"step": 3, "loss": "NaN"},
        {"metrics": {"steps": 1}},
    ]
    record = json.loads((rec.root / "manifest.json").read_text())["runs"][1]
    assert record["measurements"] == "runs/variant/measurements.jsonl"
    assert record["stop"]["step"] == 2  # the first non-finite step, filled in
    assert load_campaign(rec.root).errors == ()


def test_a_stop_step_must_be_where_the_series_became_non_finite(rec: CampaignRecorder) -> None:
    run = rec.run("variant")
    run.start()
    run.log(1, loss=0.5)
    with pytest.raises(RecordError, match="did not fire on its evidence: 1 'loss' points, all "
                                          "finite"):
        run.stop("non-finite-loss", "loss was nan", step=1)
    run.log(2, loss=float("nan"))
    with pytest.raises(RecordError, match=r"stop step 5 is not where the 'loss' series first "
                                          r"becomes non-finite \(step 2\)"):
        run.stop("non-finite-loss", "loss was nan", step=5)
    assert run.outcome is None
    run.stop("non-finite-loss", "loss was nan", step=2)
    with pytest.raises(RecordError, match="step 1 logged after step 2"):
        run.log(1, loss=0.1)


TRIGGERING = [
    ({"loss": float("nan")}, "non-finite-loss",
     r"its 'loss' series is NaN at step 1 \(stop rule 'non-finite-loss'\)",
     r"run control triggers stop rule 'non-finite-loss' \(non_finite_loss\): its 'loss' "
     r"series is NaN at step 1"),
    ({"validation_accuracy": 0.25}, "quality-below",
     r"its validation_accuracy is 0\.25, under the stop threshold 0\.5 \(stop rule "
     r"'quality-below'\)",
     r"run control triggers stop rule 'quality-below' \(quality_below\): its "
     r"validation_accuracy is 0\.25, under the stop threshold 0\.5"),
]


def _evidence(run: RunRecorder, evidence: dict[str, float]) -> None:
    if "loss" in evidence:
        run.log(1, **evidence)
    else:
        run.set_metrics(**evidence)


@pytest.mark.parametrize(("evidence", "rule", "at_close", "at_accept"), TRIGGERING)
def test_accept_refuses_a_run_whose_evidence_triggers_a_rule_and_says_stop_it(
    rec: CampaignRecorder, evidence: dict[str, float], rule: str, at_close: str, at_accept: str
) -> None:
    """Met writing the torch guide: accept() took the run, and close() then said "stop it
    with that rule (run.stop)", impossible once accepted. accept() refuses it now, with the
    plugin's words (stop-rules-applied), and names the call that is still possible."""
    control = rec.run("control")
    control.start()
    _evidence(control, evidence)
    with pytest.raises(RecordError, match=f"^{at_accept}, as the plugin would report "
                       r"\(stop-rules-applied\): a run whose own evidence triggers a "
                       r"declared stop rule is stopped, not accepted; call "
                       rf"run\.stop\(rule='{rule}', reason=\.\.\.\) instead$"):
        control.accept()
    assert control.outcome is None
    control.stop(rule=rule, reason="its evidence triggers the rule")
    assert control.outcome == "stopped"
    again = CampaignRecorder(rec.root)  # the journal replays the stop
    assert again.run("control").outcome == "stopped"


@pytest.mark.parametrize(("evidence", "rule", "at_close", "at_accept"), TRIGGERING)
def test_evidence_recorded_after_accept_that_triggers_a_rule_is_refused_at_close(
    rec: CampaignRecorder, evidence: dict[str, float], rule: str, at_close: str, at_accept: str
) -> None:
    control = rec.run("control")
    if control.started_at is None:  # a test that journaled its saves started it first
        control.start()
    control.accept()
    _evidence(control, evidence)
    rec.decide("after-pilot", "variant not needed", drops=["variant"])
    rec.write_text("analysis.md", "control\n")
    rec.write_text("RELOAD.md", "r\n")
    with pytest.raises(RecordError, match=f"run 'control' is accepted but {at_close}: it is "
                       "not a deliverable, and an accepted run cannot be stopped; record a "
                       r"run's evidence before accept\(\), which refuses such a run: call "
                       rf"run\.stop\(rule='{rule}', reason=\.\.\.\) instead"):
        rec.close(**close_kwargs())
    assert not (rec.root / "manifest.json").exists()


def test_a_script_written_measurements_file_must_carry_the_same_metrics(
    rec: CampaignRecorder,
) -> None:
    run = rec.run("control")
    rec.write_jsonl("runs/control/own.jsonl", [{"step": 1, "loss": 0.4},
                                               {"metrics": {"accuracy": 0.8}}])
    run.set_measurements("runs/control/own.jsonl")
    with pytest.raises(RecordError, match=r"its measurements file runs/control/own\.jsonl was "
                                          "written by the script"):
        run.log(2, loss=0.3)
    with pytest.raises(RecordError, match=r"the metrics line of runs/control/own\.jsonl is "
                                          r"\{'accuracy': 0\.8\}, the manifest would say "
                                          r"\{'accuracy': 0\.9\}"):
        finish(rec)
    assert not (rec.root / "manifest.json").exists()


def test_the_recorder_does_not_overwrite_a_measurements_file_it_did_not_write(
    rec: CampaignRecorder,
) -> None:
    rec.write_text("runs/control/measurements.jsonl", '{"step": 1, "loss": 1.0}\n')
    with pytest.raises(RecordError, match=r"exists, does not hold what the journal records "
                       r"of the run, and no closure in the journal wrote it: a file the script "
                       r"wrote itself is named with set_measurements; .* put the manifest back "
                       r"and reopen it: rec\.reopen\(reason=\.\.\.\)"):
        finish(rec)


def resume_campaign(tmp_path: Path) -> CampaignRecorder:
    recorder = CampaignRecorder(tmp_path / "camp")
    recorder.write_bytes("corpus.jsonl", CORPUS)
    recorder.write_bytes("configs/control.json", CONFIG)
    plan = make_plan()
    plan["runs"].append({"id": "resume-check", "role": "resume_check", "category": "must",
                         "config_sha256": hashlib.sha256(CONFIG).hexdigest()})
    plan["stop_rules"].append({"id": "no-resume", "kind": "no_resume",
                               "parameters": {"resume_check": "resume-check"}})
    recorder.freeze_plan(plan)
    recorder.write_bytes("runs/control/step-2.pt", b"checkpoint")
    recorder.write_bytes("runs/resume-check/step-4.pt", b"checkpoint")
    return recorder


def test_a_resume_check_names_a_listed_resume_checkpoint_of_another_run(tmp_path: Path) -> None:
    recorder = resume_campaign(tmp_path)
    check = recorder.run("resume-check")
    check.start()
    check.resumed_from("runs/control/step-2.pt", 2)
    check.log(3, loss=0.2)
    check.accept()
    recorder.add_checkpoint("runs/resume-check/step-4.pt", run="resume-check", format="torch",
                            kind="resume")
    recorder.run("variant").start()
    recorder.run("variant").reject("not run")
    with pytest.raises(RecordError, match=r"resumed from runs/control/step-2\.pt, which is not "
                                          "a listed resume checkpoint of another run"):
        finish_with(recorder, drop=False)
    recorder.add_checkpoint("runs/control/step-2.pt", run="control", format="torch",
                            kind="resume")
    recorder.close(**close_kwargs())
    runs = json.loads((recorder.root / "manifest.json").read_text())["runs"]
    assert runs[2]["resumed_from"] == {"checkpoint": "runs/control/step-2.pt", "step": 2}


def test_a_no_resume_rule_must_name_a_planned_run(tmp_path: Path) -> None:
    plan = make_plan()
    plan["stop_rules"].append({"id": "no-resume", "kind": "no_resume",
                               "parameters": {"resume_check": "resume"}})
    with pytest.raises(RecordError, match="resume_check 'resume' is not a planned run"):
        CampaignRecorder(tmp_path).freeze_plan(plan)


# ----------------------------------------------------------- expenses


def test_an_included_expense_records_its_receipt_s_facts_and_kind(
    rec: CampaignRecorder,
) -> None:
    """kind, issued_on, issued_by and amount_as_written: structured facts, each text one
    stated by the receipt (whitespace and case aside)."""
    rec.write_text("receipts/r-9.txt", "Amazon Web Services EMEA SARL\nRechnungsdatum: "
                   "3. Dezember 2026\nGesamt: 1,20 USD (1.20)\n")
    expense = rec.expense("AWS: S3 bucket", "1.20", file="receipts/r-9.txt", kind="paid",
                          issued_on=date(2026, 12, 3), issued_by="amazon web services  EMEA SARL",
                          amount_as_written="1,20 USD")
    assert expense == {"label": "AWS: S3 bucket", "amount": "1.20", "kind": "paid",
                       "source": {"file": "receipts/r-9.txt", "issued_on": "2026-12-03",
                                  "issued_by": "amazon web services  EMEA SARL",
                                  "amount_as_written": "1,20 USD"}}
    with pytest.raises(RecordError, match="does not state its issued_by 'Coldvault'"):
        rec.expense("AWS: S3", "1.20", file="receipts/r-9.txt", issued_by="Coldvault")
    with pytest.raises(RecordError, match="issued_on '2026-12-33' is not an ISO date"):
        rec.expense("AWS: S3", "1.20", file="receipts/r-9.txt", issued_on="2026-12-33")
    with pytest.raises(RecordError, match="kind 'guess' is not one of paid, tax"):
        rec.expense("AWS: S3", "1.20", file="receipts/r-9.txt", kind="guess")


def test_an_included_expense_carries_its_receipt_and_reference(rec: CampaignRecorder) -> None:
    rec.write_text("receipts/inv-7.txt", "Invoice 7\nOrder ORD-7\nTotal paid: 1.20 USD\n")
    with pytest.raises(RecordError, match="give its receipt file or its order reference"):
        rec.expense("storage", "1.20")
    with pytest.raises(RecordError, match=r"does not show the amount 2\.40"):
        rec.expense("storage", "2.40", file="receipts/inv-7.txt")
    with pytest.raises(RecordError, match=r"receipts/missing\.txt does not exist"):
        rec.expense("storage", "1.20", file="receipts/missing.txt")
    expense = rec.expense("storage", "1.20", file="receipts/inv-7.txt", reference="ORD-7")
    assert expense == {"label": "storage", "amount": "1.20",
                       "source": {"file": "receipts/inv-7.txt", "reference": "ORD-7"}}
    kwargs = close_kwargs()
    kwargs["budget"]["included_expenses"] = [expense]
    finish_with(rec, kwargs)
    manifest = load_campaign(rec.root).manifest
    assert manifest is not None
    (included,) = manifest.budget.included_expenses
    assert included.source is not None
    assert (included.source.file, included.source.reference) == ("receipts/inv-7.txt", "ORD-7")


def test_a_french_receipt_shows_its_amount_as_it_writes_it(rec: CampaignRecorder) -> None:
    """"12,50 €" shows 12.50: the recorder reads a receipt as budget-consistent does, so
    it never refuses an amount the check finds (nor accepts one it does not)."""
    rec.write_text("receipts/facture.txt", "FACTURE N° F-2026-1207\nFournisseur : Nuage Froid "
                   "SAS\nStockage objet 500 Go   10,42 €\nTVA 20 %   2,08 €\n"
                   "Total TTC   1\u202f012,50 €\n")
    expense = rec.expense("Nuage Froid: stockage", "1012.50", file="receipts/facture.txt")
    assert expense["amount"] == "1012.50"
    assert rec.expense("Nuage Froid: TVA", "2.08", file="receipts/facture.txt")
    with pytest.raises(RecordError, match=r"does not show the amount 12\.50"):
        rec.expense("Nuage Froid: stockage", "12.50", file="receipts/facture.txt")


def test_an_included_expense_without_a_source_does_not_pass_the_schema(
    rec: CampaignRecorder,
) -> None:
    kwargs = close_kwargs()
    kwargs["budget"]["included_expenses"] = [{"label": "storage", "amount": "1.20"}]
    with pytest.raises(RecordError, match=r"manifest\.json does not follow the schema"):
        finish_with(rec, kwargs)


def finish_with(rec: CampaignRecorder, kwargs: dict[str, Any] | None = None, *,
                drop: bool = True) -> Path:
    """Accept the control (and drop the variant), then close."""
    control = rec.run("control")
    if control.started_at is None:  # a test that journaled its saves started it first
        control.start()
    control.accept()
    if drop:
        rec.decide("after-pilot", "variant not needed", drops=["variant"])
    rec.write_text("analysis.md", "control\n")
    rec.write_text("RELOAD.md", "r\n")
    return rec.close(**(kwargs or close_kwargs())).manifest


# ------------------------------------------------------ adapter bases


def shell_tree_digest(folder: Path) -> str:
    """``find . -type f -printf '%P\\n' | LC_ALL=C sort | xargs -d '\\n' sha256sum |
    sha256sum``, run for real."""
    done = subprocess.run(
        "find . -type f -printf '%P\\n' | LC_ALL=C sort | xargs -d '\\n' sha256sum | sha256sum",
        shell=True, cwd=folder, capture_output=True, text=True, timeout=30, check=True,
        env={**os.environ, "LC_ALL": "C"},
    )
    return done.stdout.split()[0]


def shipped_base(rec: CampaignRecorder) -> str:
    rec.write_bytes("base/model.safetensors", b"weights")
    rec.write_text("base/config.json", '{"width": 8}\n')
    rec.write_bytes("base/sub/tokenizer.json", b"{}")
    rec.write_text("adapter/adapter_config.json", "{}\n")
    return rec.record_base("base", model="org/base", revision=COMMIT)


def test_a_shipped_base_is_pinned_by_its_revision_and_tree_digest(rec: CampaignRecorder) -> None:
    digest = shipped_base(rec)
    assert json.loads((rec.root / "base/itera-base.json").read_text()) == {
        "model": "org/base", "revision": COMMIT}
    assert digest == shell_tree_digest(rec.root / "base")
    rec.add_adapter("adapter", run="control", base_model="org/base", base_revision=COMMIT,
                    base_path="base")
    finish(rec)
    (adapter,) = json.loads((rec.root / "manifest.json").read_text())["adapters"]
    assert adapter == {"path": "adapter", "run": "control", "base_model": "org/base",
                       "base_revision": COMMIT, "base_path": "base", "base_digest": digest}


@pytest.mark.parametrize(
    ("change", "why"),
    [({"base_revision": "1" * 40}, "records revision '0123.*', the adapter's base_revision is "
                                   "'1111"),
     ({"base_model": "org/other"}, "records model 'org/base', the adapter's base_model is "
                                   "'org/other'"),
     ({"base_revision": "main"}, "base_revision 'main' is not a full 40-hex commit id"),
     ({"base_path": "base/config.json"}, "base_path base/config.json is not a folder")],
)
def test_an_adapter_that_does_not_match_its_base_is_refused(
    rec: CampaignRecorder, change: dict[str, str], why: str
) -> None:
    shipped_base(rec)
    args = {"base_model": "org/base", "base_revision": COMMIT, "base_path": "base", **change}
    with pytest.raises(RecordError, match=why):
        rec.add_adapter("adapter", run="control", **args)


def test_a_base_that_changes_after_the_adapter_is_refused_at_closure(
    rec: CampaignRecorder,
) -> None:
    shipped_base(rec)
    rec.add_adapter("adapter", run="control", base_model="org/base", base_revision=COMMIT,
                    base_path="base")
    rec.write_bytes("base/model.safetensors", b"other weights")
    with pytest.raises(RecordError, match="the shipped base base changed after add_adapter"):
        finish(rec)


def test_a_base_holding_a_link_has_no_digest(rec: CampaignRecorder) -> None:
    shipped_base(rec)
    (rec.root / "base" / "link").symlink_to("config.json")
    with pytest.raises(RecordError, match="link"):
        rec.add_adapter("adapter", run="control", base_model="org/base", base_revision=COMMIT,
                        base_path="base")


# ------------------------------------------------------- atomic writes


def test_a_failed_write_leaves_the_old_file_and_no_partial(tmp_path: Path) -> None:
    target = tmp_path / "out.bin"
    atomic_write_bytes(target, b"old")
    with pytest.raises(TypeError):
        atomic_write_bytes(target, "not bytes")  # type: ignore[arg-type]
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.bin"]


def test_a_checkpoint_that_fails_mid_save_leaves_nothing_behind(tmp_path: Path) -> None:
    import torch

    model = torch.nn.Linear(2, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    target = tmp_path / "last.pt"
    save_resume_checkpoint(target, model=model, optimizer=optimizer, step=1)
    before = target.read_bytes()
    with pytest.raises(Exception, match="lambda"):  # pickling a lambda fails after bytes went out
        save_resume_checkpoint(target, model=model, optimizer=optimizer, step=2,
                               extra={"callback": lambda: 0})
    assert target.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["last.pt"]


def test_a_checkpoint_refuses_temp_paths_in_its_data(tmp_path: Path) -> None:
    import torch

    model = torch.nn.Linear(2, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(RecordError, match="temporary folder '/tmp/'"):
        save_resume_checkpoint(tmp_path / "x.pt", model=model, optimizer=optimizer, step=1,
                               data_state={"shard": "/tmp/shards/3.bin"})
    assert not (tmp_path / "x.pt").exists()


# ------------------------------------------------------- exact resume

# A tiny training loop in which every resume part matters: dropout (torch RNG),
# input noise (numpy RNG), a random scale (python RNG), a shuffling loader whose
# generator and position are the data state, Adam state and an LR schedule.
TRAIN_SCRIPT = '''
import random, sys, json
from pathlib import Path
import numpy as np
import torch
from pytest_itera.record.resume import load_resume_checkpoint, save_resume_checkpoint

torch.set_num_threads(1)
mode, steps, arg = sys.argv[1], int(sys.argv[2]), sys.argv[3]
g = torch.Generator().manual_seed(0)
X = torch.randn(96, 4, generator=g)
Y = (X[:, 0] * X[:, 1] > 0).long() + (X[:, 2] > 1).long()

def fresh():
    torch.manual_seed(1); np.random.seed(2); random.seed(3)
    model = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Dropout(0.3),
                                torch.nn.Linear(16, 3))
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=7, gamma=0.7)
    return model, opt, sched

model, opt, sched = fresh()
loader = torch.Generator().manual_seed(4)
state = {"epoch": 0, "batch": 0, "perm": torch.randperm(96, generator=loader),
         "generator": loader.get_state()}
step = 0
if mode.startswith("resume"):
    got = load_resume_checkpoint(Path(arg), model=model, optimizer=opt, scheduler=sched)
    step, state = got["step"], got["data"]
    loader.set_state(state["generator"])
    if mode == "resume-without-rng":
        torch.manual_seed(99)
losses = []
while step < steps:
    rows = state["perm"][state["batch"] * 16:(state["batch"] + 1) * 16]
    noise = torch.from_numpy(np.random.standard_normal((len(rows), 4)).astype("float32"))
    x = (X[rows] + 0.05 * noise) * random.uniform(0.9, 1.1)
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), Y[rows])
    loss.backward(); opt.step(); sched.step()
    step += 1
    losses.append(loss.item().hex())
    state["batch"] += 1
    if state["batch"] == 6:
        state = {"epoch": state["epoch"] + 1, "batch": 0,
                 "perm": torch.randperm(96, generator=loader), "generator": None}
        state["generator"] = loader.get_state()
    if mode == "interrupt" and step == int(sys.argv[4]):
        save_resume_checkpoint(Path(arg), model=model, optimizer=opt, scheduler=sched, step=step,
                               epoch=state["epoch"], data_state=state)
        break
if mode != "interrupt":
    Path(sys.argv[-1]).write_text(json.dumps(losses))
'''


def run_script(tmp_path: Path, *args: str) -> None:
    script = tmp_path / "train.py"
    script.write_text(TRAIN_SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, str(script), *args], env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr


def test_a_run_resumed_in_a_new_process_reproduces_the_losses_exactly(tmp_path: Path) -> None:
    import torch

    steps, cut = 30, 11  # the cut falls mid-epoch (6 batches per epoch)
    full, ckpt = tmp_path / "full.json", tmp_path / "cut.pt"
    run_script(tmp_path, "full", str(steps), str(full))
    run_script(tmp_path, "interrupt", str(steps), str(ckpt), str(cut))
    resumed, drifted = tmp_path / "resumed.json", tmp_path / "drifted.json"
    run_script(tmp_path, "resume", str(steps), str(ckpt), str(resumed))
    run_script(tmp_path, "resume-without-rng", str(steps), str(ckpt), str(drifted))

    reference = json.loads(full.read_text())
    assert len(reference) == steps
    assert json.loads(resumed.read_text()) == reference[cut:]  # hex floats: bitwise equality
    # The test can tell: without the RNG state the dropout masks, hence the losses, differ.
    assert json.loads(drifted.read_text()) != reference[cut:]

    loaded = torch.load(ckpt, weights_only=True)  # no allowlist needed
    assert sorted(loaded) == ["data", "model", "optimizer", "progress", "rng", "scheduler"]
    assert loaded["progress"] == {"step": cut, "epoch": 1}
    assert sorted(loaded["rng"]) == ["numpy", "python", "torch"]
    assert b"/tmp" not in ckpt.read_bytes()


# ------------------------------------------------- close() does the arithmetic


def test_close_derives_a_null_ratio_and_the_cause_when_nothing_is_delivered(
    rec: CampaignRecorder,
) -> None:
    control = rec.run("control")
    control.start()
    control.log(1, loss=float("nan"))
    control.stop("non-finite-loss", "loss was NaN at step 1")
    rec.decide("after-pilot", "variant not needed", drops=["variant"])
    rec.write_text("analysis.md", "nothing delivered\n")
    rec.write_text("RELOAD.md", "nothing to reload\n")
    with rec.step("train"):
        pass
    closed = rec.close(analysis="analysis.md", reload_instructions="RELOAD.md",
                       conclusion={"meets_threshold": [], "text": "Negative result."},
                       check=False)
    budget = json.loads(closed.read_text())["budget"]
    assert budget["rental_total"] == "47.14"
    assert budget["accepted_deliverables"] == 0
    assert budget["cost_per_deliverable"] is None
    assert budget["rejection_cause"].startswith(
        "no control or variant run was accepted (control stopped: loss was NaN at step 1; "
        "variant dropped: dropped by decision after-pilot)")
    schedule = json.loads(closed.read_text())["schedule"]
    assert schedule["reserved_hours"] == 72
    assert [d["step"] for d in schedule["deviations"]] == []  # no run on the step


def test_two_lots_in_turn_reserve_both_their_days_and_side_by_side_one_lots() -> None:
    """Lots whose planned steps follow one another reserve both their durations, less the
    hours their windows overlap (a lot's clock starts with its first step: the second 3-day
    lot, needed at 60 h, runs from 60 h to 132 h); lots side by side one lot's days: the
    recorder's reserved hours must hold the observed makespan plan-vs-actual compares with
    them."""
    from decimal import Decimal

    from pytest_itera.core.campaign import plan_from
    from pytest_itera.record import tally

    lot = make_plan()["budget"]["lots"][0]
    lots = [dict(lot, id="first"), dict(lot, id="second")]
    steps = [{"id": "train", "kind": "training", "resource": "gpu0", "hours": 60, "lot": "first"},
             {"id": "train-2", "kind": "training", "resource": "gpu0", "hours": 60,
              "lot": "second", "after": ["train"]}]
    schedule = {"window_hours": 144, "steps": steps}
    in_turn = make_plan(schedule=schedule, budget={"currency": "USD", "lots": lots})
    observed = {"train": Decimal(60), "train-2": Decimal(60)}
    assert tally.schedule_block(plan_from(in_turn), observed, {})["reserved_hours"] == 132
    steps[0] = dict(steps[0], hours=72)  # strictly one after the other: 72 h + 72 h
    back_to_back = make_plan(schedule=schedule, budget={"currency": "USD", "lots": lots})
    assert tally.schedule_block(plan_from(back_to_back), observed, {})["reserved_hours"] == 144
    steps[0], steps[1] = dict(steps[0], hours=60), dict(steps[1], resource="gpu1", after=[])
    side = make_plan(schedule=schedule, budget={"currency": "USD", "lots": lots})
    assert tally.schedule_block(plan_from(side), observed, {})["reserved_hours"] == 72


def record_two_lots(root: Path, window: int, steps: list[dict[str, Any]]) -> dict[str, Any]:
    """A campaign on two 3-day lots, ``first`` and ``second``, recorded by the recorder with
    each step taking its planned hours; its plan-vs-actual findings and schedule block."""
    from pytest_itera.checks import Context, Options
    from pytest_itera.checks.schedule import CHECKS

    lot = make_plan()["budget"]["lots"][0]
    rec = CampaignRecorder(root)
    rec.write_bytes("corpus.jsonl", CORPUS)
    rec.write_bytes("configs/control.json", CONFIG)
    rec.freeze_plan(make_plan(
        schedule={"window_hours": window, "steps": steps},
        budget={"currency": "USD", "lots": [dict(lot, id="first"), dict(lot, id="second")]}))
    for planned in steps:
        rec.step(planned["id"], hours=planned["hours"])
    control = rec.run("control")
    control.start()
    control.set_config("configs/control.json")
    control.accept()
    rec.decide("after-pilot", "variant not needed", drops=["variant"])
    rec.write_text("analysis.md", "errors\n")
    rec.write_text("RELOAD.md", "nothing to reload\n")
    rec.close(analysis="analysis.md", reload_instructions="RELOAD.md", check=False,
              conclusion={"meets_threshold": [], "text": "Negative result."})
    ctx = Context(load_campaign(root), Options(), {c.id: c for c in CHECKS})
    schedule: dict[str, Any] = json.loads(rec.path("manifest.json").read_text())["schedule"]
    return {"findings": [f.render() for f in judge(ctx).findings("plan-vs-actual")], **schedule}


def test_two_lots_overlapping_by_a_few_hours_reserve_the_union_of_their_windows(
    tmp_path: Path,
) -> None:
    """Issue 35: the second 3-day lot is taken when its training starts at 67 h, 5 h before
    the first one ends at 72 h: 139 h reserved (72 + 72 - 5), not one lot's 72 h, and the
    129 h observed are not refused as 'observed_hours 129 h exceed the 72 h reserved'."""
    steps = [
        {"id": "train", "kind": "training", "resource": "gpu0", "hours": 67, "lot": "first"},
        {"id": "evaluate", "kind": "validation", "resource": "gpu0", "hours": 3,
         "lot": "first", "after": ["train"]},
        {"id": "train-2", "kind": "training", "resource": "gpu1", "hours": 62,
         "lot": "second", "after": ["train"]},
    ]
    recorded = record_two_lots(tmp_path / "camp", 144, steps)
    assert (recorded["reserved_hours"], recorded["observed_hours"]) == (139, 129)
    assert recorded["findings"] == []


def test_a_gap_between_two_lots_is_not_reserved(tmp_path: Path) -> None:
    """The second lot is taken 8 h after the first one ended (a human reads the first
    results meanwhile, off the rental): 144 h reserved, neither the 152 h from the first
    lot's start to the second's end nor the 160 h window; plan-vs-actual accepts the
    recorded figure and names it when a manifest counts the gap."""
    steps = [
        {"id": "train", "kind": "training", "resource": "gpu0", "hours": 60, "lot": "first"},
        {"id": "inspect", "kind": "evaluation", "resource": "human", "hours": 20,
         "after": ["train"]},
        {"id": "train-2", "kind": "training", "resource": "gpu1", "hours": 60,
         "lot": "second", "after": ["inspect"]},
    ]
    root = tmp_path / "camp"
    recorded = record_two_lots(root, 160, steps)
    assert (recorded["reserved_hours"], recorded["observed_hours"]) == (144, 140)
    assert recorded["findings"] == []

    from pytest_itera.checks import Context, Options
    from pytest_itera.checks.schedule import CHECKS

    manifest = json.loads((root / "manifest.json").read_text())
    manifest["schedule"]["reserved_hours"] = 152  # the gap counted
    (root / "manifest.json").write_text(json.dumps(manifest))
    ctx = Context(load_campaign(root), Options(), {c.id: c for c in CHECKS})
    assert [f.render().splitlines()[:3] for f in judge(ctx).findings("plan-vs-actual")] == [[
        "manifest.json $.schedule.reserved_hours: reserved_hours is 152 h: neither the plan's "
        "160 h window nor the engaged lots' 144 h", "    expected: 144 h or 160 h",
        "    found:    152 h"]]


def test_a_rejected_runs_short_step_is_explained_by_its_rejection(tmp_path: Path) -> None:
    """A run abandoned with its cause (rejected with a reason, as a stopped run with its
    rule) explains its step's short hours; the campaign is not refused for them."""
    from datetime import UTC, datetime, timedelta

    now = datetime(2026, 12, 1, tzinfo=UTC)
    rec = CampaignRecorder(tmp_path / "camp", clock=lambda: now)
    rec.write_bytes("corpus.jsonl", CORPUS)
    rec.write_bytes("configs/control.json", CONFIG)
    steps = [{"id": "train", "kind": "training", "resource": "gpu0", "hours": 4,
              "run": "variant"}]
    rec.freeze_plan(make_plan(schedule={"window_hours": 72, "steps": steps}))
    variant = rec.run("variant")
    variant.start()
    with rec.step("train"):
        now += timedelta(hours=1)
    variant.reject("its tokenizer was built from the wrong vocabulary")
    schedule = json.loads(finish_rejected(rec).read_text())["schedule"]
    assert schedule["deviations"] == [{"step": "train", "explanation": "variant was rejected: "
                                       "its tokenizer was built from the wrong vocabulary"}]


def finish_rejected(rec: CampaignRecorder) -> Path:
    control = rec.run("control")
    control.start()
    control.set_config("configs/control.json")
    control.accept()
    rec.write_text("analysis.md", "errors\n")
    rec.write_text("RELOAD.md", "nothing to reload\n")
    rec.close(analysis="analysis.md", reload_instructions="RELOAD.md", check=False,
              conclusion={"meets_threshold": [], "text": "Negative result."})
    return rec.path("manifest.json")


def test_a_continuation_journals_the_time_no_process_ran_for_its_open_runs(
    tmp_path: Path
) -> None:
    """The machine died between two steps of a run (no step open) and the script continued
    6 h later: the continuing recorder journals those hours as the run's interruption, so
    that its recorded span is not taken for work (plan-vs-actual.run-span)."""
    from datetime import UTC, datetime, timedelta

    from pytest_itera.checks.schedule.timeline import read_saves
    from pytest_itera.core.journal import JOURNAL_FILE

    now = datetime(2026, 12, 1, tzinfo=UTC)
    root = tmp_path / "camp"
    first = CampaignRecorder(root, clock=lambda: now)
    first.write_bytes("corpus.jsonl", CORPUS)
    first.write_bytes("configs/control.json", CONFIG)
    first.freeze_plan(make_plan())
    first.run("control").start()
    with first.step("train"):
        now += timedelta(hours=1)
    now += timedelta(hours=6)  # the process died; a new one continues
    second = CampaignRecorder(root, clock=lambda: now)
    assert [r.id for r in second.open_runs()] == ["control"]
    last = unchained(json.loads((root / JOURNAL_FILE).read_text().splitlines()[-1]))
    assert last == {"event": "resumed", "runs": ["control"], "at": "2026-12-01T07:00:00Z",
                    "interrupted": {"since": "2026-12-01T01:00:00Z",
                                    "until": "2026-12-01T07:00:00Z", "hours": 6.0}}
    saves = read_saves(root / JOURNAL_FILE)
    assert saves.worked(datetime(2026, 12, 1, tzinfo=UTC), now) == 1
    journaled = (root / JOURNAL_FILE).read_text()
    CampaignRecorder(root, clock=lambda: now)  # nothing more: no time passed since
    assert (root / JOURNAL_FILE).read_text() == journaled


def test_a_stopped_run_keeps_its_predictions_as_evidence_not_as_a_delivery(
    rec: CampaignRecorder,
) -> None:
    """Predictions written before the stop rule fired (quality below the threshold is judged
    on them): the file stays, the stopped run's record names no predictions and no corpus,
    which stop-records would refuse ("a stopped run delivers nothing")."""
    control = rec.run("control")
    control.start()
    rec.write_jsonl("runs/control/predictions.jsonl", [{"id": "a", "prediction": 1}])
    control.set_predictions("runs/control/predictions.jsonl")
    assert control.record["corpus"] == "c1"
    control.log(1, loss=float("nan"))
    control.stop("non-finite-loss", "loss was NaN at step 1")
    assert "predictions" not in control.record
    assert "corpus" not in control.record
    assert rec.path("runs/control/predictions.jsonl").is_file()
    with pytest.raises(RecordError, match="a stopped run delivers nothing"):
        control.set_predictions("runs/control/predictions.jsonl")
    continued = CampaignRecorder(rec.root).run("control")  # the journal says the same
    assert continued.outcome == "stopped"
    assert "predictions" not in continued.record


def test_close_adds_the_included_expenses_to_the_engaged_total(rec: CampaignRecorder) -> None:
    rec.write_text("receipts/r.txt", "Storage, one month: 1.20 USD\n")
    expense = rec.expense("storage", "1.20", file="receipts/r.txt")
    rec.step("train", hours=1)
    control = rec.run("control")
    control.start()
    rec.write_jsonl("preds.jsonl", [{"id": "a", "prediction": 1}])
    control.set_predictions("preds.jsonl")
    control.accept()
    rec.decide("after-pilot", "variant not needed", drops=["variant"])
    rec.write_text("analysis.md", "a\n")
    rec.write_text("RELOAD.md", "r\n")
    closed = rec.close(analysis="analysis.md", reload_instructions="RELOAD.md",
                       conclusion={"meets_threshold": [], "text": "No variant."},
                       expenses=[expense], check=False)
    budget = json.loads(closed.read_text())["budget"]
    assert budget["cost_per_deliverable"] == "48.34"  # (47.14 + 1.20) / 1 corpus
    assert budget["included_expenses"][0]["source"] == {"file": "receipts/r.txt"}


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda rec: rec.expense("storage", 1.2, reference="ORD-1"), 'write "1.2"'),
        (lambda rec: rec.step("nope"), "step 'nope' is not in the plan"),
        (lambda rec: rec.step("train").end(), "step 'train' was never started"),
        (lambda rec: rec.step("train", hours=-1), "is not a number of hours"),
        (lambda rec: rec.decide("d", "drop", drops=["control"]), "is a must run"),
        (lambda rec: rec.path("../out.txt"), "'..' leaves the campaign folder"),
    ],
)
def test_bad_input_is_refused_with_what_to_do(rec: CampaignRecorder, call: Any,
                                              message: str) -> None:
    with pytest.raises(RecordError, match=re.escape(message)):
        call(rec)


def test_a_step_left_running_blocks_closure(rec: CampaignRecorder) -> None:
    rec.step("train").start()
    with pytest.raises(RecordError, match="steps started and never ended: train"):
        finish(rec)
    assert not (rec.root / "manifest.json").exists()


@pytest.mark.parametrize("nothing", [".", " - ", "?"])
def test_prose_that_says_nothing_is_refused_as_the_checks_refuse_it(
    rec: CampaignRecorder, nothing: str
) -> None:
    """A decision, a stop reason and a rejection reason of punctuation alone say nothing
    (text.says_nothing, what plan-vs-actual, stop-records and the outcome records refuse)."""
    with pytest.raises(RecordError, match="needs a text"):
        rec.decide("after-pilot", nothing, drops=["variant"])
    run = rec.run("variant")
    run.start()
    run.log(1, loss=float("nan"))
    with pytest.raises(RecordError, match="a stop needs a reason"):
        run.stop("non-finite-loss", nothing, step=1)
    with pytest.raises(RecordError, match="a rejection needs a reason"):
        run.reject(nothing)
    assert run.outcome is None


@pytest.mark.parametrize("blank", ["", "  ", "\u200b", "\u00a0\t"])
def test_blank_texts_are_refused_by_the_one_rule_for_text(
    rec: CampaignRecorder, blank: str
) -> None:
    """The recorder and the checks share pytest_itera.core.text.is_blank: what the plugin would
    call missing, the recorder refuses to write."""
    with pytest.raises(RecordError, match="needs a text"):
        rec.decide("after-pilot", blank, drops=["variant"])
    with pytest.raises(RecordError, match="needs a label"):
        rec.expense(blank, "1.20", reference="ORD-1")
    with pytest.raises(RecordError):
        rec.expense("storage", "1.20", reference=blank)


def test_a_run_records_another_corpus_only_when_the_checks_would_deliver_it(
    tmp_path: Path,
) -> None:
    """One rule with the checks (checks.budget.deliverables.planned_elsewhere): a corpus id
    with the planned corpus's content is the same corpus; another content is another corpus,
    refused."""
    rec = CampaignRecorder(tmp_path / "camp")
    rec.write_bytes("corpus.jsonl", CORPUS)
    rec.write_bytes("configs/control.json", CONFIG)
    plan = make_plan(corpora=[corpus_entry("c1", "corpus.jsonl", CORPUS),
                              corpus_entry("c1-again", "corpus.jsonl", CORPUS),
                              corpus_entry("c2", "other.jsonl", b'{"id": "x"}\n')])
    plan["runs"][0]["corpus"] = "c1"
    rec.freeze_plan(plan)
    control = rec.run("control")
    control.set_corpus("c1-again")
    assert control.record["corpus"] == "c1-again"
    with pytest.raises(RecordError, match="the plan gives it corpus 'c1', not 'c2'; a run on "
                                          "another corpus needs a new run ID"):
        control.set_corpus("c2")
