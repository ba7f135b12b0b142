"""The recorder's integrations with the REAL tools: transformers' Trainer and Lightning.

A campaign is recorded as tests/recorded.py records one (plan frozen first, data check, step
timings, no number computed by hand), except that the control is trained by the tool with
``IteraCallback(rec, "control")`` attached — its checkpoints and its loss series are what the
tool saved and logged — and the resume check really resumes the control's checkpoint with
the same tool and callback (its series must equal the control's after the resume step,
exactly, on CPU). The plugin then judges the folder through pytester: ACCEPTED; and, with a
checkpoint the callback recorded deleted afterwards, REJECTED by exactly the items that name
the missing files.

Tiny models are built from configs in code (HF_HUB_OFFLINE=1); each tool's campaign is built
once, in a module-scoped fixture (so the tools are imported before pytester snapshots
sys.modules). A test that deletes a checkpoint moves it out of that campaign and back
(:func:`deleted`), never a copy: a copy would move the absolute paths the tools recorded.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

import pytest
import torch

from pytest_itera.record import CampaignRecorder, Closure, RecordError
from tests import factory as F
from tests.factory import expect, journal_events, tree_digest
from tests.real_tools import Rows, bert, quiet, tiny_lightning
from tests.recorded import check_the_corpus, close, timed, train_the_variant
from tests.runner import Itera

os.environ.setdefault("HF_HUB_OFFLINE", "1")

Campaigns = dict[str, Path]
TRAINER_PARTS = ["model", "optimizer", "progress", "scheduler", "rng", "data"]
LIGHTNING_PARTS = ["model", "optimizer", "progress", "scheduler"]  # no RNG state, by design


# --------------------------------------------------------------------- the tools


def trainer_fit(rec: CampaignRecorder, run_id: str, output_dir: Path, *,
                resume: str | None = None, callbacks: Sequence[Any] = (),
                evaluate: bool = False, **options: Any) -> None:
    """transformers.Trainer, 4 steps, a checkpoint-N/ every 2, with the callback attached;
    ``evaluate``: with an evaluation set (for ``eval_strategy``)."""
    from transformers import Trainer, TrainingArguments

    from pytest_itera.record.integrations.transformers import IteraCallback

    args = TrainingArguments(output_dir=str(output_dir), max_steps=4, save_steps=2,
                             per_device_train_batch_size=4, report_to="none", use_cpu=True,
                             disable_tqdm=True, seed=0, logging_steps=1, **options)
    with quiet():
        trainer = Trainer(model=bert(), args=args, train_dataset=Rows(),
                          eval_dataset=Rows() if evaluate else None,
                          callbacks=[IteraCallback(rec, run_id), *callbacks])
        trainer.train(resume_from_checkpoint=resume)


def lightning_fit(rec: CampaignRecorder, run_id: str, dirpath: Path, *,
                  ckpt_path: str | None = None, save_top_k: int = -1,
                  save_last: bool | Literal["link"] = False, callbacks: Sequence[Any] = (),
                  save_weights_only: bool = False) -> None:
    """lightning.Trainer, 8 steps (two epochs of 4 batches), ModelCheckpoint every 4 steps
    into ``dirpath``, with the callback attached."""
    import lightning as L
    from lightning.pytorch.callbacks import ModelCheckpoint

    from pytest_itera.record.integrations.lightning import IteraCallback

    torch.manual_seed(0)
    rows: list[torch.Tensor] = list(torch.randn(8, 4))
    with quiet():
        checkpoints = ModelCheckpoint(dirpath=str(dirpath), every_n_train_steps=4,
                                      save_top_k=save_top_k, save_last=save_last,
                                      save_weights_only=save_weights_only)
        trainer = L.Trainer(max_steps=8, accelerator="cpu", devices=1, enable_progress_bar=False,
                            enable_model_summary=False, log_every_n_steps=1,
                            default_root_dir=str(dirpath.parent),
                            callbacks=[checkpoints, IteraCallback(rec, run_id), *callbacks])
        data = torch.utils.data.DataLoader(rows, batch_size=2)  # type: ignore[var-annotated, arg-type]
        trainer.fit(tiny_lightning(), data, ckpt_path=ckpt_path)


# ------------------------------------------------------------------ the campaign

# Trains the control (its callback records into rec); then the resume check from one of the
# control's checkpoints, returning (that checkpoint's relpath, its step).
Tools = tuple[Callable[[CampaignRecorder], None],
              Callable[[CampaignRecorder], tuple[str, int]]]


def trainer_control(rec: CampaignRecorder) -> None:
    trainer_fit(rec, "control", rec.path("runs/control/trainer"))


def trainer_resume(rec: CampaignRecorder) -> tuple[str, int]:
    resumed = "runs/control/trainer/checkpoint-2"
    trainer_fit(rec, "resume-check", rec.path("runs/resume-check/trainer"),
                resume=str(rec.root / resumed))
    return resumed, 2


def lightning_control(rec: CampaignRecorder) -> None:
    lightning_fit(rec, "control", rec.path("runs/control/ckpt"))


def lightning_resume(rec: CampaignRecorder) -> tuple[str, int]:
    resumed = "runs/control/ckpt/epoch=0-step=4.ckpt"
    lightning_fit(rec, "resume-check", rec.path("runs/resume-check/ckpt"),
                  ckpt_path=str(rec.root / resumed))
    return resumed, 4


trainer_tools: Tools = (trainer_control, trainer_resume)
lightning_tools: Tools = (lightning_control, lightning_resume)


def record(root: Path, tools: Tools, resume_state: Sequence[str]) -> Closure:
    """The campaign of tests/recorded.py, with the control and the resume check trained by
    the tool; the factory's hand-made control checkpoints are not part of it."""
    rec = begin(root, resume_state)
    train_control, _ = tools  # the callbacks record checkpoints and series
    train_control(rec)
    timed(rec, "train-control")
    return finish(rec, tools)


