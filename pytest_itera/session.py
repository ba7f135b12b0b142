"""The per-run plugin object: gathers check results from reports, writes the closure report.

Facts travel on test reports (user_properties), so this works the same on a
plain run and on the pytest-xdist controller; workers print and write nothing.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from pytest_itera import report
from pytest_itera.campaign import load_campaign
from pytest_itera.options import Settings


class IteraSession:
    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.results: dict[str, dict[str, report.CheckResult]] = defaultdict(dict)
        self.collected: dict[str, int] = defaultdict(int)
        self.deselected: dict[str, int] = defaultdict(int)
        self.reports: list[report.CampaignReport] = []

    @property
    def is_worker(self) -> bool:
        return hasattr(self.config, "workerinput")

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
        props = dict(report.user_properties)
        root = props.get("itera_campaign")
        if root is None:
            return
        if report.when != "call" and report.passed:
            return
        outcome = "failed" if report.failed else report.outcome
        previous = self.results[str(root)].get(report.nodeid)
        if previous is not None and previous.outcome == "failed":
            return  # a failing setup/call stays failed whatever teardown says
        target = str(props.get("itera_target", "")) or None
        self.results[str(root)][report.nodeid] = _result(report, str(props["itera_check"]), target, outcome)

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
        path = nodeid.split("::", 1)[0]
        candidate = (self.config.rootpath / path).parent
        for root in self.settings.campaigns:
            if candidate == root or Path(path).parent == root:
                return str(root)
        return None

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.is_worker:
            self.config.workeroutput["itera_deselected"] = dict(self.deselected)  # type: ignore[attr-defined]
            return
        self.reports = [self._campaign_report(root) for root in self.settings.campaigns]
        for path in self.settings.reports:
            if path.suffix.lower() == ".json":
                report.write_json(path, self.reports)

    def _campaign_report(self, root: Path) -> report.CampaignReport:
        results = self.results.get(str(root), {}).values()
        return report.build(
            load_campaign(root),
            results,
            collected=self.collected.get(str(root), 0) + self.deselected.get(str(root), 0),
            fast=self.settings.fast,
        )

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.is_worker or not self.reports:
            return
        terminalreporter.write_sep("=", "pytest-itera")
        for campaign in self.reports:
            ok = campaign.verdict in ("accepted", "plausible (fast mode)")
            lines = report.terminal_lines(campaign)
            terminalreporter.write_line(lines[0], green=ok, red=not ok, bold=True)
            for line in lines[1:]:
                terminalreporter.write_line(line)
        for path in self.settings.reports:
            terminalreporter.write_line(f"closure report: {path}")


def _result(
    rep: pytest.TestReport, check: str, target: str | None, outcome: str
) -> report.CheckResult:
    message = rep.longreprtext if rep.failed else ""
    if rep.skipped and isinstance(rep.longrepr, tuple):
        message = str(rep.longrepr[2])
    return report.CheckResult(check, target, outcome, message, rep.nodeid)
