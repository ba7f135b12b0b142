"""When the reload server starts, and what it is handed ahead of the items.

torch's import in the reload server is the longest single step of a run: started at configure
for a whole run (it then overlaps collection and the reads), else as soon as the selection is
known and only if a selected item reloads; the reload interpreter is probed once before any
item runs (a wrong --itera-python is one usage error), and every selected checkpoint is handed
over at once. The server itself is the process's one Reloader (``collect.session_reloader``).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import pytest

from pytest_itera.checks.engine import judge
from pytest_itera.plugin.collect import (
    is_worker,
    loaded_campaign,
    registered_checks,
    selected_pairs,
    selected_targets,
    session_reloader,
    whole_run,
)
from pytest_itera.plugin.options import settings_key
from pytest_itera.report import clean

if TYPE_CHECKING:
    from pytest_itera.reload import Reloader


def probe_before_workers(session: pytest.Session) -> None:
    """On the xdist controller, which collects nothing: probe the reload interpreter once,
    before the workers start, when some campaign has checkpoints or adapters."""
    config = session.config
    if config.pluginmanager.has_plugin("dsession") and _needs_reloads(config):
        _probe(config)


class _EarlyProbe(threading.Thread):
    """The reload interpreter's probe, run while pytest collects; :func:`_probe` judges it."""

    def __init__(self, reloader: Reloader) -> None:
        super().__init__(name="itera-probe", daemon=True)
        self.reloader = reloader
        self.reason: str | None = None
        self.answer: dict[str, Any] | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.reason, self.answer = self.reloader.probe()
        except BaseException as exc:  # handed to the main thread by _probe
            self.error = exc


_early_probe_key = pytest.StashKey[_EarlyProbe]()


def start_reloads_first(config: pytest.Config) -> None:
    """At pytest_cmdline_main, as soon as the options are known and before pytest configures
    (issue 29: ~0.1 s of CPU earlier than at configure, the head start of the longest step):
    a whole run of campaigns that list checkpoints or adapters, the artifacts family not
    switched off. What this cannot know yet (a check of another plugin that reloads, a
    selection made by a plugin) is :func:`start_reloads_early`'s and :func:`reload_ahead`'s
    to judge, as before; a server started here that no selected item needs is stopped."""
    settings = config.stash.get(settings_key, None)
    option = config.option
    if (settings is None or not settings.active or settings.fast or option.collectonly
            or getattr(option, "help", False) or getattr(option, "version", 0)
            or settings.verify_seal is not None
            or config.pluginmanager.is_blocked("itera.artifacts") or not whole_run(config)):
        return
    from pytest_itera.checks.artifacts.reloading import has_artifacts

    if any(has_artifacts(loaded_campaign(config, root)) for root in settings.campaigns):
        _start_and_probe(config)


def _start_and_probe(config: pytest.Config) -> None:
    reloader = session_reloader(config)
    reloader.start()
    probe = _EarlyProbe(reloader)
    probe.start()
    config.stash[_early_probe_key] = probe


def start_reloads_early(config: pytest.Config) -> None:
    """At configure, before collection: when a campaign lists checkpoints or adapters and
    this process would reload them, start the reload server and probe its interpreter now.
    torch's import in the server is the longest single step of a run; started here it
    overlaps pytest's collection as well as the reads. Only for a whole run: with ``-k``,
    ``-m``, ``--lf``, ``--deselect`` or node ids the selection is pytest's to make, and
    :func:`reload_ahead` starts the server once it is known (after every
    ``pytest_collection_modifyitems``), if a selected item reloads; it also stops a server
    started here that a plugin's deselection made useless. Not on an xdist worker (it starts
    its server at its first reload) nor on the controller (it only probes)."""
    if _early_probe_key in config.stash or not whole_run(config):
        return  # started at cmdline_main; or a selection: reload_ahead starts it if needed
    if _needs_reloads(config):
        _start_and_probe(config)


def reload_ahead(session: pytest.Session) -> None:
    """As soon as the selection is known, and only if a selected item needs reloads: probe
    the reload interpreter (a wrong --itera-python is one usage error before any item runs;
    the probe reads torch's version without importing torch), start the reload server (its
    torch import then overlaps the items that hash and scan) and hand it every selected
    checkpoint at once: it loads them a few at a time. Not on an xdist worker: the controller
    probed, and a worker starts its server at its first reload (it may be sent none: every
    worker collects every item) and asks for one checkpoint at a time."""
    from pytest_itera.checks.artifacts.reloading import has_artifacts, located

    config = session.config
    if is_worker(config) or not _needs_reloads(config):
        return
    wanted = selected_targets(session, lambda c: c.reloads)
    if not any(has_artifacts(manifest.context.campaign) for manifest in wanted):
        if _early_probe_key in config.stash:
            session_reloader(config).stop_server()  # started at configure, not needed
        return
    session_reloader(config).start()
    _probe(config)
    for manifest, targets in wanted.items():
        ctx = manifest.context
        ctx.reload_ahead(t for t in dict.fromkeys(targets)
                         if t is not None and located(ctx, t))
    # While an item waits for a verdict, the later items that reload nothing are judged.
    for manifest, pairs in selected_pairs(session, lambda c: not c.reloads).items():
        judge(manifest.context).work_while_waiting(pairs)


def _probe(config: pytest.Config) -> None:
    early = config.stash.get(_early_probe_key, None)
    if early is not None:
        early.join()
        if early.error is not None:
            raise early.error
        reason, answer = early.reason, early.answer
    else:
        reason, answer = session_reloader(config).probe()
    if reason is not None:
        raise pytest.UsageError(
            f"pytest-itera: {reason}. The campaign's checkpoints are reloaded by this "
            "interpreter: pass --itera-python (ini itera_python) with the training "
            "environment's Python, torch >= 2.10"
        )
    _probe_packages(config, answer)


# What the probe found in the reload interpreter (the closure report's provenance).
reload_interpreter_key = pytest.StashKey[dict[str, Any]]()


def _probe_packages(config: pytest.Config, answer: dict[str, Any] | None) -> None:
    """A package the campaign's declared formats need and the reload interpreter lacks is the
    reviewer's environment to fix: one usage error before any item runs, never a rejection."""
    from pytest_itera.core import provenance

    python = session_reloader(config).python
    facts = provenance.reload_interpreter(python, answer)
    config.stash[reload_interpreter_key] = facts
    campaigns = [loaded_campaign(config, root) for root in config.stash[settings_key].campaigns]
    missing = provenance.missing_packages(campaigns, facts)
    if missing:
        needs = "; ".join(f"{pkg} (for {clean(why)})" for pkg, why in missing)
        names = " ".join(pkg for pkg, _ in missing)
        raise pytest.UsageError(
            f"pytest-itera: --itera-python {python}: the reload interpreter lacks {needs}. "
            f"The environment is not evidence: install it there (pip install {names}) or pass "
            "--itera-python with the training environment's Python"
        )


def _needs_reloads(config: pytest.Config) -> bool:
    """Some campaign lists checkpoints or adapters, a registered check reloads them, and this
    run may reload (not --itera-fast, not --collect-only)."""
    from pytest_itera.checks.artifacts.reloading import has_artifacts

    settings = config.stash.get(settings_key, None)
    if settings is None or settings.fast or config.option.collectonly:
        return False
    if not any(c.reloads for c in registered_checks(config, config.hook, fast=False).values()):
        return False  # the artifacts family is switched off (-p no:itera.artifacts)
    return any(has_artifacts(loaded_campaign(config, root)) for root in settings.campaigns)
