"""Issue 24: what a checkpoint holds, reported as typed facts by the reload child.

- the optimizer fits the model (its parameters, their buffers' shapes) and is finite;
- shards hold what their index says;
- the step a checkpoint stores, its model tensors' shapes and a content digest that is
  equal for the same tensors in any format.

Real files of tiny models, written by torch, safetensors, transformers, accelerate, DCP.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import torch

from pytest_itera.checks.artifacts.checkpoint_content import rate_disagreements
from pytest_itera.reload import OptimizerProblem, Rate, Reloader
from tests import checkpoints

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _adamw(model: torch.nn.Module, params: Any = None) -> torch.optim.Optimizer:
    opt = torch.optim.AdamW(model.parameters() if params is None else params, lr=1e-3)
    first = next(m for m in model.modules() if isinstance(m, torch.nn.Linear))
    model(torch.randn(3, first.in_features)).pow(2).mean().backward()
    opt.step()
    return opt


def _resume(tmp_path: Path, model: torch.nn.Module, optimizer: dict[str, Any],
            step: int = 10) -> Path:
    path = tmp_path / "resume.pt"
    torch.save({"model": model.state_dict(), "optimizer": optimizer,
                "progress": {"step": step, "epoch": 0}}, path)
    return path


# ---------------------------------------------------------------- optimizer fits the model


def test_a_fitting_optimizer_has_no_problem(reloader: Reloader, tmp_path: Path) -> None:
    model = checkpoints.tiny_model()
    res = reloader.reload(_resume(tmp_path, model, _adamw(model).state_dict()), "r.pt")
    assert res.ok, res.cause
    assert res.optimizer is not None
    assert (res.optimizer.params, res.optimizer.problems, res.optimizer.nonfinite_buffers) == \
        (4, (), 0)


def test_an_optimizer_for_2_of_4_parameter_tensors_cannot_be_proven(
        reloader: Reloader, tmp_path: Path) -> None:
    model = checkpoints.tiny_model()
    opt = _adamw(model, list(model.parameters())[:2])  # the first layer only
    res = reloader.reload(_resume(tmp_path, model, opt.state_dict()), "r.pt")
    assert res.optimizer is not None
    assert res.optimizer.problems == (OptimizerProblem(
        "unproven", "optimizer",
        "has 2 parameter(s) for the model's 4 floating-point tensors: the other tensors are "
        "frozen parameters or buffers, or the optimizer state is another model's (its "
        "parameters are numbered, not named)"),)


def test_a_peft_models_optimizer_over_its_adapter_tensors_is_proven(
        reloader: Reloader, tmp_path: Path) -> None:
    """LoRA training keeps the base frozen: the optimizer holds the adapter's tensors only,
    and the resume checkpoint the whole PeftModel state dict. That is a fit, not a doubt."""
    from peft import LoraConfig, get_peft_model

    base = checkpoints.tiny_model()
    model = get_peft_model(base, LoraConfig(r=2, target_modules=["0", "2"]))
    trained = [p for p in model.parameters() if p.requires_grad]
    assert 0 < len(trained) < len(model.state_dict())
    opt = _adamw(model, trained)
    res = reloader.reload(_resume(tmp_path, model, opt.state_dict()), "r.pt")
    assert res.ok, res.cause
    assert res.optimizer is not None
    assert (res.optimizer.params, res.optimizer.problems) == (len(trained), ())


def test_an_optimizer_over_part_of_a_peft_models_adapter_is_not_proven(
        reloader: Reloader, tmp_path: Path) -> None:
    from peft import LoraConfig, get_peft_model

    model = get_peft_model(checkpoints.tiny_model(), LoraConfig(r=2, target_modules=["0", "2"]))
    trained = [p for p in model.parameters() if p.requires_grad]
    opt = _adamw(model, trained[:2])
    res = reloader.reload(_resume(tmp_path, model, opt.state_dict()), "r.pt")
    assert res.optimizer is not None
    assert [p.kind for p in res.optimizer.problems] == ["unproven"]


def _tied_gpt2() -> Any:
    """A config-built GPT-2: its LM head is its token embedding (tied weights)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=50, n_embd=8, n_layer=1, n_head=2,
                                       n_positions=16))
    assert model.lm_head.weight is model.transformer.wte.weight
    return model


