"""Command-line options, their ini twins, and the frozen Settings built from them."""

from __future__ import annotations

import copy
import importlib.util
import os
import re
import shlex
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

import pytest

from pytest_itera.checks.context import GROUP_FILES_ABOVE
from pytest_itera.checks.model import PlanPin
from pytest_itera.core import schedule
from pytest_itera.core.schedule import DEFAULT_TOLERANCE
from pytest_itera.plugin.guard import inside
from pytest_itera.reload.formats import DEFAULT_TIMEOUT

if TYPE_CHECKING:
    from pytest_itera.checks.waivers import Waiver
    from pytest_itera.core.money import Catalogue
    from pytest_itera.files.source import Staged

CAMPAIGN = "--itera-campaign"
PLAN = "--itera-plan"  # the plan gate, before renting (issue 16)
REPORT = "--itera-report"
PYTHON = "--itera-python"
TIMEOUT = "--itera-timeout"
FAST = "--itera-fast"
PLAN_SHA256 = "--itera-plan-sha256"
FORCE_REPORT = "--itera-report-inside"
REQUIRE_ACCEPTED = "--itera-require-accepted"
ACCEPT_PLAYED_CLOCK = "--itera-accept-played-clock"
WAIVERS = "--itera-waivers"
STRICT_TEXT = "--itera-strict-text"  # the readings of human text decide too
JOURNAL_PIN = "--itera-journal-pin"  # LINE:DIGEST of the journal, proven elsewhere
SEAL = "--itera-seal"
SEAL_KEY = "--itera-seal-key"
VERIFY_SEAL = "--itera-verify-seal"
SEAL_PUBKEY = "--itera-seal-pubkey"
STORE_CHECKSUMS = "--itera-store-checksums"  # trust the store's full-object SHA-256
SEAL_PASSWORD_ENV = "ITERA_SEAL_KEY_PASSWORD"  # an encrypted --itera-seal-key's password

INI_CAMPAIGN = "itera_campaign"
INI_STORE_CACHE_MAX = "itera_store_cache_max"  # an s3:// campaign's local copy: at most this
INI_STORE_TIMEOUT = "itera_store_timeout"  # seconds per object-storage request
INI_STORE_CHECKSUMS = "itera_store_checksums"
DEFAULT_STORE_CACHE_MAX = 16 << 30
DEFAULT_STORE_TIMEOUT = 30.0
INI_PLAN = "itera_plan"
INI_PYTHON = "itera_python"
INI_TIMEOUT = "itera_timeout"
INI_IGNORE = "itera_ignore"
INI_TEMP_PATTERNS = "itera_temp_patterns"
INI_TOLERANCE = "itera_deviation_tolerance"
INI_CATALOGUE = "itera_catalogue"
INI_PLAN_SHA256 = "itera_plan_sha256"
INI_REQUIRE_ACCEPTED = "itera_require_accepted"
INI_WAIVERS = "itera_waivers"
INI_STRICT_TEXT = "itera_strict_text"
INI_JOURNAL_PINS = "itera_journal_pins"
INI_GROUP_FILES_ABOVE = "itera_group_files_above"
MAX_TOLERANCE = float(schedule.MAX_TOLERANCE)

