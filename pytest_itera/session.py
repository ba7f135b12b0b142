"""The per-run plugin object: gathers check results from reports, writes the closure report.

Facts travel on test reports (user_properties), so this works the same on a
plain run and on the pytest-xdist controller; workers print and write nothing.
Under xdist the controller never collects: its item count comes from the
workers' collection (``pytest_xdist_node_collection_finished``) and their
deselection counts come back in ``workeroutput``.
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

import pytest

from pytest_itera import report
from pytest_itera.campaign import MANIFEST_FILE
from pytest_itera.options import Settings, loaded_campaign


class IteraSession:
    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.results: dict[str, dict[str, report.CheckResult]] = defaultdict(dict)
        self.collected: dict[str, int] = defaultdict(int)
        self.deselected: dict[str, int] = defaultdict(int)
        self.reports: list[report.CampaignReport] = []
        self.written: list[Path] = []
        self.write_errors: list[str] = []

    @property
    def is_worker(self) -> bool:
        from pytest_itera.collect import is_worker

        return is_worker(self.config)

    def pytest_itemcollected(self, item: pytest.Item) -> None:
        """The check's scope travels with the item's facts: the controller needs it for runs."""
        from pytest_itera.collect import IteraCheckItem

        if isinstance(item, IteraCheckItem):
            item.user_properties.append(("itera_scope", item.check.scope))

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        for item in items:
            props = dict(item.user_properties)
            if "itera_campaign" in props:
                self.deselected[str(props["itera_campaign"])] += 1

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        for item in session.items:
            props = dict(item.user_properties)
            if "itera_campaign" in props:
                self.collected[str(props["itera_campaign"])] += 1

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call" and report.passed:
            return  # passing setup/teardown: two of the three reports of every item
        props = dict(report.user_properties)
        root = props.get("itera_campaign")
        if root is None:
            return
        outcome = "failed" if report.failed else report.outcome
        previous = self.results[str(root)].get(report.nodeid)
        if previous is not None and previous.outcome == "failed":
            return  # a failing setup/call stays failed whatever teardown says
        self.results[str(root)][report.nodeid] = _result(report, props, outcome)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: object, error: object) -> None:
        """Deselection happens on the workers; their counts come back in workeroutput."""
        output = getattr(node, "workeroutput", {}) or {}
        for root, count in output.get("itera_deselected", {}).items():
            self.deselected[root] = max(self.deselected[root], int(count))

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: object, ids: list[str]) -> None:
        """Under xdist the controller never collects: count from the first worker's ids."""
        if self.collected:
            return
        for nodeid in ids:
            root = self._root_of(nodeid)
            if root is not None:
                self.collected[root] += 1

    def _root_of(self, nodeid: str) -> str | None:
        """The campaign a node id belongs to (ids are relative to the rootdir or the cwd)."""
        path = nodeid.split("::", 1)[0]
        bases = (self.config.rootpath, self.config.invocation_params.dir)
        folders = {Path(os.path.normpath(base / path)).parent for base in bases}
        return next((str(root) for root in self.settings.campaigns if root in folders), None)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if session.exitstatus == pytest.ExitCode.USAGE_ERROR:
            return  # nothing ran: the ERROR line says why, no summary and no report
        if self.is_worker:
            self.config.workeroutput["itera_deselected"] = dict(self.deselected)  # type: ignore[attr-defined]
            return
        self.reports = [self._campaign_report(root) for root in self.settings.campaigns]
        for path in self.settings.reports:
            try:
                report.write(path, self.reports)
            except OSError as exc:
                self.write_errors.append(f"{path}: {exc.strerror or exc}")
            else:
                self.written.append(path)
        if self.write_errors and session.exitstatus == pytest.ExitCode.OK:
            # CI gates on the exit status: a missing report must not look like success.
            session.exitstatus = pytest.ExitCode.INTERNAL_ERROR

    def _campaign_report(self, root: Path) -> report.CampaignReport:
        results = self.results.get(str(root), {}).values()
        campaign = loaded_campaign(self.config, root)
        return report.build(
            campaign,
            results,
            collected=self.collected.get(str(root), 0) + self.deselected.get(str(root), 0),
            fast=self.settings.fast,
            partial=self._selected_inside(root),
            switched_off=self._switched_off(),
        )

    def _switched_off(self) -> list[str]:
        from pytest_itera.options import FAMILIES

        return [name for name in FAMILIES if self.config.pluginmanager.is_blocked(name)]

    def _selected_inside(self, root: Path) -> bool:
        """Node ids (or paths) inside the campaign were given: only those were collected."""
        here = self.config.invocation_params.dir
        for arg in self.config.args:
            path = Path(os.path.normpath(here / arg.split("::", 1)[0]))
            whole = path in (root, root / MANIFEST_FILE) and "::" not in arg
            if path.is_relative_to(root) and not whole:
                return True
        return False

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.is_worker or not self.reports:
            return
        terminalreporter.write_sep("=", "pytest-itera")
        for campaign in self.reports:
            lines = report.terminal_lines(campaign)
            terminalreporter.write_line(lines[0], green=campaign.ok, red=not campaign.ok, bold=True)
            for line in lines[1:]:
                terminalreporter.write_line(line)
        for path in self.written:
            terminalreporter.write_line(f"closure report: {path}")
        for error in self.write_errors:
            terminalreporter.write_line(f"closure report NOT written: {error}", red=True, bold=True)


def _result(
    rep: pytest.TestReport, props: dict[str, object], outcome: str
) -> report.CheckResult:
    # Not longreprtext: under xdist it starts with a "[gw0] linux -- Python ..." line.
    message = str(rep.longrepr).strip() if rep.failed and rep.longrepr is not None else ""
    if rep.skipped and isinstance(rep.longrepr, tuple):
        message = str(rep.longrepr[2])
    target = str(props.get("itera_target", "")) or None
    scope = str(props["itera_scope"]) if "itera_scope" in props else None
    check = str(props["itera_check"])
    return report.CheckResult(check, target, outcome, message, rep.nodeid, scope)
