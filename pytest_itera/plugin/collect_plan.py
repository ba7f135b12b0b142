"""Collection for the plan gate: ``--itera-plan PATH`` becomes items ``<plan file>::<check>``.

The same conventions as a campaign (``collect.py``): one item per check and target, node
ids relative to the rootdir, plain-text failures, a campaign folder's conftest.py never
imported. A plan that does not load, or whose schedule cannot be computed, gets one item
(``plan-valid``) that says why. The summary (:class:`PlanSummary`) is built on the
controller from the plan files themselves, so it is the same with or without xdist.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_itera.checks.closure import CHECK_KEY, PLAN_KEY, TARGET_KEY
from pytest_itera.checks.context import Check
from pytest_itera.checks.engine import evaluate, judge, pairs
from pytest_itera.checks.model import item_name
from pytest_itera.checks.plan.gate import JOURNAL_PATH, PLAN_PATH
from pytest_itera.checks.plan.journal import journal_beside, read_journal
from pytest_itera.checks.plan.summary import summary_lines
from pytest_itera.core.campaign import PLAN_FILE, load_plan
from pytest_itera.plugin.collect import (
    MARKER,
    CampaignNode,
    CheckFailed,
    CheckItem,
    ChecksFile,
    is_worker,
    make_context,
    node_id,
    registered_checks,
)
from pytest_itera.plugin.options import Settings, catalogue_in_force, settings_key
from pytest_itera.report import clean

VALID = "plan-valid"


class IteraPlanFolder(CampaignNode, pytest.Collector):
    """A campaign folder without a manifest yet: collects its plan.json, nothing else."""

    @classmethod
    def for_folder(cls, parent: pytest.Collector, path: Path) -> IteraPlanFolder:
        return cls.from_parent(parent, name=path.name, path=path,
                               nodeid=node_id(parent.session, path))

    @property
    def campaign_root(self) -> Path:
        return self.path

    def collect(self) -> Iterator[IteraPlan]:
        yield IteraPlan.from_parent(self, path=self.path / PLAN_FILE, name="itera",
                                    nodeid=node_id(self.session, self.path / PLAN_FILE))


class IteraPlan(ChecksFile):
    """A plan's checks, one item per check and target."""

    @classmethod
    def for_file(cls, parent: pytest.Collector, path: Path) -> IteraPlan:
        return cls.from_parent(parent, path=path, nodeid=node_id(parent.session, path))

    def collect(self) -> Iterator[IteraPlanItem]:
        settings = self.config.stash[settings_key]
        checks = {cid: c for cid, c in registered_checks(
            self.config, self.ihook, fast=settings.fast).items() if c.scope == "plan"}
        self.context = make_context(self.path.parent, settings, checks, self.config,
                                    load_plan(self.path))
        self.context.memo(PLAN_PATH, lambda: self.path)
        self.context.memo(JOURNAL_PATH, lambda: journal_beside(self.path))
        self.add_marker(MARKER)
        # A plan that did not load, or cannot be scheduled: one item, which says why.
        only_valid = VALID in checks and bool(judge(self.context).findings(VALID))
        chosen = [c for c in checks.values() if not only_valid or c.id == VALID]
        for check, target in pairs(self.context, chosen):
            yield IteraPlanItem.from_parent(
                self, name=item_name(check.id, target), check=check, target=target)


class IteraPlanItem(CheckItem):
    """One plan-gate check on one plan (and target)."""

    def __init__(self, *, check: Check, target: str | None, **kwargs: Any) -> None:
        super().__init__(check=check, target=target, **kwargs)
        # Not CAMPAIGN_KEY: a plan has no closure verdict or report of its own.
        self.user_properties += [(PLAN_KEY, str(self.path)), (CHECK_KEY, check.id),
                                 (TARGET_KEY, target or "")]

    def runtest(self) -> None:
        assert isinstance(self.parent, IteraPlan)
        outcome = evaluate(self.parent.context, self.check, self.target)
        if outcome.failed:
            raise CheckFailed(outcome)


class PlanSummary:
    """The terminal summary of the plan gate: planned schedule, window edge, uncommitted
    time, lot comparison and, for a campaign mid-way, the forecast."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        config = self.config
        if is_worker(config) or config.get_verbosity() < -1 or config.option.collectonly:
            return
        terminalreporter.write_sep("=", "pytest-itera: before renting")
        here = config.invocation_params.dir
        for path in self.settings.plans:
            label = str(path.relative_to(here)) if path.is_relative_to(here) else str(path)
            campaign, lines = plan_summary(config, path, label)
            for line in lines:
                terminalreporter.write_line(clean(line), red=campaign is None)


def plan_summary(config: pytest.Config, path: Path, label: str) -> tuple[str | None, list[str]]:
    """(the plan's campaign id, the summary lines: planned schedule, window edge, uncommitted
    time, the lots that fit, and the forecast of a campaign mid-way); no id when the plan
    does not load. The terminal summary and the closure reports print the same lines."""
    from pytest_itera.core.money import Catalogue, example_catalogue

    plan = load_plan(path).plan
    if plan is None:
        return None, [f"plan {label}: does not load (see {VALID})"]
    found = catalogue_in_force(config)
    catalogue = found if isinstance(found, Catalogue) else example_catalogue()
    journal_file = journal_beside(path)
    journal = read_journal(journal_file) if journal_file is not None else None
    return plan.campaign, summary_lines(label, plan, catalogue, journal)