def test_a_tied_weight_is_one_parameter_of_the_optimizer(
        reloader: Reloader, tmp_path: Path) -> None:
    """torch.save of a model with tied weights writes one storage under two names
    (transformer.wte.weight and lm_head.weight: what transformers 4's Trainer wrote as
    pytorch_model.bin, what a plain loop writes); the optimizer holds one state for it.
    An optimizer missing a real parameter is still not proven."""
    model = _tied_gpt2()
    ids = torch.tensor([[1, 2, 3, 4]])
    params = list(model.parameters())  # the tied weight once
    for name, given in (("all.pt", params), ("one-short.pt", params[1:])):
        opt = torch.optim.AdamW(given, lr=1e-3)
        model(input_ids=ids, labels=ids).loss.backward()
        opt.step()
        path = tmp_path / name
        torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": 1},
                   path)
        res = reloader.reload(path, name)
        assert res.ok, res.cause
        assert res.optimizer is not None
        if name == "all.pt":
            assert (res.optimizer.params, res.optimizer.problems) == (len(params), ())
        else:
            assert [p.detail for p in res.optimizer.problems] == [
                f"has {len(params) - 1} parameter(s) for the model's {len(params)} "
                "floating-point tensors: the other tensors are frozen parameters or buffers, "
                "or the optimizer state is another model's (its parameters are numbered, not "
                "named)"]
    assert "lm_head.weight" in res.model_shapes  # both names are still the model's


def test_a_momentum_buffer_of_another_shape_does_not_fit(
        reloader: Reloader, tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 3))  # weight 3x8
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(torch.randn(2, 8)).sum().backward()
    opt.step()
    state = opt.state_dict()
    state["state"][0]["momentum_buffer"] = torch.randn(5, 5)
    res = reloader.reload(_resume(tmp_path, model, state), "r.pt")
    assert res.ok, res.cause  # it loads: the optimizer cannot resume it
    assert res.optimizer is not None
    assert res.optimizer.problems == (OptimizerProblem(
        "mismatch", "optimizer.state.0",
        "has buffers of shape [5, 5] (1 parameter(s): 0), but the model has 0 tensor(s) of "
        "that shape: the optimizer state does not fit this model"),)


def test_more_parameters_than_the_model_has_tensors(reloader: Reloader, tmp_path: Path) -> None:
    big = checkpoints.tiny_model()
    small = torch.nn.Sequential(torch.nn.Linear(4, 8))
    path = _resume(tmp_path, small, torch.optim.SGD(big.parameters(), lr=0.1).state_dict())
    res = reloader.reload(path, "r.pt")
    assert res.optimizer is not None
    assert [p.detail for p in res.optimizer.problems] == [
        "has 4 parameters, but the model has only 2 tensor(s) that can be parameters: the "
        "optimizer state is another model's"]


def test_state_of_a_parameter_no_group_lists(reloader: Reloader, tmp_path: Path) -> None:
    model = checkpoints.tiny_model()
    state = _adamw(model).state_dict()
    state["state"][7] = state["state"][0]
    res = reloader.reload(_resume(tmp_path, model, state), "r.pt")
    assert res.optimizer is not None
    assert [(p.kind, p.key) for p in res.optimizer.problems] == [("mismatch", "optimizer.state")]
    assert res.optimizer.problems[0].detail.startswith("holds state for parameter(s) 7, which no")


def test_named_parameters_prove_the_mapping_with_frozen_tensors(
        reloader: Reloader, tmp_path: Path) -> None:
    """torch >= 2.6 saves param_names: a frozen first layer is then proven, not guessed."""
    model = checkpoints.tiny_model()
    trained = [(n, p) for n, p in model.named_parameters() if n.startswith("2.")]
    opt = _adamw(model, trained)
    res = reloader.reload(_resume(tmp_path, model, opt.state_dict()), "r.pt")
    assert res.optimizer is not None
    assert res.optimizer.problems == ()
    state = opt.state_dict()
    state["state"][0]["exp_avg"] = torch.zeros(5, 5)
    state["state"][0]["exp_avg_sq"] = torch.zeros(5, 5)
    res = reloader.reload(_resume(tmp_path, model, state), "r.pt")
    assert res.optimizer is not None
    assert [p.detail for p in res.optimizer.problems] == [
        "has buffers of shape [5, 5] for parameter '2.weight' of shape [2, 8]"]


