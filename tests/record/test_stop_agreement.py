"""The recorder refuses exactly what stop-rules-applied fails: both apply one rule
(checks.stop_rules.measured). Each case is a way the recorder's old copy of the rules differed
from the check's (the split prefix, the last-point fallback, a non-finite metric, a stop its
evidence does not trigger, a stop step the evidence contradicts): the recorder refuses it with
the check's own detail, and the check, in process on a folder holding the same evidence, fails
it with that detail."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_itera.record import CampaignRecorder, RecordError, RunRecorder
from pytest_itera.report.verify import builtin_checks, check_campaign
from tests.factory import CampaignBuilder
from tests.record.test_record import CONFIG, CORPUS, close_kwargs, make_plan

LOW = {"id": "low-accuracy", "kind": "quality_below",
       "parameters": {"metric": "accuracy", "threshold": 0.5, "direction": "higher",
                      "split": "validation"}}
NON_FINITE = {"id": "non-finite-loss", "kind": "non_finite_loss", "parameters": {"series": "loss"}}
NAN = math.nan


def _recorder(root: Path) -> CampaignRecorder:
    rec = CampaignRecorder(root)
    rec.write_bytes("corpus.jsonl", CORPUS)
    rec.write_bytes("configs/control.json", CONFIG)
    rec.freeze_plan(make_plan(stop_rules=[NON_FINITE, LOW]))
    return rec


def _accept(run: RunRecorder) -> None:
    run.accept()


def _stop_low(run: RunRecorder) -> None:
    run.stop("low-accuracy", "accuracy fell")


def _stop_before_the_nan(run: RunRecorder) -> None:
    run.stop("non-finite-loss", "loss diverged")  # nothing logged yet: no step to fill in
    run.log(2, loss=NAN)


# (what the run logs, how it ends, the rows the check reads, the outcome, the detail both say,
# or the words both say where the sentences differ)
CASES: dict[str, tuple[dict[str, Any], Callable[[RunRecorder], None], list[dict[str, Any]],
                       dict[str, Any], str | tuple[str, ...]]] = {
    "split-prefix": (
        {"metrics": {"validation_accuracy": 0.25}}, _accept,
        [{"metrics": {"validation_accuracy": 0.25}}], {"outcome": "accepted"},
        "its validation_accuracy is 0.25, under the stop threshold 0.5"),
    "last-point": (
        {"log": [(1, {"accuracy": 0.3})]}, _accept,
        [{"step": 1, "accuracy": 0.3}], {"outcome": "accepted"},
        "its accuracy (last point) is 0.3, under the stop threshold 0.5"),
    "non-finite-metric": (
        {"log": [(1, {"validation_accuracy": NAN})]}, _accept,
        [{"step": 1, "validation_accuracy": "NaN"}], {"outcome": "accepted"},
        "its validation_accuracy (last point) is NaN, under the stop threshold 0.5"),
    "stop-not-triggered": (
        {"metrics": {"accuracy": 0.9}}, _stop_low,
        [{"metrics": {"accuracy": 0.9}}],
        {"outcome": "stopped", "stop": {"rule": "low-accuracy", "reason": "accuracy fell"}},
        "its accuracy is 0.9 (stop under 0.5)"),
    "stop-step": (
        {}, _stop_before_the_nan,
        [{"step": 2, "loss": "NaN"}],
        {"outcome": "stopped", "stop": {"rule": "non-finite-loss", "reason": "loss diverged"}},
        ("stop step none", "first", "non-finite", "step 2")),
}


def _record(root: Path, evidence: dict[str, Any], end: Callable[[RunRecorder], None]) -> str:
    """Record the control with ``evidence``, end it, close: the recorder's refusal, at the
    end of the run (accept() refuses a run its evidence stops) or at close()."""
    rec = _recorder(root)
    control = rec.run("control")
    control.start()
    for step, values in evidence.get("log", ()):
        control.log(step, **values)
    if "metrics" in evidence:
        control.set_metrics(**evidence["metrics"])
    try:
        end(control)
    except RecordError as exc:
        return str(exc)
    rec.decide("after-pilot", "variant not needed", drops=["variant"])
    rec.write_text("analysis.md", "control\n")
    rec.write_text("RELOAD.md", "r\n")
    with pytest.raises(RecordError) as refused:
        rec.close(**close_kwargs())
    assert not (rec.root / "manifest.json").exists()
    return str(refused.value)


def _judge(root: Path, rows: list[dict[str, Any]], record: dict[str, Any]) -> list[str]:
    """The check's findings on variant-a of a folder whose evidence is ``rows``."""
    campaign = CampaignBuilder(root)
    campaign.plan["stop_rules"] = [NON_FINITE, LOW]
    run = campaign.run_record("variant-a")
    run.update(record)
    if record["outcome"] == "stopped":
        run.pop("predictions", None)
        run.pop("corpus", None)
    campaign.measurements["variant-a"] = rows
    campaign.write()
    check = "stop-rules-applied"
    verdict = check_campaign(root, checks={check: builtin_checks()[check]})
    return [p.message for p in verdict.findings if p.target == "variant-a"]


@pytest.mark.parametrize("case", CASES)
def test_the_recorder_refuses_what_the_check_fails(tmp_path: Path, case: str) -> None:
    evidence, end, rows, record, detail = CASES[case]
    words = (detail,) if isinstance(detail, str) else detail
    refused = _record(tmp_path / "recorded", evidence, end)
    assert all(word in refused for word in words), refused
    failed = _judge(tmp_path / "judged", rows, record)
    assert any(all(word in message for word in words) for message in failed), failed


def test_what_the_check_passes_the_recorder_closes(tmp_path: Path) -> None:
    """The other side: an accepted run over the threshold, and a stop where the rule fires."""
    rec = _recorder(tmp_path / "recorded")
    control = rec.run("control")
    control.start()
    control.log(1, loss=0.5, validation_accuracy=0.7)
    control.set_metrics(validation_accuracy=0.75)
    control.accept()
    variant = rec.run("variant")
    variant.start()
    variant.log(1, loss=0.5)
    variant.log(2, loss=NAN)
    variant.stop("non-finite-loss", "loss diverged")
    rec.write_text("analysis.md", "control\n")
    rec.write_text("RELOAD.md", "r\n")
    closed = rec.close(**close_kwargs())
    assert closed.manifest.exists()
    assert rec.run("variant").record["stop"]["step"] == 2
    assert _judge(tmp_path / "judged", [{"step": 1, "loss": 0.5}, {"step": 2, "loss": "NaN"}],
                  {"outcome": "stopped", "stop": {"rule": "non-finite-loss",
                                                  "reason": "loss diverged", "step": 2}}) == []
