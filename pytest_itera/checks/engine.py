"""The one engine: the (check, target) pairs of a folder in item order, each evaluated to an
:class:`Outcome`, and the one failure text. No pytest import.

Every front end goes through here: the plugin's items (one per pair, ``plugin/collect.py``),
the plan gate's items (``plugin/collect_plan.py``) and the in-process verdict
(``report/verify.py``: ``rec.check()``, ``close()``, ``python -m pytest_itera check``). So
the pairs, their order and their messages are the same whichever runs them. What a check
sees is the :class:`~pytest_itera.checks.context.Context` (the campaign's facts); each
check/target's findings, computed once, and the targets grouped by folder are the engine's
(:class:`Judge`, one per Context: :func:`judge`).
"""

from __future__ import annotations

import bisect
import contextlib
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from pytest_itera.checks.context import (
    NOT_JUDGED,
    Check,
    Context,
    blocked_by_contract,
    folder_group,
    in_order,
)
from pytest_itera.checks.model import Scope, item_name
from pytest_itera.core.campaign import MANIFEST_FILE, PLAN_FILE
from pytest_itera.core.findings import Finding, render_all, split
from pytest_itera.core.text import clean_block
from pytest_itera.files.measurements import Unreadable

__all__ = ["FILES_IN_FULL", "OWNS_FILES", "OWNS_MEASUREMENTS", "Outcome", "evaluate", "in_order",
           "outcomes", "pairs"]

# A folder target's message: the findings of its first failing files in full, then every other
# failing file by name (JUnit keeps only the message: each failing file is named in it).
FILES_IN_FULL = 20


@dataclass(frozen=True)
class Outcome:
    """What one check found on one target: no findings means it passed."""

    check: str
    target: str | None  # None: a campaign-scoped check (one item)
    scope: Scope
    findings: tuple[Finding, ...] = ()
    # A folder target (one item for many files, Context.grouped): its failing files in file
    # order, each with its findings, and how many files it stands for. None for any other.
    files: tuple[tuple[str, tuple[Finding, ...]], ...] | None = None
    of: int = 0
    # One cause, one finding, on the check that owns it: a check that failed only because
    # another did (the manifest did not load; a listed file it reads is missing) says so
    # once, "not judged: <check> failed", and is not counted as a failure of its own when
    # that item runs too. ``owners``: the items of those checks (their names).
    not_judged: str | None = None
    owners: tuple[str, ...] = ()
    # The readings of human text that advise and do not decide (--itera-strict-text: none,
    # they are findings).
    advisories: tuple[Finding, ...] = ()

    @property
    def name(self) -> str:
        """The item's name, ``check[target]`` (:func:`~pytest_itera.checks.model.item_name`)."""
        return item_name(self.check, self.target)

    @property
    def failed(self) -> bool:
        return bool(self.findings)

    @property
    def message(self) -> str:
        """The failure text every front end prints ("" when the check passed): the item's
        name and how many problems, then each finding; for a folder target, the first
        :data:`FILES_IN_FULL` failing files in full and the others by name. Campaign data
        (file names, texts) never reaches a terminal with its control characters."""
        if not self.findings:
            return ""
        count = len(self.findings)
        head = f"{self.name}: {count} problem{'s' if count != 1 else ''}"
        if self.files is not None:
            return clean_block(f"{head} {_in_files(self.files, self.of)}")
        return clean_block(f"{head}\n{render_all(self.findings)}")


def _in_files(files: tuple[tuple[str, tuple[Finding, ...]], ...], of: int) -> str:
    lines = [f"in {len(files)} of {of} files"]
    lines += [render_all(found) for _, found in files[:FILES_IN_FULL]]
    rest = files[FILES_IN_FULL:]
    if rest:
        lines.append(f"... and {len(rest)} more failing files (every finding is in the JSON "
                     "report):")
        lines += [f"  {path}: {found[0].message}" for path, found in rest]
    return "\n".join(lines)


