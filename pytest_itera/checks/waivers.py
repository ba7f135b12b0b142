"""Waivers: failures a reviewer decided to accept, recorded outside the campaign (no pytest import).

A waivers file (TOML or JSON) lives in the CI repository, never inside a campaign::

    [[waivers]]
    check = "no-temp-paths"                # a check id ("acceptance-test" for a test using
                                           # the itera_campaign fixture)
    target = "runs/control/train.log"      # fnmatch pattern; "*" also matches a campaign-level item
    code = "no-temp-paths.*"               # optional: the findings it waives, by code (fnmatch);
                                           # without it, every finding of the items it matches
    reason = "the log quotes /tmp in a stack trace; no output depends on it"
    approved_by = "M. Reviewer"
    expires = 2027-01-31                   # a date; the waiver holds through that day (UTC)
    campaign = "rings-*"                   # optional: the campaign ids it applies to

(JSON: ``{"waivers": [{"check": ..., "expires": "2027-01-31", ...}]}``.)

With a ``code``, a waiver accepts only the findings whose code matches: an item whose every
finding is waived is waived; one with other findings still fails on those (the JSON report
marks each finding ``waived`` or not). So one doubtful reading (``budget-consistent.receipt-
date``) is waived without waiving the other rules of its check.

A waiver applies only when it is complete and not expired. An incomplete or expired waiver,
or one that matches no collected item of a campaign it applies to, is itself a failing item
of that campaign (:func:`findings`): a waiver never outlives its reason silently.
"""

from __future__ import annotations

import fnmatch
import json
import tomllib
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from pytest_itera.core.findings import Finding
from pytest_itera.core.text import is_blank

__all__ = ["CHECK_ID", "FIELDS", "Waiver", "WaiversError", "findings", "load", "today"]

CHECK_ID = "waiver"  # the id of the items that judge the waivers themselves
FIELDS = ("check", "target", "reason", "approved_by", "expires", "campaign", "code")
_REQUIRED = {"check": "check id", "target": "target pattern", "reason": "reason",
             "approved_by": "approver (approved_by)", "expires": "expiry date (expires)"}


class WaiversError(Exception):
    """The waivers file cannot be read as a list of waivers at all (a usage error)."""


def today() -> date:
    """The date waivers expire against: UTC, the same on every machine of a CI run."""
    return datetime.now(UTC).date()


@dataclass(frozen=True)
class Waiver:
    """One waiver as written; ``problems`` say why it cannot apply (besides expiry)."""

    index: int  # 1-based position in the file
    check: str
    target: str
    reason: str | None
    approved_by: str | None
    expires: date | None
    campaign: str | None = None
    problems: tuple[str, ...] = ()
    source: str = ""  # the file it comes from, as given
    code: str | None = None  # fnmatch over finding codes; None: every finding of its items

    @property
    def label(self) -> str:
        """The item target: ``2-no-temp-paths`` (position, then check id)."""
        return f"{self.index}-{self.check or 'unnamed'}"

    def expired(self, on: date) -> bool:
        return self.expires is not None and self.expires < on

    def applies(self, on: date) -> bool:
        return not self.problems and not self.expired(on)

    def for_campaign(self, campaign_id: str) -> bool:
        return self.campaign is None or fnmatch.fnmatchcase(campaign_id, self.campaign)

    def matches(self, check: str, target: str | None) -> bool:
        """Its check id, and its pattern over the target ("" for a campaign-level item)."""
        return check == self.check and fnmatch.fnmatchcase(target or "", self.target)

    def waives(self, code: str) -> bool:
        """Whether it accepts a finding of this code (of an item it :meth:`matches`)."""
        return self.code is None or fnmatch.fnmatchcase(code, self.code)

    def as_facts(self) -> dict[str, Any]:
        """Plain data for reports and test-report user properties (crosses xdist)."""
        return {"source": "waivers file", "file": self.source, "index": self.index,
                "check": self.check, "target": self.target, "reason": self.reason,
                "approved_by": self.approved_by,
                "expires": self.expires.isoformat() if self.expires else None,
                "campaign": self.campaign, "code": self.code}

    def xfail_reason(self) -> str:
        codes = f" (findings {self.code})" if self.code is not None else ""
        return (f"waived{codes} by {self.approved_by} until {self.expires} "
                f"({self.source} #{self.index}): {self.reason}")


