"""The closure report's model: check results, runs, steps, budget and schedule of a campaign,
and its verdict (no pytest import, no rendering)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from decimal import Decimal
from typing import Any

from pytest_itera.checks.closure import FindingFacts, ReloadFacts, WaiverFacts
from pytest_itera.checks.context import Context
from pytest_itera.checks.model import Options
from pytest_itera.checks.runs.conclusion_consistent import CONCLUSION
from pytest_itera.checks.schedule.plan_vs_actual import deviation_tolerance
from pytest_itera.core import money
from pytest_itera.core import schedule as sched
from pytest_itera.core.campaign import MANIFEST_FILE, Campaign, Manifest
from pytest_itera.core.journal import JOURNAL_FILE, Gap, gaps, played_clock_line
from pytest_itera.files.outputs import left_out_note, own_outputs
from pytest_itera.report.evidence import Evidence, gather

REPORT_FORMAT = "itera-report/3"
ADVISORIES_NAMED = 5  # advisories named on the verdict's note; all of them in the JSON
STORE_NAMED = 20  # files named in the store-checksum note (the JSON report lists them all)
PARTIAL_NOTE = "only the checks named on the command line were collected"
NO_JOURNAL_NOTE = (
    "no journal: the recorder's evidence was not available (the rules that read it — saves "
    "at their times, metrics as recorded, decisions, the closure — were not applied)"
)
UNCHAINED_NOTE = (
    "the journal is unchained (an older recorder): a line removed or rewritten cannot be told "
    "from the journal itself"
)
PLAN_INTEGRITY_NOTE = (
    "plan integrity rests on the manifest's own record: no --itera-plan-sha256 or "
    "itera_plan_sha256 pin was given for this campaign"
)


# Verdicts that pass the --itera-require-accepted gate.
ACCEPTING = ("accepted", "accepted with waivers")


@dataclass(frozen=True)
class CheckResult:
    check: str
    target: str | None
    outcome: str  # "passed" | "failed" | "skipped" (did not run) | "waived" (failed, accepted)
    message: str
    nodeid: str
    scope: str | None = None  # the check's scope ("run", "file", "test", ...), when known
    findings: tuple[FindingFacts, ...] = ()
    reloads: tuple[ReloadFacts, ...] = ()  # what the item's reloads found
    waiver: WaiverFacts | None = None  # why a failure was accepted (outcome "waived")
    facts: tuple[Any, ...] = ()  # the values the check judged (Check.facts), plain data
    # The readings of human text this item made that advise and do not decide.
    advisories: tuple[FindingFacts, ...] = ()


@dataclass(frozen=True)
class RunRow:
    """One run of the campaign: planned, recorded, or both."""

    id: str
    role: str | None  # None: not in the plan
    category: str | None
    status: str  # the manifest's outcome, or "not recorded"
    passed: int  # items owned by this run that passed
    total: int  # items owned by this run that ran
    failing: tuple[str, ...] = ()  # the checks that failed on this run's items, first seen first

    @property
    def shown_status(self) -> str:
        """The manifest's outcome, unless the run's own checks failed: a run recorded as
        accepted whose checks fail is shown failing, with them."""
        if not self.failing:
            return self.status
        return f"failing ({', '.join(self.failing)}); recorded {self.status}"


@dataclass(frozen=True)
class StepRow:
    """One step, planned vs actual; start/end in hours from the start of preparation."""

    id: str
    kind: str | None  # None: observed but not in the plan
    resource: str | None
    planned_hours: float | None
    observed_hours: float | None
    planned_start: float | None = None
    planned_end: float | None = None
    actual_start: float | None = None
    actual_end: float | None = None
    explanation: str | None = None
    lot: str | None = None  # the lot whose clock the step runs on (None: off the lots)
    over_tolerance: bool = False  # observed hours differ from planned by more than tolerated


@dataclass(frozen=True)
class SettingFacts:
    """A setting in force for the run, as written, and where it came from (the command line,
    PYTEST_ADDOPTS, an ini file's addopts or key); ``selects``: it chooses what runs (``-k``,
    ``-m``, node ids, ``--itera-fast``, a family switched off) rather than how it is judged."""

    setting: str
    source: str
    selects: bool = False


@dataclass(frozen=True)
class CampaignReport:
    campaign: str
    root: str
    # "accepted" | "accepted with waivers" | "rejected" | "plausible (fast mode)" | "incomplete"
    # | "rehearsed" (a rehearsal whose checks all passed: never "accepted")
    # | "played clock" (recorded on an injected clock=, every check passed: never "accepted")
    verdict: str
    checks: tuple[CheckResult, ...]
    budget: dict[str, Any] | None
    schedule: dict[str, Any] | None
    collected: int
    fast: bool = False
    notes: tuple[str, ...] = field(default_factory=tuple)
    runs: tuple[RunRow, ...] = ()
    steps: tuple[StepRow, ...] = ()
    # A note, never a failure: no pin outside the campaign vouches for plan.json.
    plan_integrity: str | None = None
    # A note, never a failure: no journal was there to lean on, or an unchained one.
    journal_note: str | None = None
    # What makes the report stand on its own (see pytest_itera.core.provenance).
    question: str | None = None
    decision_rule: str | None = None
    conclusion: str | None = None
    meets_threshold: tuple[str, ...] = ()
    provenance: Mapping[str, Any] | None = None
    digests: Mapping[str, str | None] = field(default_factory=dict)
    # Notes on the plugin's own outputs found inside the campaign, left out of the checks.
    left_out: tuple[str, ...] = ()
    # The reason of each reopening the recorder's journal records (rec.reopen), in order.
    reopened: tuple[str, ...] = ()
    # The interruptions and reopenings its journal records, in order (the list under the
    # verdict).
    gaps: tuple[Gap, ...] = ()
    # The campaign was recorded on a played clock (an injected clock=): what says so, e.g.
    # "itera-journal.jsonl line 1" or "manifest.json"; None: the real clock, or unknown.
    played_clock: str | None = None
    # An s3:// campaign read with --itera-store-checksums: the files verified by the store's
    # own full-object SHA-256 (none of their bytes hashed here). None: not asked for.
    store_verified: tuple[str, ...] | None = None
    # The settings given for the run that change what runs or how it is judged, with their
    # sources (pytest_itera.plugin.origins); () from a library call.
    settings: tuple[SettingFacts, ...] = ()

    @property
    def settings_note(self) -> str | None:
        """"settings in force: <setting> (<source>); ..." or None."""
        if not self.settings:
            return None
        return "settings in force: " + "; ".join(f"{s.setting} ({s.source})"
                                                 for s in self.settings)

    @property
    def steered(self) -> str | None:
        """What chose the items or the mode without being typed on the command line, or
        None: said on the verdict line, since a configuration file can make a run look
        complete or fast by choice of no one present."""
        off = [s for s in self.settings if s.selects and s.source != "command line"]
        if not off:
            return None
        return "; ".join(f"{s.setting} from {s.source}" for s in off) + ", not the command line"

    @property
    def reopened_text(self) -> str | None:
        """"reopened once: <reason>" or "reopened N times: <reason>; ...", or None."""
        if not self.reopened:
            return None
        times = "once" if len(self.reopened) == 1 else f"{len(self.reopened)} times"
        return f"reopened {times}: {'; '.join(self.reopened)}"
    @property
    def played_clock_text(self) -> str | None:
        """What every report says under the verdict of a campaign recorded on a played
        clock, whatever the verdict; None on the real clock."""
        if self.played_clock is None:
            return None
        return (f"played clock: the observed hours were played, not measured (the recorder "
                f"read an injected clock=, {self.played_clock}); on the real clock, leave "
                "clock= out")
    # The numbers behind the verdict: decision metrics, series, resume, deliveries.
    evidence: Evidence = field(default_factory=Evidence)

    @property
    def reloads(self) -> tuple[ReloadFacts, ...]:
        """What each reload found, once per path, in path order."""
        found = {r.path: r for c in self.checks for r in c.reloads}
        return tuple(found[p] for p in sorted(found))

    @property
    def waivers(self) -> tuple[tuple[WaiverFacts, tuple[str, ...]], ...]:
        """Each waiver applied, with the node ids of the failures it waived."""
        uses: dict[WaiverFacts, list[str]] = {}
        for c in self.checks:
            if c.outcome == "waived" and c.waiver is not None:
                uses.setdefault(c.waiver, []).append(c.nodeid)
        return tuple((w, tuple(ids)) for w, ids in uses.items())

    def count(self, outcome: str) -> int:
        return sum(1 for c in self.checks if c.outcome == outcome)

    @property
    def advisories(self) -> tuple[tuple[CheckResult, FindingFacts], ...]:
        """Each reading of human text that advised and did not decide, with its item."""
        return tuple((c, a) for c in self.checks for a in c.advisories)

    @property
    def advisories_note(self) -> str | None:
        """"2 advisories (readings of text, not deciding; --itera-strict-text makes them
        decide): <code> in <item>: <message>; ..." or None (the first ADVISORIES_NAMED)."""
        found = self.advisories
        if not found:
            return None
        shown = [f"{a.code} in {c.check}{f'[{c.target}]' if c.target else ''}: {a.message}"
                 for c, a in found[:ADVISORIES_NAMED]]
        more = f"; and {len(found) - ADVISORIES_NAMED} more" if len(found) > ADVISORIES_NAMED \
            else ""
        count = f"{len(found)} advisor{'ies' if len(found) != 1 else 'y'}"
        return (f"{count} (readings of text, not deciding; --itera-strict-text makes them "
                f"decide): " + "; ".join(shown) + more)

    @property
    def all_notes(self) -> tuple[str, ...]:
        """The verdict's notes, then the plan-integrity note (what every report shows)."""
        return (*self.notes, *((self.plan_integrity,) if self.plan_integrity else ()),
                *self.file_notes)

    @property
    def file_notes(self) -> tuple[str, ...]:
        """The notes on files: the journal's (none, or unchained), the plugin's own outputs
        left out of the checks, and those the store's checksum verified (the first
        :data:`STORE_NAMED` named; all in the JSON)."""
        journal = (self.journal_note,) if self.journal_note else ()
        verified = self.store_verified
        if not verified:
            return (*journal, *self.left_out)
        named = ", ".join(verified[:STORE_NAMED])
        more = f" and {len(verified) - STORE_NAMED} more" if len(verified) > STORE_NAMED else ""
        count = f"{len(verified)} file{'s' if len(verified) != 1 else ''}"
        return (*journal, *self.left_out, f"{count} verified by the store's own SHA-256 "
                f"(--itera-store-checksums), not by hashing their bytes: {named}{more}")

    @property
    def failed(self) -> int:
        return self.count("failed")

    @property
    def ok(self) -> bool:
        return self.verdict in (*ACCEPTING, "plausible (fast mode)", REHEARSED, PLAYED)


