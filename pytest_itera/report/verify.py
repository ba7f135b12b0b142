"""The plugin's checks, run in-process on one folder: no pytest session needed.

``rec.check()``, ``close()`` and ``python -m pytest_itera check DIR`` use this:
the plugin's engine (:mod:`pytest_itera.checks.engine`: the same pairs, order and
failure texts as its items) over a :class:`~pytest_itera.checks.Context` of the
folder, with reloads in a fresh process (:class:`pytest_itera.reload.Reloader`);
the summary comes from :mod:`pytest_itera.report`, so it reads as the plugin's.

The built-in check families only: checks a conftest.py adds through the
``pytest_itera_checks`` hook, a catalogue named in an ini file and waivers are
pytest-side settings, seen by ``pytest --itera-campaign``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pytest_itera import report
from pytest_itera.checks import kinds
from pytest_itera.checks.closure import FindingFacts
from pytest_itera.checks.context import Check, Context
from pytest_itera.checks.engine import outcomes
from pytest_itera.checks.model import Options, item_name
from pytest_itera.core.campaign import MANIFEST_FILE, load_campaign
from pytest_itera.core.findings import Finding
from pytest_itera.reload.formats import DEFAULT_TIMEOUT

__all__ = ["Problem", "Verdict", "builtin_checks", "check_campaign"]


@dataclass(frozen=True)
class Problem:
    """One failing finding: which check, on which target, and what it says."""

    check: str
    target: str | None
    message: str
    finding: Finding

    def render(self) -> str:
        return f"{report.clean(item_name(self.check, self.target))}: " \
            f"{report.clean_block(self.finding.render())}"


@dataclass(frozen=True)
class Verdict:
    """The verdict on one folder, as ``pytest --itera-campaign`` would give it."""

    verdict: str  # report.verdict: "accepted", "rejected", "incomplete"
    findings: tuple[Problem, ...]
    report: report.CampaignReport
    # The readings of human text that advised and did not decide (none under strict text).
    advisories: tuple[Problem, ...] = ()

    @property
    def accepted(self) -> bool:
        return self.verdict in report.ACCEPTING

    def lines(self) -> list[str]:
        """The failing checks with their findings, then the plugin's summary lines."""
        out: list[str] = []
        for result in self.report.checks:
            if result.outcome == "failed":
                out += [f"FAILED {report.clean(result.nodeid)}", *(
                    "  " + line for line in result.message.splitlines())]
        # The items that failed only because another did: each cause once, with how many.
        not_judged = Counter(r.message for r in self.report.checks if r.outcome == "skipped")
        out += [f"NOT JUDGED ({count}): {report.clean(reason)}"
                for reason, count in not_judged.items()]
        return [*out, *report.terminal_lines(self.report)]


def builtin_checks() -> dict[str, Check]:
    """The checks of every built-in family (each module's ``CHECKS``) that judge a closed
    campaign, by id (the plan gate's, scope "plan", judge a plan before renting)."""
    return {check.id: check for check in kinds.builtin_checks() if check.scope != "plan"}


def check_campaign(
    root: Path, *, python: str | None = None, timeout: float = DEFAULT_TIMEOUT,
    checks: Mapping[str, Check] | None = None, strict_text: bool = False,
    journal_pins: tuple[tuple[int, str], ...] = (),
) -> Verdict:
    """Evaluate every check on every target of the folder ``root`` (``strict_text``: the
    readings of human text decide too, as under ``--itera-strict-text``)."""
    from pytest_itera.core.provenance import document_digests
    from pytest_itera.reload import Reloader

    root = Path(root)
    campaign = load_campaign(root)
    registry = dict(checks) if checks is not None else builtin_checks()
    options = Options(python=python, timeout=timeout, strict_text=strict_text,
                      journal_pins=journal_pins)
    context = Context(campaign, options, registry,
                      reloader_factory=lambda: Reloader(python, timeout=timeout))
    try:
        found = list(outcomes(context))
        # Every item runs here: one that failed only because another did is "not judged" (the
        # plugin's skip), and its cause is the other item's finding.
        results = [report.CheckResult(
            o.check, o.target, "skipped" if o.not_judged else "failed" if o.failed else "passed",
            o.not_judged or o.message, f"{root.name}/{MANIFEST_FILE}::{o.name}", o.scope,
            findings=() if o.not_judged else tuple(FindingFacts.of(f, o.check) for f in o.findings),
            advisories=tuple(FindingFacts.of(a, o.check) for a in o.advisories))
            for o in found]
        # The report's evidence reads what the checks read: memoised in this Context.
        built = report.build(campaign, results, collected=len(results), fast=False,
                             digests=document_digests(root), context=context)
    finally:
        context.close()
    problems = tuple(Problem(o.check, o.target, f.message, f) for o in found
                     if not o.not_judged for f in o.findings)
    advised = tuple(Problem(o.check, o.target, a.message, a) for o in found for a in o.advisories)
    return Verdict(built.verdict, problems, built, advised)
