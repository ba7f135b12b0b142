"""What the rule tests do to the factory's campaign (break one rule, restate a step, journal a
save, ...) where tests of more than one check do it: one copy, imported by the check test
modules (tests/checks/<family>/test_<check>.py), which import helpers only from here."""

from __future__ import annotations

import gzip
import io
import json
import math
from collections.abc import Callable, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
import zstandard

from pytest_itera.checks import Context, Options
from pytest_itera.checks.engine import judge as engine_judge
from pytest_itera.checks.metrics import CHECKS as METRIC_CHECKS
from pytest_itera.checks.runs import CHECKS as RUN_CHECKS
from pytest_itera.core.campaign import Step, load_campaign
from pytest_itera.core.findings import Finding
from pytest_itera.core.journal import JOURNAL_FILE
from pytest_itera.core.schedule import as_observed, makespan
from tests.checks.judging import Found, judge
from tests.factory import (
    CONTROL_CKPT,
    CORPUS_IDS,
    PREDICTED,
    RESUME_CKPT,
    RESUME_SAVED_AT,
    RESUMED_AT,
    RUN_TIMES,
    CampaignBuilder,
    sha256,
)
from tests.runner import Itera

# ========================================================== checkpoints by content (artifacts/)


def _torch_bytes(obj: Any) -> bytes:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


def _control(b: CampaignBuilder) -> dict[str, Any]:
    loaded: dict[str, Any] = torch.load(io.BytesIO(b.files[CONTROL_CKPT]), weights_only=True)
    return loaded


def _set_config(b: CampaignBuilder, run_id: str, config: dict[str, Any]) -> None:
    """A run's config, with the hashes the plan and the manifest record of it."""
    data = json.dumps(config).encode()
    b.files[f"configs/{run_id}.json"] = data
    for doc in (b.plan, b.manifest):
        next(r for r in doc["runs"] if r["id"] == run_id)["config_sha256"] = sha256(data)


# ========================================================================= the budget (budget/)

BUDGET = "budget-consistent"
RECEIPT = "receipts/disk-invoice.pdf"


def with_saved_model(root: Path, saved: Path, at: str = "runs/variant-a/model") -> CampaignBuilder:
    """The factory's campaign at ``root`` shipping the save_pretrained folder ``saved`` at
    ``at`` as the variant's safetensors weights (listed, and named in RELOAD.md)."""
    b = CampaignBuilder(root)
    for path in sorted(saved.iterdir()):
        b.files[f"{at}/{path.name}"] = path.read_bytes()
    b.manifest["checkpoints"].append({"path": at, "run": "variant-a", "format": "safetensors",
                                      "kind": "weights"})
    b.files["RELOAD.md"] += f"AutoModel.from_pretrained('{at}')\n".encode()
    return b


def budget(campaign: CampaignBuilder, **fields: object) -> None:
    campaign.manifest["budget"].update(fields)


def add_corpus(campaign: CampaignBuilder, corpus_id: str, data: bytes | None = None) -> None:
    """A second frozen corpus: other example IDs, other content (unless ``data`` says). With
    the same IDs it would be the same corpus by content (no label field is declared)."""
    if data is None:
        data = campaign.files["corpus/corpus.jsonl"].replace(b"example", b"sample").replace(
            b'"ex-', b'"b-')
    path = f"corpus/{corpus_id}.jsonl"
    campaign.files[path] = data
    campaign.plan["corpora"].append({"id": corpus_id, "path": path, "sha256": sha256(data),
                                     "id_field": "id", "examples": 4})


def deliver(campaign: CampaignBuilder, run_id: str, corpus_id: str) -> None:
    """``run_id`` is planned on, and its predictions cover, ``corpus_id``."""
    next(r for r in campaign.plan["runs"] if r["id"] == run_id)["corpus"] = corpus_id
    campaign.run_record(run_id)["corpus"] = corpus_id
    corpus = next(c for c in campaign.plan["corpora"] if c["id"] == corpus_id)
    ids = [json.loads(line)["id"] for line in campaign.files[corpus["path"]].splitlines()]
    # The run's own prediction for each example (ex-3 or b-3: the third), in whatever order
    # the corpus lists them: its recorded metric still recomputes.
    predicted = PREDICTED.get(run_id, ("pos",) * len(ids))
    campaign.files[f"runs/{run_id}/predictions.jsonl"] = "".join(
        json.dumps({"id": i, "prediction": predicted[int(i.rsplit("-", 1)[1]) - 1]}) + "\n"
        for i in ids).encode()