def build(
    campaign: Campaign,
    results: Iterable[CheckResult],
    *,
    collected: int,
    fast: bool,
    partial: bool = False,
    switched_off: Sequence[str] = (),
    plan_pinned: bool | None = None,
    provenance: Mapping[str, Any] | None = None,
    digests: Mapping[str, str | None] | None = None,
    context: Context | None = None,
) -> CampaignReport:
    """``partial``: the user named node ids or files inside the campaign, so only some ran.
    ``switched_off``: built-in check families blocked with ``-p no:itera.<family>``; their
    checks were never collected, so the verdict cannot be "accepted".
    ``plan_pinned``: False when no ``--itera-plan-sha256``/``itera_plan_sha256`` pin applied
    (the report then notes that plan integrity rests on the manifest's own record); None when
    unknown (a library call).
    ``provenance``: when, how and with which versions the report was made; ``digests``: the
    sha256 of plan.json and manifest.json (``pytest_itera.core.provenance``).
    ``context``: the checks' Context of the campaign, whose memoised reads the evidence
    reuses (the session's); None: a fresh one with default options."""
    fresh = context is None
    ctx = Context(campaign, Options(), {}) if context is None else context
    try:
        return _build(campaign, results, collected=collected, fast=fast, partial=partial,
                      switched_off=switched_off, plan_pinned=plan_pinned,
                      provenance=provenance, digests=digests, context=ctx)
    finally:
        if fresh:
            ctx.close()


