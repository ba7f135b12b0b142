"""Campaign folders written by the REAL tools users have, recorded with the recorder API.

Each ``*_run`` function lets one tool write its complete, unmodified output directory where
a user would point it (inside the campaign folder): a transformers Trainer ``output_dir``,
Lightning's ``default_root_dir`` with its default logger and ModelCheckpoint, accelerate's
``save_state``, a torch.distributed.checkpoint folder, a PEFT adapter, plain ``torch.save``.
:func:`record_campaign` then freezes the plan and writes ``manifest.json`` through
:class:`pytest_itera.record.CampaignRecorder`, declaring what the tool wrote.

Tiny models are built from configs in code; nothing is downloaded (HF_HUB_OFFLINE=1).
Heavy libraries are imported inside their builder.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import torch

from pytest_itera.core.campaign import RESUME_PARTS
from pytest_itera.record import CampaignRecorder, RecordError
from tests.checkpoints import Progress
from tests.factory import (
    CONTROL_CKPT,
    CORPUS_IDS,
    LOSSES,
    METRICS,
    RESUMED_AT,
    RUNS,
    default_files_v2,
    default_manifest_v2,
    default_plan_v2,
    sha256,
)

os.environ.setdefault("HF_HUB_OFFLINE", "1")

# A full 40-hex commit id: what a user records as the base model's revision.
COMMIT = "3f0c2a9d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39"
BASE_MODEL = "org/tiny-gpt2"
ALL_PARTS = RESUME_PARTS


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Library chatter (tips, progress, no-process-group notices) is not a test outcome."""
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        previous = logging.root.manager.disable
        logging.disable(logging.WARNING)
        try:
            yield
        finally:
            logging.disable(previous)


def tiny_model(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))


def _step(model: torch.nn.Module, opt: torch.optim.Optimizer) -> torch.Tensor:
    loss = model(torch.randn(3, 4)).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
    value: torch.Tensor = loss.detach()
    return value


# ------------------------------------------------------------- the tiny models they train


def bert() -> Any:
    """A config-built BERT classifier (2 labels), the same weights on every call."""
    from transformers import BertConfig, BertForSequenceClassification

    config = BertConfig(vocab_size=50, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=16, max_position_embeddings=16)
    config.num_labels = 2
    torch.manual_seed(0)
    return BertForSequenceClassification(config)


class Rows(torch.utils.data.Dataset[dict[str, torch.Tensor]]):
    """Eight tokenised rows for ``bert()``."""

    def __len__(self) -> int:
        return 8

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"input_ids": torch.tensor([1, 2, 3, i + 4]), "labels": torch.tensor(i % 2)}


def tiny_lightning(lr: float = 0.1, data_dir: str | Path | None = None) -> Any:
    """A one-layer LightningModule: SGD with a StepLR, its loss logged as ``train_loss``, its
    arguments saved as hyperparameters (as users pass their dataset's cache folder)."""
    import lightning as L

    class Tiny(L.LightningModule):
        def __init__(self, lr: float, data_dir: str | Path | None) -> None:
            super().__init__()
            self.save_hyperparameters()
            self.layer = torch.nn.Linear(4, 1)

        def training_step(self, batch: torch.Tensor, index: int) -> torch.Tensor:
            loss: torch.Tensor = self.layer(batch).pow(2).mean()
            self.log("train_loss", loss)
            return loss

        def configure_optimizers(self) -> Any:
            opt = torch.optim.SGD(self.parameters(), lr=self.hparams["lr"])
            return {"optimizer": opt, "lr_scheduler": torch.optim.lr_scheduler.StepLR(opt, 1)}

    return Tiny(lr, data_dir)


# ------------------------------------------------------------------------ the tools


