"""pytest11 entry point: thin wiring only, cheap to import (no torch here)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_itera.plugin import head_start

# Before the imports below and the rest of pytest's start-up: torch's import in the reload
# server is the longest step of a run, and the run waits for it (issue 29).
head_start.begin()

from pytest_itera.checks.model import FAMILIES  # noqa: E402
from pytest_itera.plugin import guard, hookspecs, options  # noqa: E402

# The fixture and its parametrization are hook/fixture objects of this plugin module.
from pytest_itera.plugin.fixtures import itera_campaign, pytest_generate_tests  # noqa: E402, F401
from pytest_itera.plugin.options import Settings, settings_key  # noqa: E402

if TYPE_CHECKING:
    from pytest_itera.checks.context import Check


def pytest_addoption(parser: pytest.Parser) -> None:
    options.addoption(parser)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, args: list[str]) -> None:
    """The folder under judgment never steers its judge (docs/safety.md).

    pytest has read its configuration file before any plugin runs: one inside a judged
    folder is refused here, before its settings are used; so is a module of the folder that
    was imported (a ``-p`` plugin). Run from inside a campaign, pytest would import the
    campaign's conftest.py at start-up: when pytest's first conftest anchors (the test paths
    given, else the current folder) lie inside a campaign, conftest files are not loaded for
    this run, as with ``--noconftest``.
    """
    judged = guard.judged_folders(early_config)
    guard.refuse_planted_code(early_config, judged)  # first: the gravest, code of it has run
    guard.refuse_campaign_config(early_config, judged)
    namespace = early_config.known_args_namespace
    given = [*(getattr(namespace, "itera_campaign", None) or []),
             *(getattr(namespace, "itera_plan", None) or [])]
    if not given:
        return
    here = early_config.invocation_params.dir
    roots = [Path(os.path.abspath(here / p)) for p in given]
    anchors = [Path(os.path.abspath(here / a.split("::")[0])) for a in namespace.file_or_dir or []]
    for anchor in anchors or [Path(os.path.abspath(here))]:
        if options.folder_holding(anchor, roots) is not None:
            namespace.noconftest = True


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    settings = options.build_settings(config)
    config.stash[settings_key] = settings
    if settings.active and _cache_inside_campaign(config, settings):
        # pytest would write .pytest_cache into the campaign folder, which is read-only to us.
        # Like `-p no:cacheprovider`, which also blocks stepwise (it needs the cache).
        for name in ("cacheprovider", "stepwise", "pytest_stepwise"):
            config.pluginmanager.set_blocked(name)
    try:
        if settings.active:
            from pytest_itera.plugin.reloads import start_reloads_first

            start_reloads_first(config)  # torch's import in the reload server: the longest step
    finally:
        head_start.settle()  # a server started at import that the session did not take


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "itera: a pytest-itera campaign acceptance check")
    settings = config.stash.get(settings_key, None)
    if settings is None or not settings.active:
        return
    # Again: a conftest.py or plugin loaded since the start.
    guard.refuse_planted_code(config, settings.folders)
    import importlib

    if settings.verify_seal is not None:
        # Only the seal's own checks: the folder against the seal, file by file, no reload.
        from pytest_itera.report.seal import checks

        config.pluginmanager.register(_Checks(checks(settings.verify_seal,
                                                     settings.seal_pubkey)), "itera.seal")
    for name, module in FAMILIES.items() if settings.verify_seal is None else ():
        if not config.pluginmanager.is_blocked(name) and not config.pluginmanager.has_plugin(name):
            config.pluginmanager.register(importlib.import_module(module), name)
    _point_collection_at_campaigns(config, settings)
    _register_session(config, settings)
    if settings.plans:
        from pytest_itera.plugin.collect_plan import PlanSummary

        config.pluginmanager.register(PlanSummary(config, settings), "itera.plan-summary")
    if settings.verify_seal is None:
        from pytest_itera.plugin.reloads import start_reloads_early

        start_reloads_early(config)


def _register_session(config: pytest.Config, settings: Settings) -> None:
    """Every process tallies the items (the xdist controller, which collects none, from its
    workers' counts); the one that reports (a plain run, the xdist controller) judges them,
    and each xdist worker sends its tally back."""
    from pytest_itera.plugin.collect import is_worker
    from pytest_itera.plugin.session import ItemTally, IteraSession, WorkerOutput

    tally = ItemTally(config, settings)
    config.pluginmanager.register(tally, "itera.tally")
    if is_worker(config):
        config.pluginmanager.register(WorkerOutput(tally), "itera.worker")
    else:
        config.pluginmanager.register(IteraSession(config, settings, tally), "itera.session")


@pytest.hookimpl(tryfirst=True)
def pytest_collect_directory(path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    settings = parent.config.stash.get(settings_key, None)
    if settings is not None and path in settings.plan_folders:
        from pytest_itera.plugin.collect_plan import IteraPlanFolder

        return IteraPlanFolder.for_folder(parent, path)
    if settings is None or path not in settings.campaigns:
        return None
    from pytest_itera.plugin.collect import IteraCampaign

    return IteraCampaign.for_folder(parent, path)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """A plan file given to --itera-plan (not a campaign folder's: its folder collects it)."""
    settings = parent.config.stash.get(settings_key, None)
    if settings is None or file_path not in _plan_files(settings):
        return None
    from pytest_itera.plugin.collect_plan import IteraPlan

    return IteraPlan.for_file(parent, file_path)


def pytest_sessionstart(session: pytest.Session) -> None:
    settings = session.config.stash.get(settings_key, None)
    if settings is not None and settings.active:
        from pytest_itera.plugin.reloads import probe_before_workers

        probe_before_workers(session)


def pytest_collection_finish(session: pytest.Session) -> None:
    settings = session.config.stash.get(settings_key, None)
    if settings is not None and settings.active:
        from pytest_itera.plugin.collect import read_ahead
        from pytest_itera.plugin.reloads import reload_ahead

        reload_ahead(session)  # first: the reload server's torch import overlaps the reads
        read_ahead(session)


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    settings = config.stash.get(settings_key, None)
    if settings is not None and settings.active:
        from pytest_itera.plugin.collect import print_not_evaluated, print_serial_advice

        print_not_evaluated(terminalreporter, config)
        print_serial_advice(terminalreporter, config)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Nothing inside a campaign is collected as a test, except through our own nodes."""
    settings = config.stash.get(settings_key, None)
    if settings is None:
        return None
    return True if settings.holding(collection_path, strictly=True) is not None else None


class _Checks:
    """A plugin that contributes a fixed set of checks."""

    def __init__(self, checks: Sequence[Check]) -> None:
        self.checks = list(checks)

    def pytest_itera_checks(self, config: pytest.Config) -> list[Check]:
        return self.checks


def _point_collection_at_campaigns(config: pytest.Config, settings: Settings) -> None:
    """`pytest --itera-campaign DIR` collects the campaign; given test paths run beside it.

    With no test paths on the command line, only the campaigns are collected
    (not the rootdir's tests). A path given inside a campaign (a node id to
    re-run) selects within it instead of adding the whole campaign again.
    """
    explicit = config.args_source == pytest.Config.ArgsSource.ARGS
    here = config.invocation_params.dir
    given = (
        [Path(os.path.abspath(here / a.split("::")[0])) for a in config.args] if explicit else []
    )
    extra = [
        str(root)
        for root in (*settings.campaigns, *settings.plan_folders, *_plan_files(settings))
        if not any(options.folder_holding(p, (root,)) for p in given)
    ]
    config.args = [*config.args, *extra] if explicit else extra


def _cache_inside_campaign(config: pytest.Config, settings: Settings) -> bool:
    if not config.pluginmanager.has_plugin("cacheprovider"):
        return False
    raw = os.path.expanduser(os.path.expandvars(str(config.getini("cache_dir"))))
    cache = Path(os.path.abspath(config.rootpath / raw))
    return settings.holding(cache) is not None


def _plan_files(settings: Settings) -> tuple[Path, ...]:
    """--itera-plan files given as files (a plan folder's plan.json is collected by it)."""
    return tuple(p for p in settings.plans if p.parent not in settings.plan_folders)