def _build(
    campaign: Campaign,
    results: Iterable[CheckResult],
    *,
    collected: int,
    fast: bool,
    partial: bool,
    switched_off: Sequence[str],
    plan_pinned: bool | None,
    provenance: Mapping[str, Any] | None,
    digests: Mapping[str, str | None] | None,
    context: Context,
) -> CampaignReport:
    checks = tuple(sorted(results, key=lambda r: r.nodeid))
    runs = run_rows(campaign, checks)
    notes: tuple[str, ...] = (PARTIAL_NOTE,) if partial else ()
    if switched_off:
        notes += (f"check families switched off: {', '.join(switched_off)}",)
    played = played_clock(campaign)
    breaks = gaps(campaign.root)
    return CampaignReport(
        campaign=campaign.id,
        root=str(campaign.root),
        verdict=verdict(checks, collected=collected, fast=fast,
                        partial=partial or bool(switched_off),
                        rehearsal=campaign.manifest is not None and campaign.manifest.rehearsal,
                        played_clock=played is not None),
        played_clock=played,
        notes=notes,
        checks=checks,
        budget=budget_section(campaign),
        schedule=schedule_section(campaign),
        collected=collected,
        fast=fast,
        runs=runs,
        steps=step_rows(campaign, deviation_tolerance(context, campaign.plan)
                        if campaign.plan else None),
        plan_integrity=PLAN_INTEGRITY_NOTE if plan_pinned is False else None,
        journal_note=_journal_note(campaign),
        **_objective(campaign),
        provenance=provenance,
        digests=dict(digests or {}),
        reopened=tuple(g.what for g in breaks if g.kind == "reopened"), gaps=breaks,
        left_out=_left_out(campaign, context),
        evidence=_evidence(campaign, runs, checks, context),
    )