def begin(root: Path, resume_state: Sequence[str]) -> CampaignRecorder:
    """Everything before the control's training; the control started."""
    files = F.default_files_v2()
    del files[F.CONTROL_CKPT], files[F.RESUME_CKPT]
    rec = CampaignRecorder(root)
    for relpath, data in files.items():
        rec.write_bytes(relpath, data)
    plan = F.default_plan_v2(files)
    del plan["frozen_at"]  # now: every run starts after it
    plan["checkpoint_policy"]["resume_state"] = list(resume_state)
    rec.freeze_plan(plan)
    for step_id in ("prepare", "setup", "load-data"):
        timed(rec, step_id)
    check_the_corpus(rec, files)
    control = rec.run("control")
    control.start()
    control.set_config("configs/control.json")
    return rec


def finish(rec: CampaignRecorder, tools: Tools) -> Closure:
    """Everything after the control's training: the resume check, the variant, closure."""
    _, train_resume = tools
    control, resume = rec.run("control"), rec.run("resume-check")
    control.set_metrics(**F.METRICS["control"])
    control.set_predictions("runs/control/predictions.jsonl")
    timed(rec, "save-ckpt")
    control.accept()
    resume.start()  # one GPU: the resume check runs after the control (plan-vs-actual)
    resume.set_config("configs/resume-check.json")
    resumed, step = train_resume(rec)
    timed(rec, "restore-ckpt")
    # The callback recorded which checkpoint the tool resumed: the script does not say it.
    assert resume.record["resumed_from"] == {"checkpoint": resumed, "step": step}
    resume.accept()

    train_the_variant(rec)
    # The reload instructions name what each run delivers: the tool's checkpoints.
    lines = [f"- {c['path']} ({c['format']}, {c['kind']} of {c['run']})" for c in rec.checkpoints]
    rec.write_text("RELOAD.md", "# Reload\n\n" + "\n".join(lines) + "\n")
    return close(rec, check=False)


@pytest.fixture(scope="module")
def trainer(tmp_path_factory: pytest.TempPathFactory) -> Campaigns:
    base = tmp_path_factory.mktemp("itera-trainer")
    return {"good": record(base / "good", trainer_tools, TRAINER_PARTS).manifest.parent}


@pytest.fixture(scope="module")
def lightning(tmp_path_factory: pytest.TempPathFactory) -> Campaigns:
    base = tmp_path_factory.mktemp("itera-lightning")
    return {"good": record(base / "good", lightning_tools, LIGHTNING_PARTS).manifest.parent}