def folder_holding(path: Path, roots: Iterable[Path], *, strictly: bool = False) -> Path | None:
    """Which of ``roots`` (campaign or plan folders) ``path`` is, or lies inside
    (``strictly``: inside only); None: none. Both sides absolute, as the options make them."""
    for root in roots:
        if path.is_relative_to(root) and not (strictly and path == root):
            return root
    return None


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
    # itera_plan_sha256 lines, in order: (campaign folder or id, or None for every campaign, hex)
    plan_pins: tuple[PinLine, ...] = ()
    # The gate (issue 17): exit 0 only when every verdict is accepted (with waivers or not).
    require_accepted: bool = False
    # --itera-accept-played-clock (command line only): the gate and the seal also take a
    # campaign whose verdict is PLAYED CLOCK (a demo's, a test's), which says so.
    accept_played_clock: bool = False
    # Above this many files, the per-file checks get one item per folder (issue 19).
    group_files_above: int = GROUP_FILES_ABOVE
    waivers_file: Path | None = None
    waivers: tuple[Waiver, ...] = ()
    # --itera-strict-text: the readings of human text (advisories) fail their items too.
    strict_text: bool = False
    journal_pins: tuple[tuple[int, str], ...] = ()  # --itera-journal-pin / itera_journal_pins
    seal: Path | None = None  # write the closure seal there when accepted
    seal_key: Path | None = None  # sign it (ECDSA PEM); None: digest-only
    verify_seal: Path | None = None  # re-check the folder against this seal, nothing else
    seal_pubkey: Path | None = None
    # --itera-plan (the plan gate): every plan file, and the campaign folders given among them.
    plans: tuple[Path, ...] = ()
    plan_folders: tuple[Path, ...] = ()

    @property
    def active(self) -> bool:
        return bool(self.campaigns or self.plans)

    @property
    def folders(self) -> tuple[Path, ...]:
        """Every folder the plugin reads and never writes into: campaigns and plan folders."""
        return (*self.campaigns, *self.plan_folders)

    def holding(self, path: Path, *, strictly: bool = False) -> Path | None:
        """The campaign or plan folder that ``path`` is (unless ``strictly``) or lies in."""
        return folder_holding(path, self.folders, strictly=strictly)

    def pins_for(self, root: Path, campaign_id: str | None) -> tuple[PlanPin, ...]:
        """The sha256 pins the campaign at ``root`` (with id ``campaign_id``) must match.

        ``--itera-plan-sha256`` applies to every campaign and replaces the ini lines (the
        command line wins, as in pytest); else every ``itera_plan_sha256`` line that names
        the folder or the campaign id, or names no campaign, applies.
        """
        if self.plan_sha256 is not None:
            return (PlanPin(self.plan_sha256, PLAN_SHA256),)
        return tuple(
            PlanPin(line.sha256, f"{INI_PLAN_SHA256} ({line.key or 'every campaign'})")
            for line in self.plan_pins
            if line.key is None or line.folder == root or line.key == campaign_id
        )

    def unpinned(self, root: Path, campaign_id: str | None) -> bool:
        """No pin applies to this campaign: its plan's integrity rests on the manifest alone."""
        return not self.pins_for(root, campaign_id)


@dataclass(frozen=True)
class PinLine:
    """One ``itera_plan_sha256`` line: ``<campaign folder or id> = <sha256>``, or a bare sha256."""

    key: str | None  # as written; None: a bare sha256 for every campaign
    folder: Path | None  # the key resolved as a folder next to the ini file
    sha256: str


settings_key = pytest.StashKey[Settings]()
# s3:// campaigns: the local copy's root -> the copy and what the store said of each object
# (the URL it was read from: Staged.url).
sources_key = pytest.StashKey[dict[Path, "Staged"]]()
# On an xdist worker with a copy of its own (another host): its root -> the controller's,
# the root its items report (the controller knows the campaign by that one).
controller_roots_key = pytest.StashKey[dict[Path, Path]]()
STAGED_INPUT = "itera_staged"  # xdist workerinput: {URL as given: the controller's copy}
_NO_DEFAULT = object()  # argparse's own default (None; False for store_true)


@dataclass(frozen=True)
class Flag:
    """One command-line option of the ``itera`` group."""

    name: str
    help: str
    action: str | None = None
    metavar: str | None = None
    type: Callable[[str], Any] | None = None
    default: object = _NO_DEFAULT

    def register(self, group: pytest.OptionGroup) -> None:
        given = {"action": self.action, "metavar": self.metavar, "type": self.type}
        kwargs: dict[str, object] = {key: value for key, value in given.items() if value}
        if self.default is not _NO_DEFAULT:
            # A fresh [] per parser: pytester builds many in one process.
            kwargs["default"] = copy.copy(self.default)
        group.addoption(self.name, help=self.help, **kwargs)


@dataclass(frozen=True)
class Ini:
    """One ini option (the twin of a flag, or the ini's alone)."""

    name: str
    help: str
    type: Literal["string", "paths", "linelist", "bool"]
    default: object

    def register(self, parser: pytest.Parser) -> None:
        parser.addini(self.name, self.help, self.type, copy.copy(self.default))


