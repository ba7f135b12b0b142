"""Builders of REAL checkpoint artifacts, written by the real libraries from tiny models.

Each builder writes into a given folder and returns the checkpoint's path (a file or a
folder).  Nothing is downloaded: models are built from tiny configs in code.  Heavy
libraries (transformers, accelerate, lightning, peft) are imported inside their builder.
Reused by the plugin's tests, so keep the signatures stable.
"""

from __future__ import annotations

import contextlib
import io
import os
import pickle
import random
import shutil
import subprocess
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Library warnings (Lightning tips, DCP's no-process-group notice) are not our failures."""
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        yield


def tiny_model(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))


def _train_step(model: torch.nn.Module, opt: torch.optim.Optimizer) -> None:
    loss = model(torch.randn(3, 4)).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()


def general_checkpoint(folder: Path, name: str = "resume.pt", **drop: bool) -> Path:
    """The PyTorch tutorial's "general checkpoint for resuming training", with every part.

    Pass e.g. ``scaler=True`` in ``drop`` to leave that key out.
    """
    model = tiny_model()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1)
    _train_step(model, opt)
    sched.step()
    ckpt: dict[str, Any] = {
        "model_state_dict": model.state_dict(),
        "optimizer_state_dict": opt.state_dict(),
        "epoch": 1, "global_step": 10,
        "scheduler": sched.state_dict(),
        "scaler": torch.amp.GradScaler("cpu").state_dict(),
        # np.random.get_state() is what needs the numpy allowlist; default_rng's dict does not.
        "rng_state": {"torch": torch.get_rng_state(), "numpy": np.random.get_state(),
                      "python": random.getstate()},
        "sampler": {"epoch": 1, "index": 30},
    }
    for key, value in drop.items():
        if value:
            del ckpt[{"model": "model_state_dict", "optimizer": "optimizer_state_dict",
                      "rng": "rng_state", "data": "sampler"}.get(key, key)]
    path = folder / name
    torch.save(ckpt, path)
    return path


def state_dict_file(folder: Path, name: str = "weights.pt", legacy: bool = False) -> Path:
    path = folder / name
    torch.save(tiny_model().state_dict(), path, _use_new_zipfile_serialization=not legacy)
    return path


def big_legacy_file(folder: Path, mib: int, name: str = "big_legacy.pt") -> Path:
    """A legacy (non-zip) torch file: it cannot be mmap'ed, so loading it costs memory."""
    path = folder / name
    tensor = torch.zeros(mib << 18)  # float32: 4 bytes each
    torch.save({"w": tensor}, path, _use_new_zipfile_serialization=False)
    return path


def safetensors_file(folder: Path, name: str = "model.safetensors",
                     tensors: dict[str, torch.Tensor] | None = None) -> Path:
    from safetensors.torch import save_file

    path = folder / name
    save_file(tensors if tensors is not None else tiny_model().state_dict(), str(path))
    return path