@contextlib.contextmanager
def deleted(root: Path, relpath: str, aside: Path) -> Iterator[None]:
    """The campaign at ``root`` without ``relpath`` (a file or a folder) for the block: moved
    to ``aside`` and back, the module's campaign is left exactly as the other tests read it."""
    before = tree_digest(root)
    (root / relpath).rename(aside)
    try:
        yield
    finally:
        aside.rename(root / relpath)
    assert tree_digest(root) == before


# -------------------------------------------------------------------- the plugin


def failures(report: dict[str, Any]) -> dict[tuple[str, str | None], str]:
    return {(c["check"], c["target"]): c["message"] for c in report["checks"]
            if c["outcome"] != "passed"}


def assert_accepted(itera: Itera, root: Path) -> None:
    result, report = itera.reported(root)
    failed = failures(report)
    assert failed == {}, "\n".join(f"{k}: {v}" for k, v in failed.items())
    assert report["verdict"] == "accepted"
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) > 0
    assert set(outcomes) <= {"passed", "warnings", "warning"}, outcomes
    expect(result, "campaign tiny-2026-11: ACCEPTED — * checks")
    assert result.ret == 0


def assert_accepted_in_process(root: Path) -> None:
    """The plugin's checks run in this process (reloads in a fresh one): ACCEPTED."""
    from pytest_itera.report.verify import check_campaign

    verdict = check_campaign(root)
    assert verdict.findings == (), "\n".join(p.render() for p in verdict.findings)
    assert verdict.verdict == "accepted"


def assert_missing(itera: Itera, root: Path, checkpoint: str,
                   removed: Sequence[str]) -> None:
    """Exactly the deleted checkpoint's items do not pass: each of its files, its reload, its
    resume parts; the campaign is REJECTED. A checkpoint that is one listed file has one cause,
    its files-intact item: its reload and resume items are not judged (issue 26)."""
    result, report = itera.reported(root)
    failed = failures(report)
    expected = {("files-intact", path) for path in removed} | {
        ("checkpoint-reloads", checkpoint), ("resume-complete", checkpoint)}
    assert set(failed) == expected, "\n".join(f"{k}: {v}" for k, v in failed.items())
    for path in removed:
        assert path in failed["files-intact", path]
        assert "missing" in failed["files-intact", path]
    assert checkpoint in failed["checkpoint-reloads", checkpoint]
    outcome = {(c["check"], c["target"]): c["outcome"] for c in report["checks"]}
    one_file = removed == [checkpoint]
    for check in ("checkpoint-reloads", "resume-complete"):
        assert outcome[check, checkpoint] == ("skipped" if one_file else "failed")
    really = sum(1 for key in expected if outcome[key] == "failed")
    assert report["verdict"] == "rejected"
    expect(result, f"campaign tiny-2026-11: REJECTED — {really} of * checks failed*",
           f"FAILED *{'files-intact' if one_file else 'checkpoint-reloads'}[{checkpoint}]*")
    assert result.ret == 1


def recorded(root: Path) -> dict[str, Any]:
    manifest = json.loads((root / "manifest.json").read_text())
    measurements = {
        run["id"]: [json.loads(line) for line in
                    (root / run["measurements"]).read_text().splitlines()]
        for run in manifest["runs"] if "measurements" in run}
    return {"checkpoints": manifest["checkpoints"], "measurements": measurements}


def losses(rows: list[dict[str, Any]]) -> dict[int, float]:
    return {row["step"]: row["loss"] for row in rows if "loss" in row}


# ------------------------------------------------------------ transformers Trainer


def test_trainer_campaign_is_accepted(itera: Itera, trainer: Campaigns) -> None:
    root = trainer["good"]
    facts = recorded(root)
    control = [c for c in facts["checkpoints"] if c["run"] == "control"]
    assert control == [
        {"path": f"runs/control/trainer/checkpoint-{n}", "run": "control",
         "format": "hf-trainer", "kind": "resume", "claims": TRAINER_PARTS} for n in (2, 4)]
    assert {"path": "runs/resume-check/trainer/checkpoint-4", "run": "resume-check",
            "format": "hf-trainer", "kind": "resume",
            "claims": TRAINER_PARTS} in facts["checkpoints"]
    # The measurements file holds the Trainer's real series, logged at each step.
    rows = facts["measurements"]["control"]
    assert [r["step"] for r in rows if "step" in r] == [1, 2, 3, 4]
    assert all({"loss", "learning_rate", "grad_norm"} <= set(r) for r in rows if "step" in r)
    assert not any("train_runtime" in r for r in rows)  # the end-of-call summary is no series
    assert rows[-1] == {"metrics": F.METRICS["control"]}
    resumed = losses(facts["measurements"]["resume-check"])
    assert list(resumed) == [3, 4]
    assert resumed == {s: v for s, v in losses(rows).items() if s > 2}  # exact on CPU
    assert_accepted(itera, root)


