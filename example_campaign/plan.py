"""The campaign's plan: question, runs and their configs, stop rules, schedule, budget.

The schedule's hours are those of a real rental of one RTX 4090 for three days
(the source's illustrative 48 sequential hours in a 72-hour window), not this
toy's seconds: the example runs the same protocol at toy scale on a CPU.
"""

from __future__ import annotations

from typing import Any

CAMPAIGN = "rings-width-2026"
CORPUS_ID = "rings-600-v1"
CORPUS_PATH = "corpus/corpus.jsonl"
LOT = "rtx4090-3d"
GPU = "gpu0"
METRIC = "test_accuracy_gain"
THRESHOLD = 0.02
PILOT_HEADROOM = 0.10  # drop the exploratory run when the pilot is this close to the ceiling
RESUME_AT_STEP = 140

CONTROL: dict[str, Any] = {
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
    "checkpoint_every_steps": 105,
}

# run id -> (role, category, config, description)
RUNS: dict[str, tuple[str, str, dict[str, Any], str]] = {
    "data-check": (
        "data_check",
        "must",
        {"check": "corpus", "expected_examples": 600, "id_field": "id", "features": 2,
         "labels": ["inner", "middle", "outer"], "max_label_share": 0.40},
        "Counts, label balance, unique IDs, feature completeness, label-rule agreement, hash.",
    ),
    "pilot": (
        "pilot",
        "useful",
        {**CONTROL, "epochs": 8},
        "The control configuration for 8 epochs; its training accuracy informs the decision.",
    ),
    "control": ("control", "must", CONTROL, "MLP 2-8-3, SGD lr 0.1, 30 epochs."),
    "resume-check": (
        "resume_check",
        "must",
        {**CONTROL, "resume_at_step": RESUME_AT_STEP, "resume_in": "new process"},
        "The control configuration saved at step 140, resumed in a new process: losses must "
        "equal the uninterrupted control's bit for bit.",
    ),
    "variant-wide": ("variant", "useful", {**CONTROL, "width": 64}, "Width 64 instead of 8."),
    "variant-hot-lr": (
        "variant",
        "useful",
        {**CONTROL, "lr": 200.0},
        "Learning rate 200: tests the non-finite-loss stop rule on a real divergence.",
    ),
    "variant-deep": (
        "variant",
        "exploratory",
        {**CONTROL, "depth": 3},
        "Three hidden layers; run only if the pilot shows capacity may limit the control.",
    ),
}

STOP_RULES: list[dict[str, Any]] = [
    {"id": "non-finite-loss", "kind": "non_finite_loss",
     "parameters": {"metric": "training loss",
                    "checked": "every optimizer step, before the update"},
     "description": "A NaN or infinite training loss stops the run at that step."},
    {"id": "quality-below", "kind": "quality_below",
     "parameters": {"metric": "validation_accuracy", "below": 0.5, "checked": "end of training"},
     "description": "A trained model under 0.5 validation accuracy (chance is 0.33) is stopped."},
    {"id": "corpus-truncated", "kind": "input_truncated",
     "parameters": {"expected_examples": 600, "features": 2},
     "description": "The data check stops the campaign if examples or features are missing."},
    {"id": "no-usable-resume", "kind": "no_resume",
     "parameters": {"compare": "continued losses, bitwise"},
     "description": "The resume check stops if the resumed losses differ from the control's."},
]


def _step(step_id: str, kind: str, hours: float, after: list[str], *, run: str | None = None,
          resource: str = GPU) -> dict[str, Any]:
    step: dict[str, Any] = {"id": step_id, "kind": kind, "resource": resource, "hours": hours}
    if resource not in ("human",):
        step["lot"] = LOT
    if run is not None:
        step["run"] = run
    if after:
        step["after"] = after
    return step


# Planned hours of a real 3-day rental; the critical chain sums to 48 h, and the
# human draft of the analysis overlaps the variants on the GPU.
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
    _step("draft-analysis", "evaluation", 4, ["train-control"], resource="human"),
    _step("validate", "validation", 1.5, ["train-variant-deep"]),
    _step("write-outputs", "output", 1, ["validate", "draft-analysis"]),
    _step("retrieve", "retrieval", 1, ["write-outputs"], resource="network"),
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


def build_plan(corpus_sha256: str, examples: int, config_sha256: dict[str, str]) -> dict[str, Any]:
    sequential = max(end for _, end in makespan(STEPS, planned_hours()).values())
    return {
        "format": "itera-plan/1",
        "campaign": CAMPAIGN,
        "question": "Does a wider (or deeper) MLP beat the 8-unit control on the frozen ring "
        "corpus by at least 0.02 test accuracy?",
        "decision": {
            "metric": METRIC,
            "direction": "higher",
            "threshold": THRESHOLD,
            "point": "After the pilot: variant-deep (exploratory) is dropped if the pilot's "
            f"training accuracy is within {PILOT_HEADROOM} of the label-rule agreement the data "
            "check measures (capacity is then not what limits the control).",
        },
        "corpus": {"id": CORPUS_ID, "path": CORPUS_PATH, "sha256": corpus_sha256,
                   "id_field": "id", "examples": examples},
        "runs": [
            {"id": run_id, "role": role, "category": category,
             "config_sha256": config_sha256[run_id], "description": description}
            for run_id, (role, category, _, description) in RUNS.items()
        ],
        "stop_rules": STOP_RULES,
        "checkpoint_policy": {
            "interval_hours": 2,
            "tolerable_loss_hours": 4,
            "save_hours": 0.05,
            "resume_state": ["model", "optimizer", "progress", "scheduler", "rng", "data"],
            "storage": "runs/<run>/last.pt inside the campaign folder on the rented disk, "
            "overwritten atomically; retrieved with the whole folder by the 'retrieve' step.",
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
