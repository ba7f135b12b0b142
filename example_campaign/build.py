"""Build the example campaign folder through ``pytest_itera.record`` only."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save as safetensors_bytes

from example_campaign import plan as P
from example_campaign.data import SHIPPED_CORPUS, SPLITS, Example, read_corpus, tensors
from example_campaign.make_corpus import LABELS
from example_campaign.model import attach_lora, peft_state_dict
from example_campaign.report import analysis_text, readme_text, reload_text
from example_campaign.timeline import SimClock
from example_campaign.train import NonFinite, Trainer, make_trainer, probabilities, train
from pytest_itera.record import CampaignRecorder, RunRecorder, save_resume_checkpoint, sha256_file

RESUME_PARTS = ["model", "optimizer", "progress", "scheduler", "rng", "data"]


@dataclass(frozen=True)
class LoraSpec:
    targets: tuple[str, ...] = ("layers.0", "head")
    r: int = 2
    alpha: int = 4
    steps: int = 40
    lr: float = 0.01
    seed: int = 3


LORA = LoraSpec()


@dataclass
class ModelRun:
    """What a trained, accepted run leaves for the analysis."""

    run_id: str
    predictions: list[int]  # class index per corpus example, corpus order
    accuracy: dict[str, float]
    steps: int


@dataclass
class Build:
    out: Path
    clock: SimClock
    rec: CampaignRecorder
    examples: list[Example] = field(default_factory=list)
    model_runs: dict[str, ModelRun] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)

    # ---------------------------------------------------------- helpers

    def config(self, run_id: str) -> dict[str, Any]:
        return P.RUNS[run_id][2]

    def train_split(self) -> tuple[torch.Tensor, torch.Tensor]:
        return tensors([e for e in self.examples if e.split == "train"])

    def n_train(self) -> int:
        return sum(e.split == "train" for e in self.examples)

    def started(self, run_id: str, step_id: str) -> RunRecorder:
        self.clock.begin(step_id)
        run = self.rec.run(run_id)
        run.start()
        run.set_config(f"configs/{run_id}.json")
        return run

    # ------------------------------------------------------ preparation

    def prepare(self) -> None:
        self.clock.begin("prepare")
        self.rec.write_bytes(P.CORPUS_PATH, SHIPPED_CORPUS.read_bytes())
        shas = {}
        for run_id in P.RUNS:
            path = self.rec.write_json(f"configs/{run_id}.json", self.config(run_id))
            shas[run_id] = sha256_file(path)[0]
        self.examples = read_corpus(self.out / P.CORPUS_PATH)
        corpus_sha = sha256_file(self.out / P.CORPUS_PATH)[0]
        self.clock.finish("prepare")
        self.rec.freeze_plan(P.build_plan(corpus_sha, len(self.examples), shas))
        for step_id in ("setup", "load-corpus"):
            self.clock.begin(step_id)
            self.clock.finish(step_id)

    # -------------------------------------------------------- data check

    def data_check(self) -> None:
        run = self.started("data-check", "check-corpus")
        cfg = self.config("data-check")
        ids = [e.id for e in self.examples]
        counts = {label: sum(e.label == label for e in self.examples) for label in LABELS}
        splits = {s: sum(e.split == s for e in self.examples) for s in SPLITS}
        agree = {s: _share([e.label == e.rule_label for e in self.examples if e.split == s])
                 for s in SPLITS}
        report = {
            "corpus": P.CORPUS_PATH,
            "sha256": self.rec.plan["corpus"]["sha256"],
            "examples": len(ids),
            "duplicate_ids": len(ids) - len(set(ids)),
            "complete_features": sum(len(e.x) == cfg["features"] for e in self.examples),
            "label_counts": counts,
            "max_label_share": round(max(counts.values()) / len(ids), 4),
            "split_counts": splits,
            "label_rule_agreement": agree,
        }
        self.rec.write_json("runs/data-check/report.json", report)
        self.facts["data"] = report
        complete = report["examples"] == cfg["expected_examples"] == report["complete_features"]
        if not complete or report["duplicate_ids"]:
            run.stop("corpus-truncated", f"corpus check failed: {report}", step=0)
            self.clock.finish("check-corpus")
            raise SystemExit("the data check failed; the campaign cannot continue")
        run.set_metrics(examples=len(ids), duplicate_ids=0,
                        label_rule_agreement=_share([e.label == e.rule_label
                                                     for e in self.examples]),
                        max_label_share=report["max_label_share"])
        self.clock.finish("check-corpus")
        run.accept(deliverable=P.CORPUS_ID)

    # --------------------------------------------------------- training

    def trained_run(self, run_id: str, step_id: str) -> Trainer | None:
        """Train ``run_id``; record its outputs; None when a stop rule fired."""
        run = self.started(run_id, step_id)
        features, labels = self.train_split()
        trainer = make_trainer(self.config(run_id), self.n_train())
        every = self.config(run_id)["checkpoint_every_steps"]
        last = f"runs/{run_id}/last.pt"

        def save(step: int, data_state: dict[str, int]) -> None:
            if step % every == 0 or step == trainer.total_steps:
                self.save_checkpoint(trainer, last)

        stopped = train(trainer, features, labels, on_step=save)
        self.write_measurements(run, trainer, stopped)
        if stopped is not None:
            self.stop_non_finite(run, trainer, stopped, step_id)
            return None
        self.rec.add_checkpoint(last, run=run_id, format="torch", kind="resume",
                                claims=RESUME_PARTS)
        return self.evaluate(run, trainer, step_id)

    def save_checkpoint(self, trainer: Trainer, relpath: str) -> None:
        save_resume_checkpoint(
            self.rec.path(relpath), model=trainer.model, optimizer=trainer.optimizer,
            scheduler=trainer.scheduler, step=trainer.step, epoch=trainer.epoch,
            data_state=trainer.data_state(),
        )

    def write_measurements(
        self, run: RunRecorder, trainer: Trainer, stop: NonFinite | None
    ) -> None:
        rows: list[dict[str, Any]] = [{"step": s, "loss": v} for s, v in trainer.losses]
        if stop is not None:  # JSON has no NaN: the value is kept as text
            rows.append({"step": stop.step, "loss": None, "non_finite": repr(stop.value)})
        relpath = f"runs/{run.id}/measurements.jsonl"
        self.rec.write_jsonl(relpath, rows)
        run.set_measurements(relpath)

    def stop_non_finite(self, run: RunRecorder, trainer: Trainer, stop: NonFinite,
                        step_id: str) -> None:
        total = trainer.total_steps
        self.clock.finish(step_id, stop.step / total)
        reason = (f"training loss was {stop.value!r} at step {stop.step} of {total} "
                  f"(lr {trainer.config['lr']}); the run was stopped before that update")
        run.stop("non-finite-loss", reason, step=stop.step)
        self.facts.setdefault("stopped", {})[run.id] = {"step": stop.step, "of": total,
                                                        "value": repr(stop.value)}

    def evaluate(self, run: RunRecorder, trainer: Trainer, step_id: str) -> Trainer | None:
        features, _ = tensors(self.examples)
        probs = probabilities(trainer.model, features)
        predicted = [int(i) for i in probs.argmax(dim=1)]
        accuracy = {
            split: _share([LABELS[p] == e.label
                           for p, e in zip(predicted, self.examples, strict=True)
                           if e.split == split])
            for split in SPLITS
        }
        self.write_predictions(run, probs, predicted)
        run.set_metrics(**{f"{s}_accuracy": a for s, a in accuracy.items()},
                        final_loss=trainer.losses[-1][1], steps=trainer.step)
        self.clock.finish(step_id)
        if accuracy["validation"] < 0.5:
            run.stop("quality-below", f"validation accuracy {accuracy['validation']:.4f} < 0.5",
                     step=trainer.step)
            return None
        run.accept(deliverable=P.CORPUS_ID)
        self.model_runs[run.id] = ModelRun(run.id, predicted, accuracy, trainer.step)
        return trainer

    def write_predictions(
        self, run: RunRecorder, probs: torch.Tensor, predicted: list[int]
    ) -> None:
        rows = [
            {"id": e.id, "split": e.split, "label": e.label, "prediction": LABELS[p],
             "probabilities": [round(float(v), 6) for v in row]}
            for e, p, row in zip(self.examples, predicted, probs, strict=True)
        ]
        relpath = f"runs/{run.id}/predictions.jsonl"
        self.rec.write_jsonl(relpath, rows)
        run.set_predictions(relpath)

    # ------------------------------------------------------- decision

    def decide_after_pilot(self) -> bool:
        """The planned rule; returns whether variant-deep is dropped."""
        self.clock.begin("decide-after-pilot")
        ceiling: float = self.facts["data"]["label_rule_agreement"]["train"]
        fitted = self.model_runs["pilot"].accuracy["train"]
        headroom = ceiling - fitted
        drop = headroom < P.PILOT_HEADROOM
        verdict = ("capacity is not what limits the control: variant-deep (exploratory) is "
                   "dropped; variant-wide still tests capacity" if drop else
                   "the pilot is far from the ceiling: variant-deep continues")
        text = (f"After the pilot: it fits the training split at {fitted:.4f} accuracy, "
                f"{headroom:.4f} under the {ceiling:.4f} label-rule agreement measured by the "
                f"data check (rule: drop if under {P.PILOT_HEADROOM}); {verdict}.")
        self.clock.finish("decide-after-pilot")
        self.rec.decide("after-pilot", text, drops=["variant-deep"] if drop else [])
        self.facts["decision"] = text
        return drop

    # ---------------------------------------------------- control extras

    def control_extras(self, trainer: Trainer) -> None:
        self.clock.begin("save-checkpoint")
        state = {k: v.contiguous() for k, v in trainer.model.state_dict().items()}
        self.rec.write_bytes("runs/control/model.safetensors",
                             safetensors_bytes(state, metadata={"format": "pt"}))
        self.rec.add_checkpoint("runs/control/model.safetensors", run="control",
                                format="safetensors", kind="weights")
        self.clock.finish("save-checkpoint")

    def adapter(self, trainer: Trainer) -> None:
        """A LoRA delta trained on the frozen control, saved in PEFT's layout."""
        self.clock.begin("train-adapter")
        base_path = "runs/control/model.safetensors"
        revision = sha256_file(self.rec.path(base_path))[0]
        torch.manual_seed(LORA.seed)
        wrapped = attach_lora(trainer.model, list(LORA.targets), LORA.r, LORA.alpha)
        trainable = [p for m in wrapped.values() for p in (m.lora_A.weight, m.lora_B.weight)]
        optimizer = torch.optim.SGD(trainable, lr=LORA.lr)
        features, labels = self.train_split()
        generator = torch.Generator().manual_seed(LORA.seed)
        for _ in range(LORA.steps):
            rows = torch.randint(0, len(labels), (32,), generator=generator)
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(trainer.model(features[rows]), labels[rows])
            loss.backward()  # type: ignore[no-untyped-call]
            optimizer.step()
        folder = "runs/control/adapter"
        self.rec.write_bytes(f"{folder}/adapter_model.safetensors",
                             safetensors_bytes(peft_state_dict(wrapped), metadata={"format": "pt"}))
        self.rec.write_json(f"{folder}/adapter_config.json", _adapter_config(base_path, revision))
        self.rec.add_adapter(folder, run="control", base_model=base_path, base_revision=revision,
                             base_path=base_path)
        self.rec.add_checkpoint(f"{folder}/adapter_model.safetensors", run="control",
                                format="safetensors", kind="weights")
        all_features, _ = tensors(self.examples)
        predicted = probabilities(trainer.model, all_features).argmax(dim=1)
        test = [(int(p), e) for p, e in zip(predicted, self.examples, strict=True)
                if e.split == "test"]
        self.facts["adapter_test_accuracy"] = _share([LABELS[p] == e.label for p, e in test])
        self.rec.run("control").set_metrics(adapter_test_accuracy=self.facts["adapter_test_accuracy"])
        self.clock.finish("train-adapter")

    # ---------------------------------------------------- resume check

    def resume_check(self) -> None:
        run = self.started("resume-check", "restore-checkpoint")
        config = self.config("resume-check")
        features, labels = self.train_split()
        trainer = make_trainer(config, self.n_train())
        train(trainer, features, labels, until_step=config["resume_at_step"])
        self.save_checkpoint(trainer, "runs/resume-check/early.pt")
        self.clock.finish("restore-checkpoint")
        self.clock.begin("train-resume-check")
        resumed = self.run_resume_worker()
        reference = self.facts["control_losses"]
        first_equal = trainer.losses == reference[: len(trainer.losses)]
        continued_equal = resumed == reference[len(trainer.losses):]
        report = {
            "saved_at_step": trainer.step,
            "checkpoint": "runs/resume-check/early.pt",
            "resumed_in": "a new Python process (python -m example_campaign.resume_worker)",
            "resumed_steps": len(resumed),
            "first_steps_equal_control": first_equal,
            "continued_losses_equal_control_bitwise": continued_equal,
            "max_abs_difference": max((abs(a[1] - b[1]) for a, b in
                                       zip(resumed, reference[len(trainer.losses):], strict=False)),
                                      default=0.0),
        }
        self.rec.write_json("runs/resume-check/report.json", report)
        rows = [{"step": s, "loss": v, "control_loss": c, "equal": v == c}
                for (s, v), (_, c) in zip(resumed, reference[len(trainer.losses):], strict=False)]
        self.rec.write_jsonl("runs/resume-check/measurements.jsonl", rows)
        run.set_measurements("runs/resume-check/measurements.jsonl")
        for relpath in ("runs/resume-check/early.pt", "runs/resume-check/last.pt"):
            self.rec.add_checkpoint(relpath, run="resume-check", format="torch", kind="resume",
                                    claims=RESUME_PARTS)
        self.facts["resume"] = report
        if not (first_equal and continued_equal):
            self.clock.finish("train-resume-check")
            run.stop("no-usable-resume", f"resumed losses differ from the control: {report}",
                     step=trainer.step)
            return
        resumed_trainer = make_trainer(config, self.n_train())
        from pytest_itera.record import load_resume_checkpoint

        load_resume_checkpoint(self.rec.path("runs/resume-check/last.pt"),
                               model=resumed_trainer.model, optimizer=resumed_trainer.optimizer,
                               scheduler=resumed_trainer.scheduler)
        resumed_trainer.losses = [*trainer.losses, *resumed]
        resumed_trainer.step = len(resumed_trainer.losses)
        run.set_metrics(resumed_at_step=trainer.step, max_abs_loss_difference=0.0)
        self.evaluate(run, resumed_trainer, "train-resume-check")

    def run_resume_worker(self) -> list[tuple[int, float]]:
        args = [self.out / "configs/resume-check.json", self.out / P.CORPUS_PATH,
                self.rec.path("runs/resume-check/early.pt"),
                self.rec.path("runs/resume-check/last.pt")]
        done = subprocess.run(
            [sys.executable, "-m", "example_campaign.resume_worker", *map(str, args)],
            capture_output=True, text=True, timeout=120, check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"the resume worker failed:\n{done.stderr[-2000:]}")
        return [(int(s), float(v)) for s, v in json.loads(done.stdout)["losses"]]