# In the order `pytest --help` lists them (each table apart: flags, then ini options).
FLAGS = (
    Flag(CAMPAIGN, "accept the campaign folder DIR (repeatable); without it the plugin is inert",
         action="append", default=[], metavar="DIR"),
    Flag(REPORT, "write the closure report to PATH: .json, .md or .html (repeatable)",
         action="append", default=[], metavar="PATH"),
    Flag(PYTHON, "interpreter for fresh-process reloads (default: this one)", metavar="PATH"),
    Flag(TIMEOUT, f"time limit per checkpoint reload (default {DEFAULT_TIMEOUT:g})",
         type=float, metavar="SECONDS"),
    Flag(FAST, "quick look: structure, IDs, sizes, empty files; no hashes, no reloads",
         action="store_true"),
    Flag(PLAN_SHA256, "the sha256 the frozen plan.json must have", metavar="HEX"),
    Flag(FORCE_REPORT, "allow --itera-report to write inside a campaign folder",
         action="store_true"),
    Flag(REQUIRE_ACCEPTED, "exit 0 only when every campaign is ACCEPTED (or ACCEPTED WITH "
         "WAIVERS): incomplete, plausible and rejected runs fail, saying why",
         action="store_true", default=None),
    Flag(ACCEPT_PLAYED_CLOCK, "with --itera-require-accepted or --itera-seal, also take a "
         "campaign whose verdict is PLAYED CLOCK (every check passed, its hours played by an "
         "injected clock=, not measured): for a demo or a test of the script, never for a rental",
         action="store_true"),
    Flag(STRICT_TEXT, "the readings of human text (conclusions, receipts' words, labels, reload "
         "instructions) fail their items instead of advising under the verdict",
         action="store_true", default=None),
    Flag(JOURNAL_PIN, "the journal's line LINE has this sha256 (as rec.pin() and each decision "
         "and closure print it): the journal up to there is proven; repeatable",
         action="append", default=None, metavar="LINE:DIGEST"),
    Flag(WAIVERS, "reviewer-approved waivers (.toml or .json), outside the campaign: each names "
         "a check, a target pattern, a reason, an approver, an expiry date", metavar="FILE"),
    Flag(SEAL, "when accepted, write the closure seal (an in-toto statement over every file's "
         "sha256, the verdict and the JSON report's digest) to PATH", metavar="PATH"),
    Flag(SEAL_KEY, "sign the seal with this ECDSA private key (model-signing bundle); password, "
         f"if any, in ${SEAL_PASSWORD_ENV}; without it the seal is digest-only", metavar="PEM"),
    Flag(VERIFY_SEAL, "only re-check, without reloading anything, that the campaign folder "
         "still matches this seal file by file, its signature, and the sealed result "
         "recomputed from the sealed predictions", metavar="PATH"),
    Flag(SEAL_PUBKEY, "the public key a signed seal is verified with", metavar="PEM"),
    Flag(STORE_CHECKSUMS, "an s3:// campaign: where the store holds an object's full-object "
         "SHA-256 (ChecksumSHA256 of a single-part upload), use it instead of hashing the bytes; "
         "a binary file no check reads is then not downloaded (needs boto3)",
         action="store_true", default=None),
    Flag(PLAN, "before renting: judge the plan PATH (a plan.json, or a campaign folder without "
         "a manifest yet, whose journal is then re-forecast) alone (repeatable)",
         action="append", default=[], metavar="PATH"),
)

INIS = (
    # linelist, not paths: an s3://bucket/prefix/ line is kept as written (folders are
    # resolved against the ini file's folder, as "paths" would: _campaigns).
    Ini(INI_CAMPAIGN, "campaign folders or s3://bucket/prefix/ to accept (like "
        "--itera-campaign)", "linelist", []),
    Ini(INI_STORE_CACHE_MAX, "an s3:// campaign is copied to a local cache outside it: at most "
        "this many bytes of checkpoints (suffixes K, M, G, T: powers of 1024; 0: none); one "
        "over it is spooled alone to be judged", "string", "16G"),
    Ini(INI_STORE_TIMEOUT, "seconds per object-storage request (retried 3 times)", "string",
        f"{DEFAULT_STORE_TIMEOUT:g}"),
    Ini(INI_STORE_CHECKSUMS, f"like {STORE_CHECKSUMS}", "bool", False),
    Ini(INI_PLAN, f"plans to judge before renting (like {PLAN})", "paths", []),
    Ini(INI_PYTHON, "interpreter for fresh-process reloads", "string", ""),
    Ini(INI_TIMEOUT, "time limit per checkpoint reload, seconds", "string",
        f"{DEFAULT_TIMEOUT:g}"),
    Ini(INI_IGNORE, "glob patterns of campaign files that need not be listed", "linelist", []),
    Ini(INI_TEMP_PATTERNS, "extra literal patterns of temporary-folder paths", "linelist", []),
    Ini(INI_TOLERANCE, "fraction of planned hours above which a deviation needs an explanation "
        "(at most 0.5)", "string", str(DEFAULT_TOLERANCE)),
    Ini(INI_CATALOGUE, "price catalogue file (itera-catalogue/1 JSON) lots are checked against, "
        "relative to the ini file; default: the pytest_itera_catalogue hook, else the shipped "
        "IteraGPU one", "string", ""),
    Ini(INI_PLAN_SHA256, "sha256 of each campaign's frozen plan.json, one line each: "
        "'<campaign folder or id> = <sha256>' (a bare sha256: every campaign)", "linelist", []),
    Ini(INI_REQUIRE_ACCEPTED, "exit 0 only when every campaign is accepted (like "
        f"{REQUIRE_ACCEPTED})", "bool", False),
    Ini(INI_STRICT_TEXT, f"like {STRICT_TEXT}", "bool", False),
    Ini(INI_JOURNAL_PINS, f"journal pins, one LINE:DIGEST per line (like {JOURNAL_PIN})",
        "linelist", []),
    Ini(INI_WAIVERS, f"waivers file (like {WAIVERS}), relative to the ini file", "string", ""),
    Ini(INI_GROUP_FILES_ABOVE, "above this many files, the per-file checks (files-intact, "
        "no-temp-paths) get one item per folder, '<folder>/*', instead of one per file",
        "string", str(GROUP_FILES_ABOVE)),
)


def addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("itera", "campaign acceptance (pytest-itera)")
    for flag in FLAGS:
        flag.register(group)
    for ini in INIS:
        ini.register(parser)


def build_settings(config: pytest.Config) -> Settings:
    """Read and validate every option once; errors are one-line usage errors."""
    campaigns = _campaigns(config)
    plans, plan_folders = _plans(config, campaigns)
    reports = _reports(config)
    report_inside = bool(config.getoption(FORCE_REPORT))
    judged = (*campaigns, *plan_folders)
    if campaigns or plans:
        _refuse_inside(INI_CATALOGUE, str(config.getini(INI_CATALOGUE)).strip(),
                       _ini_catalogue_path(config), judged, what="a price list the campaign "
                       "supplied would decide what its lots may cost")
        ini_catalogue(config)  # a bad itera_catalogue file is a usage error before any item
    python = _python(config)
    if python is not None and (campaigns or plans):
        where = python if os.sep in python else shutil.which(python)
        _refuse_inside(PYTHON if config.getoption(PYTHON) else INI_PYTHON, python,
                       Path(where) if where else None, judged,
                       what="an interpreter the campaign supplied would run its code")
    for report in reports:
        root = folder_holding(report, (*campaigns, *plan_folders))
        if root is not None and not report_inside:
            raise pytest.UsageError(
                f"{REPORT}: {report} is inside the campaign {root}, which is read-only; "
                f"write it elsewhere or pass {FORCE_REPORT}"
            )
    return Settings(
        campaigns=campaigns,
        plans=plans,
        plan_folders=plan_folders,
        reports=reports,
        python=python,
        timeout=_positive(config, TIMEOUT, INI_TIMEOUT, default=DEFAULT_TIMEOUT),
        fast=bool(config.getoption(FAST)),
        plan_sha256=_sha256(config.getoption(PLAN_SHA256)),
        ignore=tuple(config.getini(INI_IGNORE)),
        temp_patterns=tuple(p for p in config.getini(INI_TEMP_PATTERNS) if p),
        deviation_tolerance=_tolerance(config),
        report_inside=report_inside,
        plan_pins=_pin_lines(config),
        group_files_above=_group_files_above(config),
        strict_text=_flag(config, STRICT_TEXT, INI_STRICT_TEXT),
        journal_pins=_journal_pins(config),
        **_gate(config, campaigns, reports),
    )


_JOURNAL_PIN = re.compile(r"([1-9][0-9]*):([0-9a-f]{64})")


def _journal_pins(config: pytest.Config) -> tuple[tuple[int, str], ...]:
    """The journal pins: the command line's, else the ini lines (as pytest does)."""
    given = config.getoption(JOURNAL_PIN)
    source = JOURNAL_PIN if given else INI_JOURNAL_PINS
    lines = [str(v).strip() for v in (given or config.getini(INI_JOURNAL_PINS))]
    pins = []
    for text in lines:
        if not text or text.startswith("#"):
            continue
        found = _JOURNAL_PIN.fullmatch(text.lower())
        if found is None:
            raise pytest.UsageError(
                f"{source}: {text!r} is not LINE:DIGEST (a line number, a colon and the "
                "64 hex digits of its sha256, as rec.pin() prints it)")
        pins.append((int(found.group(1)), found.group(2)))
    return tuple(pins)


