"""Collection: a campaign folder becomes items ``<dir>/manifest.json::<check>[<target>]``.

One item per pair of the engine (:mod:`pytest_itera.checks.engine`), which also evaluates it and
writes its failure text; the items share the campaign's Context. When the reload server starts
is :mod:`pytest_itera.plugin.reloads`'s to decide."""

from __future__ import annotations

import dataclasses
import gc
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence, Set
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pluggy
import pytest

from pytest_itera.checks.closure import (
    ADVISORIES_KEY,
    EVIDENCE_KEY,
    FACTS_KEY,
    FINDINGS_KEPT,
    FINDINGS_KEY,
    RELOADS_KEY,
    WAIVER_KEY,
    FindingFacts,
    ReloadFacts,
    item_properties,
    plain,
)
from pytest_itera.checks.context import Check, Context
from pytest_itera.checks.engine import Outcome, evaluate, judge, pairs
from pytest_itera.checks.model import (
    MetricHook,
    ModelHook,
    ModelRecipe,
    Options,
    ReloadHook,
    StopRuleHook,
    item_name,
)
from pytest_itera.core.campaign import (
    MANIFEST_FILE,
    Campaign,
    FileRecord,
    RunRecord,
    StopRule,
    gc_paused,
    load_campaign,
)
from pytest_itera.core.findings import Finding, default_code, render_all, summary_line
from pytest_itera.plugin import head_start
from pytest_itera.plugin.options import (
    Settings,
    catalogue_in_force,
    controller_roots_key,
    hourly_phrases,
    settings_key,
    sources_key,
)
from pytest_itera.report import clean_block

if TYPE_CHECKING:
    from _pytest._code.code import TerminalRepr  # pytest's repr_failure type, not public

    from pytest_itera.checks.stop_rules import RuleVerdict
    from pytest_itera.checks.waivers import Waiver
    from pytest_itera.files.measurements import Measurements, Unreadable
    from pytest_itera.reload import Reloader, ReloadResult

MARKER = "itera"


class CheckFailed(Exception):
    """A check found problems in the campaign (not a plugin bug): its failed outcome, and
    what a waiver by finding code accepted of it (``note``)."""

    def __init__(self, outcome: Outcome, note: str = "") -> None:
        super().__init__(summary_line(outcome.findings))
        self.outcome = outcome
        self.note = note

    @property
    def message(self) -> str:
        return f"{self.outcome.message}\n{self.note}" if self.note else self.outcome.message


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
            return excinfo.value.message
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Path | str, int, str]:
        return self._url or self.path, 0, f"[itera] {self.name}"

    @cached_property
    def _url(self) -> str | None:
        """An s3:// campaign's file by its URL (never the local copy's path): where a failure
        and the -rs summary's not-judged items point (pytest's terminal shows it with one
        '/' after 's3:', as any path it prints)."""
        staged = self.config.stash.get(sources_key, {}).get(self.campaign_root)
        return None if staged is None else f"{staged.url}{self.path.name}"

    @cached_property
    def location(self) -> tuple[str, int | None, str]:
        """pytest's (path relative to the rootdir, line, name)."""
        if self._url is None:
            return super().location
        return self._url, 0, f"[itera] {self.name}"


class IteraManifest(ChecksFile):
    """The campaign's checks, one item per check and target."""

    _root_text: str
    _selected: frozenset[str] | None = None

    def selected_names(self) -> frozenset[str]:
        """The names of this campaign's items that the session runs (after ``-k``/``-m``)."""
        if self._selected is None:
            self._selected = frozenset(
                i.name for i in self.session.items if i.parent is self)
        return self._selected

    def collect(self) -> list[IteraCheckItem]:
        settings = self.config.stash[settings_key]
        checks = registered_checks(self.config, self.ihook, fast=settings.fast)
        # The folder's walk and the targets: a few objects per listed file (gc_paused).
        with gc_paused():
            self.context = make_context(self.campaign_root, settings, checks, self.config)
            # The closure report reuses its memoised reads (the evidence behind the verdict).
            self.config.stash.setdefault(contexts_key, {})[self.campaign_root] = self.context
            # The items inherit the mark (`-m itera`) from here: pytest looks for marks on
            # every item several times per run, and an own mark is one more to walk each time.
            self.add_marker(MARKER)
            # One root string for every item (not a Path formatting per item): the
            # controller's, where this worker reads a copy of its own (another host).
            self._root_text = str(self.config.stash.get(controller_roots_key, {}).get(
                self.campaign_root, self.campaign_root))
            return [
                IteraCheckItem.from_parent(
                    self, name=item_name(check.id, target), check=check, target=target)
                for check, target in pairs(self.context)
            ]


