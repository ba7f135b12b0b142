"""Collection: a campaign folder becomes items ``<dir>/manifest.json::<check>[<target>]``."""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pluggy
import pytest
from _pytest._code.code import TerminalRepr

from pytest_itera.checks.closure import (
    EVIDENCE_KEY,
    FINDINGS_KEPT,
    FINDINGS_KEY,
    RELOADS_KEY,
    FindingFacts,
    ReloadFacts,
    item_properties,
    plain,
)
from pytest_itera.checks.context import Check, Context
from pytest_itera.checks.model import MetricHook, Options, ReloadHook, StopRuleHook, item_name
from pytest_itera.core.campaign import (
    MANIFEST_FILE,
    Campaign,
    FileRecord,
    RunRecord,
    StopRule,
    gc_paused,
)
from pytest_itera.core.findings import Finding, render_all, summary_line
from pytest_itera.plugin.options import (
    Settings,
    catalogue_in_force,
    hourly_phrases,
    loaded_campaign,
    settings_key,
)
from pytest_itera.report import clean, clean_block

if TYPE_CHECKING:
    from pytest_itera.checks.stop_rules import RuleVerdict
    from pytest_itera.files.measurements import Measurements, Unreadable
    from pytest_itera.reload import Reloader, ReloadResult

MARKER = "itera"


class CheckFailed(Exception):
    """A check found problems in the campaign (not a plugin bug)."""

    def __init__(
        self, check: str, target: str | None, findings: tuple[Finding, ...],
        files: tuple[tuple[str, tuple[Finding, ...]], ...] | None = None, of: int = 0,
    ) -> None:
        super().__init__(summary_line(findings))
        self.check = check
        self.target = target
        self.findings = findings
        self.files = files  # a folder item's failing files, each with its findings
        self.of = of  # how many files the folder item checked


_hook_cache_key = pytest.StashKey[dict[Path, pluggy.HookRelay]]()


class CampaignNode:
    """Hooks for campaign nodes come from the folder's parent.

    A conftest.py inside a campaign folder is data like any other file: it is
    never imported (that would run the campaign's code and write bytecode into
    the folder).
    """

    path: Path
    session: pytest.Session

    @property
    def campaign_root(self) -> Path:
        raise NotImplementedError

    @cached_property
    def ihook(self) -> pluggy.HookRelay:
        # pytest asks for ihook ~7 times per item: kept on the node after the first. The
        # conftests of the folder's parents are all loaded before a campaign node exists
        # (pytest collected those directories first), so the proxy for that folder no
        # longer changes.
        cache: dict[Path, pluggy.HookRelay] = self.session.stash.setdefault(_hook_cache_key, {})
        folder = self._hook_dir
        if folder not in cache:
            cache[folder] = self.session.gethookproxy(folder)
        return cache[folder]

    @cached_property
    def _hook_dir(self) -> Path:
        return self.campaign_root.parent


class IteraCampaign(CampaignNode, pytest.Collector):
    """The campaign folder: collects its manifest, nothing else inside it.

    Deliberately not a ``pytest.Directory``: pytest imports the conftest.py of
    every Directory it collects, and a campaign's files are data.
    """

    @classmethod
    def for_folder(cls, parent: pytest.Collector, path: Path) -> IteraCampaign:
        nodeid = node_id(parent.session, path)
        return cls.from_parent(parent, name=path.name, path=path, nodeid=nodeid)

    @property
    def campaign_root(self) -> Path:
        return self.path

    def collect(self) -> Iterator[IteraManifest]:
        # Named "itera", not "manifest.json": `-k manifest` must select the manifest check only.
        yield IteraManifest.from_parent(
            self,
            path=self.path / MANIFEST_FILE,
            name="itera",
            nodeid=node_id(self.session, self.path / MANIFEST_FILE),
        )


class ChecksFile(CampaignNode, pytest.File):
    """A file whose checks are items (manifest.json, or a plan before renting): it owns the
    Context they share, closed when the file's items are done."""

    context: Context
    _gc_paused_here = False

    @property
    def campaign_root(self) -> Path:
        return self.path.parent

    def setup(self) -> None:
        # The collector is paused while this file's items run one after the other (see
        # campaign.gc_paused: they read, judge and keep a few objects per listed file) and
        # resumed at its teardown, which pytest also runs before any other test it
        # interleaves: another test never runs with it paused.
        if gc.isenabled():
            gc.disable()
            self._gc_paused_here = True

    def teardown(self) -> None:
        context = getattr(self, "context", None)
        if context is not None:
            context.close()
        if self._gc_paused_here:
            self._gc_paused_here = False
            gc.enable()