def trainer_run(output_dir: Path, *, max_steps: int = 4, save_steps: int = 2,
                best: bool = False) -> Path:
    """transformers.Trainer on a config-built BERT: ``checkpoint-<N>/`` folders every
    ``save_steps``; returns ``output_dir`` (everything the Trainer wrote is kept). With
    ``best``, it evaluates at each save and tracks the best checkpoint
    (``load_best_model_at_end``), so trainer_state.json records best_model_checkpoint."""
    from transformers import Trainer, TrainingArguments

    args = TrainingArguments(output_dir=str(output_dir), max_steps=max_steps,
                             save_steps=save_steps, per_device_train_batch_size=4,
                             report_to="none", use_cpu=True, disable_tqdm=True, seed=0,
                             logging_steps=1, eval_strategy="steps" if best else "no",
                             eval_steps=save_steps, load_best_model_at_end=best)
    with quiet():
        trainer = Trainer(model=bert(), args=args, train_dataset=Rows(),
                          eval_dataset=Rows() if best else None)
        trainer.train()
        trainer.save_model()  # the final model at the top of output_dir, as users do
    return output_dir


def lightning_run(root_dir: Path, *, max_steps: int = 4,
                  data_dir: str | Path | None = None) -> Path:
    """lightning.Trainer with ``default_root_dir=root_dir``, its default logger and default
    ModelCheckpoint; returns the checkpoint it saved (``.../checkpoints/epoch=..-step=...ckpt``).
    ``data_dir`` is a hyperparameter (save_hyperparameters records it in hparams.yaml and
    in the checkpoint), as users pass their dataset's cache folder."""
    import lightning as L

    torch.manual_seed(0)
    rows: list[torch.Tensor] = list(torch.randn(8, 4))
    with quiet():
        trainer = L.Trainer(max_steps=max_steps, accelerator="cpu", devices=1,
                            enable_progress_bar=False, enable_model_summary=False,
                            log_every_n_steps=1, default_root_dir=str(root_dir))
        data = torch.utils.data.DataLoader(rows, batch_size=2)  # type: ignore[var-annotated, arg-type]
        trainer.fit(tiny_lightning(data_dir=data_dir), data)
    return Path(trainer.checkpoint_callback.best_model_path)  # type: ignore[union-attr]


def accelerate_run(state_dir: Path) -> Path:
    """accelerate: model, optimizer, scheduler and dataloader prepared, a progress object
    registered, two steps, then ``Accelerator.save_state(state_dir)``."""
    from accelerate import Accelerator  # type: ignore[import-untyped]

    torch.manual_seed(0)
    with quiet():
        acc = Accelerator(cpu=True)
        model = tiny_model()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        sched = torch.optim.lr_scheduler.StepLR(opt, 1)
        rows: list[torch.Tensor] = list(torch.randn(8, 4))
        data = torch.utils.data.DataLoader(rows, batch_size=2, shuffle=True)  # type: ignore[var-annotated, arg-type]
        model, opt, sched, data = acc.prepare(model, opt, sched, data)
        progress = Progress()
        acc.register_for_checkpointing(progress)
        for batch in data:
            loss = model(batch).pow(2).mean()
            acc.backward(loss)
            opt.step()
            sched.step()
            opt.zero_grad()
            progress.step += 1
        acc.save_state(str(state_dir))
    return state_dir


def dcp_run(checkpoint_dir: Path, *, nan: bool = False) -> Path:
    """torch.distributed.checkpoint.save of model, optimizer and step, without a process
    group (one rank: one ``__0_0.distcp`` shard plus ``.metadata``)."""
    from torch.distributed.checkpoint import state_dict_saver

    model = tiny_model()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    _step(model, opt)
    weights = model.state_dict()
    if nan:
        weights["0.weight"][0, 0] = float("nan")
    state = {"model": weights, "optimizer": opt.state_dict(), "step": 1}
    with quiet():
        state_dict_saver.save(state, checkpoint_id=str(checkpoint_dir))
    return checkpoint_dir