def _flag(config: pytest.Config, option: str, ini: str) -> bool:
    """A switch given on the command line, else its ini twin."""
    given = config.getoption(option)
    return bool(config.getini(ini) if given is None else given)


def _group_files_above(config: pytest.Config) -> int:
    raw = str(config.getini(INI_GROUP_FILES_ABOVE)).strip() or str(GROUP_FILES_ABOVE)
    if not raw.isdigit():
        raise pytest.UsageError(
            f"{INI_GROUP_FILES_ABOVE} = {shlex.quote(raw)}: not a whole number of files"
        )
    return int(raw)


def _tolerance(config: pytest.Config) -> float:
    value = _positive(config, None, INI_TOLERANCE, default=float(DEFAULT_TOLERANCE))
    if value > MAX_TOLERANCE:
        raise pytest.UsageError(
            f"{INI_TOLERANCE}: {value}: at most {MAX_TOLERANCE} (a step that ran less than half "
            "its planned hours always needs an explanation)"
        )
    return value


def _pin_lines(config: pytest.Config) -> tuple[PinLine, ...]:
    """``itera_plan_sha256`` lines; folders are relative to the ini file, like itera_campaign."""
    base = config.inipath.parent if config.inipath is not None else config.rootpath
    lines = []
    for raw in config.getini(INI_PLAN_SHA256):
        text = str(raw).strip()
        if not text or text.startswith("#"):
            continue
        key, sep, value = text.rpartition("=")
        if not sep:
            lines.append(PinLine(None, None, _sha256(text, INI_PLAN_SHA256)))
            continue
        key = key.strip()
        if not key:
            raise pytest.UsageError(
                f"{INI_PLAN_SHA256}: {text!r}: name the campaign before '=' "
                "('<campaign folder or id> = <sha256>')"
            )
        folder = Path(os.path.abspath(base / Path(key).expanduser()))
        lines.append(PinLine(key, folder, _sha256(value, INI_PLAN_SHA256)))
    return tuple(lines)


def _campaigns(config: pytest.Config) -> tuple[Path, ...]:
    given = [(p, config.invocation_params.dir / p) for p in config.getoption(CAMPAIGN)]
    if not given:  # the command line takes precedence over the ini file, as in pytest
        base = config.inipath.parent if config.inipath is not None else config.rootpath
        given = [(str(p), base / p) for p in config.getini(INI_CAMPAIGN)]
    given = [(path, _staged(config, path) if path.startswith("s3://") else full)
             for path, full in given]
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


def _staged(config: pytest.Config, url: str) -> Path:
    """An s3:// campaign, copied into a fresh local folder outside it (removed at the end of
    the session); the checks then read that folder as any other. Usage errors say why not.

    An xdist worker reads the controller's copy (pytest_configure_node); one on another
    host (``--tx ssh=...``), where that folder is not, makes its own copy of the store
    (its node ids are the URL's, the same on every worker), without any checkpoint: it
    spools the ones its own items judge (a cache cap of 0)."""
    from pytest_itera.files import source

    worker = getattr(config, "workerinput", None)
    if worker is None:
        staged = _stage_here(config, url)
    else:
        copied = worker.get(STAGED_INPUT, {}).get(url)
        if copied is None:
            raise pytest.UsageError(f"{CAMPAIGN}: {url}: the controller made no local copy")
        if source.Staged.sidecar(Path(copied)).is_file():
            staged = source.Staged.load(Path(copied))
        else:
            staged = _stage_here(config, url, checkpoints=False)
            config.stash.setdefault(controller_roots_key, {})[staged.root] = Path(copied)
    config.stash.setdefault(sources_key, {})[staged.root] = staged
    return staged.root


