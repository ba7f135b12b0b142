"""Tiny, real campaign folders for tests: a good one by default, broken on demand.

A test edits the ``plan``/``manifest`` dicts, ``files`` or ``measurements``
before ``write()``, or the written folder afterwards (to break what the
manifest recorded).

The default campaign is ``itera-plan/3`` + ``itera-manifest/2`` with its
evidence: each run's measurements file (a loss series and the metrics the
manifest copies), the data check's record of the corpus, the resume check
resumed from a control checkpoint with the control's losses, and real tiny
torch checkpoints (a resume checkpoint of the control and of the resume
check, the variant's weights). ``CampaignBuilder(root, version=1)`` writes
the same campaign as ``/1`` documents.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import io
import json
import os
import pickle
import re
import struct
import subprocess
import sys
import zlib
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_itera.record import CampaignRecorder

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


# The evidence of the /2 campaign ------------------------------------------------------------

CONTROL_CKPT = "runs/control/step-2.pt"
RESUME_CKPT = "runs/resume-check/last.pt"
VARIANT_WEIGHTS = "runs/variant-a/weights.pt"
LOSSES = {"control": [1.0, 0.8, 0.6, 0.5], "variant-a": [1.0, 0.7, 0.5, 0.4]}
RESUMED_AT = 2  # the resume check resumes the control's step-2 checkpoint
# ... and trains on to the control's last step, where it saves its own checkpoint.
RESUME_SAVED_AT = len(LOSSES["control"])
# What each run's predictions give against the corpus labels (pos, neg, pos, neg): the /3
# plan recomputes the decision metric from them (metrics-recomputed).
METRICS = {"control": {"accuracy": 0.75}, "variant-a": {"accuracy": 1.0}}
PREDICTED = {"control": ("pos", "neg", "pos", "pos"), "variant-a": ("pos", "neg", "pos", "neg")}
ACCURACY = {"kind": "accuracy", "label_field": "label", "prediction_field": "prediction"}
# The /2 runs' recorded times on gpu0: each spans its steps' hours (control: train-control
# 14 h + save-ckpt 1 h), one after another (plan-vs-actual).
RUN_TIMES = {
    "control": ("2026-11-20T10:00:00Z", "2026-11-21T01:00:00Z"),
    "data-check": ("2026-11-21T01:00:00Z", "2026-11-21T03:00:00Z"),
    "resume-check": ("2026-11-21T03:00:00Z", "2026-11-21T04:00:00Z"),
    "variant-a": ("2026-11-21T04:00:00Z", "2026-11-21T18:00:00Z"),
}


@functools.cache
def _checkpoint_bytes(kind: str, step: int = RESUMED_AT) -> bytes:
    """A real torch.save file of a tiny model: a complete resume checkpoint trained to
    ``step`` (the resume check's own is trained past the control's it resumed), or weights."""
    import random

    import torch

    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    if kind == "weights":
        payload: Any = model.state_dict()
    else:
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2)
        for _ in range(step - 1):
            opt.zero_grad()
            model(torch.ones(1, 4)).sum().backward()
            opt.step()
            sched.step()
        payload = {
            "model": model.state_dict(),
            "optimizer": opt.state_dict(),
            "scheduler": sched.state_dict(),
            "progress": {"step": step, "epoch": 0},
            "rng": {"torch": torch.get_rng_state(), "python": random.Random(0).getstate()},
            "data": {"epoch": 0, "index": step},
        }
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    return buffer.getvalue()


def default_measurements(files: dict[str, bytes]) -> dict[str, list[dict[str, Any]]]:
    """Run id -> the rows of its measurements JSONL (written by ``CampaignBuilder.write``)."""
    corpus = files["corpus/corpus.jsonl"]
    resumed = LOSSES["control"][RESUMED_AT:]
    return {
        "control": [*_series(LOSSES["control"]), {"metrics": dict(METRICS["control"])}],
        "variant-a": [*_series(LOSSES["variant-a"]), {"metrics": dict(METRICS["variant-a"])}],
        "data-check": [{"checked_input": {"input": "tiny-corpus", "sha256": sha256(corpus),
                                          "examples": len(CORPUS_IDS), "bytes": len(corpus)}}],
        "resume-check": _series(resumed, first=RESUMED_AT + 1),
    }


def _series(losses: list[float], first: int = 1) -> list[dict[str, Any]]:
    return [{"step": first + i, "loss": v} for i, v in enumerate(losses)]


def measurements_path(run_id: str) -> str:
    return f"runs/{run_id}/measurements.jsonl"


def default_files_v2() -> dict[str, bytes]:
    files = default_files()
    for run_id in ("data-check", "resume-check"):  # they deliver no predictions
        del files[f"runs/{run_id}/predictions.jsonl"]
    for run_id, _, _ in RUNS:
        del files[f"runs/{run_id}/metrics.json"]
    for run_id, predicted in PREDICTED.items():
        files[f"runs/{run_id}/predictions.jsonl"] = _jsonl(
            [{"id": i, "prediction": p} for i, p in zip(CORPUS_IDS, predicted, strict=True)])
    files[CONTROL_CKPT] = _checkpoint_bytes("resume")
    files[RESUME_CKPT] = _checkpoint_bytes("resume", RESUME_SAVED_AT)
    files[VARIANT_WEIGHTS] = _checkpoint_bytes("weights")
    files["analysis.md"] = (
        b"# Error analysis\n\nThe control confuses ex-3 (pos) with neg; variant-a gets ex-3 "
        b"right and still misses ex-4.\n"
    )
    files["RELOAD.md"] = (
        b"# Reload\n\n"
        b"torch.load('runs/control/step-2.pt', weights_only=True)  # control, resume state\n"
        b"torch.load('runs/variant-a/weights.pt', weights_only=True)  # variant-a weights\n"
    )
    return files


def default_plan_v2(files: dict[str, bytes]) -> dict[str, Any]:
    """The contract-v2 plan, as ``itera-plan/3``: the decision metric's computation declared
    (``as_plan_2`` turns it back into an ``itera-plan/2``)."""
    plan = default_plan(files)
    plan["format"] = "itera-plan/3"
    plan["decision"]["computation"] = dict(ACCURACY)
    plan["corpora"] = [plan.pop("corpus")]
    plan["stop_rules"] = [{"id": "non-finite-loss", "kind": "non_finite_loss",
                           "parameters": {"series": "loss"}}]
    runs_of = {"train-control": "control", "train-variant-a": "variant-a",
               "check-data": "data-check", "save-ckpt": "control",
               "restore-ckpt": "resume-check"}
    for step in plan["schedule"]["steps"]:
        if step["id"] in runs_of:
            step["run"] = runs_of[step["id"]]
        if step["id"] == "validate":  # retrieval comes after the checkpoint steps too
            step["after"] = ["train-variant-a", "restore-ckpt"]
    return plan


def as_plan_2(plan: dict[str, Any]) -> dict[str, Any]:
    """An ``itera-plan/2`` of the same plan: no metric computation (it cannot prove one)."""
    plan["format"] = "itera-plan/2"
    plan["decision"].pop("computation", None)
    plan.pop("metrics", None)
    return plan


def default_manifest_v2(plan: dict[str, Any]) -> dict[str, Any]:
    manifest = default_manifest(plan)
    manifest["format"] = "itera-manifest/2"
    for run in manifest["runs"]:
        del run["deliverable"]
        run["measurements"] = measurements_path(run["id"])
        if run["id"] in METRICS:
            run["corpus"] = "tiny-corpus"
            run["metrics"] = dict(METRICS[run["id"]])
        else:  # a data check and a resume check deliver no predictions
            del run["predictions"]
            del run["metrics"]
    for run in manifest["runs"]:  # one GPU: one run at a time, each as long as its steps
        run["started_at"], run["ended_at"] = RUN_TIMES[run["id"]]
    record = next(r for r in manifest["runs"] if r["id"] == "resume-check")
    record["resumed_from"] = {"checkpoint": CONTROL_CKPT, "step": RESUMED_AT}
    manifest["checkpoints"] = [
        {"path": CONTROL_CKPT, "run": "control", "format": "torch", "kind": "resume",
         "claims": ["model", "optimizer", "progress", "scheduler", "rng", "data"]},
        {"path": RESUME_CKPT, "run": "resume-check", "format": "torch", "kind": "resume",
         "claims": ["model", "optimizer", "progress", "scheduler", "rng", "data"]},
        {"path": VARIANT_WEIGHTS, "run": "variant-a", "format": "torch", "kind": "weights"},
    ]
    return manifest


def copied_without(campaign: Path, dest: Path, key: str) -> Path:
    """A copy of ``campaign`` at ``dest`` whose manifest lost its top-level ``key`` (and
    nothing else: its journal and files as recorded)."""
    import shutil

    shutil.copytree(campaign, dest)
    manifest = json.loads((dest / "manifest.json").read_text())
    del manifest[key]
    (dest / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return dest


def frozen_recorder(root: Path, resume_state: Sequence[str] | None = None,
                    clock: Callable[[], datetime] | None = None) -> CampaignRecorder:
    """A recorder of the factory's /2 campaign, its files written and its plan frozen
    (requiring ``resume_state`` of a resume checkpoint when given, else every part), on
    ``clock`` when given (a played one), else the real one."""
    from pytest_itera.record import CampaignRecorder

    files = default_files_v2()
    rec = CampaignRecorder(root, clock=clock)
    for relpath, data in files.items():
        rec.write_bytes(relpath, data)
    plan = default_plan_v2(files)
    del plan["frozen_at"]
    if resume_state is not None:
        plan["checkpoint_policy"]["resume_state"] = list(resume_state)
    rec.freeze_plan(plan)
    return rec


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

    def __init__(self, root: Path, version: int = 2) -> None:
        self.root = root
        self.version = version
        if version == 1:
            self.files = default_files()
            self.plan = default_plan(self.files)
            self.manifest = default_manifest(self.plan)
            self.measurements: dict[str, list[dict[str, Any]]] = {}
        else:
            self.files = default_files_v2()
            self.plan = default_plan_v2(self.files)
            self.manifest = default_manifest_v2(self.plan)
            self.measurements = default_measurements(self.files)
        self.unlisted: set[str] = set()
        self.written_digest: dict[str, str] | None = None

    def run_record(self, run_id: str) -> dict[str, Any]:
        """The manifest's record of one run (to edit before ``write()``)."""
        return next(r for r in self.manifest["runs"] if r["id"] == run_id)

    def set_metric(self, run_id: str, name: str, value: float) -> None:
        """Change a metric consistently: in the manifest and in the run's measurements."""
        self.run_record(run_id).setdefault("metrics", {})[name] = value
        rows = self.measurements.setdefault(run_id, [])
        line = next((r for r in rows if "metrics" in r), None)
        if line is None:
            rows.append(line := {"metrics": {}})
        line["metrics"][name] = value

    def write(self, before_manifest: Callable[[Path], None] | None = None) -> Path:
        """Write files, plan.json, then manifest.json recording every file's bytes and sha256.

        Measurements rows become ``runs/<id>/measurements.jsonl`` unless ``files`` already
        holds that path (a test that wrote the file itself)."""
        for run_id, rows in self.measurements.items():
            self.files.setdefault(measurements_path(run_id), _jsonl(rows))
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