def two_corpora(campaign: CampaignBuilder) -> None:
    """The guide's example: the control delivers tiny-corpus, variant-a corpus-b."""
    add_corpus(campaign, "corpus-b")
    deliver(campaign, "control", "tiny-corpus")
    deliver(campaign, "variant-a", "corpus-b")
    budget(campaign, accepted_deliverables=2, cost_per_deliverable="23.57")


def receipt(campaign: CampaignBuilder, path: str = RECEIPT, amount: str = "2.00") -> dict[str, str]:
    """A receipt file shipped and listed in the campaign, stating ``amount``; returns the
    source naming it."""
    campaign.files[path] = (f"%PDF-1.4 invoice INV-2026-311: {amount} USD\n"
                            "Buyer: campaign tiny-2026-11\nDate: 2026-11-21\n").encode()
    return {"file": path}


def disk(campaign: CampaignBuilder, amount: str = "2.00") -> dict[str, object]:
    """An included expense with its receipt."""
    return {"label": "extra disk for the rental", "amount": amount, "source": receipt(campaign)}


# ================================================== corpora by content (budget/test_corpora.py)


def deliver_a_copy(campaign: CampaignBuilder, path: str, data: bytes) -> Found:
    """variant-a delivers ``data`` (a copy of the corpus, as ``path``) as a second corpus,
    counted as a second deliverable: budget-consistent's findings."""
    campaign.files[path] = data
    campaign.plan["corpora"].append({"id": "corpus-b", "path": path,
                                     "sha256": sha256(data), "id_field": "id", "examples": 4})
    next(r for r in campaign.plan["runs"] if r["id"] == "variant-a")["corpus"] = "corpus-b"
    campaign.run_record("variant-a")["corpus"] = "corpus-b"  # its predictions: the same IDs
    budget(campaign, accepted_deliverables=2, cost_per_deliverable="23.57")
    return judge(campaign, BUDGET)


# ===================================== decision.confidence (runs/test_conclusion_consistent.py)

EXAMPLES = 400
RIGHT = {"control": 300, "variant-a": 322}