@pytest.mark.parametrize("wrapper", ["module.", "_orig_mod.", "module._orig_mod."])
def test_named_parameters_of_a_wrapper_prove_the_unwrapped_models_tensors(
        reloader: Reloader, tmp_path: Path, wrapper: str) -> None:
    """An optimizer built from a wrapper's named_parameters() (DDP's and DataParallel's
    'module.', torch.compile's '_orig_mod.': the names they yield) saved beside the
    unwrapped model's state dict (ddp.module.state_dict(), the usual save) names the same
    tensors: proven, and a wrong shape under a wrapped name is still a mismatch. Names of
    another scheme still prove nothing."""
    model = checkpoints.tiny_model()
    opt = _adamw(model, [(wrapper + n, p) for n, p in model.named_parameters()])
    state = opt.state_dict()
    assert state["param_groups"][0]["param_names"][0] == f"{wrapper}0.weight"
    res = reloader.reload(_resume(tmp_path, model, state), "r.pt")
    assert res.optimizer is not None
    assert (res.optimizer.params, res.optimizer.problems) == (4, ())
    state["state"][3]["exp_avg"] = torch.zeros(5)
    state["state"][3]["exp_avg_sq"] = torch.zeros(5)
    res = reloader.reload(_resume(tmp_path, model, state), "r.pt")
    assert res.optimizer is not None
    assert [p.detail for p in res.optimizer.problems] == [
        "has buffers of shape [5] for parameter '2.bias' of shape [2]"]
    other = _adamw(model, [(f"net.{n}", p) for n, p in model.named_parameters()])
    res = reloader.reload(_resume(tmp_path, model, other.state_dict()), "r.pt")
    assert res.optimizer is not None
    assert [p.kind for p in res.optimizer.problems] == ["unproven"]


def test_a_non_finite_adamw_buffer_is_named_and_counted(
        reloader: Reloader, tmp_path: Path) -> None:
    model = checkpoints.tiny_model()
    state = _adamw(model).state_dict()
    state["state"][2]["exp_avg"][0, 1] = float("inf")
    state["state"][2]["exp_avg_sq"][0, :3] = float("nan")
    res = reloader.reload(_resume(tmp_path, model, state), "r.pt")
    assert res.ok, res.cause  # the model is finite
    fit = res.optimizer
    assert fit is not None
    assert (fit.nonfinite_buffers, fit.nan_values, fit.inf_values) == (2, 3, 1)
    assert [(b.name, b.nan, b.inf) for b in fit.nonfinite] == [
        ("optimizer.state.2.exp_avg", 0, 1), ("optimizer.state.2.exp_avg_sq", 3, 0)]


def test_real_tools_optimizers_fit_their_models(reloader: Reloader, tmp_path: Path) -> None:
    for built in (checkpoints.hf_trainer_checkpoint(tmp_path),
                  checkpoints.accelerate_checkpoint(tmp_path),
                  checkpoints.lightning_checkpoint(tmp_path / "pl")):
        res = reloader.reload(built, built.name)
        assert res.ok, res.cause
        assert res.optimizer is not None, built
        assert res.optimizer.params > 0
        assert (res.optimizer.problems, res.optimizer.nonfinite_buffers) == ((), 0), built