class _Later(BaseException):
    """A check computed while a verdict is awaited (:meth:`Judge.work_until`) asked for
    another verdict not in yet: it is left to its item. A BaseException, so that no
    ``except Exception`` of a check's takes it for a failure of the check."""


class Judge:
    """The engine's verdicts on one campaign (one per :class:`Context`, :func:`judge`): each
    check/target is evaluated at most once, so a check may consult another check's verdict
    (the budget counts runs that passed their own checks) without redoing work; a per-file
    check's targets are listed and grouped by folder here (``group_files_above``)."""

    def __init__(self, context: Context) -> None:
        self.context = context
        self.checks = context.checks
        self._lock = threading.RLock()
        # Findings to compute while a verdict handed over ahead is awaited (work_while_waiting).
        self._idle: Iterator[tuple[str, str | None]] | None = None
        self._idling = False
        self._findings: dict[tuple[str, str | None], tuple[Finding, ...]] = {}
        # The advisories beside them (readings of human text that do not decide).
        self._advisories: dict[tuple[str, str | None], tuple[Finding, ...]] = {}
        self._by_run: dict[str, list[tuple[str, str]]] | None = None
        self._targets: dict[str, tuple[str, ...]] = {}
        # (check id, group target) -> its files, sorted; only for checks that were grouped.
        self._members: dict[tuple[str, str], tuple[str, ...]] = {}
        # (check id, group target) -> (file, its findings) for each failing file, in order.
        self._failing: dict[tuple[str, str], tuple[tuple[str, tuple[Finding, ...]], ...]] = {}
        context.verdicts = self
        context.while_waiting = self.work_until

    def work_while_waiting(self, pairs: Iterable[tuple[str, str | None]]) -> None:
        """While a checkpoint's verdict, handed over ahead (:meth:`Context.reload_ahead`), is
        not in, compute these (check id, target) findings, in order: the later items' that reload
        nothing. pytest runs items one at a time; those would otherwise run only after the
        reload items that wait for the server's torch import (issue 29). Each is computed
        once either way (:meth:`findings`), so an item's outcome is the same."""
        self._idle = iter(list(pairs))

    def work_until(self, ready: Callable[[], bool]) -> None:
        if self._idle is None:
            return  # nothing to do
        if self._idling:  # a check computed meanwhile asks for a verdict itself
            if not ready():
                raise _Later  # its item computes it, after the verdict: on to the next
            return
        self._idling = True
        try:
            while not ready() and (pair := next(self._idle, None)) is not None:
                if pair[0] in self.checks:
                    # A check that fails to compute is left to its item, which says why; one
                    # that needs a verdict not in yet keeps what it memoised on the way.
                    with contextlib.suppress(Exception, _Later):
                        self.findings(*pair)
        finally:
            self._idling = False

    def findings(self, check_id: str, target: str | None = None) -> tuple[Finding, ...]:
        """The findings of one check for one target that decide (computed once): its
        advisories are :meth:`advisories`' (under --itera-strict-text they decide too)."""
        key = (check_id, target)
        with self._lock:
            if key not in self._findings:
                found = self._evaluate(self.checks[check_id], target)
                strict = self.context.options.strict_text
                self._findings[key], advised = split(found, strict_text=strict)
                # A group target's were kept by failing_files, file by file.
                self._advisories[key] = self._advisories.get(key, ()) + advised
            return self._findings[key]

    def advisories(self, check_id: str, target: str | None = None) -> tuple[Finding, ...]:
        """The readings of human text one check made on one target that advise and do not
        decide (empty under --itera-strict-text: they are findings then)."""
        self.findings(check_id, target)
        return self._advisories.get((check_id, target), ())

    def _evaluate(self, check: Check, target: str | None) -> Iterable[Finding]:
        blocked = blocked_by_contract(self.context.campaign, check)
        if blocked is not None:
            return (blocked,)
        if target is not None and (check.id, target) in self._members:
            return [f for _, found in self.failing_files(check.id, target) for f in found]
        return check.run(self.context, target)

    def members(self, check_id: str, target: str) -> tuple[str, ...]:
        """The files a target stands for: a group target's files, else the target itself."""
        return self._members.get((check_id, target), (target,))

    def grouped(self, check_id: str, target: str | None) -> bool:
        return target is not None and (check_id, target) in self._members

    def failing_files(
        self, check_id: str, target: str
    ) -> tuple[tuple[str, tuple[Finding, ...]], ...]:
        """A group target's failing files, each with its findings, in file order (computed
        once; the findings of the files that pass are not kept)."""
        key = (check_id, target)
        with self._lock:
            if key not in self._failing:
                check = self.checks[check_id]
                members: Iterable[str] = self.members(check_id, target)
                if check.suspects is not None:
                    members = check.suspects(self.context, tuple(members))
                strict = self.context.options.strict_text
                found = [(m, split(check.run(self.context, m), strict_text=strict))
                         for m in members]
                self._failing[key] = tuple((m, f) for m, (f, _) in found if f)
                self._advisories[key] = tuple(a for _, (_, advised) in found for a in advised)
            return self._failing[key]

    def run_failures(self, run_id: str) -> list[tuple[str, str]]:
        """(check, target) pairs that fail for one run's own targets.

        A run passed its checks when this is empty. Evaluated here, with the
        same pure functions the items run, so the verdict is the same with or
        without pytest-xdist and whatever ``-k`` selected.
        """
        return [(c, t) for c, t in self._run_targets().get(run_id, ()) if self.findings(c, t)]

    def _run_targets(self) -> dict[str, list[tuple[str, str]]]:
        """Run id -> its (check, target) pairs, indexed once per Context."""
        with self._lock:
            if self._by_run is None:
                self._by_run = {}
                for check in in_order(self.checks.values()):
                    if check.scope == "campaign" or check.targets is None:
                        continue
                    for target in self.targets(check):
                        if target is None:
                            continue
                        for run_id in self.runs_of(check, target):
                            self._by_run.setdefault(run_id, []).append((check.id, target))
            return self._by_run

    def runs_of(self, check: Check, target: str) -> set[str]:
        """The runs a target belongs to (see ``Manifest.owners``)."""
        man = self.context.campaign.manifest
        return set() if man is None else man.owners(check.scope, target)

    def targets(self, check: Check) -> Sequence[str | None]:
        """The item targets of a check, sorted; [None] for a campaign-scoped check."""
        if check.targets is None or blocked_by_contract(self.context.campaign, check) is not None:
            # A check whose targets cannot be listed still gets one item, which
            # fails saying why: a broken manifest never silently drops checks.
            return (None,)
        with self._lock:
            if check.id not in self._targets:
                targets = sorted(set(check.targets(self.context)))
                above = self.context.group_above
                if check.scope == "file" and above is not None and len(targets) > above:
                    targets = self._group(check, targets)
                self._targets[check.id] = tuple(targets)
            return self._targets[check.id]

    def _group(self, check: Check, targets: list[str]) -> list[str]:
        """One target per folder (``folder_group``) for the files that belong to exactly the
        runs their folder does; a file a run names itself (its predictions, config,
        measurements, a checkpoint file) keeps its own target, so a group belongs to the runs
        of every file it holds and the runs table and ``run_failures`` stay exact."""
        members: dict[str, list[str]] = {}
        alone: list[str] = []
        owners: dict[str, set[str]] = {}
        man = self.context.campaign.manifest
        named = frozenset() if man is None else man.named
        for target in targets:
            group = folder_group(target)
            if group != target and target not in named and group not in named:
                # Neither is named by a record: both belong to the runs of their folder (two
                # lookups instead of two sets of owners per file; 100,000 files, issue 29).
                members.setdefault(group, []).append(target)
                continue
            if group not in owners:
                owners[group] = self.runs_of(check, group)
            if group != target and self.runs_of(check, target) == owners[group]:
                members.setdefault(group, []).append(target)
            else:
                alone.append(target)
        clash = set(alone) & members.keys()  # a file literally named "<folder>/*"
        for group in sorted(members):
            if group in clash:
                alone += members.pop(group)
            else:
                self._members[(check.id, group)] = tuple(members[group])
        return sorted({*alone, *members})