def _share(flags: list[bool]) -> float:
    return round(sum(flags) / len(flags), 4) if flags else 0.0


def _adapter_config(base_path: str, revision: str) -> dict[str, Any]:
    """PEFT's adapter_config.json for a LoRA on our MLP, pinned to the shipped base."""
    return {
        "peft_type": "LORA",
        "task_type": None,
        "base_model_name_or_path": base_path,
        "revision": revision,
        "r": LORA.r,
        "lora_alpha": LORA.alpha,
        "lora_dropout": 0.0,
        "target_modules": list(LORA.targets),
        "bias": "none",
        "fan_in_fan_out": False,
        "init_lora_weights": True,
        "modules_to_save": None,
        "inference_mode": True,
    }


# ------------------------------------------------------------ the campaign


def build_campaign(out: Path, start: datetime) -> Path:
    """Run the whole campaign into ``out`` (new or empty); returns manifest.json's path."""
    out.mkdir(parents=True, exist_ok=True)
    if any(out.iterdir()):
        raise SystemExit(f"{out} is not empty; a campaign folder is written once")
    torch.set_num_threads(1)  # bitwise-reproducible losses, and fair on a 2-core machine
    clock = SimClock(start, P.STEPS)
    build = Build(out, clock, CampaignRecorder(out, clock=clock.now))
    build.prepare()
    build.data_check()
    build.trained_run("pilot", "train-pilot")
    drop_deep = build.decide_after_pilot()
    control = build.trained_run("control", "train-control")
    if control is None:
        raise SystemExit("the control was stopped; see manifest")
    build.facts["control_losses"] = list(control.losses)
    clock.begin("draft-analysis")
    clock.finish("draft-analysis")
    build.control_extras(control)
    build.resume_check()
    build.adapter(control)
    build.trained_run("variant-wide", "train-variant-wide")
    build.trained_run("variant-hot-lr", "train-variant-hot-lr")
    if drop_deep:
        clock.skip("train-variant-deep")
    else:
        build.trained_run("variant-deep", "train-variant-deep")
    conclusion = validate(build)
    write_outputs(build, conclusion)
    return close(build, conclusion)


