"""The campaign's plan: question, corpora, runs and their configs, stop rules, schedule, budget.

The schedule's hours are those of a real rental of one RTX 4090 for three days,
not this toy's seconds: the example runs the same protocol at toy scale on a CPU.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from example_campaign.make_corpus import CORPORA, NOISY, RINGS

CAMPAIGN = "rings-width-2026"
LOT = "rtx4090-3d"
GPU = "gpu0"
METRIC = "test_accuracy_gain"
THRESHOLD = 0.02
PILOT_HEADROOM = 0.10  # drop the exploratory run when the pilot is this close to the ceiling
RESUME_FROM_STEP = 105  # the control's first periodic save: the early save the check reloads
RESUME_UNTIL_STEP = 210  # the resumed segment compared with the control, step by step


def corpus_path(corpus_id: str) -> str:
    return f"corpus/{corpus_id}.jsonl"


CONTROL: dict[str, Any] = {
    "corpus": RINGS.id,
    "seed": 7,
    "width": 8,
    "depth": 1,
    "dropout": 0.1,
    "lr": 0.1,
    "momentum": 0.9,
    "lr_step_every": 150,
    "lr_gamma": 0.5,
    "batch_size": 32,
    "epochs": 30,
    # The plan's 2 h interval on an 8 h training step: a save every quarter of the run.
    "checkpoint_every_steps": RESUME_FROM_STEP,
}
NOISY_CONTROL = {**CONTROL, "corpus": NOISY.id}


@dataclass(frozen=True)
class PlannedRun:
    role: str
    category: str
    config: dict[str, Any]
    description: str
    corpus: str | None = None  # the corpus it trains and predicts on


RUNS: dict[str, PlannedRun] = {
    "data-check": PlannedRun(
        "data_check", "must",
        {"check": "corpora", "id_field": "id", "features": 2,
         "labels": ["inner", "middle", "outer"], "max_label_share": 0.40,
         "expected_examples": {c.id: c.examples for c in CORPORA}},
        "Both corpora: digest, counts, label balance, unique IDs, feature completeness, "
        "label-rule agreement.",
    ),
    "pilot": PlannedRun(
        "pilot", "useful", {**CONTROL, "epochs": 8},
        "The control configuration for 8 epochs; its training accuracy informs the decision.",
        RINGS.id,
    ),
    "control": PlannedRun("control", "must", CONTROL,
                          f"MLP 2-8-3, SGD lr 0.1, 30 epochs, on {RINGS.id}.", RINGS.id),
    "resume-check": PlannedRun(
        "resume_check", "must",
        {**CONTROL, "resume_from": f"runs/control/step-{RESUME_FROM_STEP}.pt",
         "resume_until_step": RESUME_UNTIL_STEP, "resume_in": "new process"},
        f"The control's step-{RESUME_FROM_STEP} checkpoint resumed in a new process up to step "
        f"{RESUME_UNTIL_STEP}: its losses must equal the control's at the same steps, bit for bit.",
        RINGS.id,
    ),
    "variant-wide": PlannedRun("variant", "useful", {**CONTROL, "width": 64},
                               f"Width 64 instead of 8, on {RINGS.id}.", RINGS.id),
    "variant-hot-lr": PlannedRun(
        "variant", "useful", {**CONTROL, "lr": 200.0},
        "Learning rate 200: tests the non-finite-loss stop rule on a real divergence.", RINGS.id,
    ),
    "variant-deep": PlannedRun(
        "variant", "exploratory", {**CONTROL, "depth": 3},
        "Three hidden layers; run only if the pilot shows capacity may limit the control.",
        RINGS.id,
    ),
    "control-noisy": PlannedRun("control", "must", NOISY_CONTROL,
                                f"The control's configuration on {NOISY.id}.", NOISY.id),
    "variant-wide-noisy": PlannedRun("variant", "useful", {**NOISY_CONTROL, "width": 64},
                                     f"Width 64 instead of 8, on {NOISY.id}.", NOISY.id),
}
# Which control each variant is compared with: the control of its own corpus.
CONTROL_OF = {RINGS.id: "control", NOISY.id: "control-noisy"}
QUALITY_FLOOR = 0.5  # chance is 0.33


@dataclass(frozen=True)
class CorpusFacts:
    """A frozen corpus as the plan records it, measured on the copy in the campaign."""

    id: str
    path: str
    sha256: str
    examples: int
    bytes: int


def stop_rules(corpora: list[CorpusFacts]) -> list[dict[str, Any]]:
    truncated = [
        {"id": f"{c.id}-truncated", "kind": "input_truncated",
         "parameters": {"input": c.id, "examples": c.examples, "bytes": c.bytes,
                        "sha256": c.sha256},
         "description": f"The data check stops the campaign if {c.path} is not the frozen "
         "corpus: fewer examples, fewer bytes or another digest."}
        for c in corpora
    ]
    return [
        {"id": "non-finite-loss", "kind": "non_finite_loss", "parameters": {"series": "loss"},
         "description": "A NaN or infinite training loss stops the run at that step (checked at "
         "every optimizer step, before the update)."},
        {"id": "quality-below", "kind": "quality_below",
         "parameters": {"metric": "validation_accuracy", "threshold": QUALITY_FLOOR,
                        "direction": "higher", "split": "validation"},
         "description": f"A trained model under {QUALITY_FLOOR} validation accuracy (chance is "
         "0.33) is stopped at the end of its training."},
        *truncated,
        {"id": "no-usable-resume", "kind": "no_resume",
         "parameters": {"resume_check": "resume-check"},
         "description": "The resume check stops if its resumed losses differ from the "
         "control's at the same steps."},
    ]


def _step(step_id: str, kind: str, hours: float, after: list[str], *, run: str | None = None,
          resource: str = GPU) -> dict[str, Any]:
    step: dict[str, Any] = {"id": step_id, "kind": kind, "resource": resource, "hours": hours}
    if resource not in ("human", "network"):  # off the rented machine: no lot
        step["lot"] = LOT
    if run is not None:
        step["run"] = run
    if after:
        step["after"] = after
    return step


# Planned hours of a real 3-day rental; the human draft of the analysis overlaps the
# variants on the GPU. Each run's steps are listed in the order they run.
STEPS: list[dict[str, Any]] = [
    _step("prepare", "preparation", 4, [], resource="human"),
    _step("setup", "setup", 2, ["prepare"]),
    _step("load-corpus", "data_load", 1, ["setup"]),
    _step("check-corpus", "validation", 1, ["load-corpus"], run="data-check"),
    _step("train-pilot", "training", 2, ["check-corpus"], run="pilot"),
    _step("decide-after-pilot", "decision", 1, ["train-pilot"], resource="human"),
    _step("train-control", "training", 8, ["decide-after-pilot"], run="control"),
    _step("save-checkpoint", "checkpoint_save", 0.5, ["train-control"], run="control"),
    _step("restore-checkpoint", "checkpoint_restore", 0.5, ["save-checkpoint"],
          run="resume-check"),
    _step("train-resume-check", "training", 2, ["restore-checkpoint"], run="resume-check"),
    _step("train-adapter", "training", 1, ["train-resume-check"], run="control"),
    _step("train-variant-wide", "training", 8, ["train-adapter"], run="variant-wide"),
    _step("train-variant-hot-lr", "training", 8, ["train-variant-wide"], run="variant-hot-lr"),
    _step("train-variant-deep", "training", 5.5, ["train-variant-hot-lr"], run="variant-deep"),
    # rings-noisy-400-v1 has two thirds of the examples: 270 steps against 420.
    _step("train-control-noisy", "training", 5, ["train-variant-deep"], run="control-noisy"),
    _step("train-variant-wide-noisy", "training", 5, ["train-control-noisy"],
          run="variant-wide-noisy"),
    _step("draft-analysis", "evaluation", 4, ["train-control"], resource="human"),
    _step("validate", "validation", 1.5, ["train-variant-wide-noisy"]),
    _step("write-outputs", "output", 1, ["validate", "draft-analysis"]),
    _step("retrieve", "retrieval", 1, ["write-outputs", "save-checkpoint", "restore-checkpoint"],
          resource="network"),
]
WINDOW_HOURS = 72


Span = tuple[float, float]


def makespan(steps: list[dict[str, Any]], hours: dict[str, float]) -> dict[str, Span]:
    """(start, end) of each step: dependencies honoured, one step at a time per resource."""
    spans: dict[str, Span] = {}
    free: dict[str, float] = {}
    for step in steps:
        start = max([spans[d][1] for d in step.get("after", [])] + [free.get(step["resource"], 0)])
        spans[step["id"]] = (start, start + hours[step["id"]])
        free[step["resource"]] = start + hours[step["id"]]
    return spans


def planned_hours() -> dict[str, float]:
    return {s["id"]: float(s["hours"]) for s in STEPS}


def sequential_hours() -> float:
    return max(end for _, end in makespan(STEPS, planned_hours()).values())


TEST_ACCURACY = {"kind": "accuracy", "label_field": "label", "prediction_field": "prediction",
                 "where": {"split": "test"}}


def build_plan(corpora: list[CorpusFacts], config_sha256: dict[str, str]) -> dict[str, Any]:
    sequential = sequential_hours()
    runs = []
    for run_id, run in RUNS.items():
        planned = {"id": run_id, "role": run.role, "category": run.category,
                   "config_sha256": config_sha256[run_id], "description": run.description}
        if run.corpus is not None:
            planned["corpus"] = run.corpus
        runs.append(planned)
    return {
        "format": "itera-plan/3",
        "campaign": CAMPAIGN,
        "question": "Does a wider (or deeper) MLP beat the 8-unit control by at least 0.02 test "
        f"accuracy, on the frozen ring corpus {RINGS.id} and on its noisier twin {NOISY.id}?",
        "decision": {
            "metric": METRIC,
            "direction": "higher",
            "threshold": THRESHOLD,
            "point": "After the pilot: variant-deep (exploratory) is dropped if the pilot's "
            f"training accuracy is within {PILOT_HEADROOM} of the label-rule agreement the data "
            "check measures (capacity is then not what limits the control).",
            # A variant's test accuracy minus the control's on the same corpus, recomputed by
            # the checks from the predictions and the frozen corpus's labels.
            "computation": {**TEST_ACCURACY, "relative_to": "control"},
        },
        "metrics": {f"{split}_accuracy": {**TEST_ACCURACY, "where": {"split": split}}
                    for split in ("train", "validation", "test")},
        "corpora": [{"id": c.id, "path": c.path, "sha256": c.sha256, "id_field": "id",
                     "examples": c.examples} for c in corpora],
        "runs": runs,
        "stop_rules": stop_rules(corpora),
        "checkpoint_policy": {
            "interval_hours": 2,
            "tolerable_loss_hours": 4,
            "save_hours": 0.05,
            "resume_state": ["model", "optimizer", "progress", "scheduler", "rng", "data"],
            "resume_tolerance": 0,
            "storage": "runs/<run>/last.pt inside the campaign folder on the rented disk, "
            f"overwritten atomically, and the control's early save runs/control/step-"
            f"{RESUME_FROM_STEP}.pt kept for the resume check; retrieved with the whole folder "
            "by the 'retrieve' step.",
        },
        "schedule": {
            "window_hours": WINDOW_HOURS,
            "sequential_hours": sequential,
            "uncommitted_hours": WINDOW_HOURS - sequential,
            "deviation_tolerance": 0.10,
            "steps": STEPS,
        },
        "budget": {
            "currency": "USD",
            "lots": [{"id": LOT, "offer": "IteraGPU RTX 4090, 3 days", "gpu": "RTX 4090",
                      "gpus_per_lot": 1, "days": 3, "price": "47.14", "quantity": 1}],
        },
    }
