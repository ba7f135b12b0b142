"""The ``itera-metrics`` table: the values an analysis quotes, in a structure judged exactly.

``rec.close()`` renders it into a Markdown or text analysis (replacing the one a reopening
left); the ``analysis-present`` check reads it back and compares each row with the run's
measured metric (recomputed where the plan says how), at the precision written. A person may
write one too; its rows are judged the same way, in any language around it::

    <!-- itera-metrics -->
    | run | metric | value |
    | --- | --- | --- |
    | control | accuracy | 0.75 |
    <!-- /itera-metrics -->
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["BEGIN", "END", "Row", "Table", "parse", "render", "replace_in"]

BEGIN = "<!-- itera-metrics -->"
END = "<!-- /itera-metrics -->"
HEADER = ("run", "metric", "value")
_BEGIN = re.compile(r"^\s*<!--\s*itera-metrics\b[^>]*-->\s*$")
_END = re.compile(r"^\s*<!--\s*/itera-metrics\s*-->\s*$")
_SEPARATOR = re.compile(r":?-{3,}:?")


@dataclass(frozen=True)
class Row:
    run: str
    metric: str
    value: str  # as written
    line: int  # 1-based, in the text


@dataclass(frozen=True)
class Table:
    line: int  # the marker's line
    rows: tuple[Row, ...]
    problems: tuple[tuple[int, str], ...]  # (line, what is wrong) for a row not understood


def _cells(line: str) -> list[str] | None:
    stripped = line.strip()
    if not stripped.startswith("|"):
        return None
    return [c.strip().strip("`") for c in stripped.strip("|").split("|")]


def parse(text: str) -> list[Table]:
    """Every ``itera-metrics`` table of ``text``: from its marker to the end marker (or the
    first line that is no table row)."""
    tables: list[Table] = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        if not _BEGIN.match(lines[index]):
            index += 1
            continue
        start, rows, problems = index + 1, [], []
        index += 1
        seen_header = False
        while index < len(lines) and not _END.match(lines[index]):
            cells = _cells(lines[index])
            if cells is None:
                if lines[index].strip():
                    break
                index += 1
                continue
            number = index + 1
            index += 1
            if all(_SEPARATOR.fullmatch(c) for c in cells if c):
                continue
            if not seen_header and tuple(c.casefold() for c in cells) == HEADER:
                seen_header = True
                continue
            if len(cells) != 3 or not all(cells):
                problems.append((number, f"a row of {len(cells)} cells, not run | metric | "
                                 "value"))
                continue
            rows.append(Row(cells[0], cells[1], cells[2], number))
        tables.append(Table(start, tuple(rows), tuple(problems)))
    return tables


def _number(value: float) -> str:
    return format(value, ".10g")


def render(rows: Iterable[tuple[str, str, float]]) -> str:
    """The table of (run, metric, value) rows, between its markers."""
    body = [BEGIN, "| run | metric | value |", "| --- | --- | --- |"]
    body += [f"| {run} | {metric} | {_number(value)} |" for run, metric, value in rows]
    return "\n".join([*body, END]) + "\n"


def replace_in(text: str, table: str) -> str:
    """``text`` with its ``itera-metrics`` table replaced by ``table`` (appended when it holds
    none)."""
    lines = text.splitlines(keepends=True)
    for start, line in enumerate(lines):
        if _BEGIN.match(line):
            end = next((i for i in range(start, len(lines)) if _END.match(lines[i])), None)
            if end is not None:
                return "".join(lines[:start]) + table + "".join(lines[end + 1:])
    sep = "" if not text or text.endswith("\n\n") else ("\n" if text.endswith("\n") else "\n\n")
    return text + sep + table