def validate(build: Build) -> dict[str, Any]:
    """Gains over the control, metrics files, and the conclusion they imply."""
    build.clock.begin("validate")
    control = build.model_runs["control"].accuracy["test"]
    meets = []
    for run_id, result in build.model_runs.items():
        run = build.rec.run(run_id)
        if P.RUNS[run_id][0] == "variant":
            gain = round(result.accuracy["test"] - control, 4)
            run.set_metrics(**{P.METRIC: gain})
            if gain >= P.THRESHOLD:
                meets.append(run_id)
        build.rec.write_json(f"runs/{run_id}/metrics.json", run.record["metrics"])
    build.clock.finish("validate")
    return {"meets_threshold": meets, "text": conclusion_text(build, meets, control)}


def conclusion_text(build: Build, meets: list[str], control: float) -> str:
    variants = [r for r, spec in P.RUNS.items() if spec[0] == "variant"]
    parts = []
    for run_id in variants:
        record = build.rec.run(run_id).record
        if record.get("outcome") == "accepted":
            gain = record["metrics"][P.METRIC]
            parts.append(f"{run_id} {record['metrics']['test_accuracy']:.4f} "
                         f"(gain {gain:+.4f})")
        elif record.get("outcome") == "stopped":
            parts.append(f"{run_id} stopped by {record['stop']['rule']} at step "
                         f"{record['stop'].get('step')} (no deliverable, still an expense)")
        else:
            parts.append(f"{run_id} {record.get('outcome')} by decision {record.get('decision')}")
    head = (f"{', '.join(meets)} meet{'s' if len(meets) == 1 else ''} the threshold"
            if meets else "Negative result: no variant meets the threshold")
    return (f"{head} ({P.METRIC} >= {P.THRESHOLD}, higher is better) against the control's "
            f"{control:.4f} test accuracy: {'; '.join(parts)}.")


