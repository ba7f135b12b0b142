"""The one engine: the (check, target) pairs of a folder in item order, each evaluated to an
:class:`Outcome`, and the one failure text. No pytest import.

Every front end goes through here: the plugin's items (one per pair, ``plugin/collect.py``),
the plan gate's items (``plugin/collect_plan.py``) and the in-process verdict
(``report/verify.py``: ``rec.check()``, ``close()``, ``python -m pytest_itera check``). So
the pairs, their order and their messages are the same whichever runs them. What a check
sees and the memoised evaluation itself (a check may consult another's findings) are the
:class:`~pytest_itera.checks.context.Context`'s.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
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
from pytest_itera.core.findings import Finding, render_all
from pytest_itera.core.text import clean_block
from pytest_itera.files.measurements import Unreadable
from pytest_itera.files.source import CAP_OPTION

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
    return [(check, target) for check in in_order(chosen) for target in context.targets(check)]


def evaluate(context: Context, check: Check, target: str | None) -> Outcome:
    """One check on one target (computed once per Context: :meth:`Context.findings`)."""
    context.targets(check)  # listed first (memoised): a folder target exists once they are
    findings = context.findings(check.id, target)
    advisories = context.advisories(check.id, target)
    if target is not None and context.grouped(check.id, target):
        return Outcome(check.id, target, check.scope, findings,
                       context.failing_files(check.id, target),
                       len(context.members(check.id, target)), advisories=advisories)
    not_judged, owners = _not_judged(context, check, target, findings)
    return Outcome(check.id, target, check.scope, findings, not_judged=not_judged,
                   owners=owners, advisories=advisories)


# The checks that own a cause others depend on: a listed file's absence (files-intact), a
# run's measurements file that breaks the format (measurements-agree). The checks that read
# the file are not judged while it is so.
OWNS_FILES = "files-intact"
OWNS_MEASUREMENTS = "measurements-agree"
OWNS_RELOADS, OWNS_ADAPTERS = "checkpoint-reloads", "adapter-pinned"
_PATHS = re.compile(r"[^\s'\"(),;:?]+")


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
    if check.id == OWNS_FILES and context.stored is not None:
        # Its bytes were streamed: a checkpoint left in the store is judged by them here.
        causes = {p: c for p, c in causes.items() if c[0] not in (OWNS_RELOADS, OWNS_ADAPTERS)}
    if not causes:
        return None, ()
    named: dict[str, tuple[str, str]] = {}  # path -> (owner item, what is wrong with it)
    me = item_name(check.id, target)
    for finding in findings:
        text = " ".join(filter(None, (finding.where, finding.message, finding.found)))
        paths = {p: causes[p] for p in _PATHS.findall(text)
                 if p in causes and item_name(*causes[p][:2]) != me}
        if not paths:
            return None, ()  # a finding of its own: the item fails
        for path, (owner, owned, why) in paths.items():
            name = item_name(owner, owned)
            if name in seen or name == me:
                return None, ()  # a cycle: nobody else owns it
            above = _not_judged(context, context.checks[owner], owned,
                                context.findings(owner, owned), seen | {me})
            if above[0] is not None:
                return above
            named[path] = (name, why)
    (first, (owner, why)), *others = named.items()
    more = f" and {len(others)} more" if others else ""
    return (f"{NOT_JUDGED} {owner} failed ({first} {why}{more})",
            tuple(dict.fromkeys(o for o, _ in named.values())))


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
            targets = frozenset(context.targets(context.checks[OWNS_FILES]))
            # An s3:// object the store would not give is absent from the copy too: its words.
            unreadable = context.stored.unreadable() if context.stored is not None else {}
            for f in man.files:
                why = unreadable.get(f.path)
                if why is not None or context.entry(f.path) is None:
                    target = f.path if f.path in targets else folder_group(f.path)
                    out[f.path] = (OWNS_FILES, target, why or "is missing")
        if context.stored is not None:
            out.update(_left_in_store(context))
        if OWNS_MEASUREMENTS in context.checks:
            targets = frozenset(context.targets(context.checks[OWNS_MEASUREMENTS]))
            for run in man.runs:
                path = run.measurements
                if path is None or path in out or run.id not in targets \
                        or context.entry(path) is None:
                    continue
                if isinstance(context.measurements(path), Unreadable):
                    out.setdefault(path, (OWNS_MEASUREMENTS, run.id, "is not usable"))
        return out

    return context.memo("run.causes", compute)


def _left_in_store(context: Context) -> dict[str, tuple[str, str, str]]:
    """An s3:// checkpoint the cache cap left in the store: its reload item owns it (it
    fails, "cannot prove ... reloads"); what else reads it (a scan, a resume check) is not
    judged. Keyed by the checkpoint's path and by each file of it."""
    stored, man = context.stored, context.campaign.manifest
    if stored is None or man is None:
        return {}
    out: dict[str, tuple[str, str, str]] = {}
    why = f"was left in the store (over {CAP_OPTION})"
    for owner, records in ((OWNS_RELOADS, man.checkpoints), (OWNS_ADAPTERS, man.adapters)):
        if owner not in context.checks:
            continue
        for record in records:
            if stored.over_cap(record.path) is None:
                continue
            folder = record.path.strip("/") + "/"
            for path in (record.path, *(k for k in stored.left_out() if k.startswith(folder))):
                out.setdefault(path, (owner, record.path, why))
    return out


def outcomes(context: Context, checks: Iterable[Check] | None = None) -> Iterator[Outcome]:
    """Every pair of :func:`pairs`, evaluated, in item order."""
    for check, target in pairs(context, checks):
        yield evaluate(context, check, target)