def dcp_two_rank_run(*checkpoint_dirs: Path) -> None:
    """The same save as two ranks of a gloo process group write it (two ``.distcp`` shards),
    into each of ``checkpoint_dirs``: one pair of subprocesses (starting them is the cost),
    so this process never joins a process group."""
    import subprocess
    import sys

    script = (
        "import sys, torch, torch.distributed as dist\n"
        "from torch.distributed.checkpoint import state_dict_saver\n"
        "dist.init_process_group('gloo')\n"
        "torch.manual_seed(0)\n"
        "m = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))\n"
        "o = torch.optim.AdamW(m.parameters())\n"
        "m(torch.randn(3, 4)).sum().backward(); o.step()\n"
        "state = {'model': m.state_dict(), 'optimizer': o.state_dict(), 'step': 1}\n"
        "for folder in sys.argv[1:]:\n"
        "    state_dict_saver.save(state, checkpoint_id=folder)\n"
        "dist.destroy_process_group()\n"
    )
    env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "WORLD_SIZE": "2"}
    port = str(29500 + os.getpid() % 2000)
    procs = [subprocess.Popen([sys.executable, "-c", script, *map(str, checkpoint_dirs)],
                              env={**env, "RANK": str(rank), "MASTER_PORT": port},
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
             for rank in (0, 1)]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        if proc.returncode != 0:
            raise RuntimeError(err.decode(errors="replace"))


def peft_run(adapter_dir: Path, *, revision: str | None = COMMIT,
             base_dir: Path | None = None) -> Path:
    """A LoRA adapter on a config-built GPT-2 named like a hub model, trained one step,
    saved with ``save_pretrained``; ``revision`` is what the user passed to get_peft_model.
    With ``base_dir``, the base itself is saved there first (save_pretrained): the base
    shipped in the campaign, as fetched."""
    from peft import LoraConfig, get_peft_model
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    base = GPT2LMHeadModel(GPT2Config(vocab_size=50, n_embd=8, n_layer=1, n_head=2,
                                      n_positions=16))
    base.name_or_path = BASE_MODEL  # what from_pretrained(BASE_MODEL) would have set
    with quiet():
        if base_dir is not None:
            base.save_pretrained(str(base_dir))
        model = get_peft_model(base, LoraConfig(r=2, target_modules=["c_attn"],
                                                task_type="CAUSAL_LM"), revision=revision)
        opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
        ids = torch.tensor([[1, 2, 3, 4]])
        model(input_ids=ids, labels=ids).loss.backward()
        opt.step()
        model.save_pretrained(str(adapter_dir))
    return adapter_dir


def trainable(model: torch.nn.Module, *, named: bool) -> list[Any]:
    """The parameters that train (``requires_grad``), as most scripts give them to the
    optimizer; ``named``: as ``(name, parameter)`` pairs, so that torch saves their names."""
    return [(n, p) if named else p for n, p in model.named_parameters() if p.requires_grad]


def frozen_trainer_run(output_dir: Path, *, named: bool) -> Path:
    """The Trainer fine-tuning BERT with its embeddings frozen, two steps, one checkpoint-2;
    the optimizer the Trainer builds itself (numbered parameters), or, ``named``, one the user
    builds from named parameters and passes as ``Trainer(optimizers=(opt, None))``."""
    from transformers import Trainer, TrainingArguments

    model = bert()
    model.bert.embeddings.requires_grad_(False)
    opt = torch.optim.AdamW(trainable(model, named=True), lr=5e-5) if named else None
    args = TrainingArguments(output_dir=str(output_dir), max_steps=2, save_steps=2,
                             per_device_train_batch_size=4, report_to="none", use_cpu=True,
                             disable_tqdm=True, seed=0)
    with quiet():
        Trainer(model=model, args=args, train_dataset=Rows(), optimizers=(opt, None)).train()
    return output_dir / "checkpoint-2"


def frozen_lightning_run(root_dir: Path, *, named: bool) -> Path:
    """Lightning training a head on a frozen backbone (transfer learning), two steps; its
    optimizer built from the trainable parameters, numbered or ``named``. Returns the .ckpt."""
    import lightning as L

    class Head(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.backbone = torch.nn.Linear(4, 8).requires_grad_(False)
            self.head = torch.nn.Linear(8, 1)

        def training_step(self, batch: torch.Tensor, index: int) -> torch.Tensor:
            loss: torch.Tensor = self.head(self.backbone(batch)).pow(2).mean()
            return loss

        def configure_optimizers(self) -> Any:
            return torch.optim.AdamW(trainable(self, named=named), lr=1e-3)

    torch.manual_seed(0)
    rows: list[torch.Tensor] = list(torch.randn(8, 4))
    with quiet():
        trainer = L.Trainer(max_steps=2, accelerator="cpu", devices=1, enable_progress_bar=False,
                            enable_model_summary=False, default_root_dir=str(root_dir))
        data = torch.utils.data.DataLoader(rows, batch_size=2)  # type: ignore[var-annotated, arg-type]
        trainer.fit(Head(), data)
    return Path(trainer.checkpoint_callback.best_model_path)  # type: ignore[union-attr]


def tutorial_checkpoint(path: Path, *, nan: bool = False) -> Path:
    """The PyTorch tutorial's "general checkpoint" for inference and/or resuming training:
    ``{'epoch', 'model_state_dict', 'optimizer_state_dict', 'loss'}``."""
    model = tiny_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss = _step(model, opt)
    state = model.state_dict()
    if nan:
        state["2.weight"][0, 0] = float("nan")
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"epoch": 1, "model_state_dict": state,
                "optimizer_state_dict": opt.state_dict(), "loss": loss}, path)
    return path