@pytest.mark.parametrize("safe", [True, False], ids=["safetensors", "bin"])
def test_accelerate_models_of_one_save_state_keep_their_own_names(
        reloader: Reloader, tmp_path: Path, safe: bool) -> None:
    """A GAN under accelerate: generator and discriminator are both nn.Sequential (the same
    tensor names, other shapes); save_state writes model.safetensors and model_1.safetensors
    (pytorch_model.bin, pytorch_model_1.bin), optimizer.bin and optimizer_1.bin. The second
    model's tensors are its own (model_1.*), not the first one's overwritten: both optimizers
    fit, and the generator's shapes are the generator's."""
    from accelerate import Accelerator  # type: ignore[import-untyped]

    torch.manual_seed(0)
    acc = Accelerator(cpu=True)
    gen = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.ReLU(), torch.nn.Linear(8, 4))
    disc = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    opt_g, opt_d = (torch.optim.Adam(m.parameters(), lr=1e-3) for m in (gen, disc))
    gen, disc, opt_g, opt_d = acc.prepare(gen, disc, opt_g, opt_d)
    acc.backward(disc(gen(torch.randn(3, 2))).mean())
    opt_g.step()
    opt_d.step()
    acc.save_state(str(tmp_path / "acc"), safe_serialization=safe)
    names = {p.name for p in (tmp_path / "acc").iterdir()}
    assert {"optimizer.bin", "optimizer_1.bin"} <= names
    assert {"model.safetensors", "model_1.safetensors"} <= names if safe else \
        {"pytorch_model.bin", "pytorch_model_1.bin"} <= names
    res = reloader.reload(tmp_path / "acc", "acc")
    assert res.ok, res.cause
    assert res.optimizer is not None
    assert (res.optimizer.params, res.optimizer.problems) == (8, ())
    assert dict(res.model_shapes) == {
        "0.weight": (8, 2), "0.bias": (8,), "2.weight": (4, 8), "2.bias": (4,),
        "model_1.0.weight": (8, 4), "model_1.0.bias": (8,), "model_1.2.weight": (1, 8),
        "model_1.2.bias": (1,)}


def test_a_dcp_optimizer_is_judged_too(reloader: Reloader, tmp_path: Path) -> None:
    from torch.distributed.checkpoint import state_dict_saver

    model = checkpoints.tiny_model()
    opt = _adamw(model)
    state = opt.state_dict()
    state["state"][1]["exp_avg"][0] = float("nan")
    with checkpoints._quiet():
        state_dict_saver.save({"model": model.state_dict(), "optimizer": state,
                               "train_state": {"step": 3}}, checkpoint_id=str(tmp_path / "dcp"))
    res = reloader.reload(tmp_path / "dcp", "dcp")
    assert res.ok, res.cause
    assert res.step == 3
    assert res.optimizer is not None
    assert (res.optimizer.params, res.optimizer.problems) == (4, ())
    assert [(b.name, b.nan) for b in res.optimizer.nonfinite] == [
        ("optimizer.state.1.exp_avg", 1)]


# ------------------------------------------------------------- shards hold what the index says


def _sharded(folder: Path, safe: bool) -> Path:
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=50, n_embd=8, n_layer=2, n_head=2,
                                       n_positions=16))
    with checkpoints._quiet():
        model.save_pretrained(str(folder), max_shard_size="2KB", safe_serialization=safe)
    return folder


@pytest.mark.parametrize("safe", [True, False], ids=["safetensors", "bin"])
def test_an_intact_sharded_model_reloads(reloader: Reloader, tmp_path: Path, safe: bool) -> None:
    folder = _sharded(tmp_path / "model", safe)
    assert len(list(folder.glob("*-of-*"))) > 2
    res = reloader.reload(folder, "runs/x/model")
    assert res.ok, res.cause
    assert res.model_shapes["transformer.wte.weight"] == (50, 8)


@pytest.mark.parametrize("safe", [True, False], ids=["safetensors", "bin"])
def test_a_shard_overwritten_by_another_is_refused(
        reloader: Reloader, tmp_path: Path, safe: bool) -> None:
    folder = _sharded(tmp_path / "model", safe)
    index = json.loads(next(folder.glob("*.index.json")).read_text())["weight_map"]
    shards = sorted(set(index.values()))
    first, second = shards[0], shards[1]
    shutil.copyfile(folder / first, folder / second)
    res = reloader.reload(folder, "runs/x/model")
    assert not res.ok
    lost = sorted(k for k, v in index.items() if v == second)
    held = sorted(k for k, v in index.items() if v == first)
    name = next(folder.glob("*.index.json")).name
    shown = ", ".join(lost[:6]) + (f", ... ({len(lost) - 6} more)" if len(lost) > 6 else "")
    shown_held = ", ".join(held[:6]) + (f", ... ({len(held) - 6} more)" if len(held) > 6 else "")
    assert res.cause == (
        f"runs/x/model/{second}: holds {len(held)} tensor(s) {name} does not place in it (the "
        f"index places them in {first}): {shown_held} and lacks {len(lost)} tensor(s) {name} "
        f"places in it: {shown}; from_pretrained would fill them with random weights")