class IteraCheckItem(CheckItem):
    """One check on one target of a closed campaign."""

    def __init__(self, *, check: Check, target: str | None, **kwargs: Any) -> None:
        super().__init__(check=check, target=target, **kwargs)
        # The waivers with a code that match this item (the session sets them at collection).
        self.code_waivers: list[Waiver] = []
        root = getattr(self.parent, "_root_text", None) or str(self.campaign_root)
        self.user_properties += item_properties(root, check.id, target, check.scope)

    def runtest(self) -> None:
        assert isinstance(self.parent, IteraManifest)
        outcome = evaluate(self.parent.context, self.check, self.target)
        # Facts travel on the report as plain data (the closure report, under xdist too).
        if self.check.reloads and self.target is not None:
            self.user_properties.append(
                (RELOADS_KEY, _reload_facts(self.parent.context, self.target)))
        if self.check.facts is not None and outcome.not_judged is None:
            self.user_properties.append(
                (FACTS_KEY, self.check.facts(self.parent.context, self.target)))
        if outcome.advisories:
            self._keep_advisories(outcome.advisories)
        if not outcome.failed:
            self._keep_evidence()
            return
        if outcome.not_judged is not None and self._run_here(outcome.owners):
            # One cause, one failure: the item that owns it fails; this one says so once.
            # At the item's location, so that pytest's -rs summary folds them into one line.
            raise pytest.skip.Exception(outcome.not_judged, _use_item_location=True)
        waived = self._waived(outcome.findings)
        # A folder item's report lists every finding of every file (it stands for them).
        kept = outcome.findings if outcome.files is not None else \
            outcome.findings[:FINDINGS_KEPT]
        self.user_properties.append((FINDINGS_KEY, [
            plain(FindingFacts.of(f, self.check.id, waived=f in waived)) for f in kept]))
        if not waived:
            raise CheckFailed(outcome)
        waiver = waived[outcome.findings[0]] if len(waived) == len(outcome.findings) else None
        if waiver is not None:  # every finding accepted: the item is waived
            self.add_marker(pytest.mark.xfail(reason=waiver.xfail_reason(), strict=False))
            self.user_properties.append((WAIVER_KEY, waiver.as_facts()))
            raise CheckFailed(outcome, _waived_note(waived))
        raise CheckFailed(_without(outcome, waived), _waived_note(waived))

    def _waived(self, findings: Sequence[Finding]) -> dict[Finding, Waiver]:
        """The findings a waiver by code accepts, each with the first such waiver."""
        out: dict[Finding, Waiver] = {}
        for finding in findings:
            code = default_code(finding, self.check.id)
            found = next((w for w in self.code_waivers if w.waives(code)), None)
            if found is not None:
                out[finding] = found
        return out

    def _keep_advisories(self, advisories: Sequence[Finding]) -> None:
        """The readings of text that advised: on the report (the closure report's note
        under the verdict) and as a section of the item's report (-rA)."""
        self.user_properties.append((ADVISORIES_KEY, [
            plain(FindingFacts.of(a, self.check.id)) for a in advisories[:FINDINGS_KEPT]]))
        self.add_report_section("call", "itera advisories", clean_block(render_all(advisories)))

    def _run_here(self, names: tuple[str, ...]) -> bool:
        """Whether an item of each of these names is selected in this session (else the
        dependent item fails in its stead: a cause is never left unreported by ``-k``)."""
        assert isinstance(self.parent, IteraManifest)
        return bool(names) and set(names) <= self.parent.selected_names()

    def _keep_evidence(self) -> None:
        """What a passing item knows but does not fail on (a stopped run's diverged weights):
        on its report (-rA) and in the closure report as the item's message."""
        from pytest_itera.checks.artifacts.checkpoint_reloads import informational

        assert isinstance(self.parent, IteraManifest)
        notes = informational(self.parent.context, self.check.id, self.target)
        if notes:
            self.user_properties.append((EVIDENCE_KEY, list(notes)))
            self.add_report_section("call", "itera evidence", clean_block("\n".join(notes)))