def whole_module_checkpoint(path: Path) -> Path:
    """``torch.save(model)``: the pickled nn.Module itself, which only loads with
    weights_only=False."""
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(tiny_model(), path)
    return path


# ---------------------------------------------------------------------- the campaign


@dataclass
class Declared:
    """What the manifest declares about the tool outputs of a campaign."""

    checkpoints: list[dict[str, Any]] = field(default_factory=list)
    adapters: list[dict[str, Any]] = field(default_factory=list)

    def checkpoint(self, path: str, fmt: str, kind: str = "resume",
                   claims: Sequence[str] = ()) -> None:
        self.checkpoints.append({"path": path, "format": fmt, "kind": kind,
                                 "claims": list(claims)})

    def adapter(self, path: str, revision: str = COMMIT, base_model: str = BASE_MODEL,
                base_path: str | None = None) -> None:
        record = {"path": path, "base_model": base_model, "base_revision": revision}
        if base_path is not None:
            record["base_path"] = base_path
        self.adapters.append(record)


Tools = Callable[[Path], Declared]


def _clock() -> Callable[[], datetime]:
    """A simulated clock after the plan's frozen_at, one minute per reading."""
    moments = iter(datetime(2026, 11, 20, 10, tzinfo=UTC) + timedelta(minutes=i)
                   for i in range(10_000))
    return lambda: next(moments)


