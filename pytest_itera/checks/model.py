"""What a check is: the types every check family, the engine and the wiring share (no pytest).

A check is a plain function over a loaded campaign that returns findings.
Built-in families (``checks/files/``, ``checks/contract/``, ...) and
users' conftest.py files contribute checks the same way, through the
``pytest_itera_checks`` hook; the pytest layer turns each (check, target)
into one item.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pytest_itera.core.campaign import Campaign
from pytest_itera.core.schedule import DEFAULT_TOLERANCE
from pytest_itera.reload.formats import DEFAULT_TIMEOUT

if TYPE_CHECKING:
    from pytest_itera.checks.stop_rules import RuleVerdict
    from pytest_itera.core.campaign import RunRecord, StopRule
    from pytest_itera.core.money import Catalogue
    from pytest_itera.files.measurements import Measurements, Unreadable
    from pytest_itera.reload import ReloadResult

__all__ = [
    "FAMILIES",
    "ITEM_ORDER",
    "OTHERS",
    "Kind",
    "MetricHook",
    "ModelHook",
    "ModelRecipe",
    "Needs",
    "Options",
    "PlanPin",
    "ReloadHook",
    "Scope",
    "StopRuleHook",
    "item_name",
    "item_position",
    "recoded_kinds",
]

# Built-in check families, registered by the plugin like any plugin (`-p no:itera.files`
# turns one off) and run in-process by pytest_itera.report.verify: plugin name -> module.
FAMILIES = {
    "itera.contract": "pytest_itera.checks.contract",
    "itera.files": "pytest_itera.checks.files",
    "itera.artifacts": "pytest_itera.checks.artifacts",
    "itera.runs": "pytest_itera.checks.runs",
    "itera.metrics": "pytest_itera.checks.metrics",
    "itera.evidence": "pytest_itera.checks.evidence",
    "itera.budget": "pytest_itera.checks.budget",
    "itera.schedule": "pytest_itera.checks.schedule",
    "itera.plan": "pytest_itera.checks.plan",
}

# Where a check the table below does not name takes its place: a conftest's or a plugin's.
OTHERS = "*"

# Every check's position in the item list (the terminal's, the reports', ``-x``'s): the
# documents first (a broken one explains the rest), then the files, the checkpoints and the
# runs, the evidence, the conclusion and the analysis, the others, then the schedule and the
# budget (which count the runs that passed the rest), the waivers last. The plan gate's
# (--itera-plan) and the seal's (--itera-verify-seal) items take their place among them.
ITEM_ORDER: tuple[str, ...] = (
    "manifest", "plan-valid", "plan-frozen", "plan-frozen-ready", "seal-signature",
    "expected-ids", "plan-schedule-fits", "seal-files", "plan-journal", "rules-declared",
    "seal-result", "plan-forecast",
    "files-intact", "no-empty-files", "no-temp-paths",
    "checkpoint-reloads", "stop-records", "config-identity", "resume-complete",
    "adapter-pinned", "predictions-cover-corpus", "artifacts-required", "measurements-agree",
    "metrics-recomputed", "predictions-from-model", "stop-rules-applied", "role-evidence",
    "journal-agrees", "conclusion-consistent", "analysis-present",
    OTHERS,
    "schedule-fits", "plan-vs-actual", "budget-consistent",
    "waiver",
)
_POSITION = {check_id: i for i, check_id in enumerate(ITEM_ORDER)}


def item_position(check_id: str) -> int:
    """A check's place in the item list: its row in :data:`ITEM_ORDER`, else OTHERS'."""
    return _POSITION.get(check_id, _POSITION[OTHERS])


# "plan": an item of the plan gate (--itera-plan), never collected for a closed campaign.
Scope = Literal["campaign", "file", "run", "checkpoint", "adapter", "plan"]
# (resolved path, path as the manifest writes it, claimed format) -> a verdict, or None to pass.
ReloadHook = Callable[[Path, str, "str | None"], "ReloadResult | None"]
Needs = Literal["plan", "manifest"]
# A custom metric kind -> a function over the aligned (label, prediction) pairs, or None.
MetricHook = Callable[[str], "Callable[[Sequence[tuple[Any, Any]]], float] | None"]


@dataclass(frozen=True)
class ModelRecipe:
    """How the judge builds a run's model, for re-predicting a sample of its corpus with the
    delivered weights (the ``pytest_itera_model`` hook's answer; check predictions-from-model).

    ``build(config) -> torch.nn.Module`` and ``predict(model, row) -> value`` are module-level
    functions of one module *file* of the judge's (not a conftest: the sandboxed loader
    imports that file in a fresh interpreter, where pytest may not be installed). ``row`` is
    ``{id field: id, **inputs}``, the corpus fields ``inputs`` names, read from the frozen
    corpus. ``sample`` examples are drawn with ``random.Random(seed)`` from the corpus's IDs
    (a model that predicts otherwise on a share p of the corpus escapes with (1 - p) ** sample);
    ``checkpoint`` is the manifest path of the checkpoint to load (None: the run's recorded
    checkpoints, newest first, the first whose model state loads), ``key`` where its state is
    (None: a model key, or a bare state dict); numbers agree within ``tolerance`` (relative
    and absolute), anything else as labels compare.
    """

    build: Callable[[Any], Any]
    predict: Callable[[Any, Mapping[str, Any]], Any]
    inputs: tuple[str, ...]
    config: Any = None
    sample: int = 256
    seed: int = 0
    checkpoint: str | None = None
    key: str | None = None
    tolerance: float = 1e-6


# (run, campaign) -> the judge's recipe for the run's model, or None: the run is not judged.
ModelHook = Callable[["RunRecord", Campaign], "ModelRecipe | None"]
# (rule, run, its measurements or why they cannot be read, campaign) -> a verdict, or None.
StopRuleHook = Callable[
    ["StopRule", "RunRecord", "Measurements | Unreadable | None", Campaign], "RuleVerdict | None"
]


@dataclass(frozen=True)
class Kind:
    """One kind of finding a check reports, the meaning of its code (``files-intact.sha256``):
    the rule it breaks, in one line, and the fix. Each check module declares its ``KINDS``
    (code -> Kind) and hands them to its :class:`Check`; a finding names one of them, and
    docs/checks.md lists them under their check (rendered by ``python -m
    pytest_itera.checks.kinds``, guarded by a test)."""

    rule: str
    fix: str
    # A reading of human text: its findings advise and decide only under --itera-strict-text.
    advisory: bool = False
    # A kind that decides on structure or exact text, and advises on a looser reading of the
    # words: that reading (its findings carry advisory=True then).
    advises_when: str | None = None


def recoded_kinds(kinds: Mapping[str, Kind], check_id: str, *, of: str = "",
                  without: Collection[str] = ()) -> dict[str, Kind]:
    """The kinds of another check's rule that ``check_id`` reports under its own id (the plan
    gate runs the closure's plan rules: ``core.findings.recoded``), those of check ``of`` only
    when given, but the codes ``without`` that it never meets there (a rule on the manifest,
    where the plan is judged alone): ``manifest.invalid-document`` ->
    ``plan-valid.invalid-document``."""
    return {f"{check_id}.{code.partition('.')[2]}": kind for code, kind in kinds.items()
            if (not of or code.startswith(f"{of}.")) and code not in without}


@dataclass(frozen=True)
class PlanPin:
    """A sha256 the frozen plan.json must have, pinned outside the campaign folder."""

    sha256: str
    origin: str  # "--itera-plan-sha256" or "itera_plan_sha256 (<key>)"


@dataclass(frozen=True)
class Options:
    """The user's settings that checks read (a plain copy of the pytest options)."""

    fast: bool = False
    python: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    ignore: tuple[str, ...] = ()
    temp_patterns: tuple[str, ...] = ()
    plan_sha256: str | None = None
    deviation_tolerance: float = float(DEFAULT_TOLERANCE)
    # The pins that apply to this campaign (ini itera_plan_sha256), and the keys of the pins
    # given for other campaigns when none applies (a renamed campaign escapes no pin).
    plan_pins: tuple[PlanPin, ...] = ()
    other_pins: tuple[str, ...] = ()
    # The price catalogue in force (the pytest_itera_catalogue hook, else the ini
    # itera_catalogue file), or why the one given cannot be used; None: the shipped
    # IteraGPU catalogue (pytest_itera.core.money.example_catalogue).
    catalogue: Catalogue | str | None = None
    hourly_phrases: tuple[str, ...] = ()  # users' extra phrases of hourly billing (literal)
    stop_rule_hook: StopRuleHook | None = None  # pytest_itera_stop_rule implementations
    metric_hook: MetricHook | None = None  # pytest_itera_metric implementations
    model_hook: ModelHook | None = None  # pytest_itera_model implementations
    # --itera-strict-text: the readings of human text (advisory findings) decide too.
    strict_text: bool = False
    # --itera-journal-pin LINE:DIGEST (ini itera_journal_pins): the journal's line LINE has
    # the sha256 DIGEST (it chains back to the plan: the journal up to there is proven).
    journal_pins: tuple[tuple[int, str], ...] = ()


def item_name(check_id: str, target: str | None) -> str:
    """The item of one (check, target): ``check[target]``, as the plugin names it and as the
    in-process verdict (pytest_itera.report.verify) labels it."""
    if target is None:
        return check_id
    # Node ids are one line and "::" separates their parts: keep targets readable.
    shown = target.encode("unicode_escape").decode("ascii") if not target.isprintable() else target
    return f"{check_id}[{shown.replace('::', ':_:')}]"