def _journal_note(campaign: Campaign) -> str | None:
    """What the summary says of a journal it could not lean on: none listed (a hand-written
    campaign, unless its plan says it is recorded: then journal-agrees refuses it), or one
    whose first line carries no chain."""
    man, plan = campaign.manifest, campaign.plan
    if man is None:
        return None
    if not any(f.path == JOURNAL_FILE for f in man.files):
        return None if plan is not None and plan.recorded else NO_JOURNAL_NOTE
    try:
        with (campaign.root / JOURNAL_FILE).open("rb") as handle:
            first = handle.readline(1 << 20)
        chained = isinstance(json.loads(first).get("prev"), str)
    except (OSError, ValueError, AttributeError):
        return None  # journal-agrees says what is wrong with it
    return None if chained else UNCHAINED_NOTE


def played_clock(campaign: Campaign) -> str | None:
    """What says the campaign was recorded on a played clock: its journal (a line that says
    ``"clock": "played"``, whether or not the manifest lists the journal) or its manifest
    (``"clock": "played"``); None when neither does (the real clock, or a hand-written
    campaign, judged as before). Either decides: deleting one mark leaves the other."""
    line = played_clock_line(campaign.root)
    if line is not None:
        return f"{JOURNAL_FILE} line {line}"
    if campaign.manifest is not None and campaign.manifest.played_clock:
        return f"{MANIFEST_FILE} \"clock\": \"played\""
    return None