def record_campaign(root: Path, tools: Tools, *, resume_state: Sequence[str]) -> Path:
    """A complete ``itera-manifest/2`` campaign at ``root``: the factory's tiny good campaign
    (corpus, configs, predictions, analysis, each run's evidence: losses, the data check's
    record of the corpus, the resume check resumed from the control's checkpoint, the
    variant's weights), a plan requiring ``resume_state``, the control's tools run by
    ``tools(root)`` after the plan is frozen, then manifest.json listing every file.

    Closed with ``check=False``: the tests judge each folder themselves (a pytest session,
    after the damage under test), so checking it here too would run every check and every
    reload twice."""
    files = default_files_v2()
    plan = default_plan_v2(files)
    plan["checkpoint_policy"]["resume_state"] = list(resume_state)
    closing = default_manifest_v2(plan)
    rec = CampaignRecorder(root, clock=_clock())
    for relpath, data in files.items():
        rec.write_bytes(relpath, data)
    rec.freeze_plan(plan)
    corpus = files["corpus/corpus.jsonl"]
    declared = Declared()
    for run_id, _, _ in RUNS:  # one GPU: one run after another (plan-vs-actual)
        run = rec.run(run_id)
        run.start()
        if run_id == "control":
            declared = tools(root)  # the trials run after the plan is frozen
        run.set_config(f"configs/{run_id}.json")
        if run_id in LOSSES:
            for step, loss in enumerate(LOSSES[run_id], start=1):
                run.log(step, loss=loss)
            run.set_predictions(f"runs/{run_id}/predictions.jsonl")
            run.set_metrics(**METRICS[run_id])
        elif run_id == "data-check":
            run.check_input("tiny-corpus", sha256=sha256(corpus), examples=len(CORPUS_IDS),
                            bytes=len(corpus))
        else:  # the resume check: the control's losses from the step it resumed at
            for step, loss in enumerate(LOSSES["control"][RESUMED_AT:], start=RESUMED_AT + 1):
                run.log(step, loss=loss)
            run.resumed_from(CONTROL_CKPT, RESUMED_AT)
        # The factory's checkpoints, each saved by its own run while it runs.
        for ckpt in closing["checkpoints"]:
            if ckpt["run"] == run_id:
                rec.add_checkpoint(ckpt["path"], run=ckpt["run"], format=ckpt["format"],
                                   kind=ckpt["kind"], claims=ckpt.get("claims", ()))
        run.accept()
    for ckpt in declared.checkpoints:
        rec.add_checkpoint(ckpt["path"], run="control", format=ckpt["format"],
                           kind=ckpt["kind"], claims=ckpt["claims"])
    # The reload instructions name every artifact the tools wrote, with how it loads.
    lines = [f"- {c['path']} ({c['format']}, {c['kind']}): pytest --itera-campaign reloads it"
             for c in declared.checkpoints]
    lines += [f"- {a['path']} (PEFT adapter on {a['base_model']}@{a['base_revision']}): "
              "PeftModel.from_pretrained(base, path)" for a in declared.adapters]
    reload_md = files[closing["reload_instructions"]].decode() + "\n" + "\n".join(lines) + "\n"
    rec.write_text(closing["reload_instructions"], reload_md)
    by_hand = []
    for adapter in declared.adapters:
        record = {"run": "control", **adapter}
        if "base_path" in record:  # what the user records when the base is fetched
            rec.record_base(record["base_path"], model=record["base_model"],
                            revision=record["base_revision"])
        try:
            rec.add_adapter(record.pop("path"), **record)
        except RecordError:  # the recorder refuses a branch: the user wrote it by hand
            by_hand.append({"run": "control", **adapter})
    manifest = rec.close(analysis=closing["analysis"],
                         reload_instructions=closing["reload_instructions"],
                         conclusion=closing["conclusion"], budget=closing["budget"],
                         schedule=closing["schedule"], check=False).manifest
    if by_hand:
        rewrite_json(manifest, adapters=[*json.loads(manifest.read_text())["adapters"],
                                         *by_hand])
    return root


def rewrite_json(path: Path, **changes: Any) -> None:
    """Edit a JSON file a tool wrote (after the manifest: the damage under test)."""
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data, indent=2) + "\n")


# --------------------------------------------------- what each tool's campaign declares

CONTROL = "runs/control"
TRAINER_PARTS = ("model", "optimizer", "progress", "scheduler", "rng", "data")
LIGHTNING_PARTS = ("model", "optimizer", "progress", "scheduler")
ACCELERATE_PARTS = ("model", "optimizer", "progress", "scheduler", "rng")
DCP_PARTS = ("model", "optimizer", "progress")
TUTORIAL_PARTS = ("model", "optimizer", "progress")


def trainer_tools(output_dir: Path | None = None, *, best: bool = False) -> Tools:
    """A Trainer run into runs/control/trainer; both checkpoint-N folders are resume
    checkpoints, the final model.safetensors a weights checkpoint. With ``output_dir``
    elsewhere (a scratch or cache folder), the user trains there (tracking the best
    checkpoint) and copies the whole output folder into the campaign afterwards."""

    def tools(root: Path) -> Declared:
        import shutil

        dest = root / CONTROL / "trainer"
        if output_dir is None:
            trainer_run(dest, best=best)
        else:
            trainer_run(output_dir, best=True)
            shutil.copytree(output_dir, dest)
        declared = Declared()
        for step in (2, 4):
            declared.checkpoint(f"{CONTROL}/trainer/checkpoint-{step}", "hf-trainer",
                                claims=TRAINER_PARTS)
        declared.checkpoint(f"{CONTROL}/trainer/model.safetensors", "safetensors", kind="weights")
        return declared

    return tools


