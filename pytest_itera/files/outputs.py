"""The plugin's own outputs, recognised by their content: a closure report written into the
campaign with ``--itera-report-inside`` (JSON, Markdown or HTML), or a seal copied in.

They are about the campaign, not part of it: the checks leave out an *unlisted* file that is
one of them (the next acceptance does not trip on the report of the last one), and the
summary notes each file left out. A name is never enough: the file must carry its renderer's
mark, and a listed file is always judged (the manifest vouches for it).

- JSON report: a JSON object whose ``format`` is ``itera-report/N`` (the JSON schema's);
- HTML report: the ``<meta name="generator" content="pytest-itera ...">`` tag in its head;
- Markdown report: its first line, the comment :data:`MARKDOWN_MARK`;
- a chart of the Markdown report (the ``.svg`` files beside it): its first line, the comment
  :data:`SVG_MARK`;
- seal: an in-toto statement whose predicate's ``itera`` record has the format
  ``itera-seal/N``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Container, Iterable
from pathlib import Path

__all__ = ["GENERATOR", "HTML_MARK", "MARKDOWN_MARK", "SUFFIXES", "SVG_MARK", "left_out_note",
           "own_output", "own_outputs"]

GENERATOR = "pytest-itera"
# Written by pytest_itera.report's renderers; read here (the one home of the marks).
HTML_MARK = f'<meta name="generator" content="{GENERATOR} closure report"/>'
MARKDOWN_MARK = f"<!-- {GENERATOR} closure report -->"
SVG_MARK = f"<!-- {GENERATOR} closure report chart -->"
SUFFIXES = (".json", ".md", ".html", ".svg")
_HEAD = 4096
_MAX_JSON = 64 * 1024 * 1024
_REPORT = re.compile(r"itera-report/\d+")
_SEAL = re.compile(r"itera-seal/\d+")


def own_output(path: Path) -> str | None:
    """What the plugin wrote at ``path`` ("a closure report (itera-report/2)", "a seal
    (itera-seal/1)"), or None: not one of its outputs, or unreadable (then it is judged
    like any file)."""
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        return None
    try:
        with path.open("rb") as fh:
            head = fh.read(_HEAD)
            if suffix == ".json":
                if not head.lstrip().startswith(b"{") or path.stat().st_size > _MAX_JSON:
                    return None
                raw = head + fh.read()
                if not _may_be_ours(raw):
                    return None
                data = json.loads(raw)
            else:
                text = head.decode("utf-8", "replace")
    except (OSError, ValueError, RecursionError):
        return None
    if suffix == ".md":
        return "a closure report (Markdown)" if text.startswith(MARKDOWN_MARK + "\n") else None
    if suffix == ".svg":
        return "a closure report's chart (SVG)" if text.startswith(SVG_MARK + "\n") else None
    if suffix == ".html":
        head_part = text.split("</head>", 1)[0]
        return "a closure report (HTML)" if HTML_MARK in head_part else None
    return _json_output(data)


def _may_be_ours(raw: bytes) -> bool:
    """Whether a JSON document may name one of our formats: without an escape (a backslash)
    and in UTF-8 (json reads UTF-16 and UTF-32 too: NUL bytes among the first four), a
    string holds its value's very bytes, so the format's name is spelled there. The
    campaign's own manifest.json (100,000 listed files: 10 MB, ~0.05 s to parse) is then
    never parsed here (issue 29)."""
    return (b"\0" in raw[:4] or b"\\" in raw
            or b"itera-report/" in raw or b"itera-seal/" in raw)


def _json_output(data: object) -> str | None:
    if not isinstance(data, dict):
        return None
    fmt = data.get("format")
    if isinstance(fmt, str) and _REPORT.fullmatch(fmt) and "verdict" in data:
        return f"a closure report ({fmt})"
    predicate = data.get("predicate")
    itera = predicate.get("itera") if isinstance(predicate, dict) else None
    fmt = itera.get("format") if isinstance(itera, dict) else None
    if isinstance(fmt, str) and _SEAL.fullmatch(fmt) and "_type" in data:
        return f"a seal ({fmt})"
    return None


def own_outputs(root: Path, files: Iterable[str], listed: Container[str]) -> dict[str, str]:
    """The plugin's own outputs among the regular ``files`` (relative paths) of the campaign
    at ``root`` that the manifest does not list, by path: what each one is."""
    found = {}
    for relpath in files:
        if relpath.lower().endswith(SUFFIXES) and relpath not in listed:
            what = own_output(root / relpath)
            if what is not None:
                found[relpath] = what
    return found


def left_out_note(relpath: str, what: str) -> str:
    """The summary's note for an own output the checks left out."""
    return (f"not judged: {relpath}, {what} that pytest-itera wrote inside the campaign "
            "(not part of it; unlisted)")
