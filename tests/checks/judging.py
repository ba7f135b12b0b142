"""One way to judge a rule: ``judge`` evaluates one check (or all) over the engine, in process,
on the session's one reload server, and ``expect_finding``/``expect_no_finding`` assert a
finding's code, its place and a few words -- not its whole sentence, so a wording change breaks
no rule test. (Not ``expect``: tests.factory's ``expect`` matches a pytest run's output lines.)

The codes a rule test asserts are read from the test sources by
tests/checks/test_coverage_of_codes.py (a static scan of ``expect_finding(…, "code"`` and
``expect_no_finding(…, "code"``): every finding code has a failing case and a passing twin,
whichever process runs the tests (xdist or not).
"""

from __future__ import annotations

import atexit
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from pytest_itera.checks.context import Check, Context
from pytest_itera.checks.engine import evaluate
from pytest_itera.checks.engine import judge as engine_judge
from pytest_itera.checks.model import Options
from pytest_itera.checks.plan import CHECKS as GATE_CHECKS
from pytest_itera.checks.plan.gate import JOURNAL_PATH, PLAN_PATH
from pytest_itera.checks.plan.journal import journal_beside
from pytest_itera.core.campaign import PLAN_FILE, load_campaign, load_plan
from pytest_itera.core.findings import Finding
from pytest_itera.files.source import Staged
from pytest_itera.reload import Reloader
from pytest_itera.report.verify import builtin_checks
from tests.factory import CampaignBuilder


@functools.cache
def _reloader() -> Reloader:
    """One reload server for every judgement of the test session (closed at exit): its torch
    import takes seconds, a whole campaign run per test would pay them each time."""
    reloader = Reloader(timeout=120.0)
    atexit.register(reloader.close)
    return reloader


class Found(list[Finding]):
    """The findings that decide, in item order; ``advisories``: the readings of human text
    that advise beside them (none under strict text: they decide then)."""

    advisories: list[Finding]


def judge(campaign: CampaignBuilder | Path, check: str | None = None, *,
          target: str | None = None, strict: bool = False, options: Options | None = None,
          write: bool = True, checks: dict[str, Check] | None = None,
          meanwhile: Callable[[Path], None] | None = None,
          stored: Staged | None = None) -> Found:
    """The findings of ``check`` (every closed-campaign check when None) on the written
    campaign, over all its targets (or only ``target``), as the engine's items have them: a
    finding another check owns ("not judged") is that check's, not this one's. Every built-in
    check is registered (a budget counts the runs that pass theirs) unless ``checks`` says
    which; only those asked are evaluated, with the session's reload server. A plan gate's
    check (scope "plan") judges the folder's plan.json alone, as ``--itera-plan`` does.
    ``meanwhile`` changes the folder once its documents are loaded, before any check reads a
    file: a folder changed while it is judged (a campaign still being written). ``stored``:
    the folder is the local copy of an s3:// campaign (files.source.stage), judged with what
    the store said of each object, as the plugin judges one."""
    root = campaign if isinstance(campaign, Path) else campaign.root
    if write and isinstance(campaign, CampaignBuilder):
        campaign.write()
    settings = replace(options or Options(), strict_text=strict)
    if checks is None and check in GATE:
        registry = GATE
        context = _plan_context(root / PLAN_FILE, settings)
    else:
        registry = checks if checks is not None else builtin_checks()
        context = Context(load_campaign(root), settings, registry, reloader_factory=_reloader,
                          close_reloader=False, stored=stored)
    if meanwhile is not None:
        meanwhile(root)
    try:
        verdicts = engine_judge(context)
        chosen = [registry[check]] if check is not None else [
            c for c in registry.values() if c.scope != "plan"]
        found, advised = Found(), list[Finding]()
        for each in chosen:
            targets = verdicts.targets(each) if target is None else (target,)
            for one in targets:
                outcome = evaluate(context, each, one)
                if outcome.not_judged is None:
                    found += outcome.findings
                advised += outcome.advisories
        found.advisories = advised
        return found
    finally:
        context.close()


# The plan gate's checks (scope "plan", --itera-plan), by id.
GATE = {c.id: c for c in GATE_CHECKS}


def _plan_context(plan_file: Path, settings: Options) -> Context:
    """The plan gate's Context (plugin/collect_plan.py): the plan loaded alone, the gate's
    checks only, the plan file and its journal (when beside it) seeded."""
    context = Context(load_plan(plan_file), settings, GATE, reloader_factory=_reloader,
                      close_reloader=False)
    context.memo(PLAN_PATH, lambda: plan_file)
    context.memo(JOURNAL_PATH, lambda: journal_beside(plan_file))
    return context


def expect_finding(findings: Sequence[Finding], code: str, *, where: str | None = None,
           says: str | Sequence[str] = (), fix: str | Sequence[str] | None = (),
           expected: str | None = None, found: str | None = None,
           alone: bool = False) -> Finding:
    """The one finding of ``code`` among ``findings`` (``alone``: and no other): placed at
    ``where`` (when given; a prefix is enough), its message holding each of the words
    ``says``, its fix line (hint) each of the words ``fix``, its expected and found values
    those given (None: not asserted)."""
    listed = "\n".join(f"{f.code}: {f.render()}" for f in findings)
    coded = [f for f in findings if f.code == code]
    assert len(coded) == 1, f"{len(coded)} finding(s) {code}, among:\n{listed}"
    assert not alone or len(findings) == 1, f"not alone, among:\n{listed}"
    finding = coded[0]
    assert expected is None or finding.expected == expected, finding.render()
    assert found is None or finding.found == found, finding.render()
    if where is not None:
        assert (finding.where or "").startswith(where), finding.render()
    for words in (says,) if isinstance(says, str) else says:
        assert words in finding.message, finding.render()
    for words in (fix,) if isinstance(fix, str) else fix or ():
        assert words in (finding.hint or ""), finding.render()
    return finding


def expect_no_finding(found: Sequence[Finding], code: str | None = None) -> None:
    """No finding of ``code`` among ``found`` (None: no finding at all): the passing twin."""
    wrong = [f for f in found if code is None or f.code == code]
    assert wrong == [], "\n".join(f"{f.code}: {f.render()}" for f in wrong)


@dataclass(frozen=True)
class Judged:
    """One check's findings: those that decide, those that advise."""

    deciding: tuple[Finding, ...]
    advisories: tuple[Finding, ...]

    def codes(self) -> tuple[list[str], list[str]]:
        return ([f.code or "" for f in self.deciding], [f.code or "" for f in self.advisories])


def judged(campaign: CampaignBuilder, check: str, *, strict: bool = False,
           options: Options | None = None, write: bool = True) -> Judged:
    """``judge`` of one campaign-scoped check, its deciding findings beside its advisories."""
    found = judge(campaign, check, strict=strict, options=options, write=write)
    return Judged(tuple(found), tuple(found.advisories))


def advises_then_fails(campaign: CampaignBuilder, check: str, code: str,
                       options: Options | None = None) -> Finding:
    """By default ``code`` is an advisory and no finding of that code decides; under strict
    text it decides. The strict finding."""
    default = judged(campaign, check, options=options)
    assert code not in default.codes()[0], [f.render() for f in default.deciding]
    assert code in default.codes()[1], default.codes()
    strict = judged(campaign, check, strict=True, options=options, write=False)
    assert strict.advisories == ()
    return expect_finding(strict.deciding, code)