def lightning_checkpoint(folder: Path) -> Path:
    """A real Lightning .ckpt from 2 CPU steps; its ModelCheckpoint state holds tensor(inf)."""
    import lightning as L

    class Tiny(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(4, 1)

        def training_step(self, batch: torch.Tensor, index: int) -> torch.Tensor:
            loss: torch.Tensor = self.layer(batch).pow(2).mean()
            return loss

        def configure_optimizers(self) -> Any:
            opt = torch.optim.SGD(self.parameters(), lr=0.1)
            return {"optimizer": opt, "lr_scheduler": torch.optim.lr_scheduler.StepLR(opt, 1)}

    with _quiet():
        trainer = L.Trainer(max_steps=2, accelerator="cpu", logger=False,
                            enable_progress_bar=False, enable_model_summary=False,
                            default_root_dir=str(folder))
        rows: list[torch.Tensor] = list(torch.randn(8, 4))
        data = torch.utils.data.DataLoader(rows, batch_size=2)  # type: ignore[var-annotated, arg-type]
        trainer.fit(Tiny(), data)
    return next((folder / "checkpoints").glob("*.ckpt"))


def hf_trainer_checkpoint(folder: Path) -> Path:
    """A real transformers Trainer ``checkpoint-2/`` folder from a tiny config-built BERT."""
    from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

    config = BertConfig(vocab_size=50, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=16, max_position_embeddings=16)
    config.num_labels = 2

    class Data(torch.utils.data.Dataset[dict[str, torch.Tensor]]):
        def __len__(self) -> int:
            return 8

        def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
            return {"input_ids": torch.tensor([1, 2, 3, 4]), "labels": torch.tensor(i % 2)}

    args = TrainingArguments(output_dir=str(folder / "hf"), max_steps=2, save_steps=2,
                             per_device_train_batch_size=4, report_to="none", use_cpu=True,
                             disable_tqdm=True, logging_strategy="no")
    with _quiet():
        Trainer(model=BertForSequenceClassification(config), args=args,
                train_dataset=Data()).train()
    return folder / "hf" / "checkpoint-2"


class Progress:
    """What a user registers with accelerate so that save_state carries the step count."""

    def __init__(self, step: int = 0, epoch: int = 0) -> None:
        self.step = step
        self.epoch = epoch

    def state_dict(self) -> dict[str, int]:
        return {"step": self.step, "epoch": self.epoch}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.step, self.epoch = state["step"], state["epoch"]


def accelerate_checkpoint(folder: Path) -> Path:
    """A real accelerate ``save_state`` folder (model, optimizer, scheduler, RNG, progress)."""
    from accelerate import Accelerator  # type: ignore[import-untyped]

    with _quiet():
        acc = Accelerator(cpu=True)
        model = tiny_model()
        opt = torch.optim.AdamW(model.parameters())
        sched = torch.optim.lr_scheduler.StepLR(opt, 1)
        model, opt, sched = acc.prepare(model, opt, sched)
        acc.register_for_checkpointing(Progress(step=2))
        loss = model(torch.randn(3, 4)).pow(2).mean()
        acc.backward(loss)
        opt.step()
        sched.step()
        acc.save_state(str(folder / "acc"))
    return folder / "acc"


def dcp_checkpoint(folder: Path, nan: bool = False) -> Path:
    """A real torch.distributed.checkpoint folder, saved without a process group."""
    from torch.distributed.checkpoint import state_dict_saver

    model = tiny_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    _train_step(model, opt)
    state = model.state_dict()
    if nan:
        state["0.weight"][0, 0] = float("nan")
    with _quiet():
        state_dict_saver.save({"model": state, "step": 7}, checkpoint_id=str(folder / "dcp"))
    return folder / "dcp"


def peft_adapter(folder: Path, *, base_model: str | None = None,
                 revision: str | None = None) -> Path:
    """A real PEFT LoRA adapter folder on a tiny config-built GPT-2.

    ``base_model`` is the name the base would have had from ``from_pretrained`` (PEFT writes
    it as base_model_name_or_path); ``revision`` is passed to get_peft_model as PEFT users do.
    """
    from peft import LoraConfig, get_peft_model
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    base = GPT2LMHeadModel(GPT2Config(vocab_size=50, n_embd=8, n_layer=1, n_head=2,
                                      n_positions=16))
    if base_model is not None:
        base.name_or_path = base_model
    with _quiet():
        model = get_peft_model(base, LoraConfig(r=2, target_modules=["c_attn"],
                                                task_type="CAUSAL_LM"), revision=revision)
        model.save_pretrained(str(folder / "adapter"))
    return folder / "adapter"


def folder_bytes(path: Path) -> dict[str, bytes]:
    """A built artifact as {relative path: bytes} (one entry ``""`` for a file), so a test can
    place a private copy of it anywhere in a campaign."""
    if path.is_file():
        return {"": path.read_bytes()}
    return {p.relative_to(path).as_posix(): p.read_bytes()
            for p in sorted(path.rglob("*")) if p.is_file()}


def hostile_checkpoint(folder: Path, marker: Path, payload: str = "os.system",
                       name: str = "evil.pt") -> Path:
    """A torch.save archive whose pickle runs ``payload`` (creating ``marker``) if unpickled
    with arbitrary globals, next to real weights so it looks like a checkpoint."""
    path = folder / name
    torch.save({"model_state_dict": tiny_model().state_dict(),
                "epoch": hostile_payloads(marker)[payload]}, path)
    return path


def copy_artifact(src: Path, dst_folder: Path) -> Path:
    """A private copy a test may damage (the session-cached original stays intact)."""
    dst = dst_folder / src.name
    if src.is_dir():
        shutil.copytree(src, dst)
    else:
        shutil.copy2(src, dst)
    return dst


# ----------------------------------------------------------------------------- hostile pickles

class Payload:
    """Pickles as a call to ``func(*args)``: what a hostile checkpoint does on unpickling."""

    def __init__(self, func: Any, *args: Any) -> None:
        self.func = func
        self.args = args

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return self.func, self.args


def hostile_payloads(marker: Path) -> dict[str, Payload]:
    """Each payload, if ever run, creates ``marker``."""
    code = f"open({str(marker)!r}, 'w').close()"
    return {
        "os.system": Payload(os.system, f"touch {marker}"),
        "builtins.exec": Payload(exec, code),
        "builtins.eval": Payload(eval, code),
        "subprocess.Popen": Payload(subprocess.Popen, ["touch", str(marker)]),
    }


def raw_pickle(obj: Any) -> bytes:
    return pickle.dumps(obj)


def hf_base(folder: Path, seed: int = 0) -> Path:
    """A tiny config-built GPT-2 saved with transformers' save_pretrained: a base model folder
    (config.json, generation_config.json, model.safetensors). Two seeds: two bases of the same
    architecture. ``peft_adapter`` trains on the seed-0 one."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(seed)
    base = GPT2LMHeadModel(GPT2Config(vocab_size=50, n_embd=8, n_layer=1, n_head=2,
                                      n_positions=16))
    with _quiet():
        base.save_pretrained(str(folder))
    return folder


def diverged_checkpoint(path: Path, *, max_steps: int = 50) -> tuple[Path, int]:
    """Train a tiny model with a learning rate that makes it diverge, as a real run does, and
    torch.save its state after the first step whose loss is not finite (what a run stopped
    by its non-finite-loss rule ships). Returns the file and that step (1-based)."""
    model = tiny_model()
    opt = torch.optim.SGD(model.parameters(), lr=1e18)
    data = torch.randn(16, 4)
    for step in range(1, max_steps + 1):
        loss = model(data).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()  # on non-finite gradients: the weights diverge too
        if not torch.isfinite(loss):
            torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                        "step": step}, path)
            return path, step
    raise AssertionError("the run never diverged")