def _left_out(campaign: Campaign, context: Context) -> tuple[str, ...]:
    """The notes on the plugin's own outputs inside the campaign (files.outputs), which the
    file checks left out (the candidates from the checks' walk: no second one)."""
    root = campaign.root
    candidates = context.output_candidates()
    if not candidates or not root.is_dir():
        return ()
    man = campaign.manifest
    listed = {f.path for f in man.files} if man is not None else set()
    return tuple(left_out_note(path, what) for path, what in
                 sorted(own_outputs(root, candidates, listed).items()))


def _evidence(campaign: Campaign, runs: Sequence[RunRow], checks: Sequence[CheckResult],
              context: Context) -> Evidence:
    """``checks``: the results; conclusion-consistent's carries the decision metrics it judged
    (a pytest-xdist controller then recomputes nothing)."""
    if campaign.plan is None or campaign.manifest is None:
        return Evidence()
    judged = next((c.facts for c in checks if c.check == CONCLUSION and c.facts), None)
    return gather(context, {r.id: r.failing for r in runs}, judged)


def _objective(campaign: Campaign) -> dict[str, Any]:
    """The question, the decision rule and the conclusion, as the documents state them."""
    plan, man = campaign.plan, campaign.manifest
    rule = None
    if plan is not None:
        d = plan.decision
        sign = ">=" if d.direction == "higher" else "<="
        rule = (f"a variant meets the objective when {d.metric} {sign} {d.threshold:g} "
                f"({d.direction} is better)" + (f"; decision point: {d.point}" if d.point else ""))
    return {
        "question": plan.question if plan is not None else None,
        "decision_rule": rule,
        "conclusion": man.conclusion.text if man is not None else None,
        "meets_threshold": tuple(man.conclusion.meets_threshold) if man is not None else (),
    }


def verdict(
    checks: Sequence[CheckResult], *, collected: int, fast: bool, partial: bool = False,
    rehearsal: bool = False, played_clock: bool = False,
) -> str:
    """``rehearsal``: the manifest says the campaign is a rehearsal; every check passed
    makes it "rehearsed", never "accepted". ``played_clock``: it was recorded on a played
    (injected) clock; every check passed makes it "played clock", never "accepted" (a
    rehearsal on a played clock is "rehearsed": its hours are not judged either way)."""
    outcomes = {c.outcome for c in checks}
    if outcomes - {"passed", "skipped", "waived"}:
        return "rejected"
    if partial or not checks or len(checks) < collected or "skipped" in outcomes:
        return "incomplete"  # some checks deselected or not run: never "accepted"
    if fast:
        return "plausible (fast mode)"
    if rehearsal:
        return REHEARSED
    if played_clock:
        return PLAYED
    return "accepted with waivers" if "waived" in outcomes else "accepted"


REHEARSED = "rehearsed"
PLAYED = "played clock"  # every check passed on hours a played clock gave: never "accepted"
_WORST_FIRST = ("rejected", "incomplete", "plausible (fast mode)", REHEARSED, PLAYED,
                "accepted with waivers")


@dataclass(frozen=True)
class PlanReport:
    """A plan judged before renting (``--itera-plan``): its checks and its schedule summary."""

    plan: str  # the plan file, as the user named it
    campaign: str | None  # the plan's campaign id (None: it did not load)
    checks: tuple[CheckResult, ...]
    summary: tuple[str, ...]  # planned schedule, window edge, uncommitted time, lots that fit

    @property
    def verdict(self) -> str:
        """ready (every check ran and passed), not ready, or incomplete (some did not run)."""
        if not self.checks:
            return "incomplete"
        if any(c.outcome == "failed" for c in self.checks):
            return "not ready"
        return "ready" if all(c.outcome == "passed" for c in self.checks) else "incomplete"


