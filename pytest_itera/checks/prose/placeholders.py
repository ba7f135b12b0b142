"""Placeholders in an error analysis or reload instructions ("TODO", "à compléter", "TBD").

One table, :data:`PLACEHOLDERS`, English, French, German and Spanish. Each row is a pattern
and its scope: "anywhere", the phrase anywhere in a line ("lorem ipsum", "to be written");
"line", a line made of the phrase alone (bullets, heading marks and punctuation aside),
since "en cours", "pending" or "offen" are ordinary words inside a sentence.

Two readings, judged differently by analysis-present:

- :func:`placeholder_only`: the text says nothing but placeholders (every line is blank, a
  heading, a placeholder, a label followed by one, or lorem-ipsum filler). That is
  structural emptiness, like an empty file, and decides.
- :func:`placeholder_lines`: each line of a real text that holds a placeholder ("# TODO pin
  torch" in a shell snippet, "| control | TBD |" in a table). A reading of words: it advises.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["PLACEHOLDERS", "Placeholder", "find_placeholder", "placeholder_lines",
           "placeholder_only"]

# The table: (pattern, scope). Capitals as written for the acronyms, any case otherwise.
PLACEHOLDERS: tuple[tuple[str, str], ...] = (
    # English (and the acronyms every language uses)
    (r"\b(?:TODO|TBD|TBC|TBA|FIXME|XXX)\b", "anywhere"),
    (r"(?i)\blorem ipsum\b", "anywhere"),
    (r"(?i)\bto be (?:written|completed|filled in|done)\b", "anywhere"),
    (r"(?i)\b(?:coming soon|work in progress|insert (?:the )?(?:analysis|text) here|"
     r"write (?:the )?(?:analysis|instructions) here)\b", "anywhere"),
    # French
    (r"(?i)(?<!\w)[àa] (?:compl[ée]ter|r[ée]diger|remplir)(?!\w)", "anywhere"),
    (r"(?i)\ben cours de r[ée]daction\b", "anywhere"),
    # German
    (r"(?i)\b(?:noch zu (?:schreiben|erg[äa]nzen|vervollst[äa]ndigen)|wird nachgereicht|"
     r"folgt in k[üu]rze)(?!\w)", "anywhere"),
    # Spanish
    (r"(?i)(?<!\w)(?:por (?:completar|redactar|escribir|rellenar)|en redacci[óo]n)(?!\w)",
     "anywhere"),
    # A line that is only the word, in the four languages
    (r"(?i)(?:todo|tbd|wip|pending|draft|placeholder|fill in|"
     r"en cours|en attente|brouillon|[àa] (?:venir|faire|d[ée]finir)|"
     r"folgt|in arbeit|entwurf|platzhalter|ausstehend|kommt noch|"
     r"pendiente|borrador|por hacer|por definir|en curso|pr[óo]ximamente|"
     r"…|\?+)", "line"),
)
_RES = tuple((re.compile(p), scope) for p, scope in PLACEHOLDERS)
_FILLER = re.compile(r"(?i)\blorem ipsum\b")  # the whole line is filler, not a text
_DECORATION = " \t#*_>`~-+=|:.;,!()[]{}\"'"
_LABEL = re.compile(r"[\w .'/-]{1,40}:")  # "- control:", "variant-a :" before a placeholder
_HEADING = re.compile(r"\s{0,3}#{1,6}\s|\s{0,3}[=-]{3,}\s*$")


@dataclass(frozen=True)
class Placeholder:
    """A placeholder the text holds: its words as written and its line (1-based)."""

    marker: str
    line: int


def _line_hit(line: str) -> tuple[str, str] | None:
    """(the placeholder of one line, what is left of the line without it), or None."""
    bare = line.strip(_DECORATION)
    for pattern, scope in _RES:
        if scope == "anywhere":
            hit = pattern.search(line)
            if hit is not None:
                return hit.group(0), line[:hit.start()] + line[hit.end():]
        elif bare and pattern.fullmatch(bare):
            return bare, ""
        elif ":" in line:  # "- variant-a: pending": a label and the word alone
            label, _, value = line.partition(":")
            value = value.strip(_DECORATION)
            if value and pattern.fullmatch(value) and _LABEL.fullmatch(
                    f"{label.strip(_DECORATION)}:"):
                return value, f"{label}:"
    return None


def placeholder_lines(text: str) -> list[Placeholder]:
    """Every line of ``text`` that holds a placeholder (its first one), in order."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        hit = _line_hit(line)
        if hit is not None:
            found.append(Placeholder(hit[0], number))
    return found


def find_placeholder(text: str) -> tuple[str, int] | None:
    """(the first placeholder, its line) when ``text`` holds one, else None."""
    found = placeholder_lines(text)
    return (found[0].marker, found[0].line) if found else None


def _says_something(line: str) -> bool | None:
    """Whether a line says something: True (words), False (blank, a heading, decoration),
    None (a placeholder, or a label and its placeholder, or filler)."""
    hit = _line_hit(line)
    if hit is None:
        return bool(line.strip(_DECORATION)) and _HEADING.match(line) is None
    if _FILLER.search(line):
        return None
    rest = hit[1].strip(_DECORATION.replace(":", ""))
    if not rest.strip(_DECORATION) or _LABEL.fullmatch(rest):
        return None
    return _says_something(hit[1])  # another placeholder on the line, or words


def placeholder_only(text: str) -> Placeholder | None:
    """The first placeholder of a text that says nothing else (its headings, blank lines and
    decoration aside), or None when the text holds none or says something besides."""
    first: Placeholder | None = None
    for number, line in enumerate(text.splitlines(), 1):
        says = _says_something(line)
        if says:
            return None
        if says is None and first is None:
            hit = _line_hit(line)
            assert hit is not None
            first = Placeholder(hit[0], number)
    return first
