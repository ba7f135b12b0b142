"""Build the example campaign folder through the recorder (``pytest_itera.record``) only."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save as safetensors_bytes

from example_campaign import plan as P
from example_campaign.base import commit_id
from example_campaign.data import SPLITS, Example, read_corpus, tensors
from example_campaign.make_corpus import CORPORA, LABELS, RINGS
from example_campaign.model import attach_lora, peft_state_dict
from example_campaign.report import (
    STORAGE_INVOICE,
    ModelRun,
    Results,
    analysis_text,
    cost_per_corpus,
    readme_text,
    receipt_text,
    reload_text,
)
from example_campaign.timeline import SimClock
from example_campaign.train import NonFinite, Trainer, make_trainer, probabilities, train
from pytest_itera.record import (
    CampaignRecorder,
    RunRecorder,
    save_resume_checkpoint,
    sha256_file,
)

RESUME_PARTS = ["model", "optimizer", "progress", "scheduler", "rng", "data"]
BASE_FOLDER = "runs/control/base"
BASE_MODEL = f"{P.CAMPAIGN}/control"
RESUME_SOURCE = f"runs/control/step-{P.RESUME_FROM_STEP}.pt"
RESUME_OUT = f"runs/resume-check/step-{P.RESUME_UNTIL_STEP}.pt"


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
class Build(Results):
    """The campaign being built: its results, the folder and the clock it runs on."""

    out: Path = field(kw_only=True)
    clock: SimClock = field(kw_only=True)
    # The resume check's new process, started with the build: its torch import runs on the
    # other core while the runs it resumes train. Its arguments come on stdin.
    resumer: subprocess.Popen[str] | None = field(default=None, kw_only=True)

    # ---------------------------------------------------------- helpers

    def config(self, run_id: str) -> dict[str, Any]:
        return P.RUNS[run_id].config

    def examples_of(self, run_id: str) -> list[Example]:
        corpus = P.RUNS[run_id].corpus
        assert corpus is not None, run_id
        return self.corpora[corpus]

    def train_split(self, run_id: str) -> tuple[torch.Tensor, torch.Tensor]:
        return tensors([e for e in self.examples_of(run_id) if e.split == "train"])

    def n_train(self, run_id: str) -> int:
        return sum(e.split == "train" for e in self.examples_of(run_id))

    def started(self, run_id: str, step_id: str) -> RunRecorder:
        self.clock.begin(step_id)
        run = self.rec.run(run_id)
        run.start()
        run.set_config(f"configs/{run_id}.json")
        return run

    # ------------------------------------------------------ preparation

    def prepare(self) -> None:
        self.clock.begin("prepare")
        corpora = []
        for spec in CORPORA:
            relpath = P.corpus_path(spec.id)
            data = spec.path.read_bytes()
            self.rec.write_bytes(relpath, data)
            corpora.append(P.CorpusFacts(spec.id, relpath, sha256_file(self.out / relpath)[0],
                                         data.count(b"\n"), len(data)))
        shas = {}
        for run_id in P.RUNS:
            path = self.rec.write_json(f"configs/{run_id}.json", self.config(run_id))
            shas[run_id] = sha256_file(path)[0]
        self.clock.finish("prepare")
        self.rec.freeze_plan(P.build_plan(corpora, shas))
        self.clock.begin("setup")
        self.clock.finish("setup")
        self.clock.begin("load-corpus")
        for spec in CORPORA:
            self.corpora[spec.id] = read_corpus(self.out / P.corpus_path(spec.id))
        self.clock.finish("load-corpus")

    # -------------------------------------------------------- data check

    def data_check(self) -> None:
        """Measure each corpus in the folder; stop on the first that is not the frozen one."""
        run = self.started("data-check", "check-corpus")
        cfg = self.config("data-check")
        reports = {}
        for corpus in self.rec.plan["corpora"]:
            report = self.check_corpus(run, corpus, cfg)
            reports[corpus["id"]] = report
            expected = cfg["expected_examples"][corpus["id"]]
            complete = report["examples"] == expected == report["complete_features"]
            if not complete or report["duplicate_ids"] or report["sha256"] != corpus["sha256"]:
                self.rec.write_json("runs/data-check/report.json", reports)
                run.stop(f"{corpus['id']}-truncated", f"corpus check failed: {report}", step=0)
                self.clock.finish("check-corpus")
                raise SystemExit("the data check failed; the campaign cannot continue")
        self.rec.write_json("runs/data-check/report.json", reports)
        self.facts["data"] = reports
        run.set_metrics(corpora=len(reports),
                        examples=sum(r["examples"] for r in reports.values()),
                        duplicate_ids=sum(r["duplicate_ids"] for r in reports.values()),
                        max_label_share=max(r["max_label_share"] for r in reports.values()))
        self.clock.finish("check-corpus")
        run.accept()

    def check_corpus(self, run: RunRecorder, corpus: dict[str, Any],
                     cfg: dict[str, Any]) -> dict[str, Any]:
        path = self.out / corpus["path"]
        digest, size = sha256_file(path)
        examples = read_corpus(path)
        ids = [e.id for e in examples]
        run.check_input(corpus["id"], sha256=digest, examples=len(examples), bytes=size)
        counts = {label: sum(e.label == label for e in examples) for label in LABELS}
        return {
            "corpus": corpus["path"],
            "sha256": digest,
            "bytes": size,
            "examples": len(ids),
            "duplicate_ids": len(ids) - len(set(ids)),
            "complete_features": sum(len(e.x) == cfg["features"] for e in examples),
            "label_counts": counts,
            "max_label_share": round(max(counts.values()) / len(ids), 4),
            "split_counts": {s: sum(e.split == s for e in examples) for s in SPLITS},
            "label_rule_agreement": {
                s: _share([e.label == e.rule_label for e in examples if e.split == s])
                for s in SPLITS
            },
        }

    # --------------------------------------------------------- training

    def trained_run(self, run_id: str, step_id: str) -> Trainer | None:
        """Train ``run_id``; record its outputs; None when a stop rule fired."""
        run = self.started(run_id, step_id)
        features, labels = self.train_split(run_id)
        trainer = make_trainer(self.config(run_id), self.n_train(run_id))
        every = self.config(run_id)["checkpoint_every_steps"]
        last = f"runs/{run_id}/last.pt"
        kept = [RESUME_SOURCE] if run_id == "control" else []  # the early save, kept

        def save(step: int, data_state: dict[str, int]) -> None:
            at = self.clock.during(step_id, step / trainer.total_steps)
            if step % every == 0 or step == trainer.total_steps:
                self.save_checkpoint(trainer, last, run_id, at)
            if f"runs/{run_id}/step-{step}.pt" in kept:
                self.save_checkpoint(trainer, f"runs/{run_id}/step-{step}.pt", run_id, at)

        stopped = train(trainer, features, labels, on_step=save)
        for step, loss in trainer.losses:
            run.log(step, loss=loss)
        if stopped is not None:  # the evidence: the non-finite value at the step it appeared
            run.log(stopped.step, loss=stopped.value)
            self.stop_non_finite(run, trainer, stopped, step_id)
            return None
        for relpath in [*kept, last]:
            self.rec.add_checkpoint(relpath, run=run_id, format="torch", kind="resume",
                                    claims=RESUME_PARTS)
        return self.evaluate(run, trainer, step_id)

    def save_checkpoint(self, trainer: Trainer, relpath: str, run_id: str,
                        at: datetime) -> None:
        save_resume_checkpoint(
            self.rec.path(relpath), model=trainer.model, optimizer=trainer.optimizer,
            scheduler=trainer.scheduler, step=trainer.step, epoch=trainer.epoch,
            data_state=trainer.data_state(),
        )
        # every save is journaled (last.pt is overwritten): its content, step and moment
        self.rec.checkpoint_saved(relpath, run=run_id, step=trainer.step, at=at)

    def stop_non_finite(self, run: RunRecorder, trainer: Trainer, stop: NonFinite,
                        step_id: str) -> None:
        total = trainer.total_steps
        self.clock.finish(step_id, stop.step / total)
        reason = (f"training loss was {stop.value!r} at step {stop.step} of {total} "
                  f"(lr {trainer.config['lr']}); the run was stopped before that update "
                  f"(series 'loss' in runs/{run.id}/measurements.jsonl)")
        run.set_metrics(steps=trainer.step)
        run.stop("non-finite-loss", reason, step=stop.step)
        self.facts.setdefault("stopped", {})[run.id] = {"step": stop.step, "of": total,
                                                        "value": repr(stop.value)}

    def evaluate(self, run: RunRecorder, trainer: Trainer, step_id: str) -> Trainer | None:
        examples = self.examples_of(run.id)
        features, _ = tensors(examples)
        probs = probabilities(trainer.model, features)
        predicted = [int(i) for i in probs.argmax(dim=1)]
        accuracy = {
            split: _share([LABELS[p] == e.label
                           for p, e in zip(predicted, examples, strict=True)
                           if e.split == split])
            for split in SPLITS
        }
        self.write_predictions(run, examples, probs, predicted)
        run.set_metrics(**{f"{s}_accuracy": a for s, a in accuracy.items()},
                        final_loss=trainer.losses[-1][1], steps=trainer.step)
        self.clock.finish(step_id)
        if accuracy["validation"] < P.QUALITY_FLOOR:
            run.stop("quality-below", f"validation accuracy {accuracy['validation']:.4f} < "
                     f"{P.QUALITY_FLOOR}", step=trainer.step)
            return None
        run.accept()
        corpus = run.record["corpus"]
        self.model_runs[run.id] = ModelRun(run.id, corpus, predicted, accuracy, trainer.step)
        return trainer

    def write_predictions(self, run: RunRecorder, examples: list[Example], probs: torch.Tensor,
                          predicted: list[int]) -> None:
        rows = [
            {"id": e.id, "split": e.split, "label": e.label, "prediction": LABELS[p],
             "probabilities": [round(float(v), 6) for v in row]}
            for e, p, row in zip(examples, predicted, probs, strict=True)
        ]
        relpath = f"runs/{run.id}/predictions.jsonl"
        self.rec.write_jsonl(relpath, rows)
        run.set_predictions(relpath)  # covers the corpus the plan gives the run

    # ------------------------------------------------------- decision

    def decide_after_pilot(self) -> bool:
        """The planned rule; returns whether variant-deep is dropped."""
        self.clock.begin("decide-after-pilot")
        ceiling: float = self.facts["data"][RINGS.id]["label_rule_agreement"]["train"]
        fitted = self.model_runs["pilot"].accuracy["train"]
        headroom = ceiling - fitted
        drop = headroom < P.PILOT_HEADROOM
        verdict = ("capacity is not what limits the control: variant-deep (exploratory) is "
                   "dropped; variant-wide still tests capacity" if drop else
                   "the pilot is far from the ceiling: variant-deep continues")
        text = (f"After the pilot: it fits the training split of {RINGS.id} at {fitted:.4f} "
                f"accuracy, {headroom:.4f} under the {ceiling:.4f} label-rule agreement measured "
                f"by the data check (rule: drop if under {P.PILOT_HEADROOM}); {verdict}.")
        self.clock.finish("decide-after-pilot")
        self.rec.decide("after-pilot", text, drops=["variant-deep"] if drop else [])
        self.facts["decision"] = text
        return drop

    # ---------------------------------------------------- control extras

    def export_base(self, trainer: Trainer) -> None:
        """The control's weights, exported as a base model folder and committed."""
        self.clock.begin("save-checkpoint")
        state = {k: v.contiguous() for k, v in trainer.model.state_dict().items()}
        config = {k: self.config("control")[k] for k in ("width", "depth", "dropout")}
        files = {"model.safetensors": safetensors_bytes(state, metadata={"format": "pt"}),
                 "config.json": (json.dumps(config, indent=2) + "\n").encode("utf-8")}
        for name, data in files.items():
            self.rec.write_bytes(f"{BASE_FOLDER}/{name}", data)
        when = self.clock.now()
        revision = commit_id(files, model=BASE_MODEL, when=when)
        self.facts["base"] = {"revision": revision, "epoch_seconds": int(when.timestamp()),
                              "digest": self.rec.record_base(BASE_FOLDER, model=BASE_MODEL,
                                                             revision=revision)}
        self.rec.add_checkpoint(f"{BASE_FOLDER}/model.safetensors", run="control",
                                format="safetensors", kind="weights")
        self.clock.finish("save-checkpoint")

    def adapter(self, trainer: Trainer) -> None:
        """A LoRA delta trained on the frozen control, saved in PEFT's layout."""
        self.clock.begin("train-adapter")
        revision = self.facts["base"]["revision"]
        torch.manual_seed(LORA.seed)
        wrapped = attach_lora(trainer.model, list(LORA.targets), LORA.r, LORA.alpha)
        trainable = [p for m in wrapped.values() for p in (m.lora_A.weight, m.lora_B.weight)]
        optimizer = torch.optim.SGD(trainable, lr=LORA.lr)
        features, labels = self.train_split("control")
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
        self.rec.write_json(f"{folder}/adapter_config.json", _adapter_config(BASE_FOLDER, revision))
        self.rec.add_adapter(folder, run="control", base_model=BASE_MODEL, base_revision=revision,
                             base_path=BASE_FOLDER)
        self.rec.add_checkpoint(f"{folder}/adapter_model.safetensors", run="control",
                                format="safetensors", kind="weights")
        examples = self.examples_of("control")
        all_features, _ = tensors(examples)
        predicted = probabilities(trainer.model, all_features).argmax(dim=1)
        test = [(int(p), e) for p, e in zip(predicted, examples, strict=True)
                if e.split == "test"]
        self.facts["adapter_test_accuracy"] = _share([LABELS[p] == e.label for p, e in test])
        self.rec.run("control").set_metrics(adapter_test_accuracy=self.facts["adapter_test_accuracy"])
        self.clock.finish("train-adapter")

    # ---------------------------------------------------- resume check

    def resume_check(self) -> None:
        """Resume the control's early save in a new process; compare with the control."""
        run = self.started("resume-check", "restore-checkpoint")
        self.clock.finish("restore-checkpoint")
        self.clock.begin("train-resume-check")
        resumed_at, resumed = self.run_resume_worker()
        run.resumed_from(RESUME_SOURCE, resumed_at)
        for step, loss in resumed:
            run.log(step, loss=loss)
        reference = dict(self.facts["control_losses"])
        pairs = [(s, v, reference.get(s)) for s, v in resumed]
        differences = [abs(v - c) for _, v, c in pairs if c is not None]
        largest = max(differences, default=0.0)
        equal = (bool(pairs) and all(c is not None and v == c for _, v, c in pairs)
                 and resumed[-1][0] == P.RESUME_UNTIL_STEP)
        report = {
            "resumed_from": RESUME_SOURCE,
            "resumed_at_step": resumed_at,
            "resumed_in": "a new Python process (python -m example_campaign.resume_worker)",
            "resumed_until_step": resumed[-1][0] if resumed else resumed_at,
            "compared_steps": len(differences),
            "losses_equal_control_bitwise": equal,
            "max_abs_difference": largest,
            "saved": RESUME_OUT,
        }
        self.rec.write_json("runs/resume-check/report.json", report)
        self.rec.add_checkpoint(RESUME_OUT, run="resume-check", format="torch", kind="resume",
                                claims=RESUME_PARTS, step=int(report["resumed_until_step"]))
        run.set_metrics(resumed_at_step=resumed_at, compared_steps=len(differences),
                        max_abs_loss_difference=largest)
        self.facts["resume"] = report
        self.clock.finish("train-resume-check")
        if not equal:
            run.stop("no-usable-resume", f"resumed losses differ from the control's: {report}",
                     step=resumed_at)
            return
        run.accept()

    def start_resume_worker(self) -> None:
        self.resumer = subprocess.Popen(
            [sys.executable, "-m", "example_campaign.resume_worker"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )

    def stop_resume_worker(self) -> None:
        """The worker, if still running (the build failed before it was needed)."""
        if self.resumer is not None and self.resumer.poll() is None:
            self.resumer.kill()
            self.resumer.communicate()

    def run_resume_worker(self) -> tuple[int, list[tuple[int, float]]]:
        args = [self.out / "configs/resume-check.json", self.out / P.corpus_path(RINGS.id),
                self.rec.path(RESUME_SOURCE), self.rec.path(RESUME_OUT)]
        assert self.resumer is not None, "build_campaign starts it with the build"
        try:
            stdout, stderr = self.resumer.communicate(json.dumps(list(map(str, args))) + "\n",
                                                      timeout=120)
        finally:
            self.stop_resume_worker()
        if self.resumer.returncode != 0:
            raise RuntimeError(f"the resume worker failed:\n{stderr[-2000:]}")
        result = json.loads(stdout)
        return int(result["resumed_at_step"]), [(int(s), float(v)) for s, v in result["losses"]]


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
    build = Build(CampaignRecorder(out, clock=clock.now), out=out, clock=clock)
    build.start_resume_worker()
    try:
        return _build(build)
    finally:
        build.stop_resume_worker()


def _build(build: Build) -> Path:
    clock = build.clock
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
    build.export_base(control)
    build.resume_check()
    build.adapter(control)
    build.trained_run("variant-wide", "train-variant-wide")
    build.trained_run("variant-hot-lr", "train-variant-hot-lr")
    if drop_deep:
        clock.skip("train-variant-deep")
    else:
        build.trained_run("variant-deep", "train-variant-deep")
    build.trained_run("control-noisy", "train-control-noisy")
    build.trained_run("variant-wide-noisy", "train-variant-wide-noisy")
    conclusion = validate(build)
    write_outputs(build, conclusion)
    return close(build, conclusion)


def validate(build: Build) -> dict[str, Any]:
    """Each variant's gain over the control of its own corpus, and the conclusion."""
    build.clock.begin("validate")
    meets = []
    for run_id, result in build.model_runs.items():
        if P.RUNS[run_id].role != "variant":
            continue
        control = build.model_runs[P.CONTROL_OF[result.corpus]].accuracy["test"]
        gain = round(result.accuracy["test"] - control, 4)
        build.rec.run(run_id).set_metrics(**{P.METRIC: gain})
        if gain >= P.THRESHOLD:
            meets.append(run_id)
    build.clock.finish("validate")
    return {"meets_threshold": meets, "text": conclusion_text(build, meets)}


def conclusion_text(build: Build, meets: list[str]) -> str:
    parts = []
    for run_id, planned in P.RUNS.items():
        if planned.role != "variant":
            continue
        record = build.rec.run(run_id).record
        control = P.CONTROL_OF[planned.corpus or RINGS.id]
        if record.get("outcome") == "accepted":
            metrics = record["metrics"]
            parts.append(f"{run_id} {metrics['test_accuracy']:.4f} on {planned.corpus} against "
                         f"{control}'s {build.model_runs[control].accuracy['test']:.4f} "
                         f"(gain {metrics[P.METRIC]:+.4f})")
        elif record.get("outcome") == "stopped":
            parts.append(f"{run_id} stopped by {record['stop']['rule']} at step "
                         f"{record['stop'].get('step')} (no deliverable, still an expense)")
        else:
            parts.append(f"{run_id} {record.get('outcome')} by decision {record.get('decision')}")
    head = (f"{', '.join(meets)} meet{'s' if len(meets) == 1 else ''} the threshold"
            if meets else "Negative result: no variant meets the threshold")
    return (f"{head} ({P.METRIC} >= {P.THRESHOLD}, higher is better, each variant against the "
            f"control of its corpus): {'; '.join(parts)}.")


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
    build.rec.write_text(STORAGE_INVOICE.file, receipt_text(STORAGE_INVOICE, closed_at))
    build.clock.finish("retrieve")  # the folder is retrieved once closed
    observed = build.clock.observed
    closure = build.rec.close(
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
    return closure.manifest


def budget_report(build: Build) -> dict[str, Any]:
    lot = build.rec.plan["budget"]["lots"][0]
    total, accepted, share = cost_per_corpus(build)
    invoice = STORAGE_INVOICE
    report: dict[str, Any] = {
        "currency": "USD",
        "lots": [lot["id"]],
        "rental_total": str(total),
        "included_expenses": [build.rec.expense(
            f"{invoice.seller}: {invoice.item}", invoice.amount, file=invoice.file,
            reference=invoice.order)],
        # A deliverable is a distinct corpus delivered by an accepted control or variant:
        # replays of one corpus count once; data check, pilot and resume check deliver none.
        "unit": "corpus",
        "accepted_deliverables": accepted,
        "cost_per_deliverable": share,
    }
    if not accepted:
        report["rejection_cause"] = "no control or variant run was accepted"
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