def test_trainer_checkpoint_deleted_after_closure(
    itera: Itera, trainer: Campaigns, tmp_path: Path
) -> None:
    root = trainer["good"]
    checkpoint = "runs/control/trainer/checkpoint-4"
    removed = sorted(p.relative_to(root).as_posix() for p in (root / checkpoint).rglob("*")
                     if p.is_file())
    assert f"{checkpoint}/optimizer.pt" in removed
    with deleted(root, checkpoint, tmp_path / "checkpoint-4"):
        assert_missing(itera, root, checkpoint, removed)


def test_trainer_output_dir_outside_the_campaign_is_refused(tmp_path: Path) -> None:
    rec = F.frozen_recorder(tmp_path / "campaign")
    with pytest.raises(RecordError, match=r"TrainingArguments\.output_dir '.*/elsewhere' is "
                                          r"outside the campaign folder"):
        trainer_fit(rec, "control", tmp_path / "elsewhere")
    assert rec.checkpoints == ()
    with pytest.raises(RecordError, match="'nope' is not in the plan"):
        _trainer_callback(rec, "nope")


def test_trainer_save_total_limit_records_what_is_kept(tmp_path: Path) -> None:
    """The Trainer rotates checkpoints away: only the surviving one is recorded, at the end."""
    rec = F.frozen_recorder(tmp_path / "campaign")
    trainer_fit(rec, "control", rec.path("runs/control/trainer"), save_total_limit=1)
    assert not (rec.root / "runs/control/trainer/checkpoint-2").exists()
    assert [c["path"] for c in rec.checkpoints] == ["runs/control/trainer/checkpoint-4"]
    assert [s for s, _ in rec.run("control").series("loss")] == [1, 2, 3, 4]


def test_trainer_evaluating_with_gradient_accumulation_is_accepted(tmp_path: Path) -> None:
    """Evaluation at each save and gradient accumulation, resumed by the resume check: the
    evaluation's wall-clock (eval_runtime, eval_*_per_second) is no series (a resumed run
    cannot repeat it), its eval_loss is, and matches the control's; ACCEPTED."""
    options: dict[str, Any] = {"gradient_accumulation_steps": 2, "eval_strategy": "steps",
                               "eval_steps": 2,
               "evaluate": True}

    def control(rec: CampaignRecorder) -> None:
        trainer_fit(rec, "control", rec.path("runs/control/trainer"), **options)

    def resume(rec: CampaignRecorder) -> tuple[str, int]:
        resumed = "runs/control/trainer/checkpoint-2"
        trainer_fit(rec, "resume-check", rec.path("runs/resume-check/trainer"),
                    resume=str(rec.root / resumed), **options)
        return resumed, 2

    root = record(tmp_path / "campaign", (control, resume), TRAINER_PARTS).manifest.parent
    rows = recorded(root)["measurements"]
    names = {name for row in rows["control"] for name in row}
    assert {"loss", "eval_loss"} <= names
    assert not {n for n in names if n.endswith(("_runtime", "_per_second"))}, names
    resumed = {r["step"]: r["eval_loss"] for r in rows["resume-check"] if "eval_loss" in r}
    assert resumed == {r["step"]: r["eval_loss"] for r in rows["control"]
                       if "eval_loss" in r and r["step"] > 2}
    assert_accepted_in_process(root)


def test_trainer_that_saves_nothing_leaves_no_empty_folder(tmp_path: Path) -> None:
    """save_strategy="no" (a pilot, say): the Trainer still creates output_dir and writes
    nothing in it, an empty folder that no-empty-files rejects; the callback removes it when
    training ends, and the run's losses are recorded."""
    rec = F.frozen_recorder(tmp_path / "campaign")
    output = rec.path("runs/control/trainer")
    trainer_fit(rec, "control", output, save_strategy="no")
    assert not output.exists()
    assert rec.checkpoints == ()
    assert [s for s, _ in rec.run("control").series("loss")] == [1, 2, 3, 4]


