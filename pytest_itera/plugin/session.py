"""The per-run plugin objects. :class:`ItemTally`, in every process that collects, counts
the items and marks the waived ones; :class:`IteraSession`, on the process that reports (a
plain run, or the pytest-xdist controller), gathers check results from reports, writes the
closure report, the seal, and decides the gate; :class:`WorkerOutput`, on each xdist worker,
sends the worker's counts back.

Facts travel on test reports (user_properties), so the session works the same on a
plain run and on the pytest-xdist controller; workers print and write nothing.
Under xdist the controller never collects: its item count comes from the
workers' collection (``pytest_xdist_node_collection_finished``) and their
collected and deselected counts come back in ``workeroutput``.

Beyond the built-in checks, a campaign's verdict counts the user's tests that use the
``itera_campaign`` fixture (check ``acceptance-test``), and the reviewer's waivers: a failing
item a valid waiver matches is marked ``xfail`` at collection (its failure is then
"waived", not passed), and each waiver is itself an item that fails when the waiver is
incomplete, expired or matches nothing.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_itera import report
from pytest_itera.checks import waivers as waiving
from pytest_itera.checks.closure import (
    ACCEPTANCE,
    ADVISORIES_KEY,
    CAMPAIGN_KEY,
    CHECK_KEY,
    EVIDENCE_KEY,
    FACTS_KEY,
    FINDINGS_KEY,
    PLAN_KEY,
    RELOADS_KEY,
    SCOPE_KEY,
    TARGET_KEY,
    WAIVER_KEY,
    FindingFacts,
    ReloadFacts,
    WaiverFacts,
    item_properties,
)
from pytest_itera.core.campaign import MANIFEST_FILE
from pytest_itera.plugin.collect import loaded_campaign
from pytest_itera.plugin.options import (
    REQUIRE_ACCEPTED,
    SEAL_PASSWORD_ENV,
    STAGED_INPUT,
    Settings,
    sources_key,
)

if TYPE_CHECKING:
    from pytest_itera.checks.context import Check, Context
    from pytest_itera.core.findings import Finding
    from pytest_itera.report.seal import Sealed


class ItemTally:
    """What collection knows, in the process that collects (a plain run, each xdist worker):
    the items per campaign, selected and deselected; every (check, target) a waiver may
    match; the waivers marked on the items they match, and the waivers' own items. The xdist
    controller's tally holds its workers' counts (IteraSession's xdist hooks)."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.collected: dict[str, int] = defaultdict(int)
        self.deselected: dict[str, int] = defaultdict(int)
        # Per campaign root: every (check, target) collected, deselected ones included -- what
        # a waiver may match. The same on every xdist worker (each collects every item).
        self.universe: dict[str, set[tuple[str, str]]] = defaultdict(set)
        self.today = waiving.today()
        self._ids: dict[str, str] = {}

    def pytest_itemcollected(self, item: pytest.Item) -> None:
        """The check's scope travels with the item's facts (the controller needs it for runs);
        a test using the itera_campaign fixture becomes part of its campaign's verdict; a
        valid waiver that matches the item marks it xfail."""
        from pytest_itera.plugin.collect import IteraCheckItem
        from pytest_itera.plugin.fixtures import campaign_of

        if isinstance(item, IteraCheckItem):  # its facts are set where it is made
            root, check, target = str(item.campaign_root), item.check.id, item.target or ""
        elif (campaign := campaign_of(item)) is not None:
            root, check, target = str(campaign), ACCEPTANCE, item.nodeid
            item.user_properties += item_properties(root, check, target, "test")
        else:
            return
        if check != waiving.CHECK_ID:
            self.universe[root].add((check, target))
            self._waive(item, root, check, target)

    def _waive(self, item: pytest.Item, root: str, check: str, target: str) -> None:
        if not self.settings.waivers:
            return
        from pytest_itera.plugin.collect import IteraCheckItem

        campaign_id = self._campaign_id(root)
        for waiver in self.settings.waivers:
            if waiver.applies(self.today) and waiver.for_campaign(campaign_id) and \
                    waiver.matches(check, target):
                if waiver.code is not None and isinstance(item, IteraCheckItem):
                    item.code_waivers.append(waiver)  # judged finding by finding, when it runs
                    continue
                item.add_marker(pytest.mark.xfail(reason=waiver.xfail_reason(), strict=False))
                item.user_properties.append((WAIVER_KEY, waiver.as_facts()))
                return

    def _campaign_id(self, root: str) -> str:
        if root not in self._ids:
            self._ids[root] = loaded_campaign(self.config, Path(root)).id
        return self._ids[root]

    def pytest_itera_checks(self, config: pytest.Config) -> list[Check]:
        """The waivers' own items: one per waiver, in every campaign it applies to."""
        if not self.settings.waivers:
            return []
        from pytest_itera.checks.context import Check

        return [Check(waiving.CHECK_ID, "each waiver is complete, unexpired and matches an item",
                      self._waiver_findings, targets=self._waiver_targets, needs=frozenset(),
                      fast=True)]

    def _waiver_targets(self, ctx: Context) -> list[str]:
        return [w.label for w in self.settings.waivers if w.for_campaign(ctx.campaign.id)]

    def _waiver_findings(self, ctx: Context, target: str | None) -> list[Finding]:
        waiver = next(w for w in self.settings.waivers if w.label == target)
        matched = sum(1 for c, t in self.universe[str(ctx.root)] if waiver.matches(c, t))
        return waiving.findings(waiver, on=self.today, campaign=ctx.campaign.id, matched=matched)

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        for item in items:
            props = dict(item.user_properties)
            if CAMPAIGN_KEY in props:
                self.deselected[str(props[CAMPAIGN_KEY])] += 1

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        for item in session.items:
            props = dict(item.user_properties)
            if CAMPAIGN_KEY in props:
                self.collected[str(props[CAMPAIGN_KEY])] += 1


class WorkerOutput:
    """On an xdist worker: its counts go back to the controller, which judges (workeroutput,
    read by :meth:`IteraSession.pytest_testnodedown`)."""

    def __init__(self, tally: ItemTally) -> None:
        self.tally = tally

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if session.exitstatus == pytest.ExitCode.USAGE_ERROR:
            return  # nothing ran: the controller says why
        output = session.config.workeroutput  # type: ignore[attr-defined]
        output["itera_deselected"] = dict(self.tally.deselected)
        output["itera_collected"] = dict(self.tally.collected)


class IteraSession:
    """The run's verdict, on the process that reports (a serial run, or the xdist controller):
    the items' results, the closure reports, the seal, the gate and the terminal summary. The
    counts are the ``tally``'s: this process's collection, or its workers' sent back."""

    def __init__(self, config: pytest.Config, settings: Settings, tally: ItemTally) -> None:
        self.config = config
        self.settings = settings
        self.tally = tally
        self.results: dict[str, dict[str, report.CheckResult]] = defaultdict(dict)
        # Plans judged before renting (--itera-plan): plan file -> node id -> result.
        self.plan_results: dict[str, dict[str, report.CheckResult]] = defaultdict(dict)
        self.reports: list[report.CampaignReport] = []
        self.written: list[Path] = []
        self.write_errors: list[str] = []
        self.sealed: Sealed | None = None
        self.seal_error: str | None = None
        self.gate_failure: str | None = None

    # ------------------------------------------------------------- results

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call" and report.passed:
            return  # passing setup/teardown: two of the three reports of every item
        props = dict(report.user_properties)
        outcome = "failed" if report.failed else report.outcome
        plan = props.get(PLAN_KEY)
        if plan is not None:
            if self.plan_results[str(plan)].get(report.nodeid, None) is None or report.failed:
                self.plan_results[str(plan)][report.nodeid] = _result(report, props, outcome)
            return
        root = props.get(CAMPAIGN_KEY)
        if root is None:
            return
        previous = self.results[str(root)].get(report.nodeid)
        if previous is not None and previous.outcome == "failed":
            return  # a failing setup/call stays failed whatever teardown says
        self.results[str(root)][report.nodeid] = _result(report, props, outcome)

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """An s3:// campaign is copied once, by the controller: each worker reads that copy
        (the same folder, so the same node ids on every worker)."""
        copies = self.config.stash.get(sources_key, {})
        if copies:
            node.workerinput[STAGED_INPUT] = {s.url: str(root) for root, s in copies.items()}

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: object, error: object) -> None:
        """Selection happens on the workers; their counts come back in workeroutput (the
        user's acceptance tests are counted there only: their ids name no campaign)."""
        output = getattr(node, "workeroutput", {}) or {}
        tally = self.tally
        for root, count in output.get("itera_deselected", {}).items():
            tally.deselected[root] = max(tally.deselected[root], int(count))
        for root, count in output.get("itera_collected", {}).items():
            tally.collected[root] = max(tally.collected[root], int(count))

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: object, ids: list[str]) -> None:
        """Under xdist the controller never collects: count from the first worker's ids."""
        if self.tally.collected:
            return
        for nodeid in ids:
            root = self._root_of(nodeid)
            if root is not None:
                self.tally.collected[root] += 1

    def _root_of(self, nodeid: str) -> str | None:
        """The campaign a node id belongs to (ids are relative to the rootdir or the cwd)."""
        path = nodeid.split("::", 1)[0]
        for root, staged in self.config.stash.get(sources_key, {}).items():
            if path.rpartition("/")[0] + "/" == staged.url:  # an s3:// campaign's manifest
                return str(root)
        bases = (self.config.rootpath, self.config.invocation_params.dir)
        folders = {Path(os.path.normpath(base / path)).parent for base in bases}
        return next((str(root) for root in self.settings.campaigns if root in folders), None)

    # ------------------------------------------------------------- the end of the run

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if session.exitstatus == pytest.ExitCode.USAGE_ERROR:
            return  # nothing ran: the ERROR line says why, no summary and no report
        if self.config.option.collectonly:
            return  # nothing ran: no verdict, no report, no gate
        provenance = self._provenance()
        self.reports = [self._campaign_report(root, provenance) for root in self.settings.campaigns]
        plans = [self._plan_report(path) for path in self.settings.plans]
        for path in self.settings.reports:
            try:
                report.write(path, self.reports, plans)
            except OSError as exc:
                self.write_errors.append(f"{path}: {exc.strerror or exc}")
            else:
                self.written.append(path)
        if self.write_errors:
            # CI gates on the exit status: a missing report must not look like success.
            _fail(session, pytest.ExitCode.INTERNAL_ERROR)
        if self.settings.seal is not None:
            # Rendered only for the seal (~35 us per item: 0.35 s of a 10,000-item run).
            self._seal(session, report.render_json(self.reports))
        self._gate(session)

    def _plan_report(self, path: Path) -> report.PlanReport:
        """A plan judged before renting: its items' results and its schedule summary (the
        same lines as the terminal's, built from the files, so the same under xdist)."""
        from pytest_itera.plugin.collect_plan import plan_summary

        here = self.config.invocation_params.dir
        label = str(path.relative_to(here)) if path.is_relative_to(here) else str(path)
        campaign, lines = plan_summary(self.config, path, label)
        results = self.plan_results.get(str(path), {})
        return report.PlanReport(label, campaign, tuple(results[k] for k in sorted(results)),
                                 tuple(lines))

    def _provenance(self) -> dict[str, Any]:
        from pytest_itera.core import provenance
        from pytest_itera.plugin.reloads import reload_interpreter_key

        params = self.config.invocation_params
        return {"created": provenance.utc_now(), "command": ["pytest", *map(str, params.args)],
                "cwd": str(params.dir), "pytest_process": provenance.process_versions(),
                "reload_interpreter": self.config.stash.get(reload_interpreter_key, None)}

    def _campaign_report(self, root: Path, provenance: dict[str, Any]) -> report.CampaignReport:
        from pytest_itera.core.provenance import document_digests
        from pytest_itera.plugin.collect import contexts_key, make_context

        results = self.results.get(str(root), {}).values()
        campaign = loaded_campaign(self.config, root)
        # The collection's Context when this process collected (its reads are memoised); the
        # pytest-xdist controller did not: a Context with the same options, no check in it.
        context = self.config.stash.get(contexts_key, {}).get(root) or make_context(
            root, self.settings, {}, self.config)
        built = report.build(
            campaign,
            results,
            collected=self.tally.collected.get(str(root), 0)
            + self.tally.deselected.get(str(root), 0),
            fast=self.settings.fast,
            partial=self._selected_inside(root),
            switched_off=self._switched_off(),
            plan_pinned=not self.settings.unpinned(
                root, campaign.plan.campaign if campaign.plan is not None else None
            ),
            provenance=provenance,
            digests=document_digests(root),
            context=context,
        )
        built = dataclasses.replace(built, settings=self._settings_in_force(root))
        source = self.config.stash.get(sources_key, {}).get(root)  # an s3:// campaign
        if source is None:
            return built
        return dataclasses.replace(built, root=source.url, store_verified=source.by_store()
                                   if source.checksums else None)

    def _switched_off(self) -> list[str]:
        from pytest_itera.checks.model import FAMILIES

        if self.settings.verify_seal is not None:
            return []  # a seal check runs no family, by design
        return [name for name in FAMILIES if self.config.pluginmanager.is_blocked(name)]

    def _selected_inside(self, root: Path) -> bool:
        """Node ids (or paths) inside the campaign were given: only those were collected."""
        return bool(self._args_inside(root))

    def _args_inside(self, root: Path) -> list[str]:
        """The node ids (or paths) given inside the campaign at ``root``."""
        here = self.config.invocation_params.dir
        inside = []
        for arg in self.config.args:
            path = Path(os.path.normpath(here / arg.split("::", 1)[0]))
            whole = path in (root, root / MANIFEST_FILE) and "::" not in arg
            if path.is_relative_to(root) and not whole:
                inside.append(arg)
        return inside

    def _settings_in_force(self, root: Path) -> tuple[report.SettingFacts, ...]:
        """What was given that changes what runs or how it is judged, and from where."""
        from pytest_itera.plugin import origins

        return (*origins.selection(self.config, self._args_inside(root)),
                *origins.in_force(self.config, self._switched_off()))

    @property
    def _accepting(self) -> tuple[str, ...]:
        """The verdicts the gate and the seal take: PLAYED CLOCK too only when the command
        line says --itera-accept-played-clock (the verdict line still says PLAYED CLOCK)."""
        played = (report.PLAYED,) if self.settings.accept_played_clock else ()
        return (*report.ACCEPTING, *played)

    def _gate(self, session: pytest.Session) -> None:
        """--itera-require-accepted: exit non-zero, saying why, unless every campaign is
        accepted (with waivers or not)."""
        refused = [r for r in self.reports if r.verdict not in self._accepting]
        if not self.settings.require_accepted or not refused:
            return
        status = _fail(session, pytest.ExitCode.TESTS_FAILED)
        why = "; ".join(report.verdict_line(r) for r in refused)
        self.gate_failure = f"{REQUIRE_ACCEPTED}: exit status {int(status)}: {why}"

    def _seal(self, session: pytest.Session, json_text: str) -> None:
        """Write the seal of the one campaign, only when it is accepted."""
        from pytest_itera.report import seal

        path, campaign_report = self.settings.seal, self.reports[0]
        assert path is not None
        if campaign_report.verdict not in self._accepting:
            self.seal_error = (f"{path}: not written: the verdict is "
                               f"{campaign_report.verdict.upper()}; only an accepted campaign "
                               "is sealed")
            _fail(session, pytest.ExitCode.TESTS_FAILED)
            return
        root = self.settings.campaigns[0]
        try:
            self.sealed = seal.write(
                root, path, self._seal_record(campaign_report, json_text),
                key=self.settings.seal_key, password=os.environ.get(SEAL_PASSWORD_ENV),
                expected=self._checked_digests(root, campaign_report),
                known=self._hashed_here(root))
        except (seal.SealError, OSError, ValueError) as exc:  # ValueError: seal_result.record
            self.seal_error = f"{path}: {exc}"
            _fail(session, pytest.ExitCode.INTERNAL_ERROR)

    def _seal_record(self, r: report.CampaignReport, json_text: str) -> dict[str, Any]:
        from pytest_itera.checks.closure import plain

        provenance = r.provenance or {}
        return {
            "campaign": r.campaign, "verdict": r.verdict, "created": provenance.get("created"),
            "report_sha256": hashlib.sha256(json_text.encode("utf-8")).hexdigest(),
            "reports": [str(p) for p in self.written if p.suffix.lower() == ".json"],
            "plugin": (provenance.get("pytest_process") or {}).get("plugin"),
            "waivers": [{**plain(w), "nodeids": list(ids)} for w, ids in r.waivers],
            "result": self._seal_result(r),
        }

    def _seal_result(self, r: report.CampaignReport) -> dict[str, Any]:
        """The result the checks judged (report.seal_result), read through the collection's
        Context when this process collected, else one with the same options."""
        from pytest_itera.plugin.collect import contexts_key, make_context
        from pytest_itera.report import seal_result

        root = self.settings.campaigns[0]
        context = self.config.stash.get(contexts_key, {}).get(root) or make_context(
            root, self.settings, {}, self.config)
        return seal_result.record(context, r.verdict)

    def _hashed_here(self, root: Path) -> dict[str, tuple[str, tuple[int, int, int, int, int]]]:
        """The digests this process's checks computed, with each file's fingerprint, for the
        seal to reuse. Under pytest-xdist the workers hashed and the controller did not:
        their digests do not travel back, and the seal hashes every file itself (but an
        s3:// campaign's copy, whose digests the controller computed while it copied)."""
        from pytest_itera.plugin.collect import contexts_key

        staged = self.config.stash.get(sources_key, {}).get(root)
        copied = {} if staged is None else {
            key: (held.sha256, held.fingerprint) for key, held in staged.objects.items()
            if held.copied and held.sha256 and held.fingerprint}
        context = self.config.stash.get(contexts_key, {}).get(root)
        if context is None or context.root.resolve() != root.resolve():
            return copied
        return {**copied, **context.verified_digests()}

    def _checked_digests(self, root: Path, r: report.CampaignReport) -> dict[str, str]:
        """What the checks verified: the manifest's record of each listed file and of the
        plan, and manifest.json as the report read it. A difference at sealing time means the
        folder changed after its checks ran."""
        manifest = loaded_campaign(self.config, root).manifest
        expected = {MANIFEST_FILE: r.digests.get("manifest_sha256") or ""}
        if manifest is not None:
            expected[manifest.plan.path] = manifest.plan.sha256
            expected.update({f.path: f.sha256 for f in manifest.files})
        return expected

    # ------------------------------------------------------------- the terminal

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        quiet = self.config.get_verbosity() < -1  # -qq: only what explains the exit status
        if self.reports and not quiet:
            terminalreporter.write_sep("=", "pytest-itera")
            for campaign in self.reports:
                self._write_summary(terminalreporter, campaign)
            for path in self.written:
                terminalreporter.write_line(f"closure report: {report.clean(path)}")
            if self.sealed is not None:
                kind = "signed" if self.sealed.signed else "digest-only, unsigned"
                terminalreporter.write_line(f"closure seal: {report.clean(self.sealed.path)} "
                                            f"({kind}, {self.sealed.files} files)")
        for error in self.write_errors:
            terminalreporter.write_line(f"closure report NOT written: {report.clean(error)}",
                                        red=True, bold=True)
        if self.seal_error is not None:
            terminalreporter.write_line(
                f"closure seal NOT written: {report.clean(self.seal_error)}", red=True, bold=True)
        if self.gate_failure is not None:
            terminalreporter.write_line(report.clean(self.gate_failure), red=True, bold=True)

    def _write_summary(self, tr: pytest.TerminalReporter, campaign: report.CampaignReport) -> None:
        if self.settings.verify_seal is not None:
            lines = _seal_lines(campaign, self.settings.verify_seal)
        else:
            lines = report.terminal_lines(campaign)
        tr.write_line(lines[0], green=campaign.ok, red=not campaign.ok, bold=True)
        for line in lines[1:]:
            tr.write_line(line)


