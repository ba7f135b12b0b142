"""Stop rules (R5) evaluated on a run's own measurements: one implementation for the recorder,
which refuses at once, and the checks, which judge the closed folder (no pytest import)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from pytest_itera.core.campaign import SHA256_HEX, Corpus, Plan, StopRule
from pytest_itera.core.text import is_blank
from pytest_itera.files.measurements import Measurements

__all__ = [
    "MEASURED_KINDS",
    "PREDICTING_ROLES",
    "TRAINING_ROLES",
    "Contradiction",
    "RuleVerdict",
    "Status",
    "contradicts_corpus",
    "input_corpus",
    "label",
    "measured",
    "rule_parameters_problem",
    "show",
    "triggers",
]

Status = Literal["triggered", "clear", "unproven", "not_evaluated"]


@dataclass(frozen=True)
class RuleVerdict:
    """A stop rule evaluated on one run's evidence.

    ``triggered``: the evidence triggers the rule (``step``: the first step that does, when
    the evidence has steps); ``clear``: it does not; ``unproven``: the evidence needed is
    missing or unreadable (a failure for an accepted run); ``not_evaluated``: the rule is
    not machine-readable (kind ``other``): reported, never a failure. ``detail`` says what
    was observed, ``where`` the file and line of the evidence, ``subjects`` the files it is
    about when ``where`` does not say (a measurements file that cannot be read).
    """

    status: Status
    detail: str
    step: int | None = None
    where: str | None = None
    hint: str | None = None
    subjects: tuple[str, ...] = ()


TRAINING_ROLES = ("control", "variant", "pilot", "resume_check")
PREDICTING_ROLES = ("control", "variant")  # R1: the compared runs deliver predictions
MEASURED_KINDS = ("non_finite_loss", "quality_below")  # read the run's own measurements


def rule_parameters_problem(rule: StopRule) -> str | None:
    """Why a rule's parameters are not the machine-readable ones of its kind, or None.

    ``itera-plan/2`` enforces these shapes in its schema; an ``itera-plan/1`` rule with
    free-form parameters cannot be evaluated. Kind ``other`` is free-form by definition.
    """
    p: Mapping[str, Any] = rule.parameters or {}
    kind = rule.kind
    if kind == "non_finite_loss":
        return None if _text(p.get("series")) else "no 'series' (the measured series to watch)"
    if kind == "quality_below":
        missing = [k for k in ("metric", "split") if not _text(p.get(k))]
        threshold = p.get("threshold")
        if not isinstance(threshold, int | float) or isinstance(threshold, bool):
            missing.append("threshold")
        if p.get("direction") not in ("higher", "lower"):
            missing.append("direction")
        return f"no usable {', '.join(missing)}" if missing else None
    if kind == "input_truncated":
        if not _text(p.get("input")):
            return "no 'input' (a corpus id or a path)"
        given = [k for k in ("examples", "bytes", "sha256") if k in p]
        if not given:
            return "none of 'examples', 'bytes', 'sha256' (what the input must be)"
        for key in ("examples", "bytes"):
            value = p.get(key)
            if key in p and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
                return f"{key!r} is not a non-negative integer"
        digest = p.get("sha256")
        if "sha256" in p and not (isinstance(digest, str) and SHA256_HEX.fullmatch(digest)):
            return "'sha256' is not a 64-hex digest"
        return None
    if kind == "no_resume":
        return None if _text(p.get("resume_check")) else "no 'resume_check' (a run id)"
    return None


def input_corpus(plan: Plan, name: str) -> Corpus | None:
    """The plan corpus an ``input_truncated`` rule's ``input`` names: its id, or its path."""
    return plan.corpus_by_id(name) or next((c for c in plan.corpora if c.path == name), None)


class Contradiction(NamedTuple):
    """An ``input_truncated`` rule against its own plan's corpus entry: what it says, the
    fix, the parameter (``examples`` or ``sha256``), the rule's value and the entry's."""

    detail: str
    fix: str
    key: str
    wanted: str
    frozen: str


def contradicts_corpus(plan: Plan, rule: StopRule) -> Contradiction | None:
    """Where an ``input_truncated`` rule with usable parameters expects of a plan corpus
    another example count or sha256 than the plan's own corpus entry freezes: such a rule
    can never hold (the frozen corpus triggers it), so the plan is refused before it is
    frozen or rented for (the recorder's freeze_plan, the plan gate's plan-valid)."""
    if rule.kind != "input_truncated" or rule_parameters_problem(rule) is not None:
        return None
    corpus = input_corpus(plan, str(rule.parameters["input"]))
    if corpus is None:
        return None
    index = plan.corpora.index(corpus)
    for key in ("examples", "sha256"):
        if key not in rule.parameters:
            continue
        wanted, frozen = rule.parameters[key], getattr(corpus, key)
        if key == "sha256" and not SHA256_HEX.fullmatch(str(frozen)):
            continue  # a draft's placeholder: the schema and the corpus checks say so
        if wanted != frozen:
            what = f"{wanted} examples" if key == "examples" else f"the sha256 {wanted}"
            return Contradiction(
                f"stop rule {rule.id!r} ({rule.kind}) expects {what} of corpus {corpus.id!r}, "
                f"but the plan's corpora[{index}] freezes {frozen}: the frozen corpus would "
                "trigger the rule",
                f"edit the rule's parameters.{key} together with corpora[{index}].{key} "
                f"(both {frozen}, when the corpus entry is right)",
                key, str(wanted), str(frozen))
    return None