def judge(context: Context) -> Judge:
    """The engine's verdicts on a Context, made on first use."""
    found = context.engine
    return found if isinstance(found, Judge) else Judge(context)


def pairs(
    context: Context, checks: Iterable[Check] | None = None
) -> list[tuple[Check, str | None]]:
    """The (check, target) pairs, one item each, in item order: the checks by order then id
    (:func:`~pytest_itera.checks.context.in_order`), each with its targets as
    :meth:`Context.targets` lists them (sorted; one None for a campaign-scoped check).

    By default a closed campaign's: every check of the context but the plan gate's (scope
    "plan": those judge a plan before renting, ``--itera-plan``)."""
    chosen = checks if checks is not None else (
        c for c in context.checks.values() if c.scope != "plan")
    verdicts = judge(context)
    return [(check, target) for check in in_order(chosen) for target in verdicts.targets(check)]


def evaluate(context: Context, check: Check, target: str | None) -> Outcome:
    """One check on one target (computed once per Context: :meth:`Context.findings`)."""
    verdicts = judge(context)
    verdicts.targets(check)  # listed first (memoised): a folder target exists once they are
    findings = verdicts.findings(check.id, target)
    advisories = verdicts.advisories(check.id, target)
    if target is not None and verdicts.grouped(check.id, target):
        return Outcome(check.id, target, check.scope, findings,
                       verdicts.failing_files(check.id, target),
                       len(verdicts.members(check.id, target)), advisories=advisories)
    not_judged, owners = _not_judged(context, check, target, findings)
    return Outcome(check.id, target, check.scope, findings, not_judged=not_judged,
                   owners=owners, advisories=advisories)


