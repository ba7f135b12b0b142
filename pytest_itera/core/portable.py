"""Portable, unambiguous relative paths: the one rule for every path a campaign lists.

No pytest import.  A campaign is written on Linux and read on laptops and other systems: a
name Linux accepts literally can escape the folder or merge with another one elsewhere
(``..\\..\\win32\\cmd.exe`` is a file name on Linux and a path out on Windows).  The rule
follows what bagit and Frictionless refuse.  :func:`path_problem` judges one path (the
campaign's files-intact check and the recorder both call it); :func:`collisions` finds the
listed paths that would name one file on a case-insensitive or Unicode-normalising file
system (Windows, macOS).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from functools import lru_cache

__all__ = ["RENAME_HINT", "collision_key", "collision_problem", "collisions", "component_problem",
           "path_problem"]

RENAME_HINT = ("rename it to a portable name (letters, digits, '-', '_', '.'; '/' between "
               "folders) and list that name")

_RESERVED = re.compile(r"(CON|PRN|AUX|NUL|COM[1-9¹²³]|LPT[1-9¹²³])", re.IGNORECASE)
_DRIVE = re.compile(r"^[A-Za-z]:")
_PERCENT_VAR = re.compile(r"%[A-Za-z_][A-Za-z0-9_()]*%")
_SHELL_VAR = re.compile(r"\$(\{[^}]*\}|[A-Za-z_][A-Za-z0-9_]*)")


def path_problem(relpath: str) -> str | None:
    """Why ``relpath`` (POSIX, relative to the campaign folder) is not portable, in one
    clause (``contains a backslash ...``), or None."""
    if relpath.startswith(("\\\\?\\", "\\\\.\\", "//?/", "//./")):
        return "starts with a Windows device prefix (\\\\?\\): an absolute path on Windows"
    if _DRIVE.match(relpath):
        return f"starts with a drive letter ({relpath[:2]!r}): an absolute path on Windows"
    if relpath.startswith("~"):
        return (f"starts with {relpath.split('/')[0]!r}, which looks like a home-directory "
                "reference: a shell would expand it")
    if "\\" in relpath:
        return ("contains a backslash, which Windows reads as a folder separator (it may "
                "leave the campaign folder there): write '/' between folders")
    for component in relpath.split("/"):
        problem = component_problem(component)
        if problem is not None:
            return problem
    return None


@lru_cache(maxsize=1024)  # a folder's name comes once per file below it (issue 29)
def component_problem(name: str) -> str | None:
    """Why one path component is not portable, or None."""
    device = name.split(".")[0].rstrip(" :")
    if _RESERVED.fullmatch(device):
        return (f"component {name!r} is a Windows reserved device name ({device.upper()}), "
                "with or without an extension")
    if ":" in name:
        return (f"component {name!r} contains ':', a drive or stream separator on Windows "
                "(and a folder separator in macOS Finder)")
    if name not in (".", "..") and name.endswith((".", " ")):
        return (f"component {name!r} ends with a {'dot' if name.endswith('.') else 'space'}, "
                "which Windows strips (it would name another file)")
    percent = _PERCENT_VAR.search(name)
    if percent is not None:
        return (f"component {name!r} looks like an unexpanded Windows variable "
                f"({percent.group(0)})")
    shell = _SHELL_VAR.search(name)
    if shell is not None:
        return f"component {name!r} looks like an unexpanded shell variable ({shell.group(0)})"
    return None


def collision_key(relpath: str) -> str:
    """The name a case-insensitive, normalising file system would see for ``relpath``."""
    if relpath.isascii():  # the same, cheaper: ASCII is NFC, and casefolds as it lowers
        return relpath.lower()
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", relpath).casefold())


def collisions(paths: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """Each path that collides with another (differs only by case or Unicode normalisation,
    e.g. NFC 'é' and NFD 'e' + U+0301), mapped to the others it collides with, sorted."""
    first: dict[str, str] = {}
    groups: dict[str, set[str]] = {}  # only keys two paths share: no set per path
    for path in paths:
        key = collision_key(path)
        seen = first.setdefault(key, path)
        if seen != path:
            groups.setdefault(key, {seen}).add(path)
    out: dict[str, tuple[str, ...]] = {}
    for group in groups.values():
        if len(group) > 1:
            for path in group:
                out[path] = tuple(sorted(group - {path}))
    return out


def collision_problem(others: Iterable[str]) -> str:
    """The clause for a path that collides with ``others``."""
    shown = ", ".join(repr(o) for o in others)
    return (f"differs from {shown} only by letter case or Unicode normalisation: on Windows "
            "or macOS both name one file")
