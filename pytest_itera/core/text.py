"""The one rule for "text is missing" (issue 12: one rule for text everywhere).

An explanation, a decision text, a stop reason, a rejection reason, a
conclusion text or an expense label that is ``None``, empty, or made only of
whitespace -- ASCII or Unicode (no-break space, ideographic space, ...) -- or of
invisible format characters (zero-width space/joiners, word joiner, BOM, soft
hyphen) is *missing*. Every check that needs a text uses :func:`is_blank`, so that no
field strips while another does not. A prose text (an explanation, a decision, a
reason) that is only punctuation and symbols ("." or "-") says nothing either
(:func:`says_nothing`); an identifier or a pattern ("*") is judged by :func:`is_blank`.

Pure Python, no pytest import: the recorder and the library use it too.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["INVISIBLE", "clean", "clean_block", "is_blank", "says_nothing", "size_text"]

#: Characters that render as nothing but are not ``str.isspace()``.
INVISIBLE = frozenset(
    "\u200b"  # zero width space
    "\u200c"  # zero width non-joiner
    "\u200d"  # zero width joiner
    "\u2060"  # word joiner
    "\ufeff"  # zero width no-break space / BOM
    "\u00ad"  # soft hyphen
    "\u180e"  # mongolian vowel separator
    "\u2061\u2062\u2063\u2064"  # invisible operators
    "\u034f"  # combining grapheme joiner
    "\u115f\u1160\u3164\uffa0"  # hangul fillers
)


def _invisible(char: str) -> bool:
    if char.isspace() or char in INVISIBLE:
        return True
    # Other format characters (bidi marks, tag characters...) carry no text.
    return unicodedata.category(char) in {"Cf", "Cc", "Zs", "Zl", "Zp"}


def is_blank(text: str | None) -> bool:
    """True when ``text`` is missing: None, empty, or only whitespace/invisible chars.

    A non-string value (a number, a list) is not text and counts as missing too,
    so a caller reading untyped JSON never needs a separate type test.
    """
    if text is None or not isinstance(text, str):
        return True
    return all(_invisible(char) for char in text)


def says_nothing(text: str | None) -> bool:
    """True when a prose text is missing (:func:`is_blank`) or only punctuation and symbols
    (".", "-", "?", an em dash): an explanation, a decision, a reason."""
    return is_blank(text) or all(
        _invisible(char) or unicodedata.category(char)[0] in "PS" for char in str(text))


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def clean(text: object) -> str:
    """One printable line: control characters (ANSI escapes, newlines) shown escaped.
    Campaign text is hostile: every line printed from it goes through here."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), str(text))


def clean_block(text: str) -> str:
    """Several printable lines: like :func:`clean`, keeping the line breaks."""
    return "\n".join(clean(line) for line in text.split("\n"))


def size_text(n: int) -> str:
    """A byte count as people read it (``1.5 MiB``)."""
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"
