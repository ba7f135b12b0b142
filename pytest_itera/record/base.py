"""The recorder's ground: its error, atomic writes, clean paths, timestamps, commit ids, and
:class:`Campaign`, what a run's recorder and the step clock see of the campaign recorder.

No part of the recorder above imports another's private name; each takes what it needs from
here.
"""

from __future__ import annotations

import json
import math
import stat
import sys
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pytest_itera.core.atomic import atomic_write_bytes
from pytest_itera.core.campaign import (
    BASE_RECORD,
    MANIFEST_FILE,
    PLAN_FILE,
    json_path,
    validation_errors,
)
from pytest_itera.core.portable import RENAME_HINT, path_problem
from pytest_itera.files.tree import (
    DigestRefused,
    PathRefusal,
    resolve_inside,
    sha256_file,
    syntax_problem,
    tree_digest,
    walk,
)

if TYPE_CHECKING:
    from pytest_itera.core.campaign import Plan
    from pytest_itera.files.scan import TempMatcher

__all__ = [
    "BASE_RECORD",
    "Campaign",
    "Clock",
    "Outcome",
    "RecordError",
    "atomic_write_bytes",
    "atomic_write_json",
    "atomic_write_text",
    "check_relpath",
    "dumps_json",
    "find_temp_path",
    "from_json_number",
    "json_number",
    "jsonl_text",
    "refuse_temp_strings",
    "require_commit",
    "sha256_file",
    "shipped_tree_digest",
    "timestamp",
    "validate",
    "walk_files",
]

Outcome = Literal["accepted", "stopped", "rejected", "dropped"]
Clock = Callable[[], datetime]


class RecordError(ValueError):
    """A recording request that would produce an invalid or dishonest campaign."""



class Campaign(Protocol):
    """What a run's recorder and the step clock use of :class:`~pytest_itera.record.campaign.
    CampaignRecorder`: its plan, its clock and its journal."""

    root: Path
    plan: dict[str, Any]
    _clock: Clock
    _replaying: bool  # True while the journal is replayed (nothing is judged or written again)

    @property
    def plan_model(self) -> Plan: ...

    def _event(self, name: str, **facts: Any) -> None: ...
    def _require_plan(self) -> None: ...
    def now(self, at: datetime | str | None = None) -> str: ...
    def file_sha256(self, relpath: str, *, field: str) -> str: ...
    def planned_run(self, run_id: str) -> Mapping[str, Any]: ...
    def planned_corpus(self, run_id: str) -> str | None: ...
    def corpus_ids(self) -> list[str]: ...
    def predictions_owners(self, relpath: str) -> list[str]: ...

# ------------------------------------------------------------ small helpers


def timestamp(moment: datetime | str | None = None) -> str:
    """An ISO-8601 UTC timestamp ending in ``Z`` (now when ``moment`` is None)."""
    if isinstance(moment, str):
        moment = datetime.fromisoformat(moment)
    moment = moment or datetime.now(UTC)
    if moment.tzinfo is None:
        raise RecordError(f"timestamp {moment.isoformat()} has no time zone; give a UTC time")
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def dumps_json(data: Any) -> str:
    """Canonical JSON as the recorder writes it (NaN refused: it is not JSON)."""
    return json.dumps(data, indent=2, sort_keys=False, allow_nan=False, ensure_ascii=False) + "\n"


def jsonl_text(rows: Iterable[Any]) -> str:
    """JSON Lines as the recorder writes them (NaN refused: it is not JSON)."""
    return "".join(json.dumps(row, allow_nan=False, ensure_ascii=False) + "\n" for row in rows)


def atomic_write_json(path: Path, data: Any) -> None:
    atomic_write_text(path, dumps_json(data))


def find_temp_path(text: str) -> str | None:
    """The temporary-folder pattern that ``text`` points into, or None: exactly what the
    plugin's no-temp-paths check would find in the file, and the current
    ``tempfile.gettempdir()`` (read at each call)."""
    from pytest_itera.files.scan import find_in_text, tempdir_patterns

    return find_in_text(text, _temp_matcher(tempdir_patterns()))


@cache
def _temp_matcher(current: tuple[str, ...]) -> TempMatcher:
    from pytest_itera.files.scan import DEFAULT_TEMP_PATTERNS, TempMatcher

    return TempMatcher((*DEFAULT_TEMP_PATTERNS, *current))