def _stage_here(config: pytest.Config, url: str, *, checkpoints: bool = True) -> Staged:
    """This process's copy of the prefix, under the system's temporary folder, and what
    the store said of each object beside it (for the workers); ``checkpoints``: up to the
    cache cap of them (else none: each is spooled when an item judges it). When the items
    run elsewhere (xdist's workers) or this is a worker's own copy, a binary file no check
    reads is only sniffed: the worker whose item asks for its sha256 downloads it."""
    import tempfile

    from pytest_itera.files import source

    flag = config.getoption(STORE_CHECKSUMS)
    checksums = bool(config.getini(INI_STORE_CHECKSUMS) if flag is None else flag)
    try:
        location = source.S3Location.parse(url)
        timeout = _positive(config, None, INI_STORE_TIMEOUT, default=DEFAULT_STORE_TIMEOUT)
        store = source.S3Source(location, timeout=timeout)
        cache = Path(tempfile.mkdtemp(prefix="itera-store-"))
        config.add_cleanup(lambda: shutil.rmtree(cache, ignore_errors=True))
        dest = Path(os.path.abspath(cache / location.bucket / (location.prefix or "_")))
        cap = _bytes(config, INI_STORE_CACHE_MAX, DEFAULT_STORE_CACHE_MAX) if checkpoints else 0
        staged = source.stage(store, dest, cap,
                              checksums=checksums,
                              # a seal covers the copy's files: every one is downloaded
                              spare=not (config.getoption(SEAL)
                                         or config.getoption(VERIFY_SEAL)),
                              defer=not checkpoints or distributed(config))
        staged.save()
    except source.SourceError as exc:
        raise pytest.UsageError(f"{CAMPAIGN}: {exc}") from None
    except OSError as exc:  # the local disk: full, read-only
        raise pytest.UsageError(f"{CAMPAIGN}: {url}: the local copy cannot be written "
                                f"under {tempfile.gettempdir()} ({exc.strerror or exc})") \
            from None
    return staged


def distributed(config: pytest.Config) -> bool:
    """Whether pytest-xdist hands this session's items to workers (``-n N``, ``--tx`` with a
    ``--dist`` mode), read before or after xdist settles its own options."""
    option = config.option
    workers = getattr(option, "numprocesses", None)
    if workers is not None:
        return workers not in (0, "0")
    return bool(getattr(option, "tx", None)) and (getattr(option, "dist", "no") != "no"
                                                  or bool(getattr(option, "distload", False)))


def _bytes(config: pytest.Config, ini: str, default: int) -> int:
    """A size in bytes (``64G``, ``0``)."""
    raw = str(config.getini(ini)).strip().upper().removesuffix("B").removesuffix("I")
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}.get(raw[-1:], 1)
    number = raw[:-1] if scale > 1 else raw
    if not raw:
        return default
    if not number.strip().isdigit():
        raise pytest.UsageError(f"{ini} = {shlex.quote(str(config.getini(ini)))}: not a size "
                                "(e.g. 64G)")
    return int(number) * scale


def _plans(
    config: pytest.Config, campaigns: tuple[Path, ...]
) -> tuple[tuple[Path, ...], tuple[Path, ...]]:
    """``--itera-plan`` paths (else the ini twin's): the plan files, and the campaign folders
    given among them (a folder stands for its plan.json and is read-only, like a campaign)."""
    given = [(p, config.invocation_params.dir / p) for p in config.getoption(PLAN)]
    if not given:
        given = [(str(p), Path(p)) for p in config.getini(INI_PLAN)]
    files: list[Path] = []
    folders: list[Path] = []
    for raw, full in given:
        path = Path(os.path.abspath(full))
        if path.is_dir():
            if os.path.lexists(path / "manifest.json"):
                raise pytest.UsageError(f"{PLAN}: {raw}: the campaign has a manifest.json, it "
                                        f"is closed: accept it with {CAMPAIGN}")
            if not os.path.lexists(path / "plan.json"):
                raise pytest.UsageError(f"{PLAN}: {raw}: the folder has no plan.json")
            if any(path == c or path.is_relative_to(c) or c.is_relative_to(path)
                   for c in campaigns):
                raise pytest.UsageError(f"{PLAN}: {raw} is also given to {CAMPAIGN}")
            folders.append(path)
            path = path / "plan.json"
        elif not path.is_file():
            raise pytest.UsageError(f"{PLAN}: {raw}: no such file or folder")
        if path in files:
            raise pytest.UsageError(f"{PLAN}: {raw}: the same plan is given twice")
        files.append(path)
    return tuple(files), tuple(folders)


def _reports(config: pytest.Config) -> tuple[Path, ...]:
    paths = []
    for raw in config.getoption(REPORT):
        from pytest_itera.report import SUFFIXES  # only when a report is asked for

        path = Path(os.path.abspath(config.invocation_params.dir / raw))
        if path.suffix.lower() not in SUFFIXES:
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
    name = opt  # the option the user gave: the command line's, else the ini file's
    if value is None:
        name = ini
        raw = str(config.getini(ini)).strip() or str(default)
        try:
            value = float(raw)
        except ValueError:
            raise pytest.UsageError(f"{ini} = {shlex.quote(raw)}: not a number") from None
    if not value > 0 or value != value or value == float("inf"):
        raise pytest.UsageError(f"{name}: {value}: must be a positive number")
    return float(value)