def write_outputs(build: Build, conclusion: dict[str, Any]) -> None:
    build.clock.begin("write-outputs")
    build.rec.write_text("analysis.md", analysis_text(build, conclusion))
    build.rec.write_text("RELOAD.md", reload_text(build))
    build.rec.write_text("README.md", readme_text(build))
    build.clock.finish("write-outputs")
    build.rec.write_json("schedule/observed.json", {
        "note": "Planned and observed hours are those of the 3-day rental this toy campaign "
        "stands for; observed hours are the planned hours scaled by the work each step really "
        "did. wall_seconds are what this toy build took on its CPU.",
        "steps": [{"id": s["id"], "planned_hours": s["hours"],
                   "observed_hours": build.clock.observed.get(s["id"], s["hours"]),
                   "wall_seconds": build.clock.wall_seconds.get(s["id"])} for s in P.STEPS],
    })


def close(build: Build, conclusion: dict[str, Any]) -> Path:
    build.clock.begin("retrieve")
    closed_at = build.clock.now()
    build.clock.finish("retrieve")  # the folder is retrieved once closed
    observed = build.clock.observed
    return build.rec.close(
        analysis="analysis.md",
        reload_instructions="RELOAD.md",
        conclusion=conclusion,
        budget=budget_report(build),
        schedule={
            "reserved_hours": P.WINDOW_HOURS,
            "observed_hours": round(build.clock.makespan(), 4),
            "steps": [{"id": s["id"], "observed_hours": observed[s["id"]]} for s in P.STEPS],
            "deviations": deviations(build),
        },
        closed_at=closed_at,
    )