def check_relpath(value: str, *, field: str) -> str:
    """``value`` as a clean relative POSIX path inside the campaign (a folder may end with
    '/'), else RecordError: the checks' own rules, the syntax of a path inside the folder
    (:func:`pytest_itera.files.tree.syntax_problem`) and portability
    (:func:`pytest_itera.core.portable.path_problem`)."""
    path = value.rstrip("/") or value
    problem = syntax_problem(path)
    if problem is not None:
        raise RecordError(f"{field}: {value!r} {problem}; record paths relative to the campaign")
    unportable = path_problem(path)
    if unportable is not None:
        raise RecordError(f"{field}: {value!r} {unportable}; {RENAME_HINT}")
    return value


def refuse_temp_strings(data: Any, document: str, path: tuple[str | int, ...] = ()) -> None:
    """Raise RecordError for the first string of ``data`` that points into a temporary folder."""
    if isinstance(data, str):
        root = find_temp_path(data)
        if root is not None:
            raise RecordError(
                f"{document} {json_path(path)}: {data[:120]!r} points into the temporary "
                f"folder {root!r}, which is gone after the rental; record a path in the campaign"
            )
    elif isinstance(data, Mapping):
        for key, value in data.items():
            refuse_temp_strings(key, document, path)
            refuse_temp_strings(value, document, (*path, key))
    elif isinstance(data, list | tuple):
        for i, value in enumerate(data):
            refuse_temp_strings(value, document, (*path, i))



def validate(
    schema_name: str, data: Any, document: str, hints: Mapping[str, str] | None = None
) -> None:
    errors = validation_errors(schema_name, data)
    if errors:
        lines = []
        for e in errors:
            where = json_path(e.path)
            hint = (hints or {}).get(where)
            lines.append(f"  {where}: {hint or e.message[:300]}")
        raise RecordError(f"{document} does not follow the schema:\n" + "\n".join(lines))



def from_json_number(value: Any) -> Any:
    """The inverse of :func:`json_number` (a journal's log values)."""
    names = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
    return names.get(value, value) if isinstance(value, str) else value


def json_number(value: Any) -> Any:
    """A series value as JSON: non-finite floats as the strings the contract names."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
    return value



def require_commit(revision: str, what: str) -> None:
    """RecordError unless ``revision`` is a full 40-hex commit id: the artifact checks' rule
    (:func:`pytest_itera.checks.artifacts.adapter_pinned.commit_problem`), whose reason it gives."""
    from pytest_itera.checks.artifacts.adapter_pinned import commit_problem

    problem = commit_problem(revision) if isinstance(revision, str) else (
        f"{revision!r} is not a string")
    if problem is not None:
        raise RecordError(
            f"{what} {revision!r} is not a full 40-hex commit id: {problem}; a branch, a tag "
            "or a short hash moves or is ambiguous; record the exact commit"
        )


def shipped_tree_digest(folder: Path) -> str:
    """The tree digest of a shipped base folder (docs/contract-v2.md), links refused."""
    try:
        return tree_digest(folder)
    except DigestRefused as exc:
        raise RecordError(f"shipped base {folder.name}: {exc}") from exc


def walk_files(
    root: Path, *, skip: tuple[str, ...] = (PLAN_FILE, MANIFEST_FILE)
) -> list[tuple[str, Path]]:
    """Every regular file under ``root`` except ``skip`` (the two contract documents), sorted;
    a symbolic link to a regular file inside ``root`` is listed as a file of its own, with
    its target's bytes (Lightning's ``ModelCheckpoint(save_last="link")`` writes
    ``last.ckpt`` so): ``files-intact`` accepts such a link. A link that leaves the folder,
    dangles or loops, or anything else that is not a regular file, is refused.

    The checks' own walk of the folder (:func:`pytest_itera.files.tree.walk`), untruncated
    because the manifest lists every file; a directory that cannot be listed adds no file."""
    found = []
    for entry in walk(root, limit=sys.maxsize):
        if entry.kind == "dir" or entry.path in skip:
            continue
        if entry.kind == "symlink":
            refusal = link_problem(root, entry.path)
            if refusal is not None:
                raise RecordError(f"{entry.path} is a symbolic link that {refusal}: the "
                                  "campaign must hold what it lists; copy the target "
                                  "in its place")
        elif entry.kind != "file":
            raise RecordError(f"{entry.path} is not a regular file")
        found.append((entry.path, root / entry.path))
    return found


def link_problem(root: Path, relpath: str) -> str | None:
    """Why the symbolic link ``relpath`` cannot be listed, in one clause, or None when it
    resolves to a regular file inside ``root``."""
    target = resolve_inside(root, relpath)
    if isinstance(target, PathRefusal):
        return "leaves the campaign folder" if target.kind == "link-leaves" else "loops"
    try:
        mode = target.lstat().st_mode
    except OSError:
        return "dangles (its target is missing)"
    return None if stat.S_ISREG(mode) else "points to something that is not a regular file"