@overload
def _sha256(raw: str, name: str = ...) -> str: ...
@overload
def _sha256(raw: None, name: str = ...) -> None: ...
def _sha256(raw: str | None, name: str = PLAN_SHA256) -> str | None:
    if raw is None:
        return None
    value = raw.strip().lower()
    if len(value) != 64 or any(c not in "0123456789abcdef" for c in value):
        raise pytest.UsageError(f"{name}: {raw!r} is not a 64-hex sha256")
    return value


# ------------------------------------------------------- money: catalogue and phrases

_catalogue_key = pytest.StashKey["Catalogue | None"]()


def ini_catalogue(config: pytest.Config) -> Catalogue | None:
    """The catalogue file named by the ini option ``itera_catalogue`` (read once), or None.

    A relative path is relative to the ini file's folder (else the rootdir). A file that
    cannot be read or is not a valid catalogue is a one-line usage error.
    """
    if _catalogue_key in config.stash:
        return config.stash[_catalogue_key]
    from pytest_itera.core.money import CatalogueError, load_catalogue

    raw = str(config.getini(INI_CATALOGUE)).strip()
    catalogue = None
    path = _ini_catalogue_path(config)
    if path is not None:
        try:
            catalogue = load_catalogue(path)
        except CatalogueError as exc:
            raise pytest.UsageError(f"{INI_CATALOGUE} = {shlex.quote(raw)}: {exc}") from None
    config.stash[_catalogue_key] = catalogue
    return catalogue


def _ini_catalogue_path(config: pytest.Config) -> Path | None:
    """``itera_catalogue``'s file, relative to the ini file's folder (else the rootdir)."""
    raw = str(config.getini(INI_CATALOGUE)).strip()
    if not raw:
        return None
    base = config.inipath.parent if config.inipath is not None else config.rootpath
    return base / Path(raw).expanduser()


def catalogue_in_force(config: pytest.Config) -> Catalogue | str | None:
    """The ``pytest_itera_catalogue`` hook's catalogue, else the ini file's, else None (the
    checks then use the shipped IteraGPU catalogue); a hook answer that is not a Catalogue
    gives why, which the checks that need a catalogue report."""
    from pytest_itera.core.money import Catalogue

    # The hookspec promises a Catalogue | None; pluggy does not check what a conftest returns.
    found: object = config.hook.pytest_itera_catalogue(config=config)
    if found is not None:
        if not isinstance(found, Catalogue):
            return (f"the pytest_itera_catalogue hook returned {type(found).__name__}, not a "
                    "pytest_itera.core.money.Catalogue")
        return found
    return ini_catalogue(config)


def hourly_phrases(config: pytest.Config) -> tuple[str, ...]:
    """The users' extra phrases of hourly billing (``pytest_itera_hourly_phrases``)."""
    phrases: list[str] = []
    for group in config.hook.pytest_itera_hourly_phrases(config=config):
        for phrase in (group,) if isinstance(group, str) else group:
            if isinstance(phrase, str) and phrase.strip():
                phrases.append(phrase)
    return tuple(dict.fromkeys(phrases))


# ------------------------------------------------------- the gate: waivers and the seal


def _gate(
    config: pytest.Config, campaigns: tuple[Path, ...], reports: tuple[Path, ...]
) -> dict[str, Any]:
    """--itera-require-accepted, the waivers file and the seal options, checked together."""
    flag = config.getoption(REQUIRE_ACCEPTED)
    waivers_file = _waivers_file(config, campaigns)
    gate: dict[str, Any] = {
        "require_accepted": bool(config.getini(INI_REQUIRE_ACCEPTED) if flag is None else flag),
        "accept_played_clock": bool(config.getoption(ACCEPT_PLAYED_CLOCK)),
        "waivers_file": waivers_file,
        "waivers": _waivers(waivers_file) if waivers_file is not None else (),
        "seal": _outside(config, SEAL, campaigns, must_exist=False),
        "seal_key": _outside(config, SEAL_KEY, campaigns),
        "verify_seal": _outside(config, VERIFY_SEAL, campaigns),
        "seal_pubkey": _outside(config, SEAL_PUBKEY, campaigns),
    }
    if gate["seal"] is not None or gate["verify_seal"] is not None:
        _check_seal_options(config, gate, campaigns, reports)
    elif gate["seal_key"] is not None or gate["seal_pubkey"] is not None:
        raise pytest.UsageError(f"{SEAL_KEY} and {SEAL_PUBKEY} go with {SEAL} or {VERIFY_SEAL}")
    return gate