def budget_report(build: Build) -> dict[str, Any]:
    lot = build.rec.plan["budget"]["lots"][0]
    total = Decimal(lot["price"]) * lot["quantity"]
    runs = [build.rec.run(r).record for r in P.RUNS]
    deliverables = {r["deliverable"] for r in runs if r["outcome"] == "accepted"}
    report: dict[str, Any] = {
        "currency": "USD",
        "lots": [lot["id"]],
        "rental_total": str(total),
        # One corpus compared across runs: every accepted run delivers the same corpus, once.
        "unit": "corpus",
        "accepted_deliverables": len(deliverables),
        "cost_per_deliverable": (str((total / len(deliverables)).quantize(Decimal("0.01")))
                                 if deliverables else None),
    }
    if not deliverables:
        report["rejection_cause"] = "no run was accepted"
    return report


def deviations(build: Build) -> list[dict[str, str]]:
    out = []
    for step in P.STEPS:
        planned, seen = float(step["hours"]), build.clock.observed[step["id"]]
        if planned and abs(seen - planned) / planned > 0.10:
            out.append({"step": step["id"], "explanation": _explain(build, step, seen)})
    return out


def _explain(build: Build, step: dict[str, Any], seen: float) -> str:
    run_id = step.get("run", "")
    record = build.rec.run(run_id).record if run_id else {}
    if record.get("outcome") == "stopped":
        stop = record["stop"]
        return (f"{run_id} was stopped by {stop['rule']} at step {stop.get('step')}: "
                f"{seen} h of the planned {step['hours']} h were used, the rest stayed "
                "uncommitted")
    if record.get("outcome") == "dropped":
        return f"{run_id} was dropped by decision {record['decision']}: the step did not run"
    return f"observed {seen} h against {step['hours']} h planned"
