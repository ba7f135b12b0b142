"""Rule tests without a pytest session: the checks of ``-k EXPR`` run in this process.

A test of a rule (tests/checks/) asks what the plugin's items say about a campaign; the
pytest session around them (collection, xdist, the terminal) cannot change that answer and
costs ~1 s a run. :func:`judge` evaluates the same :class:`~pytest_itera.checks.Check`
functions over a :class:`~pytest_itera.checks.Context` built as the plugin builds it with
its default settings (every built-in family registered, items in the plugin's order, ``-k``
matched as pytest matches it), and writes what pytest's terminal would show of them: the
failures (the plugin's own failure text), ``-rA``'s passes with their evidence, the short
summary and the outcome counts, as a :class:`pytest.RunResult` the tests read as before.

What it does not show is pytest-side (the ``pytest-itera`` verdict section, the stop rules
left unevaluated, usage errors): :meth:`tests.runner.Itera.in_process` sends a call that
could depend on them to a real session, as it does any call with other options, a
conftest.py or an ini file.
"""

from __future__ import annotations

import importlib
import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from _pytest.mark.expression import Expression

from pytest_itera.checks import engine as run
from pytest_itera.checks.artifacts.checkpoint_reloads import informational
from pytest_itera.checks.context import Check, Context
from pytest_itera.checks.evidence.stop_rules_applied import not_evaluated
from pytest_itera.checks.model import FAMILIES, Options, item_name
from pytest_itera.core.campaign import MANIFEST_FILE, load_campaign
from pytest_itera.plugin.collect import MARKER
from pytest_itera.reload import Reloader
from pytest_itera.report import clean_block

# pytest's summary options this backend writes: none (failures), -rf (the same) and -rA.
REPORT_CHARS = ("-rf", "-rA")
WIDTH = 80  # pytest's terminal width under pytester


@dataclass(frozen=True)
class Outcome:
    """One selected item: its name, and its failure text or its evidence notes."""

    name: str
    failure: str | None
    evidence: str | None
    skipped: str | None = None  # not judged: the reason (another selected item failed)


def registry() -> dict[str, Check]:
    """Every built-in family's checks, as the plugin registers them (plan-scoped ones too:
    the Context sees the whole registry, only the items skip them)."""
    found: dict[str, Check] = {}
    for module in FAMILIES.values():
        for check in getattr(importlib.import_module(module), "CHECKS", ()):
            assert check.id not in found, check.id
            found[check.id] = check
    return found


def selected(keyword: str | None, names: tuple[str, ...]) -> bool:
    """Whether ``-k keyword`` keeps an item known by ``names`` (pytest's KeywordMatcher: a
    case-insensitive substring of the item's or a parent's name, or a marker's)."""
    if keyword is None:
        return True
    lowered = [n.lower() for n in names]

    def match(sub: str, /, **kwargs: str | int | bool | None) -> bool:
        assert not kwargs, "keyword expressions take no parameters"
        return any(sub.lower() in n for n in lowered)

    return Expression.compile(keyword).evaluate(match)


def outcomes(root: Path, keyword: str | None,
             reloader: Callable[[], Reloader]) -> tuple[list[Outcome], int]:
    """The items of the campaign at ``root`` that ``-k keyword`` selects, run in the
    plugin's order by the plugin's engine (:mod:`pytest_itera.checks.engine`), and how many it
    deselects."""
    checks = registry()
    context = Context(load_campaign(root), Options(), checks, reloader_factory=reloader,
                      close_reloader=False)  # one reload server for the whole test session
    try:
        items = run.pairs(context)
        chosen = [(check, target) for check, target in items
                  if selected(keyword, (item_name(check.id, target), MANIFEST_NODE,
                                        root.name, MARKER))]
        names = {item_name(check.id, target) for check, target in chosen}
        return [_run(context, check, target, names) for check, target in chosen], \
            len(items) - len(chosen)
    finally:
        context.close()


MANIFEST_NODE = "itera"  # the manifest's node name (plugin.collect.IteraCampaign.collect)


def _run(context: Context, check: Check, target: str | None, selected: set[str]) -> Outcome:
    """What IteraCheckItem.runtest makes of one item: its failure text, or its evidence, or
    why it is not judged (skipped: the item that owns its cause is selected too)."""
    outcome = run.evaluate(context, check, target)
    if not outcome.failed:
        notes = informational(context, check.id, target)
        return Outcome(outcome.name, None, clean_block("\n".join(notes)) if notes else None)
    if outcome.not_judged is not None and outcome.owners and set(outcome.owners) <= selected:
        return Outcome(outcome.name, None, None, skipped=outcome.not_judged)
    return Outcome(outcome.name, outcome.message, None)