def overall_verdict(reports: Sequence[CampaignReport]) -> str:
    """Several campaigns: the worst of their verdicts."""
    for worst in _WORST_FIRST:
        if any(r.verdict == worst for r in reports):
            return worst
    return "accepted" if reports else "incomplete"


# ------------------------------------------------------------- runs table


def runs_of(manifest: Manifest | None, scope: str | None, target: str) -> set[str]:
    """The runs a check target belongs to (``Manifest.owners``), none without a manifest.

    From data alone, so the pytest-xdist controller (which has no Context)
    rebuilds it from the reports' (check, target, scope).
    """
    return set() if manifest is None else manifest.owners(scope, target)


def run_rows(campaign: Campaign, results: Iterable[CheckResult]) -> tuple[RunRow, ...]:
    """Planned runs in plan order, then recorded runs the plan does not have."""
    plan, manifest = campaign.plan, campaign.manifest
    ids = [r.id for r in plan.runs] if plan else []
    planned = set(ids)  # sets, not list scans: a sweep has thousands of runs and items
    ids += [r.id for r in manifest.runs if r.id not in planned] if manifest else []
    known = set(ids)
    passed = dict.fromkeys(ids, 0)
    total = dict.fromkeys(ids, 0)
    failing: dict[str, dict[str, None]] = {rid: {} for rid in ids}  # ordered, once each
    for result in results:
        if result.target is None or result.scope == "test":
            continue  # a campaign-level check, or a user's acceptance test: no run owns it
        for run in runs_of(manifest, result.scope, result.target) & known:
            total[run] += 1
            passed[run] += result.outcome == "passed"
            if result.outcome == "failed":
                failing[run][result.check] = None
    return tuple(_run_row(campaign, rid, passed[rid], total[rid], tuple(failing[rid]))
                 for rid in ids)


def _run_row(campaign: Campaign, run_id: str, passed: int, total: int,
             failing: tuple[str, ...]) -> RunRow:
    planned = campaign.plan.run(run_id) if campaign.plan else None
    recorded = campaign.manifest.run(run_id) if campaign.manifest else None
    return RunRow(
        id=run_id,
        role=planned.role if planned else None,
        category=planned.category if planned else None,
        status=recorded.outcome if recorded else "not recorded",
        passed=passed,
        total=total,
        failing=failing,
    )


# ----------------------------------------------------------------- budget


def budget_section(campaign: Campaign) -> dict[str, Any] | None:
    manifest = campaign.manifest
    if manifest is None:
        return None
    b = manifest.budget
    engaged, engaged_source = _engaged(b)
    return {
        "currency": b.currency,
        "lots": list(b.lots),
        "lot_details": _lot_details(campaign),
        "rental_total": b.rental_total,
        "engaged_total": engaged,
        "engaged_source": engaged_source,
        "included_expenses": [asdict(e) for e in b.included_expenses],
        "external_expenses": [asdict(e) for e in b.external_expenses],
        "unit": b.unit,
        "accepted_deliverables": b.accepted_deliverables,
        "cost_per_deliverable": b.cost_per_deliverable,
        "rejection_cause": b.rejection_cause,
    }


def _engaged(b: Any) -> tuple[str, str]:
    """Rental plus included expenses (never external ones, R7), or the stated rental."""
    if not b.included_expenses:
        return b.rental_total, "rental"
    try:
        total = money.Money(b.rental_total, b.currency) + money.expenses_total(
            b.included_expenses, b.currency
        )
    except (ValueError, TypeError, ArithmeticError):
        return b.rental_total, "rental (included expenses could not be added)"
    return str(total), "rental + included expenses"


def _lot_details(campaign: Campaign) -> list[dict[str, Any]]:
    plan, manifest = campaign.plan, campaign.manifest
    if plan is None or manifest is None:
        return []
    engaged = set(manifest.budget.lots)
    return [
        {"id": lot.id, "offer": lot.offer, "gpu": lot.gpu, "gpus_per_lot": lot.gpus_per_lot,
         "days": lot.days, "price": lot.price, "quantity": lot.quantity}
        for lot in plan.budget.lots
        if lot.id in engaged
    ]