# The checks that own a cause others depend on: a listed file's absence (files-intact), a
# run's measurements file that breaks the format (measurements-agree). The checks that read
# the file are not judged while it is so.
OWNS_FILES = "files-intact"
OWNS_MEASUREMENTS = "measurements-agree"


def _not_judged(context: Context, check: Check, target: str | None,
                findings: tuple[Finding, ...],
                seen: frozenset[str] = frozenset()) -> tuple[str | None, tuple[str, ...]]:
    """Why these findings are another check's cause, and that check's items; (None, ())
    when they are this check's own. An owner that is itself not judged hands on its own
    cause (a file that moved with its folder: the folder's first file owns it)."""
    if not findings:
        return None, ()
    if blocked_by_contract(context.campaign, check) is not None:
        # The contract check owns it; without one registered, the item says it itself.
        return (findings[0].message, ("manifest",)) if "manifest" in context.checks \
            else (None, ())
    causes = _causes(context)
    if not causes:
        return None, ()
    named: dict[str, tuple[str, str]] = {}  # path -> (owner item, what is wrong with it)
    me = item_name(check.id, target)
    for finding in findings:
        paths = {p: causes[p] for p in _within(context, _about(context, finding), causes)
                 if item_name(*causes[p][:2]) != me}
        if not paths:
            return None, ()  # a finding of its own: the item fails
        for path, (owner, owned, why) in paths.items():
            name = item_name(owner, owned)
            if name in seen or name == me:
                return None, ()  # a cycle: nobody else owns it
            above = _not_judged(context, context.checks[owner], owned,
                                judge(context).findings(owner, owned), seen | {me})
            if above[0] is not None:
                return above
            named[path] = (name, why)
    (first, (owner, why)), *others = named.items()
    more = f" and {len(others)} more" if others else ""
    return (f"{NOT_JUDGED} {owner} failed ({first} {why}{more})",
            tuple(dict.fromkeys(o for o, _ in named.values())))