def _fail(session: pytest.Session, status: pytest.ExitCode) -> int:
    """Make the run fail with ``status``, unless it already fails otherwise."""
    if session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = status
    return int(session.exitstatus)


def _seal_lines(campaign: report.CampaignReport, path: Path) -> list[str]:
    """The verdict of --itera-verify-seal, with what the seal itself records and the result
    it concluded (or that it records none)."""
    from pytest_itera.report.seal import SealError, read
    from pytest_itera.report.seal_result import conclusion_lines

    head = f"campaign {report.clean(campaign.campaign)}"
    if campaign.verdict not in (*report.ACCEPTING, report.PLAYED):  # the clock is no seal check
        broken = ", ".join(c.check for c in campaign.checks if c.outcome == "failed")
        return [f"{head}: SEAL BROKEN — {broken or 'not every seal check ran'} ({path})"]
    try:
        sealed = read(path)
    except SealError:
        return [f"{head}: SEAL HOLDS ({path})"]
    record = sealed.record
    kind = "signature holds" if sealed.signed else "digest-only, unsigned"
    return [report.clean(
        f"{head}: SEAL HOLDS — {len(sealed.resources())} files as sealed on "
        f"{record.get('created')} ({kind}); sealed verdict {record.get('verdict')}, JSON "
        f"report sha256 {record.get('report_sha256')}"
    ), *map(report.clean, conclusion_lines(record))]