def test_a_tensor_the_index_lists_nowhere_is_refused(reloader: Reloader, tmp_path: Path) -> None:
    folder = _sharded(tmp_path / "model", True)
    index_file = next(folder.glob("*.index.json"))
    index = json.loads(index_file.read_text())
    dropped = sorted(index["weight_map"])[0]
    shard = index["weight_map"].pop(dropped)
    index_file.write_text(json.dumps(index))
    res = reloader.reload(folder, "m")
    assert res.cause == (f"m/{shard}: holds 1 tensor(s) {index_file.name} does not place in it "
                         f"(the index lists them nowhere): {dropped}")


# ------------------------------------------------------------- whose checkpoint it is


def test_the_stored_step_of_each_format(reloader: Reloader, tmp_path: Path) -> None:
    """The step of a torch dict's progress, a Lightning global_step, an HF Trainer's
    trainer_state.json, accelerate's registered object, a DCP train_state."""
    expected = {
        checkpoints.general_checkpoint(tmp_path): 10,  # global_step (epoch is no step)
        checkpoints.hf_trainer_checkpoint(tmp_path): 2,
        checkpoints.accelerate_checkpoint(tmp_path): 2,
        checkpoints.lightning_checkpoint(tmp_path / "pl"): 2,
        checkpoints.dcp_checkpoint(tmp_path): 7,
        checkpoints.state_dict_file(tmp_path): None,
    }
    for path, step in expected.items():
        res = reloader.reload(path, path.name)
        assert res.ok, res.cause
        assert res.step == step, path


def test_two_steps_that_disagree_are_no_step(reloader: Reloader, tmp_path: Path) -> None:
    torch.save({"model": checkpoints.tiny_model().state_dict(), "global_step": 100,
                "progress": {"step": 105}}, tmp_path / "x.pt")
    assert reloader.reload(tmp_path / "x.pt", "x.pt").step is None


def test_the_same_tensors_have_one_digest_in_any_format(
        reloader: Reloader, tmp_path: Path) -> None:
    model = checkpoints.tiny_model()
    state = model.state_dict()
    torch.save(state, tmp_path / "bare.pt")
    torch.save({"model": state, "progress": {"step": 4}}, tmp_path / "dict.pt")
    checkpoints.safetensors_file(tmp_path, "w.safetensors", {k: v.contiguous()
                                                             for k, v in state.items()})
    other = checkpoints.tiny_model(seed=1).state_dict()
    torch.save(other, tmp_path / "other.pt")
    found = {name: reloader.reload(tmp_path / name, name)
             for name in ("bare.pt", "dict.pt", "w.safetensors", "other.pt")}
    digests = {name: res.model_digest for name, res in found.items()}
    assert digests["bare.pt"] is not None
    assert digests["bare.pt"] == digests["dict.pt"] == digests["w.safetensors"]
    assert digests["other.pt"] != digests["bare.pt"]
    assert dict(found["dict.pt"].model_shapes) == {
        "0.weight": (8, 4), "0.bias": (8,), "2.weight": (2, 8), "2.bias": (2,)}


def test_a_chained_schedulers_state_is_a_scheduler(reloader: Reloader, tmp_path: Path) -> None:
    """torch's ChainedScheduler saves no last_epoch of its own: its sub-schedulers' states
    and its _last_lr. That restores it (ChainedScheduler.load_state_dict)."""
    model = checkpoints.tiny_model()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.ChainedScheduler([
        torch.optim.lr_scheduler.ConstantLR(opt, factor=0.5, total_iters=3),
        torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9)])
    model(torch.randn(3, 4)).pow(2).mean().backward()
    opt.step()
    sched.step()
    assert "last_epoch" not in sched.state_dict()
    path = tmp_path / "resume.pt"
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                "scheduler": sched.state_dict()}, path)
    res = reloader.reload(path, "resume.pt")
    assert res.ok, res.cause
    assert "scheduler" in res.parts
    assert res.fault("scheduler") is None


# ------------------------------------------- the learning rates it stores (issue 35, part 7)

