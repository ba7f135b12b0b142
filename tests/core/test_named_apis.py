"""Every API a user is sent to exists: each dotted name ``pytest_itera.<...>`` that the
README, docs/, CONTRIBUTING.md, reload/PARTS.md or a fix line of the package (any string
literal of any of its modules but a docstring) mentions imports as a module or resolves as an
attribute of one, and is written with its layered path (``pytest_itera.core.money``, not the
old flat alias); and each recorder call they write as ``rec.<method>(`` or ``run.<method>(``
is a method of :class:`~pytest_itera.record.CampaignRecorder` or of its run recorder
(issue 26: fix lines named ``pytest_itera.record.save_resume_checkpoint`` when it was gone).
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

from tests.runner import REPO

DOCUMENTS = [REPO / "README.md", REPO / "CONTRIBUTING.md", *sorted((REPO / "docs").glob("*.md")),
             REPO / "pytest_itera" / "reload" / "PARTS.md"]
FIX_LINE_SOURCES = sorted((REPO / "pytest_itera").rglob("*.py"))
DOTTED = re.compile(r"\bpytest_itera(?:\.[A-Za-z_]\w*)+")
# A recorder call as the docs and the fix lines write it: rec.close(...), run.set_metrics(...).
CALL = re.compile(r"\b(rec|run)\.([A-Za-z_]\w*)\(")


def _strings(source: Path) -> list[str]:
    """Every string literal of a module (f-string parts included) but its docstrings: the
    fix lines and messages its findings carry."""
    tree = ast.parse(source.read_text(encoding="utf-8"))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef
                                | ast.AsyncFunctionDef)
                  and node.body and isinstance(node.body[0], ast.Expr)}
    return [node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in docstrings]


def _mentions(pattern: re.Pattern[str] = DOTTED) -> dict[str, list[str]]:
    """name (a dotted name, or "rec.close" for a call) -> where it is mentioned."""
    found: dict[str, list[str]] = {}

    def named(text: str) -> list[str]:
        return [".".join(m) if isinstance(m, tuple) else m for m in pattern.findall(text)]

    for document in DOCUMENTS:
        for number, line in enumerate(document.read_text(encoding="utf-8").splitlines(), 1):
            for name in named(line):
                found.setdefault(name, []).append(f"{document.relative_to(REPO)}:{number}")
    for source in FIX_LINE_SOURCES:
        for text in _strings(source):
            for name in named(text):
                found.setdefault(name, []).append(str(source.relative_to(REPO)))
    return found


def resolves(name: str) -> bool:
    """``name`` is a module, or an attribute (chain) of the longest module that prefixes it."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(obj, attribute):
                return False
            obj = getattr(obj, attribute)
        return True
    return False


MENTIONS = _mentions()
CALLS = _mentions(CALL)


def recorder_has(call: str) -> bool:
    """``rec.<method>`` is a CampaignRecorder method, ``run.<method>`` a RunRecorder one."""
    from pytest_itera.record import CampaignRecorder
    from pytest_itera.record.run import RunRecorder

    who, _, method = call.partition(".")
    return hasattr(CampaignRecorder if who == "rec" else RunRecorder, method)


def test_the_documents_and_fix_lines_name_apis() -> None:
    assert "pytest_itera.record.CampaignRecorder" in MENTIONS
    assert any(where.startswith("pytest_itera/") for places in MENTIONS.values()
               for where in places), "fix lines are read"


@pytest.mark.parametrize("name", sorted(MENTIONS))
def test_every_named_api_exists(name: str) -> None:
    assert resolves(name), f"{name} (named in {', '.join(MENTIONS[name])}) does not exist"


@pytest.mark.parametrize("name", sorted(MENTIONS))
def test_every_named_module_is_named_by_its_layered_path(name: str) -> None:
    """The flat paths of earlier releases still import (an alias); the docs name the layer."""
    from pytest_itera import MOVED

    flat = [old for old in MOVED if name == old or name.startswith(old + ".")]
    assert not flat, (f"{name} (named in {', '.join(MENTIONS[name])}): write "
                      f"{MOVED[flat[0]] + name[len(flat[0]):]}")


def test_a_name_that_does_not_exist_is_caught() -> None:
    assert resolves("pytest_itera.core.money.load_catalogue")
    assert resolves("pytest_itera.record")
    assert not resolves("pytest_itera.core.money.no_such_function")
    assert not resolves("pytest_itera.no_such_module")


def test_the_fix_lines_of_every_layer_are_read() -> None:
    """Not only the check families': the recorder's, the reload server's and the docs'."""
    places = {where for found in (MENTIONS, CALLS) for p in found.values() for where in p}
    for part in ("pytest_itera/record/", "pytest_itera/reload/", "docs/recorder.md",
                 "pytest_itera/reload/PARTS.md"):
        assert any(where.startswith(part) for where in places), part
    assert {"rec.close", "rec.step", "run.set_metrics"} <= CALLS.keys()


@pytest.mark.parametrize("call", sorted(CALLS))
def test_every_recorder_call_named_exists(call: str) -> None:
    assert recorder_has(call), f"{call}() (named in {', '.join(CALLS[call])}) does not exist"


def test_a_recorder_call_that_does_not_exist_is_caught() -> None:
    assert recorder_has("rec.close")
    assert recorder_has("run.set_metrics")
    assert not recorder_has("rec.save_resume_checkpoint")
    assert not recorder_has("run.no_such_method")