def lightning_tools(data_dir: str | Path | None = None) -> Tools:
    def tools(root: Path) -> Declared:
        ckpt = lightning_run(root / CONTROL / "lightning", data_dir=data_dir)
        declared = Declared()
        declared.checkpoint(ckpt.relative_to(root).as_posix(), "lightning",
                            claims=LIGHTNING_PARTS)
        return declared

    return tools


def accelerate_tools(root: Path) -> Declared:
    accelerate_run(root / CONTROL / "accelerate")
    declared = Declared()
    declared.checkpoint(f"{CONTROL}/accelerate", "accelerate", claims=ACCELERATE_PARTS)
    return declared


def dcp_tools(root: Path) -> Declared:
    """A one-rank DCP save, and the two-rank save that :func:`dcp_two_rank_run` already wrote
    into ``runs/control/dcp-2-ranks`` (shared between campaigns: a process group is slow to
    start)."""
    dcp_run(root / CONTROL / "dcp")
    assert (root / CONTROL / "dcp-2-ranks" / ".metadata").is_file()
    declared = Declared()
    declared.checkpoint(f"{CONTROL}/dcp", "dcp", claims=DCP_PARTS)
    declared.checkpoint(f"{CONTROL}/dcp-2-ranks", "dcp", claims=DCP_PARTS)
    return declared


def peft_tools(revision: str | None, recorded: str) -> Tools:
    """An adapter saved with get_peft_model(..., revision=revision); the manifest records
    ``recorded`` as its base revision."""

    def tools(root: Path) -> Declared:
        peft_run(root / CONTROL / "adapter", revision=revision)
        declared = Declared()
        declared.adapter(f"{CONTROL}/adapter", revision=recorded)
        return declared

    return tools


def peft_shipped_tools(root: Path) -> Declared:
    """An adapter trained on a hub base that is shipped in the campaign (runs/control/base,
    as save_pretrained wrote it): record_campaign records its revision beside it
    (itera-base.json) and its tree digest in the manifest."""
    peft_run(root / CONTROL / "adapter", revision=COMMIT, base_dir=root / CONTROL / "base")
    declared = Declared()
    declared.adapter(f"{CONTROL}/adapter", base_path=f"{CONTROL}/base")
    return declared


def torch_tools(*, nan: bool = False, whole_module: bool = False) -> Tools:
    """The tutorial's general checkpoint (resume) and, when asked, a NaN one or a pickled
    whole nn.Module (both as weights)."""

    def tools(root: Path) -> Declared:
        tutorial_checkpoint(root / CONTROL / "checkpoint.tar")
        declared = Declared()
        declared.checkpoint(f"{CONTROL}/checkpoint.tar", "torch", claims=TUTORIAL_PARTS)
        if nan:
            tutorial_checkpoint(root / CONTROL / "diverged.tar", nan=True)
            declared.checkpoint(f"{CONTROL}/diverged.tar", "torch", kind="weights")
        if whole_module:
            whole_module_checkpoint(root / CONTROL / "model.pt")
            declared.checkpoint(f"{CONTROL}/model.pt", "torch", kind="weights")
        return declared

    return tools


def frozen_tools(*, named: bool) -> Tools:
    """A Trainer and a Lightning run that fine-tune part of their model (the rest frozen):
    their resume checkpoints' optimizers hold fewer parameters than the models have tensors,
    numbered or ``named``."""

    def tools(root: Path) -> Declared:
        declared = Declared()
        folder = frozen_trainer_run(root / CONTROL / "trainer", named=named)
        declared.checkpoint(folder.relative_to(root).as_posix(), "hf-trainer",
                            claims=TRAINER_PARTS)
        ckpt = frozen_lightning_run(root / CONTROL / "lightning", named=named)
        declared.checkpoint(ckpt.relative_to(root).as_posix(), "lightning",
                            claims=TUTORIAL_PARTS)  # no scheduler configured
        return declared

    return tools