def test_trainer_claims_follow_the_files_written(tmp_path: Path) -> None:
    """save_only_model: the folders hold the weights and the trainer state only."""
    rec = F.frozen_recorder(tmp_path / "campaign", ["model", "progress"])
    trainer_fit(rec, "control", rec.path("runs/control/trainer"), save_only_model=True,
                ignore_data_skip=True)
    assert {c["path"]: c["claims"] for c in rec.checkpoints} == {
        f"runs/control/trainer/checkpoint-{n}": ["model", "progress"] for n in (2, 4)}


def test_trainer_checkpoints_that_cannot_resume_are_refused_at_the_first_save(
    tmp_path: Path,
) -> None:
    """Issue 26.3: under a plan requiring every resume part, save_only_model folders are
    refused when the first is recorded, with resume-complete's words, not after closure."""
    rec = F.frozen_recorder(tmp_path / "campaign")
    with pytest.raises(RecordError) as refused:
        trainer_fit(rec, "control", rec.path("runs/control/trainer"), save_only_model=True,
                    ignore_data_skip=True)
    assert str(refused.value).startswith(
        "checkpoint runs/control/trainer/checkpoint-2: its parts do not cover the resume state "
        "the plan requires of run 'control', as the plugin would report (resume-complete):\n"
        "plan.json $.checkpoint_policy.resume_state: resume checkpoint "
        "runs/control/trainer/checkpoint-2 lacks optimizer, scheduler, rng, data, required by "
        "the plan's checkpoint_policy.resume_state\n"
        "    expected: model, optimizer, progress, scheduler, rng, data\n"
        "    found:    model, progress\n"
        "    fix:      save every required part (hf-trainer: optimizer in optimizer.pt;")
    # The checks' fix speaks of listing files; the callback lists them: the Trainer's setting.
    assert str(refused.value).endswith(
        "\nWhat to do here: TrainingArguments(save_only_model=True) writes the weights and the "
        "trainer state alone: drop save_only_model, so that each checkpoint-N holds the "
        "optimizer, scheduler and rng states too; or, before any run starts, freeze a plan "
        "whose runs[].resume_state for this run asks only for what these folders hold")
    assert rec.checkpoints == ()


def test_trainer_resumed_in_the_same_run_records_nothing_twice(tmp_path: Path) -> None:
    """After a crash, the same run resumes from its checkpoint-2: the steps after it are
    trained again (rewound, then logged again), checkpoint-4 is not recorded twice."""
    rec = F.frozen_recorder(tmp_path / "campaign")
    output = rec.path("runs/control/trainer")
    trainer_fit(rec, "control", output)
    first = rec.run("control").series("loss")
    trainer_fit(rec, "control", output, resume=str(output / "checkpoint-2"))
    assert rec.run("control").series("loss") == first
    assert "resumed_from" not in rec.run("control").record  # its own checkpoint: no evidence
    assert [c["path"] for c in rec.checkpoints] == [
        f"runs/control/trainer/checkpoint-{n}" for n in (2, 4)]
    events = journal_events(rec.journal.path)
    assert {"event": "rewind", "run": "control", "step": 2} in events


def test_trainer_journals_its_saves_and_the_base_it_trains_on(tmp_path: Path) -> None:
    """Issue 24, points 2 and 12: each checkpoint-N is journaled with its tree digest and
    step; a base recorded with record_base is journaled (revision, tree digest) when
    training starts."""
    rec = F.frozen_recorder(tmp_path / "campaign")
    rec.write_bytes("runs/control/base/config.json", b"{}\n")
    tree = rec.record_base("runs/control/base", model="tiny", revision="c" * 40)
    trainer_fit(rec, "control", rec.path("runs/control/trainer"))
    events = journal_events(rec.journal.path)
    [trained] = [e for e in events if e["event"] == "training-base"]
    assert (trained["run"], trained["revision"], trained["tree_sha256"]) == (
        "control", "c" * 40, tree)
    saves = [(e["path"], e["step"]) for e in events if e["event"] == "checkpoint"]
    assert saves == [(f"runs/control/trainer/checkpoint-{n}", n) for n in (2, 4)]
    assert all(len(e["tree_sha256"]) == 64 for e in events if e["event"] == "checkpoint")