_PLACE = re.compile(r"(?P<file>[^\s:]+)(?::\d+(?::\d+)?)? \$(?P<path>(?:\.[\w-]+|\[\d+\])*)$")
_STEP = re.compile(r"\.([\w-]+)|\[(\d+)\]")


def _about(context: Context, finding: Finding) -> tuple[str, ...]:
    """The files a finding is about: its subjects; else the file its ``where`` places it in,
    and, when that place is a field of plan.json or manifest.json that names a file
    (``manifest.json $.runs[0].predictions``), the file it names: read from the document's
    data, never from the message."""
    about = finding.about()
    if finding.subjects or finding.where is None:
        return about
    place = _PLACE.fullmatch(finding.where)
    if place is None:
        return about
    data = {PLAN_FILE: context.campaign.plan_data,
            MANIFEST_FILE: context.campaign.manifest_data}.get(place["file"])
    for name, index in _STEP.findall(place["path"]):
        if name and isinstance(data, dict):
            data = data.get(name)
        elif index and isinstance(data, list) and int(index) < len(data):
            data = data[int(index)]
        else:
            return about
    if isinstance(data, dict):  # a record: the file or folder it names
        data = data.get("path")
    return (*about, data) if isinstance(data, str) else about


def _within(context: Context, about: Iterable[str], causes: Mapping[str, object]) -> list[str]:
    """The causes among the paths a finding is about, a folder of the walk standing for the
    files in it (a sharded checkpoint's folder is about its missing shard; a folder missing
    as a whole is its own cause): found by bisection in the sorted
    causes, so a finding costs a lookup per path, not a pass over every cause."""
    ordered: list[str] = context.memo("engine:cause-paths", lambda: sorted(_causes(context)))
    found = []
    for path in dict.fromkeys(about):
        if path in causes:
            found.append(path)
            continue
        entry = context.entry(path.rstrip("/"))
        if entry is None or entry.kind != "dir":
            continue  # a file, or a folder gone as a whole: the finding's own cause
        folder = f"{path.rstrip('/')}/"
        i = bisect.bisect_left(ordered, folder)
        while i < len(ordered) and ordered[i].startswith(folder):
            if ordered[i] in causes:  # the causes of this check (a stored campaign's fewer)
                found.append(ordered[i])
            i += 1
    return found


def _causes(context: Context) -> dict[str, tuple[str, str, str]]:
    """Path -> (the check that owns what is wrong with it, its target, what): the listed
    files absent from the folder (the walk only, no read), and the runs' measurements files
    that are there but break the format (read once: the checks read them anyway)."""
    def compute() -> dict[str, tuple[str, str, str]]:
        man = context.campaign.manifest
        if man is None:
            return {}
        out: dict[str, tuple[str, str, str]] = {}
        if OWNS_FILES in context.checks:
            # Each file's own item, or its folder's when files-intact has one per folder.
            targets = frozenset(judge(context).targets(context.checks[OWNS_FILES]))
            # An s3:// object the store would not give is absent from the copy too: its words.
            unreadable = context.stored.unreadable() if context.stored is not None else {}
            for f in man.files:
                why = unreadable.get(f.path)
                if why is not None or context.entry(f.path) is None:
                    target = f.path if f.path in targets else folder_group(f.path)
                    out[f.path] = (OWNS_FILES, target, why or "is missing")
        if OWNS_MEASUREMENTS in context.checks:
            targets = frozenset(judge(context).targets(context.checks[OWNS_MEASUREMENTS]))
            for run in man.runs:
                path = run.measurements
                if path is None or path in out or run.id not in targets \
                        or context.entry(path) is None:
                    continue
                if isinstance(context.measurements(path), Unreadable):
                    out.setdefault(path, (OWNS_MEASUREMENTS, run.id, "is not usable"))
        return out

    return context.memo("run.causes", compute)


def outcomes(context: Context, checks: Iterable[Check] | None = None) -> Iterator[Outcome]:
    """Every pair of :func:`pairs`, evaluated, in item order."""
    for check, target in pairs(context, checks):
        yield evaluate(context, check, target)
