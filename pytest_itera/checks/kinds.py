"""The finding kinds of the built-in checks, as docs/checks.md lists them (no pytest import).

Each check module declares its ``KINDS`` (code -> :class:`~pytest_itera.checks.model.Kind`:
the rule in one line, the fix) and hands them to its :class:`Check`; this module renders them,
one bullet per kind, into the blocks of docs/checks.md that say which check they list::

    <!-- kinds: files-intact -->
    ...rendered...
    <!-- /kinds -->

``python -m pytest_itera.checks.kinds docs/checks.md`` rewrites those blocks in place (a
maintainer's command over the project's docs, never over a campaign); a test asserts that the
file is what it would write.
"""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Iterator
from pathlib import Path

from pytest_itera.checks.context import Check
from pytest_itera.checks.model import FAMILIES

__all__ = ["GENERIC", "builtin_checks", "render", "render_block", "rewrite"]

# The kind every check may report without declaring it: the engine's, when a document it
# needs did not load (context.blocked_by_contract).
GENERIC = ("not-evaluated",)

_BLOCK = re.compile(r"(<!-- kinds: (?P<id>[a-z0-9-]+) -->\n)(?P<body>.*?)(<!-- /kinds -->)",
                    re.DOTALL)


def builtin_checks() -> Iterator[Check]:
    """Every built-in check, family by family in FAMILIES' order, each in its table's order."""
    for module in FAMILIES.values():
        yield from importlib.import_module(module).CHECKS


def render_block(check: Check) -> str:
    """One check's kinds, a bullet each: ``- `code`: rule. *Fix:* fix.``, advisories marked."""
    lines = []
    for code, kind in check.kinds.items():
        advises = " *Advises* (decides under `--itera-strict-text`)." if kind.advisory else (
            f" *Advises* when {kind.advises_when} (decides then only under "
            "`--itera-strict-text`)." if kind.advises_when else "")
        lines.append(f"- `{code}`: {_sentence(kind.rule)}{advises} *Fix:* {_sentence(kind.fix)}\n")
    return "".join(lines)


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text.endswith((".", "?", "!")) else f"{text}."


def render(text: str) -> str:
    """``text`` with every kinds block rendered from its check's KINDS; a block naming no
    built-in check is an error (a renamed check leaves no stale list behind)."""
    checks = {check.id: check for check in builtin_checks()}

    def block(match: re.Match[str]) -> str:
        check = checks.get(match["id"])
        if check is None:
            raise KeyError(f"docs name an unknown check in a kinds block: {match['id']!r}")
        return f"{match[1]}{render_block(check)}{match[4]}"

    return _BLOCK.sub(block, text)


def rewrite(path: Path) -> bool:
    """Render the blocks of one Markdown file in place; True when it changed."""
    text = path.read_text("utf-8")
    rendered = render(text)
    if rendered != text:
        path.write_text(rendered, "utf-8")
    return rendered != text


if __name__ == "__main__":  # pragma: no cover - a maintainer's command, tested by running it
    for name in sys.argv[1:]:
        print(f"{name}: {'rendered' if rewrite(Path(name)) else 'up to date'}")