# --------------------------------------------------------------- schedule


_Timelines = tuple[sched.Timeline | None, sched.Timeline | None, str | None]


def _timelines(campaign: Campaign) -> _Timelines:
    """The planned and the actual timelines, or the reason they cannot be computed."""
    plan, manifest = campaign.plan, campaign.manifest
    if plan is None:
        return None, None, "plan.json did not load"
    try:
        planned = sched.makespan(plan.schedule.steps)
        if manifest is None:
            return planned, None, None
        observed = sched.observed_hours(manifest.schedule.steps)
        return planned, sched.makespan(sched.as_observed(plan.schedule.steps, observed)), None
    except (sched.ScheduleError, ValueError, TypeError) as exc:
        return None, None, f"the plan's steps cannot be scheduled: {exc}"


def schedule_section(campaign: Campaign) -> dict[str, Any] | None:
    plan, manifest = campaign.plan, campaign.manifest
    if plan is None and manifest is None:
        return None
    planned, actual, problem = _timelines(campaign)
    stated = plan.schedule.uncommitted_hours if plan else None
    computed = (
        _number(sched.uncommitted_hours(plan.schedule.window_hours, planned))
        if plan and planned
        else None
    )
    return {
        "window_hours": plan.schedule.window_hours if plan else None,
        "sequential_hours": plan.schedule.sequential_hours if plan else None,
        "planned_makespan_hours": _number(planned.makespan) if planned else None,
        "actual_makespan_hours": _number(actual.makespan) if actual else None,
        "uncommitted_hours": computed if computed is not None else stated,
        "uncommitted_source": "computed" if computed is not None else "stated",
        "stated_uncommitted_hours": stated,
        "schedule_problem": problem,
        "reserved_hours": manifest.schedule.reserved_hours if manifest else None,
        "observed_hours": manifest.schedule.observed_hours if manifest else None,
    }


def step_rows(campaign: Campaign, tolerance: Decimal | None = None) -> tuple[StepRow, ...]:
    """``tolerance``: the deviation tolerance in force
    (``checks.schedule.plan_vs_actual.deviation_tolerance``); None: the default one."""
    plan, manifest = campaign.plan, campaign.manifest
    planned_tl, actual_tl, _ = _timelines(campaign)
    observed = sched.observed_hours(manifest.schedule.steps) if manifest else {}
    deviating = {d.step for d in sched.deviations(
        plan.schedule.steps if plan else (), observed,
        sched.DEFAULT_TOLERANCE if tolerance is None else tolerance)}
    explained: dict[str, list[str]] = {}
    for dev in manifest.schedule.deviations if manifest else ():
        explained.setdefault(dev.step, []).append(dev.explanation)
    rows = []
    for step in plan.schedule.steps if plan else ():
        seen = observed.get(step.id)
        p = planned_tl.slot(step.id) if planned_tl else None
        a = actual_tl.slot(step.id) if actual_tl and seen is not None else None
        rows.append(StepRow(
            step.id, step.kind, step.resource, step.hours, _number(seen),
            _number(p.start) if p else None, _number(p.end) if p else None,
            _number(a.start) if a else None, _number(a.end) if a else None,
            "; ".join(explained.get(step.id, [])) or None,
            step.lot, step.id in deviating,
        ))
    known = {r.id for r in rows}
    for step_id in sorted(set(observed) - known):
        rows.append(StepRow(step_id, None, None, None, _number(observed[step_id]),
                            explanation="; ".join(explained.get(step_id, [])) or None))
    return tuple(rows)


def _number(value: Decimal | None) -> float | None:
    """A Decimal for JSON: an int when whole, else a float (hours, not money)."""
    if value is None:
        return None
    return int(value) if value == value.to_integral_value() else float(value)
