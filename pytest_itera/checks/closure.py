"""What a closure report carries beside the outcomes: plain, frozen facts (no pytest import).

Each fact crosses from an item to the report as plain data on the test report
(``user_properties``), so the report is the same with or without pytest-xdist:
:meth:`FindingFacts.of` and :meth:`ReloadFacts.of` make that data on the item's side, the
``from_plain`` constructors read it back on the side that writes the report.

- :class:`FindingFacts`: one finding as fields (``code``, ``where``, ``expected``, ``found``,
  ``hint``), not only as rendered text;
- :class:`ReloadFacts`: what the fresh-process reload found in one checkpoint or adapter;
- :class:`WaiverFacts`: why a failure was accepted, and by whom.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from pytest_itera.core.findings import Finding, default_code

if TYPE_CHECKING:
    from pytest_itera.reload import ReloadResult

__all__ = [
    "ACCEPTANCE",
    "ADVISORIES_KEY",
    "CAMPAIGN_KEY",
    "CHECK_KEY",
    "EVIDENCE_KEY",
    "FINDINGS_KEPT",
    "FINDINGS_KEY",
    "PLAN_KEY",
    "RELOADS_KEY",
    "SCOPE_KEY",
    "TARGET_KEY",
    "WAIVER_KEY",
    "FindingFacts",
    "ReloadFacts",
    "WaiverFacts",
    "item_properties",
    "plain",
]

ACCEPTANCE = "acceptance-test"  # the check id of a test that uses the itera_campaign fixture
FINDINGS_KEPT = 100  # per item: the rendered message says how many more there were

# The user_properties keys an item's facts travel under: set on the item (plugin.collect, and
# plugin.session for acceptance tests and waivers), read back by the session.
CAMPAIGN_KEY, CHECK_KEY, TARGET_KEY, SCOPE_KEY = (
    "itera_campaign", "itera_check", "itera_target", "itera_scope")
FINDINGS_KEY, RELOADS_KEY, WAIVER_KEY = "itera_findings", "itera_reloads", "itera_waiver"
EVIDENCE_KEY = "itera_evidence"  # what a passing item knows but does not fail on
PLAN_KEY = "itera_plan"  # a plan-gate item's plan (it has no campaign verdict)
FACTS_KEY = "itera_facts"  # the values a check judged (Check.facts), for the closure report
ADVISORIES_KEY = "itera_advisories"  # the readings of human text that advise, not decide


def item_properties(root: str, check: str, target: str | None,
                    scope: str | None) -> list[tuple[str, object]]:
    """Which campaign, check, target and scope an item is: its first user_properties."""
    return [(CAMPAIGN_KEY, root), (CHECK_KEY, check), (TARGET_KEY, target or ""),
            (SCOPE_KEY, scope)]


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _texts(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list | tuple) else ()


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def plain(fact: FindingFacts | ReloadFacts | WaiverFacts) -> dict[str, Any]:
    """The fact as JSON-ready data (tuples become lists)."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(fact).items()}


@dataclass(frozen=True)
class FindingFacts:
    code: str
    message: str
    where: str | None = None
    expected: str | None = None
    found: str | None = None
    hint: str | None = None
    # A reading of human text: shown under the verdict, deciding only under strict text.
    advisory: bool = False
    # A waiver (--itera-waivers) accepted this finding: its item fails only on the others.
    waived: bool = False

    @classmethod
    def of(cls, finding: Finding, check_id: str, *, waived: bool = False) -> FindingFacts:
        return cls(default_code(finding, check_id), finding.message, finding.where,
                   finding.expected, finding.found, finding.hint, finding.advisory, waived)

    @classmethod
    def from_plain(cls, data: Mapping[str, Any]) -> FindingFacts:
        where, expected, found, hint = (_text(data.get(k))
                                        for k in ("where", "expected", "found", "hint"))
        return cls(str(data.get("code", "")), str(data.get("message", "")), where, expected,
                   found, hint, advisory=data.get("advisory") is True,
                   waived=data.get("waived") is True)

    def line(self) -> str:
        """One line: "<code>: <where>: <message>"."""
        where = f"{self.where}: " if self.where else ""
        return f"{self.code}: {where}{self.message}"


@dataclass(frozen=True)
class ReloadFacts:
    """One checkpoint (or adapter folder) as its reload in a fresh process found it."""

    path: str
    ok: bool
    format: str | None
    parts: tuple[str, ...] = ()
    tensors: int = 0
    bytes: int = 0  # the manifest's record of its files, verified by files-intact
    nonfinite_tensors: int = 0
    nan_values: int = 0
    inf_values: int = 0
    seconds: float = 0.0
    cause: str | None = None
    holds_code: tuple[str, ...] = ()  # globals its pickles would call (refused unloaded)
    sandbox: tuple[str, ...] = ()  # the loader's sandbox layers in force
    sandbox_missing: tuple[str, ...] = ()  # "layer: why it was not in force"

    @classmethod
    def of(cls, result: ReloadResult, size: int) -> ReloadFacts:
        nonfinite = max(result.nonfinite_tensors, len(result.nonfinite))
        sandbox = result.sandbox
        return cls(result.path, result.ok, result.format, tuple(result.parts), result.tensors,
                   size, nonfinite, result.nan_values, result.inf_values,
                   round(result.seconds, 3), result.cause, tuple(result.holds_code),
                   tuple(sandbox.active) if sandbox is not None else (),
                   tuple(f"{layer}: {why}" for layer, why in sorted(sandbox.missing.items()))
                   if sandbox is not None else ())

    @classmethod
    def from_plain(cls, data: Mapping[str, Any]) -> ReloadFacts:
        seconds = data.get("seconds")
        return cls(str(data.get("path", "")), bool(data.get("ok")), _text(data.get("format")),
                   tuple(str(p) for p in data.get("parts") or ()), _int(data.get("tensors")),
                   _int(data.get("bytes")), _int(data.get("nonfinite_tensors")),
                   _int(data.get("nan_values")), _int(data.get("inf_values")),
                   float(seconds) if isinstance(seconds, int | float) else 0.0,
                   _text(data.get("cause")), _texts(data.get("holds_code")),
                   _texts(data.get("sandbox")), _texts(data.get("sandbox_missing")))


@dataclass(frozen=True)
class WaiverFacts:
    """Why a failure counts as waived: a reviewer's waiver, or an ``xfail`` with a reason."""

    source: str  # "waivers file" | "xfail"
    reason: str
    approved_by: str | None = None
    expires: str | None = None  # ISO date
    check: str | None = None  # the waiver's check id and target pattern, as written
    target: str | None = None
    file: str | None = None
    code: str | None = None  # the finding codes it waives (fnmatch); None: every finding

    @classmethod
    def from_plain(cls, data: Mapping[str, Any]) -> WaiverFacts:
        return cls(str(data.get("source", "")), str(data.get("reason") or ""),
                   *(_text(data.get(k)) for k in ("approved_by", "expires", "check", "target",
                                                    "file", "code")))

    def text(self) -> str:
        """``waived by M. Reviewer until 2027-01-31: the reason`` / ``xfail: the reason``."""
        if self.source == "xfail":
            return f"xfail: {self.reason}"
        codes = f" (findings {self.code})" if self.code is not None else ""
        return f"waived{codes} by {self.approved_by} until {self.expires}: {self.reason}"
