"""Tiny, real campaign folders for tests: a good one by default, broken on demand.

A test edits the ``plan``/``manifest`` dicts or ``files`` before ``write()``,
or the written folder afterwards (to break what the manifest recorded).
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

CORPUS_IDS = ("ex-1", "ex-2", "ex-3", "ex-4")
RUNS = (
    ("control", "control", "must"),
    ("data-check", "data_check", "must"),
    ("resume-check", "resume_check", "must"),
    ("variant-a", "variant", "useful"),
)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _jsonl(rows: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def default_files() -> dict[str, bytes]:
    labels = ("pos", "neg", "pos", "neg")
    files = {
        "corpus/corpus.jsonl": _jsonl(
            [
                {"id": i, "text": f"example {i}", "label": lab}
                for i, lab in zip(CORPUS_IDS, labels, strict=True)
            ]
        ),
        "analysis.md": b"# Error analysis\n\nThe control confuses ex-3 (pos) with neg.\n",
        "RELOAD.md": b"# Reload\n\ntorch.load('runs/control/last.pt', weights_only=True)\n",
    }
    for run_id, _, _ in RUNS:
        files[f"configs/{run_id}.json"] = json.dumps({"run": run_id, "lr": 0.01}).encode()
        files[f"runs/{run_id}/predictions.jsonl"] = _jsonl(
            [{"id": i, "prediction": "pos"} for i in CORPUS_IDS]
        )
        files[f"runs/{run_id}/metrics.json"] = json.dumps({"accuracy": 0.75}).encode()
    return files


def default_plan(files: dict[str, bytes]) -> dict[str, Any]:
    steps = [
        ("prepare", "preparation", "human", 4, []),
        ("setup", "setup", "gpu0", 2, ["prepare"]),
        ("load-data", "data_load", "gpu0", 2, ["setup"]),
        ("train-control", "training", "gpu0", 14, ["load-data"]),
        ("train-variant-a", "training", "gpu0", 14, ["train-control"]),
        ("check-data", "validation", "gpu0", 2, ["load-data"]),
        ("save-ckpt", "checkpoint_save", "gpu0", 1, ["train-control"]),
        ("restore-ckpt", "checkpoint_restore", "gpu0", 1, ["save-ckpt"]),
        ("validate", "validation", "gpu0", 4, ["train-variant-a"]),
        ("write-outputs", "output", "gpu0", 2, ["validate"]),
        ("retrieve", "retrieval", "gpu0", 2, ["write-outputs"]),
    ]
    return {
        "format": "itera-plan/1",
        "campaign": "tiny-2026-11",
        "frozen_at": "2026-11-20T08:00:00Z",
        "question": "Does variant-a beat the 0.8 accuracy threshold?",
        "decision": {"metric": "accuracy", "direction": "higher", "threshold": 0.8},
        "corpus": {
            "id": "tiny-corpus",
            "path": "corpus/corpus.jsonl",
            "sha256": sha256(files["corpus/corpus.jsonl"]),
            "id_field": "id",
            "examples": len(CORPUS_IDS),
        },
        "runs": [
            {
                "id": rid,
                "role": role,
                "category": cat,
                "config_sha256": sha256(files[f"configs/{rid}.json"]),
            }
            for rid, role, cat in RUNS
        ],
        "stop_rules": [{"id": "non-finite-loss", "kind": "non_finite_loss", "parameters": {}}],
        "checkpoint_policy": {
            "interval_hours": 1,
            "tolerable_loss_hours": 2,
            "resume_state": ["model", "optimizer", "progress", "scheduler", "rng", "data"],
        },
        "schedule": {
            "window_hours": 72,
            "sequential_hours": 48,
            "uncommitted_hours": 24,
            "steps": [
                {
                    "id": sid,
                    "kind": kind,
                    "resource": res,
                    "hours": hours,
                    "after": after,
                    **({"lot": "rtx4090-3d"} if res == "gpu0" else {}),
                }
                for sid, kind, res, hours, after in steps
            ],
        },
        "budget": {
            "currency": "USD",
            "lots": [
                {
                    "id": "rtx4090-3d",
                    "offer": "IteraGPU RTX 4090, 3 days",
                    "gpu": "RTX 4090",
                    "gpus_per_lot": 1,
                    "days": 3,
                    "price": "47.14",
                    "quantity": 1,
                }
            ],
        },
    }


def default_manifest(plan: dict[str, Any]) -> dict[str, Any]:
    return {
        "format": "itera-manifest/1",
        "campaign": plan["campaign"],
        "closed_at": "2026-11-22T08:00:00Z",
        "plan": {"path": "plan.json", "sha256": "0" * 64},  # set by write()
        "files": [],  # set by write()
        "runs": [
            {
                "id": rid,
                "outcome": "accepted",
                "started_at": "2026-11-20T10:00:00Z",
                "ended_at": "2026-11-21T10:00:00Z",
                "config": f"configs/{rid}.json",
                "config_sha256": next(r["config_sha256"] for r in plan["runs"] if r["id"] == rid),
                "metrics": {"accuracy": 0.85 if rid == "variant-a" else 0.75},
                "predictions": f"runs/{rid}/predictions.jsonl",
                "deliverable": "tiny-corpus",
            }
            for rid, _, _ in RUNS
        ],
        "checkpoints": [],
        "adapters": [],
        "analysis": "analysis.md",
        "reload_instructions": "RELOAD.md",
        "conclusion": {
            "meets_threshold": ["variant-a"],
            "text": "variant-a meets the 0.8 accuracy threshold; the control does not.",
        },
        "budget": {
            "currency": "USD",
            "lots": ["rtx4090-3d"],
            "rental_total": "47.14",
            "unit": "corpus",
            "accepted_deliverables": 1,
            "cost_per_deliverable": "47.14",
            "included_expenses": [],
            "external_expenses": [],
            "rejection_cause": None,
        },
        "schedule": {
            "reserved_hours": 72,
            "observed_hours": 48,
            "steps": [
                {"id": s["id"], "observed_hours": s["hours"]} for s in plan["schedule"]["steps"]
            ],
            "deviations": [],
            "decisions": [],
        },
    }


class CampaignBuilder:
    """Writes a campaign folder; defaults make a campaign every check accepts."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.files = default_files()
        self.plan = default_plan(self.files)
        self.manifest = default_manifest(self.plan)
        self.unlisted: set[str] = set()
        self.written_digest: dict[str, str] | None = None

    def write(self, before_manifest: Callable[[Path], None] | None = None) -> Path:
        """Write files, plan.json, then manifest.json recording every file's bytes and sha256."""
        self.root.mkdir(parents=True, exist_ok=True)
        for rel, data in self.files.items():
            path = self.root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        plan_bytes = (json.dumps(self.plan, indent=2) + "\n").encode()
        (self.root / "plan.json").write_bytes(plan_bytes)
        if before_manifest is not None:
            before_manifest(self.root)
        manifest = copy.deepcopy(self.manifest)
        if isinstance(manifest.get("plan"), dict):  # fuzzed manifests may lack it
            manifest["plan"]["sha256"] = sha256(plan_bytes)
        if manifest.get("files") == []:
            manifest["files"] = [
                {"path": rel, "bytes": len(data), "sha256": sha256(data)}
                for rel, data in sorted(self.files.items())
                if rel not in self.unlisted
            ]
        (self.root / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
        self.seal()
        return self.root

    def seal(self) -> None:
        """Record the folder as it is now; the fixture asserts it is unchanged after the test."""
        self.written_digest = tree_digest(self.root)


def tree_digest(root: Path) -> dict[str, str]:
    """Path -> kind and content digest of everything under root (links not followed)."""
    out: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            out[rel] = f"link:{path.readlink()}"
        elif path.is_file():
            out[rel] = f"file:{sha256(path.read_bytes())}:{path.stat().st_mtime_ns}"
        elif path.is_dir():
            out[rel] = "dir"
        else:
            out[rel] = "special"
    return out


def expect(result: object, *lines: str) -> None:
    """fnmatch_lines where '[' is literal: messages are full of JSON paths like $.runs[2]."""
    import pytest

    assert isinstance(result, pytest.RunResult)
    result.stdout.fnmatch_lines([line.replace("[", "[[]") for line in lines])