class CheckItem(CampaignNode, pytest.Item):
    """One check on one target of a :class:`ChecksFile`: its failure is plain text built
    from the domain error; a plugin bug keeps its traceback."""

    def __init__(self, *, check: Check, target: str | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.check = check
        self.target = target

    @property
    def campaign_root(self) -> Path:
        return self.path.parent

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> str | TerminalRepr:
        if isinstance(excinfo.value, CheckFailed):
            return failure_text(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"[itera] {self.name}"


class IteraManifest(ChecksFile):
    """The campaign's checks, one item per check and target."""

    _root_text: str

    def collect(self) -> list[IteraCheckItem]:
        settings = self.config.stash[settings_key]
        checks = registered_checks(self.config, self.ihook, fast=settings.fast)
        # The folder's walk and the targets: a few objects per listed file (gc_paused).
        with gc_paused():
            self.context = make_context(self.campaign_root, settings, checks, self.config)
            # The items inherit the mark (`-m itera`) from here: pytest looks for marks on
            # every item several times per run, and an own mark is one more to walk each time.
            self.add_marker(MARKER)
            # One root string for every item (not a Path formatting per item).
            self._root_text = str(self.campaign_root)
            return [
                IteraCheckItem.from_parent(
                    self, name=item_name(check.id, target), check=check, target=target)
                for check in sorted(checks.values(), key=lambda c: (c.order, c.id))
                if check.scope != "plan"  # the plan gate's (--itera-plan), not a campaign's
                for target in self.context.targets(check)
            ]

class IteraCheckItem(CheckItem):
    """One check on one target of a closed campaign."""

    def __init__(self, *, check: Check, target: str | None, **kwargs: Any) -> None:
        super().__init__(check=check, target=target, **kwargs)
        root = getattr(self.parent, "_root_text", None) or str(self.campaign_root)
        self.user_properties += item_properties(root, check.id, target, check.scope)

    def runtest(self) -> None:
        assert isinstance(self.parent, IteraManifest)
        findings = self.parent.context.findings(self.check.id, self.target)
        # Facts travel on the report as plain data (the closure report, under xdist too).
        if self.check.reloads and self.target is not None:
            self.user_properties.append(
                (RELOADS_KEY, _reload_facts(self.parent.context, self.target)))
        if not findings:
            self._keep_evidence()
            return
        ctx, target = self.parent.context, self.target
        if ctx.grouped(self.check.id, target):
            assert target is not None
            # A folder item's report lists every finding of every file (it stands for them).
            self.user_properties.append((FINDINGS_KEY, [
                plain(FindingFacts.of(f, self.check.id)) for f in findings]))
            raise CheckFailed(self.check.id, target, findings,
                              ctx.failing_files(self.check.id, target),
                              len(ctx.members(self.check.id, target)))
        self.user_properties.append((FINDINGS_KEY, [
            plain(FindingFacts.of(f, self.check.id)) for f in findings[:FINDINGS_KEPT]]))
        raise CheckFailed(self.check.id, self.target, findings)

    def _keep_evidence(self) -> None:
        """What a passing item knows but does not fail on (a stopped run's diverged weights):
        on its report (-rA) and in the closure report as the item's message."""
        from pytest_itera.checks.artifacts import informational

        assert isinstance(self.parent, IteraManifest)
        notes = informational(self.parent.context, self.check.id, self.target)
        if notes:
            self.user_properties.append((EVIDENCE_KEY, list(notes)))
            self.add_report_section("call", "itera evidence", clean_block("\n".join(notes)))


# A folder item's message: the findings of its first failing files in full, then every other
# failing file by name (JUnit keeps only the message: each failing file is named in it).
FILES_IN_FULL = 20


def failure_text(error: CheckFailed) -> str:
    count = len(error.findings)
    label = item_name(error.check, error.target)
    head = f"{label}: {count} problem{'s' if count != 1 else ''}"
    if error.files is not None:
        return clean_block(f"{head} {_in_files(error.files, error.of)}")
    # Campaign data (file names, texts) never reaches the terminal with its control characters.
    return clean_block(f"{head}\n{render_all(error.findings)}")


def _in_files(files: tuple[tuple[str, tuple[Finding, ...]], ...], of: int) -> str:
    lines = [f"in {len(files)} of {of} files"]
    lines += [render_all(found) for _, found in files[:FILES_IN_FULL]]
    rest = files[FILES_IN_FULL:]
    if rest:
        lines.append(f"... and {len(rest)} more failing files (every finding is in the JSON "
                     "report):")
        lines += [f"  {path}: {found[0].message}" for path, found in rest]
    return "\n".join(lines)


def _reload_facts(ctx: Context, target: str) -> list[dict[str, Any]]:
    """What the reloads of this checkpoint or adapter found (memoised: the check asked the
    same questions), for a target the loader was handed."""
    from pytest_itera.checks.artifacts import located

    man = ctx.campaign.manifest
    if man is None or not located(ctx, target):
        return []
    asked: list[tuple[str, str | None]] = [
        (c.path, c.format) for c in man.checkpoints if c.path == target]
    asked += [(a.path, None) for a in man.adapters if a.path == target]
    sizes = ctx.memo("itera.sizes", lambda: _folder_sizes(man.files))
    return [plain(ReloadFacts.of(ctx.reload(path, fmt), sizes.get(path.rstrip("/"), 0)))
            for path, fmt in dict.fromkeys(asked)]


def _folder_sizes(files: Iterable[FileRecord]) -> dict[str, int]:
    """Bytes per listed file and per folder above it (a checkpoint may be a folder)."""
    sizes: dict[str, int] = {}
    for record in files:
        # The file's own key is its record's string (not a copy per listed file).
        key, size = record.path, record.bytes
        while True:
            sizes[key] = sizes.get(key, 0) + size
            if "/" not in key:
                break
            key = key.rpartition("/")[0]
    return sizes


def registered_checks(
    config: pytest.Config, hook: pluggy.HookRelay, *, fast: bool
) -> dict[str, Check]:
    checks: dict[str, Check] = {}
    for contributed in hook.pytest_itera_checks(config=config):
        for check in contributed:
            if check.id in checks:
                raise pytest.UsageError(f"pytest-itera: two checks are registered as {check.id!r}")
            checks[check.id] = check
    if fast:
        checks = {cid: c for cid, c in checks.items() if c.fast}
    return checks


def make_context(
    root: Path, settings: Settings, checks: Mapping[str, Check], config: pytest.Config,
    campaign: Campaign | None = None,  # a plan judged alone (--itera-plan) brings its own
) -> Context:
    patterns = [p for group in config.hook.pytest_itera_temp_patterns(config=config) for p in group]
    campaign = campaign or loaded_campaign(config, root)
    options = Options(
        fast=settings.fast,
        python=settings.python,
        timeout=settings.timeout,
        ignore=settings.ignore,
        temp_patterns=(*settings.temp_patterns, *patterns),
        plan_sha256=settings.plan_sha256,
        deviation_tolerance=settings.deviation_tolerance,
        plan_pins=(pins := settings.pins_for(root, campaign.id)),
        other_pins=() if pins else tuple(str(line.key) for line in settings.plan_pins),
        catalogue=catalogue_in_force(config),
        hourly_phrases=hourly_phrases(config),
        stop_rule_hook=_stop_rule_hook(config),
        metric_hook=_metric_hook(config),
    )
    context = Context(
        campaign,
        options,
        checks,
        reloader_factory=lambda: session_reloader(config),
        reload_hook=_reload_hook(config) if config.hook.pytest_itera_reload.get_hookimpls()
        else None,
        close_reloader=False,  # shared by every campaign of this process; closed at unconfigure
        group_files_above=settings.group_files_above,
    )
    # Also when -x stops the run before the manifest node is torn down: no read goes on.
    config.add_cleanup(context.close)
    return context


_reloader_key = pytest.StashKey["Reloader"]()


def session_reloader(config: pytest.Config) -> Reloader:
    """The process's one Reloader: one torch import per pytest process, not per campaign.

    Its interpreter and per-file timeout are --itera-python / --itera-timeout (or the ini twins).
    """
    reloader = config.stash.get(_reloader_key, None)
    if reloader is None:
        from pytest_itera.reload import Reloader

        settings = config.stash[settings_key]
        # A whole run hands its checkpoints over at once (pytest_collection_finish): they
        # load a few at a time. An xdist worker asks for one at a time: the workers are the
        # parallelism there.
        jobs = 1 if is_worker(config) else min(4, _cpus())
        reloader = Reloader(settings.python, timeout=settings.timeout, jobs=jobs)
        config.stash[_reloader_key] = reloader
        config.add_cleanup(reloader.close)
    return reloader


def selected_targets(
    session: pytest.Session, wanted: Callable[[Check], bool]
) -> dict[IteraManifest, list[str | None]]:
    """Per campaign, the targets of the selected items whose check is ``wanted``, in item
    order (None for a campaign-scoped check)."""
    out: dict[IteraManifest, list[str | None]] = {}
    for item in session.items:
        if isinstance(item, IteraCheckItem) and wanted(item.check):
            assert isinstance(item.parent, IteraManifest)
            out.setdefault(item.parent, []).append(item.target)
    return out


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


def start_reloads_early(config: pytest.Config) -> None:
    """At configure, before collection: when a campaign lists checkpoints or adapters and
    this process would reload them, start the reload server and probe its interpreter now.
    torch's import in the server is the longest single step of a run; started here it
    overlaps pytest's collection as well as the reads. Only for a whole run: with ``-k``,
    ``-m``, ``--lf``, ``--deselect`` or node ids, :func:`reload_ahead` starts the server once
    the selection is known, if it needs one; and it stops a server started here that a
    plugin's deselection made useless. Not on an xdist worker (it starts its server at its
    first reload) nor on the controller (it only probes).

    A ``-k`` or ``-m`` expression is evaluated here against the names the reloading items
    will have (``checkpoint-reloads[runs/a.pt]``, the campaign's folders, ``itera``): a
    run that selects them (``-k checkpoint-reloads``) starts early too, one that leaves
    them out (``-k "not checkpoint-reloads"``) does not. A wrong guess costs nothing but
    time: a server not needed is stopped, one not started is started after collection."""
    if is_worker(config) or getattr(config.option, "dist", "no") != "no":
        return
    option = config.option
    if (getattr(option, "lf", False) or getattr(option, "deselect", None)
            or any("::" in arg for arg in config.args)):
        return  # a chosen selection: reload_ahead starts the server if it needs one
    if not _needs_reloads(config):
        return
    if (option.keyword or option.markexpr) and not _may_select_reloads(config):
        return
    reloader = session_reloader(config)
    reloader.start()
    probe = _EarlyProbe(reloader)
    probe.start()
    config.stash[_early_probe_key] = probe


def _may_select_reloads(config: pytest.Config) -> bool:
    """Whether ``-k``/``-m`` would keep some reloading item, judged before collection from
    the names pytest matches them by (see :func:`start_reloads_early`). Never raises: an
    expression pytest will refuse, or a pytest whose expression API differs, is a no."""
    try:
        from _pytest.mark.expression import Expression

        keyword = Expression.compile(config.option.keyword) if config.option.keyword else None
        mark = Expression.compile(config.option.markexpr) if config.option.markexpr else None
    except Exception:
        return False
    reloading = [c.id for c in registered_checks(config, config.hook, fast=False).values()
                 if c.reloads]
    for root in config.stash[settings_key].campaigns:
        man = loaded_campaign(config, root).manifest
        if man is None:
            continue
        folders = {MARKER}
        try:
            folders.update(root.relative_to(config.rootpath).parts)
        except ValueError:
            folders.add(root.name)
        targets = [c.path for c in man.checkpoints] + [a.path for a in man.adapters]
        for name in (item_name(check, t) for check in reloading for t in targets):
            names = [n.lower() for n in (name, *folders)]

            def keyword_match(sub: str, /, **kwargs: object) -> bool:
                return not kwargs and any(sub.lower() in n for n in names)  # noqa: B023

            def mark_match(name: str, /, **kwargs: object) -> bool:
                return not kwargs and name == MARKER

            try:
                if ((keyword is None or keyword.evaluate(keyword_match))
                        and (mark is None or mark.evaluate(mark_match))):
                    return True
            except Exception:
                return False
    return False


def reload_ahead(session: pytest.Session) -> None:
    """As soon as the selection is known, and only if a selected item needs reloads: probe
    the reload interpreter (a wrong --itera-python is one usage error before any item runs;
    the probe reads torch's version without importing torch), start the reload server (its
    torch import then overlaps the items that hash and scan) and hand it every selected
    checkpoint at once: it loads them a few at a time. Not on an xdist worker: the controller
    probed, and a worker starts its server at its first reload (it may be sent none: every
    worker collects every item) and asks for one checkpoint at a time."""
    from pytest_itera.checks.artifacts import has_artifacts, located

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
    from pytest_itera.checks.artifacts import has_artifacts

    settings = config.stash.get(settings_key, None)
    if settings is None or settings.fast or config.option.collectonly:
        return False
    if not any(c.reloads for c in registered_checks(config, config.hook, fast=False).values()):
        return False  # the artifacts family is switched off (-p no:itera.artifacts)
    return any(has_artifacts(loaded_campaign(config, root)) for root in settings.campaigns)


def is_worker(config: pytest.Config) -> bool:
    """This process is a pytest-xdist worker (it runs the items it is sent)."""
    return hasattr(config, "workerinput")


def read_ahead(session: pytest.Session) -> None:
    """A whole run reads the files its selected items need a few at a time, ahead of the
    items (Context.read_ahead). Not on an xdist worker: it runs only the items it is sent,
    and the workers are the parallelism there."""
    config = session.config
    if is_worker(config) or config.option.collectonly:
        return
    wanted: dict[IteraManifest, list[str]] = {}
    for item in session.items:
        if isinstance(item, IteraCheckItem) and item.check.reads and item.target is not None:
            assert isinstance(item.parent, IteraManifest)
            # A folder item reads its files.
            wanted.setdefault(item.parent, []).extend(
                item.parent.context.members(item.check.id, item.target))
    for manifest, targets in wanted.items():
        manifest.context.read_ahead(targets, min(4, _cpus()))


def _cpus() -> int:
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1


def _stop_rule_hook(config: pytest.Config) -> StopRuleHook | None:
    """Implementations of pytest_itera_stop_rule judge stop rules before the built-ins."""
    caller = config.hook.pytest_itera_stop_rule
    if not caller.get_hookimpls():
        return None

    def ask(rule: StopRule, run: RunRecord, measurements: Measurements | Unreadable | None,
            campaign: Campaign) -> RuleVerdict | None:
        verdict: RuleVerdict | None = caller(rule=rule, run=run, measurements=measurements,
                                             campaign=campaign, config=config)
        return verdict

    return ask


def _metric_hook(config: pytest.Config) -> MetricHook | None:
    """Implementations of pytest_itera_metric compute the custom metric kinds of a /3 plan."""
    caller = config.hook.pytest_itera_metric
    if not caller.get_hookimpls():
        return None

    def ask(name: str) -> Callable[[Sequence[tuple[Any, Any]]], float] | None:
        function: Callable[[Sequence[tuple[Any, Any]]], float] | None = caller(
            name=name, config=config)
        return function

    return ask


def print_not_evaluated(terminalreporter: Any, config: pytest.Config) -> None:
    """Say which stop rules were not evaluated (kind 'other'): a rule never passes silently."""
    from pytest_itera.checks.evidence import not_evaluated

    settings = config.stash.get(settings_key, None)
    if settings is None or not settings.active or is_worker(config):
        return
    hooked = bool(config.hook.pytest_itera_stop_rule.get_hookimpls())
    for root in settings.campaigns:
        plan = loaded_campaign(config, root).plan
        if plan is None:
            continue
        for line in not_evaluated(plan):
            terminalreporter.write_line(
                f"{plan.campaign}: {line}"
                + (" unless a pytest_itera_stop_rule hook judged it" if hooked else
                   ": check it yourself, or judge it in a pytest_itera_stop_rule hook"),
                yellow=True)


def _reload_hook(config: pytest.Config) -> ReloadHook:
    """Implementations of pytest_itera_reload are asked before the built-in loader."""

    def ask(path: Path, display: str, claimed_format: str | None) -> ReloadResult | None:
        result: ReloadResult | None = config.hook.pytest_itera_reload(
            path=path, display=display, claimed_format=claimed_format, config=config
        )
        return result

    return ask


def node_id(session: pytest.Session, path: Path) -> str:
    """Node ids relative to the rootdir; outside it, the path as the user can type it.

    pytest's default would name an outside campaign's items plain
    "manifest.json::..." (pytest #11245), ambiguous with two campaigns.
    """
    if path.is_relative_to(session.config.rootpath):
        return path.relative_to(session.config.rootpath).as_posix()
    rel = os.path.relpath(path, session.config.invocation_params.dir)
    return Path(rel).as_posix() if not rel.startswith("../../..") else path.as_posix()