def _result(
    rep: pytest.TestReport, props: dict[str, object], outcome: str
) -> report.CheckResult:
    # Not longreprtext: under xdist it starts with a "[gw0] linux -- Python ..." line.
    message = str(rep.longrepr).strip() if rep.failed and rep.longrepr is not None else ""
    evidence = props.get(EVIDENCE_KEY)
    if rep.passed and isinstance(evidence, list):
        message = "\n".join(map(str, evidence))  # informational: the item passed
    if rep.skipped and isinstance(rep.longrepr, tuple):
        message = str(rep.longrepr[2])
    waiver = None
    wasxfail = getattr(rep, "wasxfail", None)
    if rep.skipped and isinstance(wasxfail, str):
        message = str(rep.longrepr).strip() if rep.longrepr is not None else ""
        outcome, waiver, message = _xfailed(props, wasxfail, message)
    target = str(props.get(TARGET_KEY, "")) or None
    scope = str(props[SCOPE_KEY]) if SCOPE_KEY in props else None
    check = str(props[CHECK_KEY])
    return report.CheckResult(
        check, target, outcome, message, rep.nodeid, scope,
        findings=tuple(FindingFacts.from_plain(f) for f in _plain_list(props, FINDINGS_KEY)),
        advisories=tuple(FindingFacts.from_plain(f)
                         for f in _plain_list(props, ADVISORIES_KEY)),
        reloads=tuple(ReloadFacts.from_plain(r) for r in _plain_list(props, RELOADS_KEY)),
        waiver=waiver,
        facts=tuple(_plain_list(props, FACTS_KEY)),
    )


def _xfailed(
    props: dict[str, object], reason: str, message: str
) -> tuple[str, WaiverFacts | None, str]:
    """An xfailed item: waived by the reviewer's waiver, or by an xfail with a reason; an
    xfail without a reason waives nothing (the failure stays a failure, said so)."""
    from pytest_itera.core.text import is_blank

    facts = props.get(WAIVER_KEY)
    if isinstance(facts, dict):
        return "waived", WaiverFacts.from_plain(facts), message
    if reason.startswith("[NOTRUN]"):
        return "skipped", None, reason  # xfail(run=False): it never ran
    if is_blank(reason):
        return "failed", None, ("an xfail without a reason waives nothing: give it a reason, "
                                "or use a waivers file (--itera-waivers)\n" + message).strip()
    return "waived", WaiverFacts("xfail", reason.strip()), message


def _plain_list(props: dict[str, object], key: str) -> list[dict[str, Any]]:
    value = props.get(key)
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []
