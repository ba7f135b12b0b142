"""The rules of ``resume-complete`` (pytest_itera/checks/artifacts/resume_complete.py): each break
refused, with its honest twin.

Where the cases come from (the files they were first written in):

Issue 24: checkpoints judged by content against the manifest and each other.

On the factory's campaign (real torch.save files of tiny models), changed in ONE way while
every size and hash stays consistent:

- resume-complete: the step a resume checkpoint stores is the resumed_from step naming it
  (or "cannot prove" when it stores none); its optimizer fits its model and is finite;
- artifacts-required: two deliverable runs never ship the same weights (same bytes, or the
  same tensors in other bytes); a run's checkpoints agree on their shapes and hold the
  layer size its config states;
- checkpoint-reloads: a shard overwritten by another shard of a saved model is refused.

Judged in-process by tests/checks/judging.py's ``judge``; each failing case has
its passing twin.
"""
from __future__ import annotations

import copy
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from pytest_itera.core.campaign import MANIFEST_FILE
from tests.checks.campaigns import (
    _control,
    _set_config,
    _torch_bytes,
    edited,
)
from tests.checks.judging import expect_finding, expect_no_finding, judge
from tests.factory import (
    CONTROL_CKPT,
    RESUME_CKPT,
    RESUME_SAVED_AT,
    RESUMED_AT,
    CampaignBuilder,
)

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _changed_control(tmp_path: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    """The factory's campaign whose control resume checkpoint ``change`` edited (re-saved,
    its size and hash recorded anew)."""
    b = CampaignBuilder(tmp_path / "out")
    ckpt = _control(b)
    change(ckpt)
    b.files[CONTROL_CKPT] = _torch_bytes(ckpt)
    return b.write()


def test_the_factory_campaign_is_accepted(tmp_path: Path) -> None:
    expect_no_finding(judge(CampaignBuilder(tmp_path / "out").write()))


# ------------------------------------------------------------------ the stored step


def test_a_resumed_from_step_the_checkpoint_does_not_store(tmp_path: Path) -> None:
    def change(ckpt: dict[str, Any]) -> None:
        ckpt["progress"]["step"] = RESUMED_AT + 3  # the file says 5, the resume check says 2

    problem = expect_finding(judge(_changed_control(tmp_path, change), "resume-complete",
                                   target=CONTROL_CKPT), "resume-complete.step-mismatch",
                             says=(f"{CONTROL_CKPT} stores step 5", "resumed_from.step 2"))
    assert problem.where == "manifest.json $.runs[2].resumed_from.step"
    assert (problem.expected, problem.found) == ("2", "5")


def test_a_resumed_from_step_above_the_stored_one(tmp_path: Path) -> None:
    b = CampaignBuilder(tmp_path / "out")
    b.run_record("resume-check")["resumed_from"]["step"] = RESUMED_AT + 1
    problem = expect_finding(judge(b.write(), "resume-complete"), "resume-complete.step-mismatch")
    assert problem.message.startswith(
        f"{CONTROL_CKPT} stores step 2, but run resume-check records resumed_from.step 3")


def test_a_checkpoint_that_stores_no_step_cannot_prove_it(tmp_path: Path) -> None:
    def change(ckpt: dict[str, Any]) -> None:
        ckpt["progress"] = {"epoch": 0}

    problem = expect_finding(judge(_changed_control(tmp_path, change), "resume-complete"),
                             "resume-complete.step-unproven",
                             says=(f"cannot prove that {CONTROL_CKPT} holds step 2",
                                   "it stores no training step"))
    assert "save_resume_checkpoint" in str(problem.hint)


# ------------------------------------------------- a required part that restores nothing


@pytest.mark.parametrize(("part", "value", "says"), [
    pytest.param("rng", 1234, "holds no restorable rng: 'rng' holds 1234, which is no random "
                 "generator state (a seed is not an RNG state", id="a-seed-for-rng"),
    pytest.param("scheduler", {}, "scheduler is present but empty ('scheduler' holds",
                 id="an-empty-scheduler"),
])
def test_a_required_part_that_restores_nothing_is_refused(
    tmp_path: Path, part: str, value: object, says: str
) -> None:
    def change(ckpt: dict[str, Any]) -> None:
        ckpt[part] = value

    expect_finding(judge(_changed_control(tmp_path, change), "resume-complete",
                         target=CONTROL_CKPT), "resume-complete.part-unrestorable",
                   where="manifest.json $.checkpoints[0]",
                   says=(f"resume checkpoint {CONTROL_CKPT}", says))


# ------------------------------------------- a resume checkpoint whose parts cannot be known

Break = Callable[[CampaignBuilder, str], Callable[[Path], None] | None]


def _absent(b: CampaignBuilder, path: str) -> None:
    return None


def _truncated(b: CampaignBuilder, path: str) -> None:
    whole = b.files[CONTROL_CKPT]
    b.files[path] = whole[: len(whole) // 2]  # listed with its own size and sha256


def _fifo(b: CampaignBuilder, path: str) -> Callable[[Path], None]:
    return lambda root: os.mkfifo(root / path)  # planted before the manifest: never listed


AT = "manifest.json $.checkpoints[3]"  # after the factory's three


@pytest.mark.parametrize(("path", "break_", "code", "where", "says"), [
    pytest.param("runs/control/gone.pt", _absent, "resume-complete.missing", f"{AT}.path",
                 "resume checkpoint runs/control/gone.pt is missing", id="missing"),
    pytest.param("../outside.pt", _absent, "resume-complete.outside", f"{AT}.path",
                 "'..' leaves the campaign folder: it is not loaded", id="outside"),
    pytest.param("runs/control/step-3.pt", _fifo, "resume-complete.not-a-file", f"{AT}.path",
                 "is neither a regular file nor a folder", id="a-fifo"),
    # Through a regular file: its lstat fails with ENOTDIR, not FileNotFoundError.
    pytest.param(f"{CONTROL_CKPT}/step-3.pt", _absent, "resume-complete.unreadable",
                 f"{AT}.path", "cannot be read: not a directory", id="through-a-file"),
    pytest.param("runs/control/step-3.pt", _truncated, "resume-complete.no-reload", AT,
                 "the resume parts of runs/control/step-3.pt are unknown: it does not reload",
                 id="truncated"),
])
def test_a_resume_checkpoint_that_cannot_be_read_is_refused(
    tmp_path: Path, path: str, break_: Break, code: str, where: str, says: str
) -> None:
    b = CampaignBuilder(tmp_path / "out")
    b.manifest["checkpoints"].append(
        {"path": path, "run": "control", "format": "torch", "kind": "resume",
         "claims": ["model", "optimizer", "progress", "scheduler", "rng", "data"]})
    b.write(before_manifest=break_(b, path))
    expect_finding(judge(b, "resume-complete", target=path, write=False), code, where=where,
                   says=says)


# ------------------------------------------------------------------ the optimizer


def test_an_optimizer_buffer_of_another_shape(tmp_path: Path) -> None:
    def change(ckpt: dict[str, Any]) -> None:
        ckpt["optimizer"]["state"][0]["momentum_buffer"] = torch.zeros(5, 5)

    expect_finding(judge(_changed_control(tmp_path, change), "resume-complete"),
                   "resume-complete.optimizer-mismatch",
                   says=(f"resume checkpoint {CONTROL_CKPT} does not fit its model",
                         "optimizer.state.0 has buffers of shape [5, 5]",
                         "the model has 0 tensor(s) of that shape"))


def test_an_optimizer_for_part_of_the_model_cannot_be_proven(tmp_path: Path) -> None:
    def change(ckpt: dict[str, Any]) -> None:
        for group in ckpt["optimizer"]["param_groups"]:
            group["params"] = group["params"][:1]
        del ckpt["optimizer"]["state"][1]

    problem = expect_finding(judge(_changed_control(tmp_path, change), "resume-complete"),
                             "resume-complete.optimizer-unproven",
                             says=(f"resume checkpoint {CONTROL_CKPT} fits its model",
                                   "1 parameter(s) for the model's 2 floating-point tensors"))
    assert "named_parameters()" in str(problem.hint)


def test_a_non_finite_optimizer_state_cannot_resume(tmp_path: Path) -> None:
    def change(ckpt: dict[str, Any]) -> None:
        ckpt["optimizer"]["state"][0]["momentum_buffer"][1, 2] = float("inf")

    expect_finding(judge(_changed_control(tmp_path, change), "resume-complete"),
                   "resume-complete.optimizer-nonfinite",
                   says=(f"resume checkpoint {CONTROL_CKPT} holds a non-finite optimizer state",
                         "optimizer.state.0.momentum_buffer (1 inf)"))


# ------------------------------------------------- the optimizer agrees with its scheduler

S = torch.optim.lr_scheduler
SCHEDULERS: dict[str, Callable[[torch.optim.Optimizer], Any]] = {
    "StepLR": lambda o: S.StepLR(o, step_size=2, gamma=0.5),
    "OneCycleLR": lambda o: S.OneCycleLR(o, max_lr=[0.3, 0.1], total_steps=10),
    "SequentialLR": lambda o: S.SequentialLR(
        o, [S.LinearLR(o, start_factor=0.2, total_iters=2), S.CosineAnnealingLR(o, T_max=5)],
        milestones=[2]),
    "ReduceLROnPlateau": lambda o: S.ReduceLROnPlateau(o, patience=0),
}


def _two_groups(ckpt: dict[str, Any], scheduler: Callable[[torch.optim.Optimizer], Any],
                edit: Callable[[torch.optim.Optimizer], None] | None = None,
                scheduler_at: int = 3) -> None:
    """The control's optimizer and scheduler again, over two parameter groups (the weight,
    and the bias at a lower lr), trained 3 steps; the scheduler's state taken after
    ``scheduler_at`` of them, then ``edit`` changes the optimizer."""
    model = torch.nn.Linear(4, 2)
    model.load_state_dict(ckpt["model"])
    groups: list[dict[str, Any]] = [{"params": [model.weight]},
                                    {"params": [model.bias], "lr": 0.05}]
    opt = torch.optim.SGD(groups, lr=0.1, momentum=0.9)
    sched = scheduler(opt)
    for step in range(1, 4):
        opt.zero_grad()
        model(torch.ones(1, 4)).sum().backward()
        opt.step()
        sched.step(1.0) if isinstance(sched, S.ReduceLROnPlateau) else sched.step()
        if step == scheduler_at:
            ckpt["scheduler"] = copy.deepcopy(sched.state_dict())
    if edit is not None:
        edit(opt)
    ckpt["optimizer"] = opt.state_dict()


def test_an_optimizer_lr_edited_after_the_scheduler_saved_cannot_resume(tmp_path: Path) -> None:
    def halve_group_1(opt: torch.optim.Optimizer) -> None:
        opt.param_groups[1]["lr"] /= 2

    def change(ckpt: dict[str, Any]) -> None:
        _two_groups(ckpt, SCHEDULERS["StepLR"], halve_group_1)

    problem = expect_finding(judge(_changed_control(tmp_path, change), "resume-complete"),
                             "resume-complete.lr-disagrees",
                             says=(f"resume checkpoint {CONTROL_CKPT} cannot resume as saved",
                                   "in parameter group 1 (of 2) the optimizer's lr is 0.0125",
                                   "the LR scheduler's last lr is 0.025"))
    assert problem.where == f"{MANIFEST_FILE} $.checkpoints[0]"
    assert problem.hint == (
        "save the optimizer and the LR scheduler state at the same step, after "
        "scheduler.step(): optimizer.state_dict() and scheduler.state_dict() taken together "
        "(pytest_itera.record.save_resume_checkpoint does); do not set a group's lr by hand "
        "beside a scheduler")


def test_a_scheduler_saved_a_step_before_the_optimizer_cannot_resume(tmp_path: Path) -> None:
    """A OneCycleLR state of step 2 beside the optimizer of step 3: both groups disagree;
    a base lr written by hand too."""
    def change(ckpt: dict[str, Any]) -> None:
        _two_groups(ckpt, SCHEDULERS["OneCycleLR"], scheduler_at=2)
        ckpt["scheduler"]["base_lrs"][0] = 0.5

    problem = expect_finding(judge(_changed_control(tmp_path, change), "resume-complete"),
                             "resume-complete.lr-disagrees")
    said = problem.message.split("disagree: ", 1)[1].split("; ")
    assert [s.split(" the optimizer's ")[1].split(" is ")[0] for s in said] == [
        "lr", "lr", "initial_lr"]
    assert [s.split(" (of 2)")[0] for s in said] == [
        "in parameter group 0", "in parameter group 1", "in parameter group 0"]
    assert said[2] == ("in parameter group 0 (of 2) the optimizer's initial_lr is 0.012 "
                       "(optimizer param_groups[0]['initial_lr']) but the LR scheduler's base "
                       "lr is 0.5 (scheduler base_lrs[0])")


@pytest.mark.parametrize("name", sorted(SCHEDULERS))
def test_a_real_scheduler_saved_with_its_optimizer_resumes(tmp_path: Path, name: str) -> None:
    expect_no_finding(judge(_changed_control(tmp_path, lambda c: _two_groups(c, SCHEDULERS[name]))))


def test_the_recorders_own_resume_save_resumes(tmp_path: Path) -> None:
    from pytest_itera.record.resume import save_resume_checkpoint

    b = CampaignBuilder(tmp_path / "out")
    model = torch.nn.Linear(4, 2)
    model.load_state_dict(_control(b)["model"])
    groups: list[dict[str, Any]] = [{"params": [model.weight]},
                                    {"params": [model.bias], "lr": 3e-4}]
    opt = torch.optim.AdamW(groups, lr=1e-3)
    sched = S.CosineAnnealingLR(opt, T_max=4)
    for _ in range(RESUMED_AT):
        model(torch.ones(1, 4)).sum().backward()
        opt.step()
        sched.step()
    save_resume_checkpoint(tmp_path / "step-2.pt", model=model, optimizer=opt, scheduler=sched,
                           step=RESUMED_AT, data_state={"epoch": 0, "index": RESUMED_AT})
    b.files[CONTROL_CKPT] = (tmp_path / "step-2.pt").read_bytes()
    expect_no_finding(judge(b.write()))


def test_weights_with_the_width_their_config_states(tmp_path: Path) -> None:
    b = CampaignBuilder(tmp_path / "out")
    _set_config(b, "variant-a", {"run": "variant-a", "lr": 0.01, "width": 4})
    expect_no_finding(judge(b.write()))


def test_two_stored_steps_that_disagree_cannot_prove_the_step(tmp_path: Path) -> None:
    def change(ckpt: dict[str, Any]) -> None:
        ckpt["global_step"] = RESUMED_AT + 1

    expect_finding(judge(_changed_control(tmp_path, change), "resume-complete"),
                   "resume-complete.step-unproven",
                   says=(f"cannot prove that {CONTROL_CKPT} holds step 2",
                         "the steps it stores disagree (progress.step 2, global_step 3)"))


# ---------------------------------------- first written in test_one_rule_breaks.py


def test_a_resume_checks_checkpoint_copied_from_the_one_it_resumed_is_refused(
    campaign: CampaignBuilder
) -> None:
    campaign.files[RESUME_CKPT] = campaign.files[CONTROL_CKPT]
    found = expect_finding(
        judge(campaign, "resume-complete", target=RESUME_CKPT), "resume-complete.never-trained",
        where="manifest.json $.checkpoints[1]",
        says=(f"is byte for byte {CONTROL_CKPT}, the checkpoint it resumed from",
              "the resume never trained"))
    assert found.expected == ("a checkpoint of run resume-check saved after training "
                              f"past step {RESUMED_AT} in the new process")
    assert found.hint is not None
    assert found.hint.startswith("resume the checkpoint in a new process, train on")


@pytest.mark.parametrize(
    ("source", "step", "says"),
    [
        # Its step says it trained on; its model is the one it resumed, tensor for tensor.
        pytest.param(CONTROL_CKPT, RESUME_SAVED_AT,
                     f"holds the same model tensors (names, shapes, dtypes and checksums) as "
                     f"{CONTROL_CKPT}", id="the-resumed-tensors-at-a-later-step"),
        pytest.param(RESUME_CKPT, RESUMED_AT,
                     f"stores step {RESUMED_AT}, not after step {RESUMED_AT} of {CONTROL_CKPT}",
                     id="its-own-tensors-at-the-resumed-step"),
    ],
)
def test_a_resume_checks_checkpoint_that_did_not_train_on_is_refused(
    campaign: CampaignBuilder, source: str, step: int, says: str
) -> None:
    campaign.files[RESUME_CKPT] = edited(campaign, source, step=step)
    expect_finding(judge(campaign, "resume-complete"), "resume-complete.never-trained",
                   says=(says, "the checkpoint it resumed from"))


def test_a_resume_check_that_trained_on_passes_even_with_a_save_at_the_restore(
    campaign: CampaignBuilder
) -> None:
    expect_no_finding(judge(campaign, "resume-complete"))
    # A save right after the restore is no fault while a later checkpoint trained on.
    restored = "runs/resume-check/restored.pt"
    campaign.files[restored] = campaign.files[CONTROL_CKPT]
    campaign.manifest["checkpoints"].append(
        {"path": restored, "run": "resume-check", "format": "torch", "kind": "resume",
         "claims": ["model", "optimizer", "progress", "scheduler", "rng", "data"]})
    expect_no_finding(judge(campaign, "resume-complete"))