def _jsonl(rows: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def campaign_of(root: Path, examples: int = EXAMPLES, *, confidence: float | None = None,
                right: dict[str, int] | None = None) -> CampaignBuilder:
    """The gain relative to the control decides (threshold 0.05); variant-a is listed."""
    right = right or RIGHT
    campaign = CampaignBuilder(root)
    ids = [f"ex-{i}" for i in range(examples)]
    labels = ["pos" if i % 2 else "neg" for i in range(examples)]
    corpus = _jsonl([{"id": i, "text": f"example {i}", "label": lab}
                     for i, lab in zip(ids, labels, strict=True)])
    campaign.files["corpus/corpus.jsonl"] = corpus
    campaign.plan["corpora"][0].update(sha256=sha256(corpus), examples=examples)
    for row in campaign.measurements["data-check"]:
        if "checked_input" in row:
            row["checked_input"].update(sha256=sha256(corpus), examples=examples,
                                        bytes=len(corpus))
    decision = campaign.plan["decision"]
    decision.update(metric="accuracy_gain", threshold=0.05, computation={
        "kind": "accuracy", "label_field": "label", "prediction_field": "prediction",
        "relative_to": "control"})
    if confidence is not None:
        decision["confidence"] = confidence
    for run_id, hits in right.items():
        # the control right on the first examples, the variant on its first and a few more
        guesses = [lab if i < hits else ("neg" if lab == "pos" else "pos")
                   for i, lab in enumerate(labels)]
        campaign.files[f"runs/{run_id}/predictions.jsonl"] = _jsonl(
            [{"id": i, "prediction": p} for i, p in zip(ids, guesses, strict=True)])
        campaign.run_record(run_id)["metrics"] = {}
        campaign.measurements[run_id] = [r for r in campaign.measurements[run_id]
                                         if "metrics" not in r]
    gain = (right["variant-a"] - right["control"]) / examples
    campaign.set_metric("variant-a", "accuracy_gain", gain)
    campaign.manifest["conclusion"] = {
        "meets_threshold": ["variant-a"] if gain >= 0.05 else [],
        "text": f"variant-a meets the threshold: accuracy_gain {gain}." if gain >= 0.05
        else "No variant meets the threshold."}
    return campaign


# ===================================================================== the contract (contract/)


def selecting(check: str) -> tuple[str, str]:
    return ("-k", check)


def journal_opening(plan: dict[str, object]) -> bytes:
    """The recorder's first journal line: the plan it froze (as CampaignBuilder writes it)."""
    frozen = sha256((json.dumps(plan, indent=2) + "\n").encode())
    return (json.dumps({"event": "plan", "format": "itera-journal/1", "sha256": frozen,
                        "at": "2026-11-20T08:00:00Z"}) + "\n").encode()


# =============================================================== the runs' evidence (evidence/)

Pytester = pytest.Pytester
Campaign = CampaignBuilder

VARIANT_M = "runs/variant-a/measurements.jsonl"
RESUME_M = "runs/resume-check/measurements.jsonl"
DATA_M = "runs/data-check/measurements.jsonl"

# Eight problems in one file: five named one by one, then how many more.
MALFORMED = (b'{"step": 1, "loss": 1.0}\n'
             b'{"step": 2, "loss": \n'
             b'{"step": -1, "loss": 0.5}\n'
             b'{"step": 3, "loss": 0.9, "loss": "NaN"}\n'
             b'{"step": 4, "loss": "oops"}\n'
             b'{"metrics": {"accuracy": 0.85}}\n'
             b'{"metrics": {"accuracy": 0.95}}\n'
             b'{"note": "hello"}\n'
             b'{"step": 1, "loss": 0.7}\n')


def record(campaign: Campaign, run_id: str) -> dict[str, Any]:
    return campaign.run_record(run_id)


def stop_by_nan(campaign: Campaign, run_id: str = "variant-a", step: int = 14,
                nan_at: int = 14) -> None:
    """Stop ``run_id`` by the non-finite rule; its loss series turns NaN at ``nan_at``."""
    rec = record(campaign, run_id)
    rec["outcome"] = "stopped"
    rec["stop"] = {"rule": "non-finite-loss", "reason": f"loss was nan at step {nan_at}",
                   "step": step}
    for key in ("predictions", "corpus"):
        rec.pop(key, None)
    metrics = [r for r in campaign.measurements[run_id] if "metrics" in r]
    campaign.measurements[run_id] = [
        *({"step": i, "loss": round(1.0 / i, 4)} for i in range(1, nan_at)),
        {"step": nan_at, "loss": "NaN"}, *metrics]
    campaign.manifest["conclusion"] = {
        "meets_threshold": [], "text": "Negative result: no variant meets the threshold."}


def add_rule(campaign: Campaign, rule_id: str, kind: str, **parameters: Any) -> None:
    campaign.plan["stop_rules"].append({"id": rule_id, "kind": kind, "parameters": parameters})


def checked(campaign: Campaign, **fields: Any) -> dict[str, Any]:
    """The data check's record of the corpus (to edit)."""
    row: dict[str, Any] = campaign.measurements["data-check"][0]["checked_input"]
    row.update(fields)
    return row


def _pilot(campaign: Campaign) -> None:
    campaign.plan["runs"].append({"id": "pilot", "role": "pilot", "category": "useful",
                                  "config_sha256": "1" * 64})
    steps = campaign.plan["schedule"]["steps"]
    steps.append({"id": "train-pilot", "kind": "training", "resource": "gpu0", "hours": 1,
                  "after": ["load-data"], "run": "pilot", "lot": "rtx4090-3d"})


# ===================================== the recorder's journal (evidence/test_journal_agrees.py)

AGREES = "journal-agrees"


def journaled(campaign: CampaignBuilder, *events: dict[str, Any], raw: bytes = b"") -> Found:
    """Write the campaign with a listed journal of ``events`` (then ``raw`` bytes); the
    findings of journal-agrees."""
    campaign.files[JOURNAL_FILE] = b"".join(
        json.dumps(e).encode() + b"\n" for e in events) + raw
    return judge(campaign, AGREES)


def journal_save(campaign: CampaignBuilder, path: str, run: str, step: int | None = None,
         data: bytes | None = None, **extra: Any) -> dict[str, Any]:
    """A checkpoint save as the recorder journals it (the file's bytes unless ``data``)."""
    content = data if data is not None else campaign.files[path]
    event: dict[str, Any] = {"event": "checkpoint", "path": path, "run": run,
                             "sha256": sha256(content), "at": "2026-11-20T11:00:00Z", **extra}
    if step is not None:
        event["step"] = step
    return event


def honest(campaign: CampaignBuilder) -> list[dict[str, Any]]:
    """A journal that agrees with the factory's campaign, one event of each kind."""
    return [
        {"event": "plan", "format": "itera-journal/1", "sha256": "0" * 64},
        {"event": "run-start", "run": "control", "at": RUN_TIMES["control"][0]},
        {"event": "metrics", "run": "control", "values": {"accuracy": 0.5}},
        {"event": "metrics", "run": "control", "values": {"accuracy": 0.75}},
        journal_save(campaign, CONTROL_CKPT, "control", RESUMED_AT, data=b"an earlier save"),
        journal_save(campaign, CONTROL_CKPT, "control", RESUMED_AT, format="torch", kind="resume"),
        {"event": "resumed-from", "run": "resume-check", "checkpoint": CONTROL_CKPT,
         "step": RESUMED_AT},
        journal_save(campaign, RESUME_CKPT, "resume-check", RESUME_SAVED_AT),
        {"event": "step", "step": "train-control", "hours": 14},
        {"event": "accepted", "run": "control", "at": RUN_TIMES["control"][1]},
    ]


# ============================================================== itera-plan/3 metrics (metrics/)

CLASSES = ["a", "b", "c", "a"]
PREDICTED_CLASSES = {"control": ["a", "b", "b", "b"], "variant-a": ["a", "b", "c", "c"]}
NUMBERS = [1.0, 2.0, 3.0, 4.0]
GUESSED = {"control": [1.5, 2.0, 2.0, 4.0], "variant-a": [1.0, 2.5, 3.0, 4.0]}
REGRESSION = ("mae", "mse", "rmse")


def oracle(kind: str, truth: Sequence[Any], guess: Sequence[Any]) -> float:
    """The definitions by hand (scikit-learn's: macro over labels present or predicted)."""
    n = len(truth)
    if kind in REGRESSION:
        mse = sum((a - b) ** 2 for a, b in zip(truth, guess, strict=True)) / n
        return float({"mae": sum(abs(a - b) for a, b in zip(truth, guess, strict=True)) / n,
                      "mse": mse, "rmse": math.sqrt(mse)}[kind])
    hits = sum(a == b for a, b in zip(truth, guess, strict=True))
    if kind in ("accuracy", "exact_match", "f1_micro"):
        return float(hits / n)
    per: list[float] = []
    for label in sorted(set(truth) | set(guess)):
        tp = sum(a == b == label for a, b in zip(truth, guess, strict=True))
        precision = tp / max(sum(b == label for b in guess), 1)
        recall = tp / max(sum(a == label for a in truth), 1)
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        per.append({"precision_macro": precision, "recall_macro": recall, "f1_macro": f1}[kind])
    return sum(per) / len(per)


def plan3(root: Path, kind: str = "accuracy", *, metric: str = "accuracy",
          relative_to: str | None = None) -> CampaignBuilder:
    """The factory's campaign as itera-plan/3, each run's metric what its predictions give."""
    campaign = CampaignBuilder(root)
    numeric = kind in REGRESSION
    truth: list[Any] = NUMBERS if numeric else CLASSES
    guesses: dict[str, list[Any]] = GUESSED if numeric else PREDICTED_CLASSES
    corpus = _jsonl([{"id": i, "text": f"example {i}", "label": lab}
                     for i, lab in zip(CORPUS_IDS, truth, strict=True)])
    campaign.files["corpus/corpus.jsonl"] = corpus
    campaign.plan["corpora"][0]["sha256"] = sha256(corpus)
    campaign.plan["format"] = "itera-plan/3"
    computation: dict[str, Any] = {"kind": kind, "label_field": "label",
                                   "prediction_field": "prediction"}
    if relative_to is not None:
        computation["relative_to"] = relative_to
    campaign.plan["decision"].update(metric=metric, computation=computation)
    if numeric:
        campaign.plan["decision"].update(direction="lower", threshold=10.0)
    values = {}
    for run_id, guess in guesses.items():
        campaign.files[f"runs/{run_id}/predictions.jsonl"] = _jsonl(
            [{"id": i, "label": t, "prediction": p}
             for i, t, p in zip(CORPUS_IDS, truth, guess, strict=True)])
        values[run_id] = oracle(kind, truth, guess)
        campaign.run_record(run_id)["metrics"] = {}
        campaign.measurements[run_id] = [r for r in campaign.measurements[run_id]
                                         if "metrics" not in r]
    for run_id, value in values.items():
        if relative_to is not None:
            if run_id == "control":
                continue
            value -= values["control"]
        campaign.set_metric(run_id, metric, round(value, 4))
    return campaign


def findings(root: Path, check: str, target: str | None = None,
             options: Options | None = None) -> tuple[Finding, ...]:
    registry = {c.id: c for c in (*RUN_CHECKS, *METRIC_CHECKS)}
    context = Context(load_campaign(root), options or Options(), registry)
    try:
        return engine_judge(context).findings(check, target)
    finally:
        context.close()


def rendered(found: tuple[Finding, ...]) -> str:
    return "\n".join(f.render() for f in found)


EXTRA_CLAIM = ("the conclusion's text names variant-b as meeting the threshold, but "
               "meets_threshold lists only variant-a")
DENIED = "the conclusion's text says variant-a does not meet the threshold, but " \
    "meets_threshold lists it"


# ================================== one rule broken at a time, every hash kept (several checks)


# ============================================================ R5: stop within the run


def stopped_at(campaign: CampaignBuilder, at: str) -> None:
    record = campaign.run_record("variant-a")
    record["outcome"] = "stopped"
    record["stop"] = {"rule": "non-finite-loss", "reason": "training loss was nan at step 4",
                      "step": 4, "at": at}
    for key in ("predictions", "corpus"):
        record.pop(key)
    campaign.measurements["variant-a"][3]["loss"] = "NaN"
    campaign.manifest["conclusion"] = {
        "meets_threshold": [], "text": "Negative result: no variant meets the threshold."}


# ======================================================== R7/v3: the receipt agrees


def with_receipt(campaign: CampaignBuilder, text: str, reference: str | None = None, *,
                 label: str = "bucket storage", amount: str = "12.00") -> None:
    campaign.files["receipts/storage.txt"] = (
        "Buyer: campaign tiny-2026-11\nDate: 2026-11-21\n" + text).encode()
    source: dict[str, str] = {"file": "receipts/storage.txt"}
    if reference is not None:
        source["reference"] = reference
    campaign.manifest["budget"].update(
        included_expenses=[{"label": label, "amount": amount, "source": source}],
        cost_per_deliverable=f"{47.14 + float(amount):.2f}")


# ================================================= v3: a comparison on the same examples


SPLITS = ("train", "train", "test", "test")


def split_gain(root: Path, variant_splits: tuple[str, ...]) -> Path:
    """accuracy_gain where split=test, relative to the control; the corpus has no split:
    each prediction row carries its example's."""
    campaign = plan3(root, metric="accuracy_gain", relative_to="control")
    campaign.plan["decision"]["computation"]["where"] = {"split": "test"}
    for run_id, splits in (("control", SPLITS), ("variant-a", variant_splits)):
        path = f"runs/{run_id}/predictions.jsonl"
        rows = [json.loads(line) for line in campaign.files[path].splitlines()]
        for row, split in zip(rows, splits, strict=True):
            row["split"] = split
        campaign.files[path] = "".join(json.dumps(r) + "\n" for r in rows).encode()
    scored: dict[str, Any] = {}
    for run_id, splits in (("control", SPLITS), ("variant-a", variant_splits)):
        rows = [json.loads(line) for line in
                campaign.files[f"runs/{run_id}/predictions.jsonl"].splitlines()]
        test = [r for r, s in zip(rows, splits, strict=True) if s == "test"]
        scored[run_id] = sum(r["label"] == r["prediction"] for r in test) / len(test)
    campaign.set_metric("variant-a", "accuracy_gain",
                        round(scored["variant-a"] - scored["control"], 4))
    return campaign.write()


# ================================================== R6: the resume trained on


def edited(campaign: CampaignBuilder, source: str, **progress: int) -> bytes:
    """The torch checkpoint ``source`` of the campaign with its progress changed."""
    import io

    import torch

    payload = torch.load(io.BytesIO(campaign.files[source]), weights_only=True)
    payload["progress"].update(progress)
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    return buffer.getvalue()


NEVER_TRAINED = "resume-complete.never-trained"


def decided(campaign: CampaignBuilder, journaled_at: str) -> list[dict[str, Any]]:
    campaign.manifest["schedule"]["decisions"] = [
        {"id": "after-control", "text": "the control learns: the variant runs",
         "at": "2026-11-21T04:00:00Z"}]
    return [*honest(campaign), {"event": "decide", "id": "after-control",
                                "text": "the control learns: the variant runs", "drops": [],
                                "adds": [], "at": journaled_at}]


# ======================== R5/v3: a stopped run's evidence checkpoint is at its stop (audit3)


def evidence_checkpoint(campaign: CampaignBuilder, step: int) -> None:
    """variant-a stopped at step 4, shipping one checkpoint that stores ``step``."""
    stopped_at(campaign, "2026-11-21T18:00:00Z")
    path = "runs/variant-a/last.pt"
    campaign.files[path] = edited(campaign, CONTROL_CKPT, step=step)
    campaign.manifest["checkpoints"].append(
        {"path": path, "run": "variant-a", "format": "torch", "kind": "weights"})


TABLE = "| run | accuracy | loss |\n| --- | --- | --- |\n| control | 0.75 | 0.9 |\n"


METRICS_TABLE = ("<!-- itera-metrics -->\n| run | metric | value |\n| --- | --- | --- |\n"
                 "| control | accuracy | 0.75 |\n| variant-a | accuracy | {value} |\n"
                 "<!-- /itera-metrics -->\n")


# ============================================= packed predictions and corpora (runs/, metrics/)


def parquet(jsonl: bytes) -> bytes:
    rows = [json.loads(line) for line in jsonl.splitlines() if line.strip()]
    columns = {name: [r.get(name) for r in rows] for name in dict.fromkeys(
        k for r in rows for k in r)}
    out = io.BytesIO()
    pq.write_table(pa.table(columns), out, row_group_size=2)
    return out.getvalue()


def zstd(data: bytes) -> bytes:
    return zstandard.ZstdCompressor(write_checksum=True).compress(data)


PACK: dict[str, Callable[[bytes], bytes]] = {
    "p.parquet": parquet, "p.jsonl.gz": gzip.compress, "p.jsonl.zst": zstd}


def repack(campaign: CampaignBuilder, name: str, run_id: str = "variant-a",
           data: bytes | None = None) -> str:
    """Replace ``run_id``'s JSON Lines predictions by ``data`` or their copy packed as
    ``name`` says; the manifest names the new file."""
    plain = campaign.files.pop(f"runs/{run_id}/predictions.jsonl")
    path = f"runs/{run_id}/{name}"
    campaign.files[path] = PACK[name](plain) if data is None else data
    campaign.run_record(run_id)["predictions"] = path
    return path


# ======================================================================= the run checks (runs/)


def stop(campaign: Campaign, run_id: str = "variant-a", **stop_fields: Any) -> None:
    """Record ``run_id`` as stopped the way the recorder does (no deliverable, not concluded),
    with the evidence: its loss series is NaN from step 14."""
    rec = record(campaign, run_id)
    rec["outcome"] = "stopped"
    rec["stop"] = {"rule": "non-finite-loss", "reason": "training loss was nan at step 14",
                   "step": 14, **stop_fields}
    rec.pop("deliverable", None)
    rec.pop("predictions", None)
    rec.pop("corpus", None)
    if campaign.version >= 2:
        campaign.measurements[run_id] = [
            *({"step": i, "loss": 1.0 / i} for i in range(1, 14)), {"step": 14, "loss": "NaN"},
            *(r for r in campaign.measurements.get(run_id, []) if "metrics" in r)]
    campaign.manifest["conclusion"] = {
        "meets_threshold": [], "text": "Negative result: no variant meets the threshold."}


def jsonl(ids: list[Any]) -> bytes:
    return "".join(json.dumps({"id": i, "prediction": "pos"}) + "\n" for i in ids).encode()


def _predictions(campaign: Campaign, data: bytes, run_id: str = "variant-a") -> None:
    campaign.files[f"runs/{run_id}/predictions.jsonl"] = data


CSV_PREDICTIONS = "runs/variant-a/predictions.csv"


def _run_csv_predictions(itera: Itera, campaign: Campaign, data: bytes) -> pytest.RunResult:
    campaign.files[CSV_PREDICTIONS] = data
    record(campaign, "variant-a")["predictions"] = CSV_PREDICTIONS
    campaign.write()
    return itera(check="predictions-cover-corpus")


# ===================================================================== the schedule (schedule/)


def step(campaign: CampaignBuilder, step_id: str) -> dict[str, Any]:
    return next(s for s in campaign.plan["schedule"]["steps"] if s["id"] == step_id)


# ================================================================= schedule-fits

FITS = "schedule-fits"


def grow_to_78_hours_on_the_lot(campaign: CampaignBuilder) -> None:
    """Preparation runs on the rented machine too, and training grows by 30 h: 78 h on the lot."""
    step(campaign, "prepare").update(resource="gpu0", lot="rtx4090-3d")
    step(campaign, "train-variant-a")["hours"] = 44
    campaign.plan["schedule"].update(window_hours=168, sequential_hours=78, uncommitted_hours=90)


def drop_variant(campaign: CampaignBuilder, decision: str | None) -> dict[str, Any]:
    record: dict[str, Any] = {"id": "variant-a", "outcome": "dropped"}
    if decision is not None:
        record["decision"] = decision
    campaign.manifest["runs"][3] = record
    return record


def never_ran(campaign: CampaignBuilder, step_id: str) -> None:
    """The step of a dropped run observed at 0 h, explained (a dropped run never ran)."""
    actual = campaign.manifest["schedule"]
    hours = next(s for s in actual["steps"] if s["id"] == step_id)
    actual["observed_hours"] -= hours["observed_hours"]
    hours["observed_hours"] = 0
    actual["deviations"].append({"step": step_id, "explanation": "dropped: it did not run"})


# =============================================== the schedule's evidence (schedule/, contract/)
PVA = "plan-vs-actual"
FROZEN = "plan-frozen"
LOT_B = "rtx4090-3d-b"


def steps_of(campaign: CampaignBuilder) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = campaign.plan["schedule"]["steps"]
    return steps


def _number(value: Decimal) -> int | float:
    return int(value) if value == value.to_integral_value() else float(value)


def _steps(campaign: CampaignBuilder) -> list[Step]:
    return [
        Step(id=s["id"], kind=s["kind"], resource=s["resource"], hours=s["hours"],
             after=tuple(s.get("after", ())), lot=s.get("lot"), run=s.get("run"))
        for s in steps_of(campaign)
    ]


def restate(campaign: CampaignBuilder, observed: dict[str, float] | None = None) -> None:
    """Keep every total consistent: stated sequential/uncommitted hours, observed steps
    (as planned unless ``observed`` says otherwise) and the observed makespan."""
    planned = _steps(campaign)
    span = makespan(planned).makespan
    schedule = campaign.plan["schedule"]
    schedule["sequential_hours"] = _number(span)
    schedule["uncommitted_hours"] = _number(Decimal(schedule["window_hours"]) - span)
    hours = {s["id"]: s["hours"] for s in steps_of(campaign)} | (observed or {})
    campaign.manifest["schedule"]["steps"] = [
        {"id": sid, "observed_hours": h} for sid, h in hours.items()
    ]
    actual = makespan(as_observed(planned, {k: Decimal(str(v)) for k, v in hours.items()}))
    campaign.manifest["schedule"]["observed_hours"] = _number(actual.makespan)


def second_lot(campaign: CampaignBuilder, *, engaged: bool = True) -> None:
    """A second 1-GPU 3-day lot in the plan (and engaged in the manifest)."""
    lot = dict(campaign.plan["budget"]["lots"][0], id=LOT_B)
    campaign.plan["budget"]["lots"].append(lot)
    if engaged:
        campaign.manifest["budget"]["lots"].append(LOT_B)
        campaign.manifest["budget"]["rental_total"] = "94.28"


def add_pilot(campaign: CampaignBuilder, decided_at: str, **record: Any) -> None:
    campaign.plan["runs"].append({"id": "pilot", "role": "pilot", "category": "must",
                                  "config_sha256": "0" * 64})
    campaign.manifest["runs"].append(
        {"id": "pilot", "outcome": "accepted", "started_at": "2026-11-20T08:30:00Z",
         "ended_at": "2026-11-20T09:30:00Z", **record})
    campaign.manifest["schedule"]["decisions"] = [
        {"id": "after-pilot", "text": "the pilot learns: every variant continues",
         "at": decided_at}]


def drop_the_variant(campaign: CampaignBuilder, text: str) -> None:
    record = campaign.run_record("variant-a")
    for key in ("started_at", "ended_at", "predictions", "metrics", "corpus", "measurements"):
        record.pop(key, None)
    record.update(outcome="dropped", decision="after-control")
    campaign.manifest["schedule"]["decisions"] = [
        {"id": "after-control", "text": text, "at": "2026-11-21T10:00:00Z",
         "drops": ["variant-a"]}]
    restate(campaign, observed={"train-variant-a": 0})
    campaign.manifest["schedule"]["deviations"] = [
        {"step": "train-variant-a", "explanation": "variant-a was dropped: it did not run"}]


# ======================================================== the plan's seal, from outside


def plan_digest(campaign: CampaignBuilder) -> str:
    return sha256((campaign.root / "plan.json").read_bytes())


def summary(result: pytest.RunResult) -> str:
    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if "= pytest-itera =" in line)
    return "\n".join(lines[start:])