def judge(root: Path, keyword: str | None, report: str | None,
          reloader: Callable[[], Reloader]) -> pytest.RunResult:
    """The selected items of the campaign at ``root``, as pytest's terminal shows them."""
    assert report in (None, *REPORT_CHARS), report
    start = time.monotonic()
    ran, deselected = outcomes(root, keyword, reloader)
    node = f"{root.name}/{MANIFEST_FILE}::"
    failed = [o for o in ran if o.failure is not None]
    skipped = [o for o in ran if o.skipped is not None]
    passed = [o for o in ran if o.failure is None and o.skipped is None]
    lines = [_sep("=", "test session starts (in-process: tests/inprocess.py)"),
             f"collected {len(ran) + deselected} items"
             + (f" / {deselected} deselected / {len(ran)} selected" if deselected else ""), ""]
    if ran:
        lines += [f"{root.name}/{MANIFEST_FILE} "
                  + "".join("F" if o.failure is not None else "s" if o.skipped is not None
                            else "." for o in ran), ""]
    if failed:
        lines.append(_sep("=", "FAILURES"))
        for o in failed:
            assert o.failure is not None
            lines += [_sep("_", _head(o.name)), *o.failure.splitlines()]
    if report == "-rA" and passed:
        lines.append(_sep("=", "PASSES"))
        for o in passed:
            if o.evidence is not None:
                lines += [_sep("_", _head(o.name)), _sep("-", "Captured itera evidence call"),
                          *o.evidence.splitlines()]
    # pytest folds the skips by location (the manifest, line 1: the items' own) and reason.
    folded = Counter(o.skipped for o in skipped) if report == "-rA" else Counter[str | None]()
    shown = [*(f"PASSED {node}{o.name}" for o in passed if report == "-rA"),
             *(f"SKIPPED [{n}] {root.name}/{MANIFEST_FILE}:1: {why}" for why, n in folded.items()),
             *(f"FAILED {node}{o.name}" for o in failed)]
    if shown:
        lines += [_sep("=", "short test summary info"), *shown]
    counts = [f"{n} {word}" for n, word in
              ((len(failed), "failed"), (len(passed), "passed"), (len(skipped), "skipped"),
               (deselected, "deselected")) if n]
    lines.append(_sep("=", f"{', '.join(counts) or 'no tests ran'} in "
                           f"{time.monotonic() - start:.2f}s"))
    status = (pytest.ExitCode.TESTS_FAILED if failed else pytest.ExitCode.OK if ran
              else pytest.ExitCode.NO_TESTS_COLLECTED)
    return pytest.RunResult(status, lines, [], time.monotonic() - start)


def _head(name: str) -> str:
    return f"[itera] {name}"  # the item's reportinfo, pytest's failure headline


def _sep(char: str, title: str) -> str:
    """pytest's TerminalWriter.sep at WIDTH columns."""
    side = max(1, (WIDTH - len(title) - 2) // (2 * len(char)))
    line = f"{char * side} {title} {char * side}"
    return line + char if len(line) + len(char) <= WIDTH else line


def session_only(root: Path) -> bool:
    """Whether a session's output on the folder ``root`` has lines this backend does not
    write: no such folder (a usage error), or stop rules the plugin did not evaluate (it
    says so in its terminal summary)."""
    if not root.is_dir():
        return True
    plan = load_campaign(root).plan
    return plan is not None and bool(not_evaluated(plan))


_HEAD = re.compile(r"^_+ \[itera\] (.+?) _+$")
_END = re.compile(r"^([=_-])\1+ .* \1+$")


def items(result: pytest.RunResult) -> dict[str, tuple[str, tuple[str, ...]]]:
    """{item: (PASSED | FAILED | ERROR, its failure or evidence lines)} from a ``-rA`` run."""
    from tests.factory import verdicts

    text: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in result.outlines:
        head = _HEAD.match(line)
        if head:
            current = text.setdefault(head.group(1), [])
        elif _END.match(line) and not line.startswith("-" * 3):
            current = None
        elif current is not None:
            current.append(line)
    return {name: (verdict, tuple(text.get(name, ())))
            for name, verdict in verdicts(result).items()}


def same_items(here: pytest.RunResult, session: pytest.RunResult) -> None:
    """The in-process answer and a ``-rA`` session agree on every item: outcome and text."""
    assert here.ret == session.ret, (here.ret, session.ret, session.outlines[-40:])
    assert here.parseoutcomes() == {k: v for k, v in session.parseoutcomes().items()
                                     if k not in ("warnings", "warning")}, session.outlines[-40:]
    mine, theirs = items(here), items(session)
    if not any(line.startswith("PASSED ") for line in here.outlines):  # not -rA: failures
        theirs = {k: v for k, v in theirs.items() if v[0] != "PASSED"}
    assert mine == theirs, (mine, theirs)