def _without(outcome: Outcome, waived: Mapping[Finding, Waiver]) -> Outcome:
    """The outcome without the findings a waiver accepted (a folder item's files too)."""
    files = None if outcome.files is None else tuple(
        (path, kept) for path, found in outcome.files
        if (kept := tuple(f for f in found if f not in waived)))
    return dataclasses.replace(
        outcome, findings=tuple(f for f in outcome.findings if f not in waived), files=files)


def _waived_note(waived: Mapping[Finding, Waiver]) -> str:
    """What the waivers by code accepted of an item's findings."""
    by: dict[Waiver, list[str]] = {}
    for finding, waiver in waived.items():
        by.setdefault(waiver, []).append(finding.code or "")
    return "\n".join(
        f"waived: {len(codes)} finding{'s' if len(codes) != 1 else ''} "
        f"({', '.join(sorted(set(filter(None, codes))))}) — {waiver.xfail_reason()}"
        for waiver, codes in by.items())


def _reload_facts(ctx: Context, target: str) -> list[dict[str, Any]]:
    """What the reloads of this checkpoint or adapter found (memoised: the check asked the
    same questions), for a target the loader was handed."""
    from pytest_itera.checks.artifacts.reloading import located

    man = ctx.campaign.manifest
    if man is None or not located(ctx, target):
        return []
    asked: list[tuple[str, str | None]] = [
        (c.path, c.format) for c in man.checkpoints if c.path == target]
    asked += [(a.path, None) for a in man.adapters if a.path == target]
    refs = [r.path for r in man.checkpoints] + [a.path for a in man.adapters]
    sizes = ctx.memo("itera.sizes", lambda: _folder_sizes(
        man.files, {path.rstrip("/") for path in refs}))
    return [plain(ReloadFacts.of(ctx.reload(path, fmt), sizes.get(path.rstrip("/"), 0)))
            for path, fmt in dict.fromkeys(asked)]


def _folder_sizes(files: Iterable[FileRecord], wanted: Set[str] | None = None) -> dict[str, int]:
    """Bytes per listed file and per folder above it (a checkpoint may be a folder); with
    ``wanted``, of those paths only: one prefix test per listed file (100,000 of them)."""
    if wanted is not None:
        return _sizes_of(files, wanted)
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


def _sizes_of(files: Iterable[FileRecord], wanted: Set[str]) -> dict[str, int]:
    sizes = dict.fromkeys(wanted, 0)
    prefixes = tuple(f"{path}/" for path in wanted)
    for record in files:
        path = record.path
        if path in sizes:
            sizes[path] += record.bytes
        if path.startswith(prefixes):
            for folder in wanted:
                if path.startswith(f"{folder}/"):
                    sizes[folder] += record.bytes
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


# Campaigns loaded in this process, by root: see loaded_campaign().
loaded_key = pytest.StashKey[dict[Path, Campaign]]()


def loaded_campaign(config: pytest.Config, root: Path) -> Campaign:
    """The campaign at ``root``, loaded and validated once per pytest process and shared by
    the interpreter probe, collection, the fixture and the closure report."""
    loaded = config.stash.setdefault(loaded_key, {})
    if root not in loaded:
        with gc_paused():
            loaded[root] = load_campaign(root)
    return loaded[root]


# Campaign root -> the Context its manifest node collected with (this process's).
contexts_key = pytest.StashKey[dict[Path, Context]]()


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
        model_hook=_model_hook(config),
        strict_text=settings.strict_text,
        journal_pins=settings.journal_pins,
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
        # The seal reuses the digests the checks computed (report.seal.write).
        keep_digests=settings.seal is not None,
        stored=config.stash.get(sources_key, {}).get(root),  # an s3:// campaign's copy
        read_early=_reads_everything(config),
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
        jobs = 1 if is_worker(config) else head_start.jobs()
        # The server started at the plugin's import, when it is this one.
        reloader = head_start.take(settings.python, jobs) or Reloader(settings.python, jobs=jobs)
        reloader.timeout = settings.timeout
        config.stash[_reloader_key] = reloader
        config.add_cleanup(reloader.close)
    return reloader