S = torch.optim.lr_scheduler

# Real torch schedulers on an optimizer of two parameter groups (lr 0.1 and 0.03).
SCHEDULERS: dict[str, Any] = {
    "StepLR": lambda o: S.StepLR(o, step_size=2, gamma=0.5),
    "CosineAnnealingLR": lambda o: S.CosineAnnealingLR(o, T_max=7),
    "LambdaLR": lambda o: S.LambdaLR(o, lambda epoch: 0.9 ** epoch),
    "OneCycleLR": lambda o: S.OneCycleLR(o, max_lr=[0.3, 0.1], total_steps=20),
    "LinearLR": lambda o: S.LinearLR(o, start_factor=0.2, total_iters=5),
    "SequentialLR": lambda o: S.SequentialLR(
        o, [S.LinearLR(o, start_factor=0.2, total_iters=3), S.ExponentialLR(o, gamma=0.9)],
        milestones=[3]),
    "ChainedScheduler": lambda o: S.ChainedScheduler(
        [S.ConstantLR(o, factor=0.5, total_iters=3), S.ExponentialLR(o, gamma=0.9)]),
    "ReduceLROnPlateau": lambda o: S.ReduceLROnPlateau(o, patience=0),
    "CyclicLR": lambda o: S.CyclicLR(o, 0.01, 0.1, step_size_up=3),
}
# What each scheduler's state_dict() stores besides _last_lr: base_lrs, or not.
NO_BASE_LRS = {"SequentialLR", "ChainedScheduler", "ReduceLROnPlateau"}


def _two_groups(lr: float | torch.Tensor = 0.1) -> tuple[torch.nn.Module, torch.optim.Optimizer]:
    model = checkpoints.tiny_model()
    assert isinstance(model, torch.nn.Sequential)
    groups: list[dict[str, Any]] = [{"params": model[0].parameters()},
                                    {"params": model[2].parameters(), "lr": 0.03}]
    return model, torch.optim.SGD(groups, lr=lr, momentum=0.9)


def _steps(model: torch.nn.Module, opt: torch.optim.Optimizer, sched: Any, n: int = 5) -> None:
    for _ in range(n):
        opt.zero_grad()
        model(torch.randn(3, 4)).pow(2).mean().backward()
        opt.step()
        sched.step(1.0) if isinstance(sched, S.ReduceLROnPlateau) else sched.step()


@pytest.mark.parametrize("name", sorted(SCHEDULERS))
def test_a_real_scheduler_and_its_optimizer_store_the_same_rates(
        reloader: Reloader, tmp_path: Path, name: str) -> None:
    """A scheduler's step writes one float into the group's lr and its _last_lr (and the
    group's initial_lr is its base_lrs): equal exactly, in the reload's report too."""
    model, opt = _two_groups()
    sched = SCHEDULERS[name](opt)
    _steps(model, opt, sched, 4)
    path = tmp_path / "resume.pt"
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                "scheduler": sched.state_dict(), "progress": {"step": 4}}, path)
    res = reloader.reload(path, "resume.pt")
    assert res.ok, res.cause
    assert "scheduler" in res.parts  # a ChainedScheduler's state too (no last_epoch of its own)
    [rates] = res.optimizer_rates
    [stored] = res.scheduler_rates
    assert (rates.key, stored.key) == ("optimizer", "scheduler")
    assert rates.lr == stored.last_lr == tuple(
        Rate(g["lr"]) for g in opt.param_groups)
    assert rates.lr != (Rate(0.1), Rate(0.03))  # it scheduled something
    if name in NO_BASE_LRS:
        assert stored.base_lrs is None  # not judged: the state has none
    else:
        assert rates.initial_lr == stored.base_lrs
    assert rate_disagreements(rates, stored) == []


