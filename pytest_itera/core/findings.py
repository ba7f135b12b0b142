"""What a check reports: findings, rendered as plain text (no pytest import)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Finding:
    """One problem: what is wrong, where, expected vs found, and what to do."""

    message: str
    where: str | None = None  # "manifest.json:12:5 $.files[3]", "notes.md:4:10"
    expected: str | None = None
    found: str | None = None
    hint: str | None = None
    # A stable identifier of the kind of problem ("files-intact.sha256"), for machines reading
    # the JSON report; None: the report uses the check id (default_code).
    code: str | None = None
    # A reading of human text (a sentence, a receipt's words, a label): it advises and does
    # not decide -- shown under the verdict, failing only under --itera-strict-text.
    advisory: bool = False
    # The campaign files it is about (relative paths), where ``where`` does not say it (a
    # finding placed in manifest.json about the file a record names): the engine hands a
    # finding about a file another check owns to that check ("not judged"), never by
    # reading the message.
    subjects: tuple[str, ...] = ()

    def about(self) -> tuple[str, ...]:
        """The files it is about: its subjects, else the file its ``where`` places it in."""
        if self.subjects:
            return self.subjects
        if self.where is None:
            return ()
        place = self.where.split(" ", 1)[0]
        return (place.split(":", 1)[0],)

    def render(self) -> str:
        head = f"{self.where}: {self.message}" if self.where else self.message
        lines = [head]
        if self.expected is not None:
            lines.append(f"    expected: {self.expected}")
        if self.found is not None:
            lines.append(f"    found:    {self.found}")
        if self.hint is not None:
            lines.append(f"    fix:      {self.hint}")
        return "\n".join(lines)


def where(document: str, *path: str | int) -> str:
    """A place in a JSON document, as findings write it: ``where("manifest.json", "runs", 3,
    "predictions")`` is ``"manifest.json $.runs[3].predictions"``."""
    steps = "".join(f"[{step}]" if isinstance(step, int) else f".{step}" for step in path)
    return f"{document} ${steps}"


def recoded(findings: Iterable[Finding], check_id: str) -> Iterator[Finding]:
    """Another check's findings reported by ``check_id`` (one home per rule: the plan gate
    runs the closure's plan rules): the same kinds of problem, under its own id."""
    for finding in findings:
        kind = (finding.code or "").partition(".")[2]
        yield replace(finding, code=f"{check_id}.{kind}") if kind else finding


def default_code(finding: Finding, check_id: str) -> str:
    """The finding's own code, else the id of the check that found it."""
    return finding.code or check_id


def split(findings: Iterable[Finding], *, strict_text: bool = False
          ) -> tuple[tuple[Finding, ...], tuple[Finding, ...]]:
    """(the findings that decide, the advisories): under ``strict_text`` every finding
    decides and there are no advisories."""
    items = tuple(findings)
    if strict_text:
        return items, ()
    return (tuple(f for f in items if not f.advisory), tuple(f for f in items if f.advisory))


def render_all(findings: Iterable[Finding], *, limit: int = 50) -> str:
    """All findings, one block each; past ``limit`` a count of the rest."""
    items = list(findings)
    blocks = [f.render() for f in items[:limit]]
    if len(items) > limit:
        blocks.append(f"... and {len(items) - limit} more")
    return "\n".join(blocks)


def summary_line(findings: Iterable[Finding]) -> str:
    """The first finding's message, for one-line summaries (reports, -rA)."""
    items = list(findings)
    if not items:
        return ""
    more = f" (+{len(items) - 1} more)" if len(items) > 1 else ""
    return f"{items[0].message}{more}"