# =============================================== the timeline (schedule/test_plan_vs_actual.py)


def times(campaign: CampaignBuilder, run_id: str, start: str | None, end: str | None) -> None:
    record = campaign.run_record(run_id)
    record["started_at"], record["ended_at"] = start, end
    for key in ("started_at", "ended_at"):
        if record[key] is None:
            del record[key]


# ====================================================================== save intervals


def journal(campaign: CampaignBuilder, *events: dict[str, Any]) -> None:
    """A listed journal holding ``events`` (checkpoint events, as a recorder would journal
    each save)."""
    campaign.files[JOURNAL_FILE] = "".join(
        json.dumps({"event": "checkpoint", **e}) + "\n" for e in events).encode()


def save(run: str, path: str, at: str | None) -> dict[str, Any]:
    return {"run": run, "path": path, "format": "torch", "kind": "resume",
            **({"at": at} if at is not None else {})}


# ============================================================ resume at full resolution


def long_resume(campaign: CampaignBuilder, resumed_steps: range) -> None:
    """The control logs its loss at every step 1..40; the resume check (resumed at step 2)
    logs the control's values at ``resumed_steps``."""
    losses = {s: round(1.0 / s, 6) for s in range(1, 41)}
    metrics = [r for r in campaign.measurements["control"] if "metrics" in r]
    campaign.measurements["control"] = [*({"step": s, "loss": v} for s, v in losses.items()),
                                        *metrics]
    campaign.measurements["resume-check"] = [{"step": s, "loss": losses[s]}
                                             for s in resumed_steps]