def test_lightning_journals_each_save_with_its_step(tmp_path: Path) -> None:
    """Each .ckpt a ModelCheckpoint writes is journaled with the step it holds."""
    rec = F.frozen_recorder(tmp_path / "campaign", LIGHTNING_PARTS)
    dirpath = rec.path("runs/control/ckpt")
    lightning_fit(rec, "control", dirpath)
    events = journal_events(rec.journal.path)
    saves = [(e["path"].rsplit("/", 1)[1], e.get("step")) for e in events
             if e["event"] == "checkpoint"]
    assert saves == [("epoch=0-step=4.ckpt", 4), ("epoch=1-step=8.ckpt", 8)]


def test_lightning_continuing_its_own_checkpoint_records_no_resumed_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """After a crash the control fits again from its own step-4 file: a continuation, not a
    resume check's evidence; a resume check resumed from a file outside the campaign is told
    to record resumed_from itself (the checks fail a resume check without one)."""
    rec = F.frozen_recorder(tmp_path / "campaign", LIGHTNING_PARTS)
    dirpath = rec.path("runs/control/ckpt")
    lightning_fit(rec, "control", dirpath)
    lightning_fit(rec, "control", dirpath, ckpt_path=str(dirpath / "epoch=0-step=4.ckpt"))
    assert "resumed_from" not in rec.run("control").record
    outside = tmp_path / "elsewhere.ckpt"
    shutil.copyfile(dirpath / "epoch=0-step=4.ckpt", outside)
    monkeypatch.setattr(sys.modules[__name__], "quiet", contextlib.nullcontext)  # heard
    with warnings.catch_warnings():  # Lightning's own warnings, re-emitted by pytest.warns
        warnings.simplefilter("ignore")
        with pytest.warns(UserWarning, match=r"run 'resume-check' resumed at step 4 from a "
                          r"file outside the campaign .*: record it with rec\.run\("
                          r"'resume-check'\)\.resumed_from\(<checkpoint path>, 4\)"):
            lightning_fit(rec, "resume-check", rec.path("runs/resume-check/ckpt"),
                          ckpt_path=str(outside))
    assert "resumed_from" not in rec.run("resume-check").record


def test_lightning_journals_each_save_of_its_overwritten_last_ckpt(tmp_path: Path) -> None:
    """save_last: last.ckpt is written again at each save; each save is journaled, and the
    last journaled one is the file shipped."""
    rec = F.frozen_recorder(tmp_path / "campaign", LIGHTNING_PARTS)
    lightning_fit(rec, "control", rec.path("runs/control/ckpt"), save_last=True)
    events = journal_events(rec.journal.path)
    last = [e for e in events if e["event"] == "checkpoint"
            and e["path"] == "runs/control/ckpt/last.ckpt"]
    assert [e.get("step") for e in last] == [4, 8]
    shipped = hashlib.sha256((rec.root / "runs/control/ckpt/last.ckpt").read_bytes())
    assert last[-1]["sha256"] == shipped.hexdigest()


def test_lightning_last_ckpt_written_as_a_link_is_listed_with_its_targets_bytes(
        tmp_path: Path) -> None:
    """ModelCheckpoint(save_last="link") writes last.ckpt as a symbolic link to the newest
    checkpoint: inside the campaign, files-intact accepts it, so the recorder lists it (its
    target's bytes); a link that leaves the folder is still refused, saying why."""
    from pytest_itera.record.close import list_files

    rec = F.frozen_recorder(tmp_path / "campaign", LIGHTNING_PARTS)
    dirpath = rec.path("runs/control/ckpt")
    lightning_fit(rec, "control", dirpath, save_last="link")
    link = dirpath / "last.ckpt"
    assert link.is_symlink()
    assert os.readlink(link) == "epoch=1-step=8.ckpt"
    listed = {f["path"]: f for f in list_files(rec.root)}
    target = (dirpath / "epoch=1-step=8.ckpt").read_bytes()
    assert listed["runs/control/ckpt/last.ckpt"] == {
        "path": "runs/control/ckpt/last.ckpt", "bytes": len(target),
        "sha256": hashlib.sha256(target).hexdigest()}
    outside = tmp_path / "elsewhere.ckpt"
    outside.write_bytes(target)
    (dirpath / "copy.ckpt").symlink_to(outside)
    with pytest.raises(RecordError, match=r"^runs/control/ckpt/copy\.ckpt is a symbolic link "
                       r"that leaves the campaign folder: the campaign must hold what it "
                       r"lists; copy the target in its place$"):
        list_files(rec.root)
    (dirpath / "copy.ckpt").unlink()
    (dirpath / "gone.ckpt").symlink_to("epoch=9-step=99.ckpt")
    with pytest.raises(RecordError, match=r"gone\.ckpt is a symbolic link that dangles"):
        list_files(rec.root)