def _given_path(config: pytest.Config, raw: str) -> Path:
    return Path(os.path.abspath(config.invocation_params.dir / Path(raw).expanduser()))


def _outside(
    config: pytest.Config, option: str, campaigns: tuple[Path, ...], *, must_exist: bool = True
) -> Path | None:
    """A path option that must not lie inside a campaign (which is read-only and is what the
    file vouches for); links resolved."""
    raw = config.getoption(option)
    if not raw:
        return None
    path = _given_path(config, raw)
    if must_exist and not path.is_file():
        raise pytest.UsageError(f"{option}: {raw}: no such file")
    _refuse_inside(option, raw, path, campaigns)
    return path


def _refuse_inside(option: str, raw: str, path: Path | None, campaigns: tuple[Path, ...], *,
                   what: str = "a campaign cannot vouch for itself") -> None:
    """A usage error when ``path`` lies in a judged folder, as named or with links resolved."""
    root = inside(path, campaigns) if path is not None else None
    if root is not None:
        raise pytest.UsageError(
            f"{option}: {raw} is inside the campaign {root}: keep it outside ({what})"
        )


def _waivers_file(config: pytest.Config, campaigns: tuple[Path, ...]) -> Path | None:
    raw = config.getoption(WAIVERS)
    if raw:
        return _outside(config, WAIVERS, campaigns)
    ini = str(config.getini(INI_WAIVERS)).strip()
    if not ini:
        return None
    base = config.inipath.parent if config.inipath is not None else config.rootpath
    path = Path(os.path.abspath(base / Path(ini).expanduser()))
    if not path.is_file():
        raise pytest.UsageError(f"{INI_WAIVERS} = {shlex.quote(ini)}: no such file")
    _refuse_inside(INI_WAIVERS, ini, path, campaigns)
    return path


def _waivers(path: Path) -> tuple[Waiver, ...]:
    from pytest_itera.checks.waivers import WaiversError, load

    try:
        return load(path)
    except WaiversError as exc:
        raise pytest.UsageError(f"{WAIVERS}: {exc}") from None


def _check_seal_options(
    config: pytest.Config, gate: dict[str, Any], campaigns: tuple[Path, ...],
    reports: tuple[Path, ...],
) -> None:
    seal, verify = gate["seal"], gate["verify_seal"]
    option = SEAL if seal is not None else VERIFY_SEAL
    if seal is not None and verify is not None:
        raise pytest.UsageError(f"{SEAL} writes a seal, {VERIFY_SEAL} checks one: give one")
    if len(campaigns) != 1:
        raise pytest.UsageError(f"{option}: a seal covers one campaign; give exactly one "
                                f"{CAMPAIGN}")
    if config.getoption(FAST):
        raise pytest.UsageError(f"{option}: not with {FAST} (a seal needs a full verdict)")
    if importlib.util.find_spec("model_signing") is None:
        raise pytest.UsageError(f"{option} needs OpenSSF model-signing: "
                                "pip install 'pytest-itera[seal]'")
    if verify is not None:
        if reports:
            raise pytest.UsageError(f"{VERIFY_SEAL} only re-checks a sealed folder; it writes "
                                    f"no closure report ({REPORT})")
        if gate["seal_key"] is not None:
            raise pytest.UsageError(f"{VERIFY_SEAL} checks with a public key: {SEAL_PUBKEY}")
        if gate["waivers_file"] is not None:
            raise pytest.UsageError(f"{VERIFY_SEAL} takes no waivers: the seal records those "
                                    "that were applied")
        _usable_key(SEAL_PUBKEY, gate["seal_pubkey"], private=False)
        return
    if gate["seal_pubkey"] is not None:
        raise pytest.UsageError(f"{SEAL} signs with a private key: {SEAL_KEY}")
    if any(r.is_relative_to(campaigns[0]) for r in reports):
        raise pytest.UsageError(f"{SEAL}: a report inside the campaign would be sealed with it; "
                                f"write reports elsewhere")
    if not any(r.suffix.lower() == ".json" for r in reports):
        raise pytest.UsageError(f"{SEAL}: the seal carries the JSON report's sha256: add "
                                f"{REPORT} PATH.json")
    _usable_key(SEAL_KEY, gate["seal_key"], private=True)


def _usable_key(option: str, path: Path | None, *, private: bool) -> None:
    if path is None:
        return
    from pytest_itera.report.seal import key_problem

    password = os.environ.get(SEAL_PASSWORD_ENV) if private else None
    problem = key_problem(path, private=private, password=password)
    if problem is not None:
        raise pytest.UsageError(f"{option}: {problem}")