# ------------------------------------------------------------------ reading


def load(path: Path) -> tuple[Waiver, ...]:
    """The waivers of a .toml or .json file; WaiversError when it is not a waivers file."""
    data = _parse(path)
    if not isinstance(data, dict):
        raise WaiversError(f"{path}: expected a table with a 'waivers' list")
    unknown = sorted(set(data) - {"waivers"})
    if unknown:
        raise WaiversError(f"{path}: unknown top-level key(s) {', '.join(map(repr, unknown))}; "
                           "expected only 'waivers'")
    entries = data.get("waivers", [])
    if not isinstance(entries, list):
        raise WaiversError(f"{path}: 'waivers' must be a list of tables")
    return tuple(_waiver(i, entry, str(path)) for i, entry in enumerate(entries, 1))


def _parse(path: Path) -> Any:
    suffix = path.suffix.lower()
    if suffix not in (".toml", ".json"):
        raise WaiversError(f"{path}: unknown waivers file type; use a .toml or .json file")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise WaiversError(f"{path}: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
        return tomllib.loads(text) if suffix == ".toml" else json.loads(text)
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, ValueError) as exc:
        kind = "TOML" if suffix == ".toml" else "JSON"
        raise WaiversError(f"{path}: not valid {kind}: {exc}") from None


def _waiver(index: int, entry: Any, source: str) -> Waiver:
    if not isinstance(entry, dict):
        return Waiver(index, "", "", None, None, None, problems=("is not a table",),
                      source=source)
    problems = [f"has an unknown field {key!r} (known: {', '.join(FIELDS)})"
                for key in sorted(set(entry) - set(FIELDS))]
    texts = {key: _text(entry.get(key), key, problems) for key in FIELDS if key != "expires"}
    for key, what in _REQUIRED.items():
        if key == "expires":
            continue
        if entry.get(key) is None:
            problems.append(f"has no {what}")
        elif isinstance(entry[key], str) and is_blank(entry[key]):
            problems.append(f"has a blank {key}")
    expires = _date(entry.get("expires"), problems)
    code = texts["code"]
    if code is not None and is_blank(code):
        problems.append("has a blank code (leave it out to waive every finding of its items)")
    return Waiver(index, texts["check"] or "", texts["target"] or "", texts["reason"],
                  texts["approved_by"], expires, texts["campaign"] or None,
                  tuple(problems), source, code)


def _text(value: Any, key: str, problems: list[str]) -> str | None:
    if value is None or isinstance(value, str):
        return value
    problems.append(f"has a {type(value).__name__} as {key}, not a string")
    return None


def _date(value: Any, problems: list[str]) -> date | None:
    if value is None:
        problems.append(f"has no {_REQUIRED['expires']}")
        return None
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    if isinstance(value, str):
        try:
            return date.fromisoformat(value.strip())
        except ValueError:
            pass
    problems.append(f"has expires = {value!r}, not a date (YYYY-MM-DD)")
    return None


# ------------------------------------------------------------------ judging


def findings(waiver: Waiver, *, on: date, campaign: str, matched: int) -> list[Finding]:
    """Why this waiver is itself a failure for ``campaign`` (it matched ``matched`` collected
    items there), or nothing."""
    where = f"{waiver.source} waivers[{waiver.index - 1}]"
    out = [Finding(f"waiver #{waiver.index} {problem}: it waives nothing", where=where,
                   hint="a waiver needs check, target, reason, approved_by and expires",
                   code="waiver.incomplete")
           for problem in waiver.problems]
    if waiver.expired(on):
        out.append(Finding(
            f"waiver #{waiver.index} ({waiver.check} {waiver.target!r}) expired on "
            f"{waiver.expires}: it waives nothing", where=where,
            expected=f"an expiry date on or after {on}", found=str(waiver.expires),
            hint="fix what it waived, or have a reviewer approve it again with a new date",
            code="waiver.expired"))
    if matched == 0 and waiver.check:
        codes = f", code {waiver.code!r}" if waiver.code is not None else ""
        out.append(Finding(
            f"waiver #{waiver.index} matches no item of campaign {campaign}: check "
            f"{waiver.check!r}, target {waiver.target!r}{codes}", where=where,
            hint="remove it, or correct its check id or target pattern (fnmatch; '*' for a "
            "campaign-level check)", code="waiver.unmatched"))
    return out