def test_a_tensor_lr_is_reported_with_its_dtype(reloader: Reloader, tmp_path: Path) -> None:
    """A tensor lr (a compiled, capturable optimizer's): its value and dtype. CyclicLR keeps
    its float base_lrs beside the float32 initial_lr of the group: equal as stored."""
    model, opt = _two_groups(lr=torch.tensor(0.1))
    sched = S.CyclicLR(opt, 0.01, 0.1, step_size_up=3)
    _steps(model, opt, sched)
    path = tmp_path / "resume.pt"
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                "scheduler": sched.state_dict()}, path)
    res = reloader.reload(path, "resume.pt")
    [rates], [stored] = res.optimizer_rates, res.scheduler_rates
    assert rates.lr[0] == Rate(float(opt.param_groups[0]["lr"]), "float32")
    assert rates.lr[1] == Rate(opt.param_groups[1]["lr"])
    assert rates.initial_lr[0] == Rate(float(torch.tensor(0.01)), "float32")
    assert stored.base_lrs == (Rate(0.01), Rate(0.01))
    assert rate_disagreements(rates, stored) == []


def test_an_lr_edited_after_the_scheduler_was_saved_disagrees(
        reloader: Reloader, tmp_path: Path) -> None:
    model, opt = _two_groups()
    sched = S.StepLR(opt, step_size=2, gamma=0.5)
    _steps(model, opt, sched)
    saved = sched.state_dict()
    opt.param_groups[1]["lr"] = 0.001  # after the scheduler's state was taken
    path = tmp_path / "resume.pt"
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                "scheduler": saved}, path)
    res = reloader.reload(path, "resume.pt")
    assert res.ok, res.cause  # it loads: the checks refuse it (resume-complete)
    [rates], [stored] = res.optimizer_rates, res.scheduler_rates
    assert rate_disagreements(rates, stored) == [
        "in parameter group 1 (of 2) the optimizer's lr is 0.001 (optimizer "
        "param_groups[1]['lr']) but the LR scheduler's last lr is 0.0075 (scheduler "
        "_last_lr[1])"]


def test_the_rates_of_each_tools_checkpoint(reloader: Reloader, tmp_path: Path) -> None:
    """Lightning's optimizer_states / lr_schedulers, the Trainer's optimizer.pt /
    scheduler.pt, accelerate's optimizer.bin / scheduler.bin, a DCP folder's nested state:
    one optimizer and one scheduler each, saved together, that agree."""
    model, opt = _two_groups()
    sched = S.CosineAnnealingLR(opt, T_max=7)
    _steps(model, opt, sched)
    from torch.distributed.checkpoint import state_dict_saver
    with checkpoints._quiet():
        state_dict_saver.save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                               "scheduler": sched.state_dict(), "train_state": {"step": 5}},
                              checkpoint_id=str(tmp_path / "dcp"))
    built = {checkpoints.lightning_checkpoint(tmp_path / "pl"): (
                 "optimizer_states.0", "lr_schedulers.0"),
             checkpoints.hf_trainer_checkpoint(tmp_path): ("optimizer.pt", "scheduler.pt"),
             checkpoints.accelerate_checkpoint(tmp_path): ("optimizer.bin", "scheduler.bin"),
             tmp_path / "dcp": ("optimizer", "scheduler")}
    for path, keys in built.items():
        res = reloader.reload(path, path.name)
        assert res.ok, res.cause
        [rates], [stored] = res.optimizer_rates, res.scheduler_rates
        assert (rates.key, stored.key) == keys
        assert rates.lr, path
        assert rates.lr == stored.last_lr, path
        assert rates.initial_lr == stored.base_lrs, path
        assert rate_disagreements(rates, stored) == [], path
    dcp = reloader.reload(tmp_path / "dcp", "dcp")
    assert dcp.optimizer_rates[0].lr == tuple(Rate(g["lr"]) for g in opt.param_groups)
    # The Trainer's optimizer.pt with a group's lr set by hand: the files are named.
    trainer = tmp_path / "hf" / "checkpoint-2"
    state = torch.load(trainer / "optimizer.pt", weights_only=True)
    state["param_groups"][0]["lr"] = 1e-4
    torch.save(state, trainer / "optimizer.pt")
    res = reloader.reload(trainer, "checkpoint-2")
    [rates], [stored] = res.optimizer_rates, res.scheduler_rates
    assert rate_disagreements(rates, stored) == [
        "in parameter group 0 (of 2) the optimizer's lr is 0.0001 (optimizer.pt "
        "param_groups[0]['lr']) but the LR scheduler's last lr is 0.0 (scheduler.pt "
        "_last_lr[0])"]