def _text(value: object) -> bool:
    return isinstance(value, str) and not is_blank(value)


def measured(rule: StopRule, found: Measurements, role: str | None) -> RuleVerdict:
    """A rule of a :data:`MEASURED_KINDS` kind with usable parameters
    (:func:`rule_parameters_problem` is None), judged on one run's measurements; ``role``:
    the run's planned role (None: unplanned)."""
    if rule.kind == "non_finite_loss":
        return _non_finite(rule, found, role)
    if rule.kind == "quality_below":
        return _quality(rule, found, role)
    raise ValueError(f"stop rule {rule.id!r} has kind {rule.kind!r}, not one read from the "
                     "run's measurements")


def _non_finite(rule: StopRule, found: Measurements, role: str | None) -> RuleVerdict:
    name = str(rule.parameters["series"])
    series = found.series.get(name)
    if series is None or not len(series):
        if role in (None, *TRAINING_ROLES):
            return RuleVerdict(
                "unproven", f"its measurements {found.path} hold no {name!r} series",
                where=found.path,
                hint=f"log the {name!r} series at every step (RunRecorder.log(step, "
                f"{name}=...)): the rule reads it")
        return RuleVerdict("clear", f"a {label(role)} run with no {name!r} series")
    bad = series.first_non_finite()
    if bad is None:
        return RuleVerdict("clear", f"{len(series)} {name!r} points, all finite")
    step, value, line = bad
    return RuleVerdict("triggered", f"its {name!r} series is {show(value)} at step {step}",
                       step=step, where=f"{found.path}:{line}")


def _quality(rule: StopRule, found: Measurements, role: str | None) -> RuleVerdict:
    p = rule.parameters
    metric, threshold, higher = str(p["metric"]), float(p["threshold"]), p["direction"] == "higher"
    value_of = _measured(found, metric, str(p.get("split", "")))
    if value_of is None:
        if role in (None, *PREDICTING_ROLES):
            return RuleVerdict(
                "unproven", f"its measurements {found.path} hold no {metric!r} (neither a "
                "final metric nor a series)", where=found.path,
                hint=f"record {metric!r} in the run's measurements (its metrics line)")
        return RuleVerdict("clear", f"a {label(role)} run that does not measure {metric!r}")
    value, step, where, name = value_of
    if isinstance(value, str):
        return RuleVerdict("unproven", f"its {name} is the string {value!r}, not a number",
                           where=where)
    bad = not math.isfinite(value) or (value < threshold if higher else value > threshold)
    side = "under" if higher else "over"
    if bad:
        return RuleVerdict("triggered", f"its {name} is {show(value)}, {side} the stop "
                           f"threshold {threshold:g}", step=step, where=where)
    return RuleVerdict("clear", f"its {name} is {show(value)} (stop {side} {threshold:g})")


def _measured(
    found: Measurements, metric: str, split: str
) -> tuple[float | int | str, int | None, str, str] | None:
    """(value, step, where, name): the final metric, else the last point of that series."""
    names = [metric] + [f"{split}{sep}{metric}" for sep in ("_", "/", ".") if split]
    for name in names:
        if found.metrics is not None and name in found.metrics:
            m = found.metrics[name]
            return m.value, None, f"{found.path}:{m.line}", name
    for name in names:
        series = found.series.get(name)
        last = series.last() if series is not None else None
        if last is not None:
            return last[1], last[0], f"{found.path}:{last[2]}", f"{name} (last point)"
    return None


def triggers(run_id: str, rule: StopRule, verdict: RuleVerdict) -> str:
    """The sentence that ``run_id``'s own evidence triggers ``rule``: the stop-rules check's
    finding on an accepted run and the recorder's refusal to accept it say it alike."""
    return f"run {run_id} triggers stop rule {rule.id!r} ({rule.kind}): {verdict.detail}"


def label(role: str | None) -> str:
    """A role as words ("resume check"); None is an unplanned run."""
    return (role or "unplanned").replace("_", " ")


def show(value: float | int | str) -> str:
    """A measured value as the contract writes it (NaN, Infinity, -Infinity)."""
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return repr(value)
    return str(value)
