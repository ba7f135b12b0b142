"""The tables of the Markdown and HTML reports, as rows of plain text (escaped by each)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_itera.checks.closure import ReloadFacts
from pytest_itera.report.evidence import ResultRow, delivery_text
from pytest_itera.report.model import CampaignReport, StepRow
from pytest_itera.report.terminal import RUN_HEADER, acceptance, check_counts, run_cells


def objective_rows(report: CampaignReport) -> list[tuple[str, str]]:
    """The question, the decision rule and the conclusion: what the verdict is about."""
    meets = ", ".join(report.meets_threshold) or "no variant"
    conclusion = (f"{report.conclusion} (meets the threshold: {meets})"
                  if report.conclusion is not None else "not stated (manifest.json did not load)")
    return [("Question", report.question or "not stated (plan.json did not load)"),
            ("Decision rule", report.decision_rule or "not stated (plan.json did not load)"),
            ("Conclusion", conclusion)]


Table = tuple[str, tuple[str, ...], list[tuple[str, ...]]]


def results_table(report: CampaignReport) -> Table | None:
    """Every compared run's decision metric, its change from the control on its corpus and
    whether it meets the threshold: the numbers ``conclusion-consistent`` judged."""
    ev = report.evidence
    if ev.decision is None or not ev.results:
        return None
    d = ev.decision
    sign = ">=" if d.direction == "higher" else "<="
    header = ("run", "role", "outcome", d.metric, "Δ to control",
              f"meets {d.metric} {sign} {d.threshold:g}", "value from")
    return ("Results", header, [_result_cells(r) for r in ev.results])


def _result_cells(r: ResultRow) -> tuple[str, ...]:
    value = "no value" if r.value is None else f"{r.value:.6g}"
    delta = "-" if r.delta is None else f"{r.delta:+.6g}"
    meets = "-" if r.meets is None else "yes" if r.meets else "no"
    if r.role != "variant" and r.meets is not None:
        meets += " (a control is not compared)"
    elif r.outcome != "accepted" and r.meets is not None:
        meets += f" (not counted: {r.outcome})"
    return (r.run, r.role, r.outcome, value, delta, meets, r.source)


def deliverables_text(report: CampaignReport) -> str | None:
    """Which runs delivered which corpus: where the accepted count comes from."""
    ev = report.evidence
    if ev.decision is None:
        return None
    return delivery_text(ev.deliveries, ev.not_delivering)


def deviation_rows(report: CampaignReport) -> list[tuple[str, ...]]:
    """Steps whose observed hours differ from the plan beyond the tolerance, explained."""
    return [(s.id, number_text(s.planned_hours), number_text(s.observed_hours),
             s.explanation or "no explanation recorded")
            for s in report.steps if s.over_tolerance]


def report_tables(report: CampaignReport, part: str) -> list[Table]:
    """The tables of the Markdown and HTML reports, with their titles; those with no rows left
    out. ``part``: "runs" (runs, acceptance tests, waivers), "steps" (planned vs actual,
    reloads, checks)."""
    if part == "runs":
        tables: list[Table] = [
            ("Runs", RUN_HEADER, run_cells(report.runs)),
            ("Acceptance tests", ("test", "outcome"),
             [(c.nodeid, c.outcome) for c in acceptance(report)]),
            ("Waivers applied", ("item", "waiver"),
             [(n, w.text()) for w, ids in report.waivers for n in ids]),
        ]
    else:
        tables = [
            ("Planned vs actual", _STEP_HEADER, _step_cells(report)),
            ("Checkpoints as reloaded", _RELOAD_HEADER, _reload_cells(report)),
            ("Checks", ("check", "passed", "failed", "waived", "skipped"),
             [tuple(str(x) for x in row) for row in check_counts(report)]),
        ]
    return [t for t in tables if t[2]]


_RELOAD_HEADER = ("checkpoint", "format", "loaded", "parts", "tensors", "bytes",
                  "non-finite tensors (NaN, inf values)", "seconds", "loader sandbox")


def _reload_cells(report: CampaignReport) -> list[tuple[str, ...]]:
    return [
        (r.path, r.format or "-", "yes" if r.ok else f"no: {r.cause or 'no cause given'}",
         ", ".join(r.parts) or "-", str(r.tensors), str(r.bytes),
         f"{r.nonfinite_tensors} ({r.nan_values}, {r.inf_values})", f"{r.seconds:g}",
         _sandbox_cell(r))
        for r in report.reloads
    ]


def _sandbox_cell(r: ReloadFacts) -> str:
    """The layers in force, and each missing one with its reason."""
    if not r.sandbox and not r.sandbox_missing:
        return "-"  # loaded by a hook, or refused before the child started
    missing = "; ".join(f"not {m}" for m in r.sandbox_missing)
    return ", ".join(r.sandbox) + (f" ({missing})" if missing else "")


def provenance_rows(report: CampaignReport) -> list[tuple[str, str]]:
    """When, from which command and with which versions the report was made, over which
    documents."""
    p = report.provenance or {}
    rows = [("created (UTC)", str(p.get("created") or "unknown")),
            ("command", " ".join(map(str, p.get("command") or ())) or "unknown"),
            ("pytest process", _versions(p.get("pytest_process"))),
            ("reload interpreter", _interpreter(p.get("reload_interpreter")))]
    rows += [(f"{name} sha256", report.digests.get(f"{name}_sha256") or "unreadable")
             for name in ("plan", "manifest")]
    return rows


def _interpreter(facts: Any) -> str:
    if not isinstance(facts, Mapping):
        return "not used: nothing was reloaded"
    if not facts.get("probed"):
        return f"{facts.get('executable')}: its versions could not be read"
    return _versions(facts)


def _versions(facts: Any) -> str:
    if not isinstance(facts, Mapping):
        return "unknown"
    names = (("plugin", "pytest-itera"), ("pytest", "pytest"), ("python", "Python"),
             ("torch", "torch"), ("numpy", "numpy"), ("safetensors", "safetensors"))
    shown = [f"{label} {facts.get(key) or 'absent'}" for key, label in names if key in facts]
    return f"{', '.join(shown)} ({facts.get('executable')})"


_STEP_HEADER = ("step", "kind", "resource", "planned h", "observed h", "change", "explanation")


def _step_cells(report: CampaignReport) -> list[tuple[str, ...]]:
    return [
        (s.id, s.kind or "(unplanned)", s.resource or "-", number_text(s.planned_hours),
         number_text(s.observed_hours), _change(s), s.explanation or "")
        for s in report.steps
    ]


def number_text(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def _change(step: StepRow) -> str:
    if step.planned_hours is None or step.observed_hours is None:
        return "not observed" if step.observed_hours is None else "unplanned"
    delta = step.observed_hours - step.planned_hours
    return f"{delta:+g} h" if delta else "="