# ---------------------------------------------------------------------- Lightning


def test_lightning_campaign_is_accepted(itera: Itera, lightning: Campaigns) -> None:
    root = lightning["good"]
    facts = recorded(root)
    control = [c for c in facts["checkpoints"] if c["run"] == "control"]
    assert control == [
        {"path": f"runs/control/ckpt/epoch={e}-step={s}.ckpt", "run": "control",
         "format": "lightning", "kind": "resume", "claims": LIGHTNING_PARTS}
        for e, s in ((0, 4), (1, 8))]
    rows = facts["measurements"]["control"]
    assert list(losses(rows)) == [1, 2, 3, 4, 5, 6, 7, 8]
    resumed = losses(facts["measurements"]["resume-check"])
    assert list(resumed) == [5, 6, 7, 8]
    assert resumed == {s: v for s, v in losses(rows).items() if s > 4}  # exact on CPU
    assert_accepted(itera, root)


def test_lightning_under_a_plan_requiring_rng_is_refused_when_the_callback_is_created(
    tmp_path: Path,
) -> None:
    """Issue 26.3: Lightning checkpoints store no RNG state by design; the callback says so
    before any training, with resume-complete's words and what to do, not at closure. The
    way through, a plan that gives the run what a .ckpt holds, is the ``lightning``
    campaign (ACCEPTED: test_lightning_campaign_is_accepted)."""
    from pytest_itera.record.integrations.lightning import IteraCallback

    rec = F.frozen_recorder(tmp_path / "campaign")  # resume_state: model ... rng, data
    with pytest.raises(RecordError) as refused:
        IteraCallback(rec, "control")
    message = str(refused.value)
    assert message.startswith(
        "IteraCallback(rec, 'control'): refused before training, as the plugin would refuse "
        "every .ckpt of the run at closure (resume-complete):\n"
        "plan.json $.checkpoint_policy.resume_state: the Lightning checkpoints of run control "
        "cannot hold rng, required by the plan's checkpoint_policy.resume_state: Lightning "
        "checkpoints store no RNG state by design\n")
    assert "What to do: before any run starts, freeze a new campaign whose plan gives run " \
        "'control' a runs[].resume_state that a Lightning checkpoint holds" in message
    assert rec.run("control").started_at is None
    again = F.frozen_recorder(tmp_path / "next", LIGHTNING_PARTS)  # the way through
    assert IteraCallback(again, "control").run_id == "control"


def test_lightning_weights_only_checkpoints_are_refused_with_the_callbacks_setting(
    tmp_path: Path,
) -> None:
    """ModelCheckpoint(save_weights_only=True) under a plan requiring the optimizer: refused
    at the first save with resume-complete's words, and the setting to change."""
    rec = F.frozen_recorder(tmp_path / "campaign", LIGHTNING_PARTS)
    with pytest.raises(RecordError) as refused:
        lightning_fit(rec, "control", rec.path("runs/control/ckpt"), save_weights_only=True)
    message = str(refused.value)
    assert message.startswith("checkpoint runs/control/ckpt/epoch=0-step=4.ckpt: its parts do "
                              "not cover the resume state the plan requires of run 'control'")
    assert "lacks optimizer" in message
    assert message.endswith(
        "\nWhat to do here: ModelCheckpoint(save_weights_only=True) writes the weights alone: "
        "drop save_weights_only, so that each .ckpt holds the optimizer, scheduler and loop "
        "states too; or, before any run starts, freeze a plan whose runs[].resume_state for "
        "this run asks only for what the file holds")
    assert rec.checkpoints == ()


