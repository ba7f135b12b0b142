"""A campaign-scoped check judged in-process, by default and under --itera-strict-text: what
decides and what advises (tests of the readings of text that family checks make)."""

from __future__ import annotations

import atexit
import functools
from dataclasses import dataclass, replace

from pytest_itera.checks.context import Context
from pytest_itera.checks.engine import judge
from pytest_itera.checks.model import Options
from pytest_itera.core.campaign import load_campaign
from pytest_itera.core.findings import Finding
from pytest_itera.reload import Reloader
from pytest_itera.report.verify import builtin_checks
from tests.factory import CampaignBuilder


@functools.cache
def _reloader() -> Reloader:
    """One reload server for every judgement of the test session (closed at exit)."""
    reloader = Reloader(timeout=120.0)
    atexit.register(reloader.close)
    return reloader


@dataclass(frozen=True)
class Judged:
    """One item's findings: those that decide, those that advise."""

    deciding: tuple[Finding, ...]
    advisories: tuple[Finding, ...]

    def codes(self) -> tuple[list[str], list[str]]:
        return ([f.code or "" for f in self.deciding], [f.code or "" for f in self.advisories])


def judged(campaign: CampaignBuilder, check: str, *, strict: bool = False,
           options: Options | None = None, write: bool = True) -> Judged:
    """The campaign-scoped ``check`` on the (written) campaign, every built-in check
    registered (a budget counts the runs that pass theirs), only it evaluated."""
    if write:
        campaign.write()
    settings = replace(options or Options(), strict_text=strict)
    context = Context(load_campaign(campaign.root), settings, builtin_checks(),
                      reloader_factory=_reloader, close_reloader=False)
    try:
        verdicts = judge(context)
        return Judged(verdicts.findings(check), verdicts.advisories(check))
    finally:
        context.close()


def advises_then_fails(campaign: CampaignBuilder, check: str, code: str,
                       options: Options | None = None) -> Finding:
    """By default ``code`` is an advisory and no finding of that code decides; under strict
    text it decides. The strict finding."""
    default = judged(campaign, check, options=options)
    assert code not in default.codes()[0], [f.render() for f in default.deciding]
    assert code in default.codes()[1], default.codes()
    strict = judged(campaign, check, strict=True, options=options, write=False)
    assert strict.advisories == ()
    found = [f for f in strict.deciding if f.code == code]
    assert found, strict.codes()
    return found[0]