def selected_pairs(
    session: pytest.Session, wanted: Callable[[Check], bool]
) -> dict[IteraManifest, list[tuple[str, str | None]]]:
    """Per campaign, the (check id, target) of the selected items whose check is ``wanted``,
    in item order."""
    out: dict[IteraManifest, list[tuple[str, str | None]]] = {}
    for item in session.items:
        if isinstance(item, IteraCheckItem) and wanted(item.check):
            assert isinstance(item.parent, IteraManifest)
            out.setdefault(item.parent, []).append((item.check.id, item.target))
    return out


def selected_targets(
    session: pytest.Session, wanted: Callable[[Check], bool]
) -> dict[IteraManifest, list[str | None]]:
    """Per campaign, the targets of the selected items whose check is ``wanted``, in item
    order (None for a campaign-scoped check)."""
    return {manifest: [target for _, target in pairs]
            for manifest, pairs in selected_pairs(session, wanted).items()}


def whole_run(config: pytest.Config) -> bool:
    """This process runs every item of the campaigns (no xdist, no selection of pytest's)."""
    if is_worker(config) or getattr(config.option, "dist", "no") != "no":
        return False
    option = config.option
    return not (option.keyword or option.markexpr or getattr(option, "lf", False)
                or getattr(option, "deselect", None) or any("::" in arg for arg in config.args))


def _reads_everything(config: pytest.Config) -> bool:
    """A whole run that runs its items (:func:`whole_run`, not --collect-only) on two cores or
    more: every file of the folder is read, so a helper process may start reading the small
    ones as soon as the walk is done (issue 29)."""
    return whole_run(config) and not config.option.collectonly and head_start.cpus() >= 2


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
                judge(item.parent.context).members(item.check.id, item.target))
    for manifest, targets in wanted.items():
        manifest.context.read_ahead(targets, head_start.jobs())


def serial_advice(workers: int, cores: int) -> str | None:
    """One line of advice when ``-n workers`` cannot be faster than a serial run: the checks
    are CPU-bound (hashing, reloads), so workers beyond the cores, or on two cores or fewer
    (where the reload server and the controller already take them), only compete."""
    if workers < 2 or (workers <= cores and cores > 2):
        return None
    return (f"pytest-itera: -n {workers} on {cores} core{'s' if cores != 1 else ''}: the checks "
            "are CPU-bound, so a serial run (without -n) is faster here")


def print_serial_advice(terminalreporter: Any, config: pytest.Config) -> None:
    """Say so, once, on the controller of an xdist run that cannot pay off."""
    workers = getattr(config.option, "numprocesses", None)
    if not isinstance(workers, int) or is_worker(config) or config.option.collectonly:
        return
    if config.get_verbosity() < -1:  # -qq: the quietest output has no summary, no advice
        return
    line = serial_advice(workers, head_start.cpus())
    if line is not None:
        terminalreporter.write_line(line, yellow=True)



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


def _model_hook(config: pytest.Config) -> ModelHook | None:
    """Implementations of pytest_itera_model build runs' models to re-predict with."""
    caller = config.hook.pytest_itera_model
    if not caller.get_hookimpls():
        return None

    def ask(run: RunRecord, campaign: Campaign) -> ModelRecipe | None:
        recipe: ModelRecipe | None = caller(run=run, campaign=campaign, config=config)
        return recipe

    return ask


def print_not_evaluated(terminalreporter: Any, config: pytest.Config) -> None:
    """Say which stop rules were not evaluated (kind 'other'): a rule never passes silently."""
    from pytest_itera.checks.evidence.stop_rules_applied import not_evaluated

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
    "manifest.json::..." (pytest #11245), ambiguous with two campaigns. An s3:// campaign's
    by its URL: its local copy is the plugin's business (the same on every xdist worker).
    """
    for root, staged in session.config.stash.get(sources_key, {}).items():
        if path.is_relative_to(root):
            return staged.url + path.relative_to(root).as_posix()
    if path.is_relative_to(session.config.rootpath):
        return path.relative_to(session.config.rootpath).as_posix()
    rel = os.path.relpath(path, session.config.invocation_params.dir)
    return Path(rel).as_posix() if not rel.startswith("../../..") else path.as_posix()
