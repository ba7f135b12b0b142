"""Command-line options, their ini twins, and the frozen Settings built from them."""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_itera.campaign import Campaign

CAMPAIGN = "--itera-campaign"
REPORT = "--itera-report"
PYTHON = "--itera-python"
TIMEOUT = "--itera-timeout"
FAST = "--itera-fast"
PLAN_SHA256 = "--itera-plan-sha256"
FORCE_REPORT = "--itera-report-inside"

INI_CAMPAIGN = "itera_campaign"
INI_PYTHON = "itera_python"
INI_TIMEOUT = "itera_timeout"
INI_IGNORE = "itera_ignore"
INI_TEMP_PATTERNS = "itera_temp_patterns"
INI_TOLERANCE = "itera_deviation_tolerance"

REPORT_SUFFIXES = (".json", ".md", ".html")

# Built-in check families, registered like any plugin: `-p no:itera.files` turns one off.
FAMILIES = {
    "itera.contract": "pytest_itera.checks.contract",
    "itera.files": "pytest_itera.checks.files",
    "itera.artifacts": "pytest_itera.checks.artifacts",
    "itera.runs": "pytest_itera.checks.runs",
    "itera.budget": "pytest_itera.checks.budget",
    "itera.schedule": "pytest_itera.checks.schedule",
}


@dataclass(frozen=True)
class Settings:
    campaigns: tuple[Path, ...]
    reports: tuple[Path, ...]
    python: str | None
    timeout: float
    fast: bool
    plan_sha256: str | None
    ignore: tuple[str, ...]
    temp_patterns: tuple[str, ...]
    deviation_tolerance: float
    report_inside: bool

    @property
    def active(self) -> bool:
        return bool(self.campaigns)


settings_key = pytest.StashKey[Settings]()
# Campaigns loaded in this process, by root: see loaded_campaign().
loaded_key = pytest.StashKey[dict[Path, "Campaign"]]()


def loaded_campaign(config: pytest.Config, root: Path) -> Campaign:
    """The campaign at ``root``, loaded and validated once per pytest process and shared by
    the interpreter probe, collection, the fixture and the closure report."""
    from pytest_itera.campaign import load_campaign

    loaded = config.stash.setdefault(loaded_key, {})
    if root not in loaded:
        loaded[root] = load_campaign(root)
    return loaded[root]


def addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("itera", "campaign acceptance (pytest-itera)")
    group.addoption(
        CAMPAIGN,
        action="append",
        default=[],
        metavar="DIR",
        help="accept the campaign folder DIR (repeatable); without it the plugin is inert",
    )
    group.addoption(
        REPORT,
        action="append",
        default=[],
        metavar="PATH",
        help="write the closure report to PATH: .json, .md or .html (repeatable)",
    )
    group.addoption(
        PYTHON, metavar="PATH", help="interpreter for fresh-process reloads (default: this one)"
    )
    group.addoption(
        TIMEOUT,
        type=float,
        metavar="SECONDS",
        help="time limit per checkpoint reload (default 120)",
    )
    group.addoption(
        FAST,
        action="store_true",
        help="quick look: structure, IDs, sizes, empty files; no hashes, no reloads",
    )
    group.addoption(PLAN_SHA256, metavar="HEX", help="the sha256 the frozen plan.json must have")
    group.addoption(
        FORCE_REPORT,
        action="store_true",
        help="allow --itera-report to write inside a campaign folder",
    )
    parser.addini(INI_CAMPAIGN, "campaign folders to accept (like --itera-campaign)", "paths", [])
    parser.addini(INI_PYTHON, "interpreter for fresh-process reloads", "string", "")
    parser.addini(INI_TIMEOUT, "time limit per checkpoint reload, seconds", "string", "120")
    parser.addini(
        INI_IGNORE, "glob patterns of campaign files that need not be listed", "linelist", []
    )
    parser.addini(
        INI_TEMP_PATTERNS, "extra literal patterns of temporary-folder paths", "linelist", []
    )
    parser.addini(
        INI_TOLERANCE,
        "fraction of planned hours above which a deviation needs an explanation",
        "string",
        "0.10",
    )


