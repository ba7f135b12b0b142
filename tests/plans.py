"""Plans for the plan gate's tests (--itera-plan): the seed's 48 h in a 72 h window.

Everything runs on the rented 3-day RTX 4090 lot, from the start of preparation to the
retrieval of results: 48 sequential hours, 24 uncommitted. Runs: the must category
(control, data check, resume check, pilot), one useful and one exploratory variant.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

SHA = "0" * 63 + "1"
LOT = "rtx4090-3d"
RUNS = (
    ("control", "control", "must"),
    ("data-check", "data_check", "must"),
    ("resume-check", "resume_check", "must"),
    ("pilot", "pilot", "must"),
    ("variant-a", "variant", "useful"),
    ("variant-b", "variant", "exploratory"),
)
# id, kind, resource, hours, after, run
STEPS: tuple[tuple[str, str, str, float, list[str], str | None], ...] = (
    ("prepare", "preparation", "human", 2, [], None),
    ("setup", "setup", "gpu0", 2, ["prepare"], None),
    ("load-data", "data_load", "gpu0", 2, ["setup"], None),
    ("check-data", "validation", "gpu0", 1, ["load-data"], "data-check"),
    ("train-pilot", "training", "gpu0", 4, ["check-data"], "pilot"),
    ("decide", "decision", "human", 1, ["train-pilot"], None),
    ("train-control", "training", "gpu0", 12, ["decide"], "control"),
    ("save-ckpt", "checkpoint_save", "gpu0", 1, ["train-control"], "control"),
    ("restore-ckpt", "checkpoint_restore", "gpu0", 1, ["save-ckpt"], "resume-check"),
    ("train-variant-a", "training", "gpu0", 8, ["restore-ckpt"], "variant-a"),
    ("train-variant-b", "training", "gpu0", 6, ["train-variant-a"], "variant-b"),
    ("validate", "validation", "gpu0", 2, ["train-variant-b", "restore-ckpt"], None),
    ("write-outputs", "output", "gpu0", 2, ["validate"], None),
    ("retrieve", "retrieval", "gpu0", 4, ["write-outputs"], None),
)


def seed_plan() -> dict[str, Any]:
    """The seed's plan: 48 h from preparation to retrieval, in a 72 h window."""
    return copy.deepcopy({
        "format": "itera-plan/2",
        "campaign": "seed-2026-12",
        "frozen_at": "2026-12-01T08:00:00Z",
        "question": "Does a variant beat the control's 0.8 accuracy on the frozen corpus?",
        "decision": {"metric": "accuracy", "direction": "higher", "threshold": 0.8},
        "corpora": [{"id": "corpus-v1", "path": "corpus/corpus.jsonl", "sha256": SHA,
                     "id_field": "id", "examples": 600}],
        "runs": [{"id": rid, "role": role, "category": cat, "config_sha256": SHA}
                 for rid, role, cat in RUNS],
        "stop_rules": [
            {"id": "non-finite-loss", "kind": "non_finite_loss", "parameters": {"series": "loss"}},
            {"id": "no-resume", "kind": "no_resume",
             "parameters": {"resume_check": "resume-check"}},
        ],
        "checkpoint_policy": {
            "interval_hours": 1, "tolerable_loss_hours": 2, "save_hours": 0.5,
            "resume_state": ["model", "optimizer", "progress", "scheduler", "rng", "data"],
            "storage": "runs/<run>/last.pt on the rented disk, fetched by the retrieve step",
        },
        "schedule": {
            "window_hours": 72, "sequential_hours": 48, "uncommitted_hours": 24,
            "steps": [{"id": sid, "kind": kind, "resource": res, "hours": hours, "after": after,
                       "lot": LOT, **({"run": run} if run else {})}
                      for sid, kind, res, hours, after, run in STEPS],
        },
        "budget": {"currency": "USD", "lots": [
            {"id": LOT, "offer": "IteraGPU RTX 4090, 3 days", "gpu": "RTX 4090",
             "gpus_per_lot": 1, "days": 3, "price": "47.14", "quantity": 1}]},
    })


def step(plan: dict[str, Any], step_id: str) -> dict[str, Any]:
    return next(s for s in plan["schedule"]["steps"] if s["id"] == step_id)


def grown_by_30(plan: dict[str, Any]) -> dict[str, Any]:
    """The same plan, its control training 30 h longer: 78 h."""
    step(plan, "train-control")["hours"] += 30
    plan["schedule"].update(sequential_hours=78, uncommitted_hours=-6)
    return plan


def mid_way() -> dict[str, Any]:
    """A heavier plan (60 h, 12 h uncommitted): training is most of it."""
    plan = seed_plan()
    step(plan, "train-control")["hours"] = 20
    step(plan, "train-variant-a")["hours"] = 10
    step(plan, "train-variant-b")["hours"] = 8
    plan["schedule"].update(sequential_hours=60, uncommitted_hours=12)
    return plan


# The pilot ran 6 h against 4 h planned (1.5x); what came before it ran as planned.
PILOT_JOURNAL: list[dict[str, Any]] = [
    {"event": "plan_frozen"},
    {"event": "step", "step": "prepare", "hours": 2},
    {"event": "step", "step": "setup", "hours": 2},
    {"event": "step", "step": "load-data", "hours": 2},
    {"event": "step", "step": "check-data", "hours": 1},
    {"event": "step_started", "step": "train-pilot"},
    {"event": "step", "step": "train-pilot", "hours": 6},
]


def write(folder: Path, plan: dict[str, Any], journal: list[dict[str, Any]] | None = None,
          torn: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "plan.json").write_text(json.dumps(plan, indent=2))
    if journal is not None:
        (folder / "itera-journal.jsonl").write_text(
            "".join(json.dumps(line) + "\n" for line in journal) + torn)
    return folder