def many_entry_zip(entries: int, pickled: object = None) -> bytes:
    """A torch.save-like zip of ``entries`` empty stored entries after one ``x/data.pkl``
    (``pickled``; by default one holding a temp path), written by hand: zipfile would take
    minutes and hundreds of MiB to write it."""
    pkl = pickle.dumps({"dir": "/tmp/run-1/ckpt"} if pickled is None else pickled, protocol=2)
    local, central = bytearray(), bytearray()
    names = [b"x/data.pkl", *(f"x/data/{i}".encode() for i in range(entries))]
    for index, name in enumerate(names):
        data = pkl if index == 0 else b""
        crc = zlib.crc32(data)
        offset = len(local)
        local += struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, 0, 0, 0, crc, len(data),
                             len(data), len(name), 0) + name + data
        central += struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, 0, 0, 0, 0, crc,
                               len(data), len(data), len(name), 0, 0, 0, 0, 0, offset) + name
    count = min(len(names), 0xFFFF)
    eocd = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, count, count, len(central),
                       len(local), 0)
    zip64 = b""
    if len(names) > 0xFFFF:
        record = struct.pack("<4sQHHIIQQQQ", b"PK\x06\x06", 44, 45, 45, 0, 0, len(names),
                             len(names), len(central), len(local))
        locator = struct.pack("<4sIQI", b"PK\x06\x07", 0, len(local) + len(central), 1)
        zip64 = record + locator
        eocd = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, len(central),
                           len(local), 0)
    return bytes(local) + bytes(central) + zip64 + eocd


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