def build_settings(config: pytest.Config) -> Settings:
    """Read and validate every option once; errors are one-line usage errors."""
    campaigns = _campaigns(config)
    reports = _reports(config)
    report_inside = bool(config.getoption(FORCE_REPORT))
    for report in reports:
        for root in campaigns:
            if report.is_relative_to(root) and not report_inside:
                raise pytest.UsageError(
                    f"{REPORT}: {report} is inside the campaign {root}, which is read-only; "
                    f"write it elsewhere or pass {FORCE_REPORT}"
                )
    return Settings(
        campaigns=campaigns,
        reports=reports,
        python=_python(config),
        timeout=_positive(config, TIMEOUT, INI_TIMEOUT, default=120.0),
        fast=bool(config.getoption(FAST)),
        plan_sha256=_sha256(config.getoption(PLAN_SHA256)),
        ignore=tuple(config.getini(INI_IGNORE)),
        temp_patterns=tuple(p for p in config.getini(INI_TEMP_PATTERNS) if p),
        deviation_tolerance=_positive(config, None, INI_TOLERANCE, default=0.10),
        report_inside=report_inside,
    )


def _campaigns(config: pytest.Config) -> tuple[Path, ...]:
    given = [(p, config.invocation_params.dir / p) for p in config.getoption(CAMPAIGN)]
    if not given:  # the command line takes precedence over the ini file, as in pytest
        given = [(str(p), Path(p)) for p in config.getini(INI_CAMPAIGN)]
    seen: dict[Path, str] = {}
    for path, full in given:
        resolved = Path(os.path.abspath(full))
        if not resolved.exists():
            raise pytest.UsageError(f"{CAMPAIGN}: {path}: no such directory")
        if not resolved.is_dir():
            raise pytest.UsageError(
                f"{CAMPAIGN}: {path}: not a directory (give the campaign folder)"
            )
        if not any(os.path.lexists(resolved / name) for name in ("plan.json", "manifest.json")):
            raise pytest.UsageError(
                f"{CAMPAIGN}: {path}: not a campaign folder "
                "(it has neither plan.json nor manifest.json)"
            )
        if resolved in seen:
            raise pytest.UsageError(f"{CAMPAIGN}: {path}: the same campaign is given twice")
        seen[resolved] = path
    roots = list(seen)
    for a in roots:
        for b in roots:
            if a != b and a.is_relative_to(b):
                raise pytest.UsageError(f"{CAMPAIGN}: {a} is inside another campaign, {b}")
    return tuple(roots)


def _reports(config: pytest.Config) -> tuple[Path, ...]:
    paths = []
    for raw in config.getoption(REPORT):
        path = Path(os.path.abspath(config.invocation_params.dir / raw))
        if path.suffix.lower() not in REPORT_SUFFIXES:
            raise pytest.UsageError(
                f"{REPORT}: {raw}: unknown report type; use a .json, .md or .html path"
            )
        paths.append(path)
    return tuple(paths)


def _python(config: pytest.Config) -> str | None:
    raw = config.getoption(PYTHON) or config.getini(INI_PYTHON)
    if not raw:
        return None
    path = Path(raw).expanduser()
    if not path.is_absolute() and os.sep in raw:
        path = config.invocation_params.dir / path
    return str(path) if os.sep in raw else raw


def _positive(config: pytest.Config, opt: str | None, ini: str, *, default: float) -> float:
    value = config.getoption(opt) if opt else None
    if value is None:
        raw = str(config.getini(ini)).strip() or str(default)
        try:
            value = float(raw)
        except ValueError:
            raise pytest.UsageError(f"{ini} = {shlex.quote(raw)}: not a number") from None
    if not value > 0 or value != value or value == float("inf"):
        name = opt or ini
        raise pytest.UsageError(f"{name}: {value}: must be a positive number")
    return float(value)


def _sha256(raw: str | None) -> str | None:
    if raw is None:
        return None
    value = raw.strip().lower()
    if len(value) != 64 or any(c not in "0123456789abcdef" for c in value):
        raise pytest.UsageError(f"{PLAN_SHA256}: {raw!r} is not a 64-hex sha256")
    return value