def test_lightning_weights_only_checkpoints_beside_full_ones_are_weights(
    tmp_path: Path,
) -> None:
    """A second ModelCheckpoint(save_weights_only=True), keeping the best two by loss, beside
    the one writing full checkpoints: its files are the weights to deliver, recorded as
    weights checkpoints, not refused as resume checkpoints lacking the optimizer; the
    campaign is ACCEPTED."""
    from lightning.pytorch.callbacks import ModelCheckpoint

    def control(rec: CampaignRecorder) -> None:
        best = ModelCheckpoint(dirpath=str(rec.path("runs/control/best")), filename="best-{step}",
                               every_n_train_steps=2, save_top_k=2, monitor="train_loss",
                               save_weights_only=True)
        lightning_fit(rec, "control", rec.path("runs/control/ckpt"), callbacks=[best])

    root = record(tmp_path / "campaign", (control, lightning_resume), LIGHTNING_PARTS)
    kinds = {c["path"]: (c["kind"], c.get("claims")) for c in recorded(root.manifest.parent)[
        "checkpoints"] if c["run"] == "control"}
    assert kinds == {
        "runs/control/ckpt/epoch=0-step=4.ckpt": ("resume", LIGHTNING_PARTS),
        "runs/control/ckpt/epoch=1-step=8.ckpt": ("resume", LIGHTNING_PARTS),
        **{f"runs/control/best/best-step={n}.ckpt": ("weights", None) for n in (6, 8)}}
    assert_accepted_in_process(root.manifest.parent)


def test_lightning_checkpoint_deleted_after_closure(
    itera: Itera, lightning: Campaigns, tmp_path: Path
) -> None:
    root = lightning["good"]
    checkpoint = "runs/control/ckpt/epoch=1-step=8.ckpt"
    with deleted(root, checkpoint, tmp_path / "last.ckpt"):
        assert_missing(itera, root, checkpoint, [checkpoint])


def test_lightning_dirpath_outside_the_campaign_is_refused(tmp_path: Path) -> None:
    rec = F.frozen_recorder(tmp_path / "campaign", LIGHTNING_PARTS)
    with pytest.raises(RecordError, match=r"ModelCheckpoint\.dirpath '.*/elsewhere' is "
                                          r"outside the campaign folder"):
        lightning_fit(rec, "control", tmp_path / "elsewhere")
    assert rec.checkpoints == ()
    assert rec.run("control").series("loss") == []


def test_lightning_save_top_k_records_what_is_kept(tmp_path: Path) -> None:
    """ModelCheckpoint(save_top_k=1) deletes the older file: only the kept one is recorded."""
    rec = F.frozen_recorder(tmp_path / "campaign", LIGHTNING_PARTS)
    lightning_fit(rec, "control", rec.path("runs/control/ckpt"), save_top_k=1)
    assert [c["path"] for c in rec.checkpoints] == ["runs/control/ckpt/epoch=1-step=8.ckpt"]


def test_lightning_resumed_in_the_same_run_records_nothing_twice(tmp_path: Path) -> None:
    rec = F.frozen_recorder(tmp_path / "campaign", LIGHTNING_PARTS)
    dirpath = rec.path("runs/control/ckpt")
    lightning_fit(rec, "control", dirpath)
    first = rec.run("control").series("loss")
    lightning_fit(rec, "control", dirpath, ckpt_path=str(dirpath / "epoch=0-step=4.ckpt"))
    assert rec.run("control").series("loss") == first
    # Lightning does not overwrite: the step-8 file it writes again is a new version.
    assert [c["path"] for c in rec.checkpoints] == [
        f"runs/control/ckpt/epoch={e}-step={s}.ckpt" for e, s in ((0, 4), (1, 8), (1, "8-v1"))]
    events = journal_events(rec.journal.path)
    assert {"event": "rewind", "run": "control", "step": 4} in events


# -------------------------------------------------------------------- the modules


def test_importing_the_integrations_imports_no_tool() -> None:
    code = ("import sys, pytest_itera, pytest_itera.record.integrations, "
            "pytest_itera.record.campaign\n"
            "print(sorted(m for m in ('transformers', 'lightning', 'torch') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def _trainer_callback(rec: CampaignRecorder, run_id: str) -> Any:
    from pytest_itera.record.integrations.transformers import IteraCallback

    return IteraCallback(rec, run_id)