# One in-process session without xdist or cache, for pytester.inline_genitems and the like;
# a test that runs pytest uses the itera fixture (tests/runner.py), which adds an xdist mode.
LEAN = ("-p", "no:xdist", "-p", "no:cacheprovider")


def expect(result: object, *lines: str) -> None:
    """fnmatch_lines where '[' is literal: messages are full of JSON paths like $.runs[2]."""
    import pytest

    assert isinstance(result, pytest.RunResult)
    result.stdout.fnmatch_lines([line.replace("[", "[[]") for line in lines])


def expect_each(result: object, *lines: str) -> None:
    """Each line appears somewhere, in any order ('[' literal, as in ``expect``)."""
    for line in lines:
        expect(result, line)


NODE = "out/manifest.json::"


def verdicts(result: object) -> dict[str, str]:
    """{item name: PASSED | FAILED | ERROR} from a ``-rA`` short summary (any xdist mode)."""
    import pytest

    assert isinstance(result, pytest.RunResult)
    found = {}
    for line in result.outlines:
        match = re.match(rf"(PASSED|FAILED|ERROR) {re.escape(NODE)}(\S+)", line)
        if match:
            found[match.group(2)] = match.group(1)
    return found


# The example campaign (example_campaign/), built as a user builds it, in a new interpreter.
EXAMPLE_START = "2026-01-05T08:00:00Z"  # fixes every timestamp: two builds, one plan.json


def build_example(out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """``python -m example_campaign --out OUT *extra``, run from ``out``'s parent."""
    repo = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(repo), "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "example_campaign", "--out", str(out), *extra],
        cwd=out.parent, env=env, capture_output=True, text=True, timeout=600, check=False,
    )


def built_example(out: Path) -> Path:
    """The example campaign at ``out`` (``--start EXAMPLE_START``); its folder."""
    out.parent.mkdir(parents=True, exist_ok=True)
    done = build_example(out, "--start", EXAMPLE_START)
    assert done.returncode == 0, done.stderr
    return out


def unchained(event: dict[str, Any]) -> dict[str, Any]:
    """A journal event without its chain field (``prev``): what the test compares."""
    return {k: v for k, v in event.items() if k != "prev"}


def journal_events(path: Path) -> list[dict[str, Any]]:
    """The events of the journal at ``path`` (a file, or a campaign folder), unchained."""
    path = path / "itera-journal.jsonl" if path.is_dir() else path
    return [unchained(json.loads(line)) for line in path.read_text("utf-8").splitlines()]
