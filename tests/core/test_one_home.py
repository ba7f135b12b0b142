"""One home per rule (issue 18): where a rule must also be written down elsewhere (a module
that runs standalone, a JSON Schema, the documentation), the copy is checked against its home."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from typing import Any

import pytest

import pytest_itera
from pytest_itera import report
from pytest_itera.campaign import RESUME_PARTS
from pytest_itera.checks import FAMILIES, item_name
from pytest_itera.checks.artifacts import _PART_HOME, temp_pattern
from pytest_itera.scan import DEFAULT_TEMP_PATTERNS, TempMatcher, find_in_text
from tests.runner import REPO

PACKAGE = REPO / "pytest_itera"


def _server_constant(name: str) -> Any:
    """A constant of the reload server, read from its source: the server runs standalone in
    the reload interpreter (loaded by path, torch imported at once), so it keeps its copy."""
    tree = ast.parse((PACKAGE / "reload" / "server.py").read_text())
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            assert node.value is not None
            return eval(compile(ast.Expression(node.value), "server.py", "eval"), {"dict": dict})
    raise AssertionError(f"reload/server.py defines no {name}")


# ------------------------------------------------------------------ resume parts


def test_the_resume_parts_have_one_order_everywhere() -> None:
    from pytest_itera import reload

    schema = json.loads((PACKAGE / "schemas" / "common.schema.json").read_text())
    assert tuple(schema["$defs"]["resume_part"]["enum"]) == RESUME_PARTS
    assert reload.PARTS == RESUME_PARTS
    assert _server_constant("PARTS") == RESUME_PARTS


def test_every_key_the_server_reads_names_a_resume_part() -> None:
    assert set(_server_constant("KEY_PARTS").values()) == set(RESUME_PARTS)


# ------------------------------------------------------- parts per format, documented

# Columns of the parts-per-format table -> the format's homes in checks/artifacts._PART_HOME
# (None: safetensors / PEFT, weights only).
COLUMNS = ("torch", "lightning", "hf-trainer", "accelerate", "dcp", None)


def _parts_table(text: str) -> dict[str, list[str]]:
    """The table whose header starts '| part | plain `torch.save` dict': part -> its cells."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines)
                 if line.startswith("| part | plain `torch.save` dict"))
    rows: dict[str, list[str]] = {}
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        rows[cells[0]] = cells[1:]
    return rows


def _keys(cell: str) -> set[str]:
    """The top-level keys a torch cell lists (before any ';'), 'x(s)' meaning x and xs."""
    keys: set[str] = set()
    for key in re.findall(r"`([^`]+)`", cell.split(";")[0]):
        if "." in key:
            continue  # a reference (pytest_itera.record...), not a key
        keys |= {key[:-3], key[:-3] + "s"} if key.endswith("(s)") else {key}
    return keys


@pytest.mark.parametrize("document", ["pytest_itera/reload/PARTS.md", "README.md"])
def test_the_parts_per_format_tables_agree_with_the_code(document: str) -> None:
    table = _parts_table((REPO / document).read_text())
    assert tuple(table) == RESUME_PARTS
    key_parts = _server_constant("KEY_PARTS")
    for part, cells in table.items():
        assert len(cells) == len(COLUMNS), (document, part)
        assert _keys(cells[0]) == {k for k, p in key_parts.items() if p == part}, (document, part)
        for fmt, cell in zip(COLUMNS, cells, strict=True):
            held = part == "model" if fmt is None else part in _PART_HOME[fmt]
            refused = cell.startswith(("no, by design", "**never"))
            assert held != refused, (document, part, fmt, cell)


# ------------------------------------------------------------------ temporary paths

TEMPORARY = ["/tmp/x", "/tmp", "/var/tmp/m", "/dev/shm/x", "/private/var/folders/x",
             "/var/folders/ab/T/x", "C:\\Users\\me\\AppData\\Local\\Temp\\m",
             "C:/Users/me/AppData/Local/Temp/m", "%TEMP%\\m", "%temp%/m", "%Temp%/m", "%TMP%/m"]
NOT_TEMPORARY = ["/tmpfs/x", "/tmp_data/x", "/home/u/tmp/m", "x/tmp/y", "./tmp/x", "/TMP/x",
                 "meta-llama/Llama-3.1-8B", "/scratch/x", "C:\\Windows\\Temp\\x", "models/base"]


@pytest.mark.parametrize("name", TEMPORARY + NOT_TEMPORARY)
def test_a_named_path_is_temporary_by_the_file_scans_rules(name: str) -> None:
    """checks.artifacts judges one path value (a base model's name, anchored: the whole value
    is the path); scan finds paths inside text. On a whole path value the two agree."""
    by_name = temp_pattern(name, DEFAULT_TEMP_PATTERNS)
    by_scan = find_in_text(name, TempMatcher(DEFAULT_TEMP_PATTERNS))
    assert (by_name is not None) == (by_scan is not None) == (name in TEMPORARY)


# ------------------------------------------------------------------ families, names, suffixes


def test_every_family_module_defines_its_checks() -> None:
    import importlib

    for name, module in FAMILIES.items():
        assert name.startswith("itera."), name
        assert getattr(importlib.import_module(module), "CHECKS", None), module


def test_item_names() -> None:
    assert item_name("manifest", None) == "manifest"
    assert item_name("files-intact", "a::b") == "files-intact[a:_:b]"
    assert item_name("files-intact", "a\nb") == "files-intact[a\\nb]"


def test_every_report_suffix_has_a_renderer() -> None:
    assert report.SUFFIXES == tuple(report.RENDERERS) == (".json", ".md", ".html")


# ------------------------------------------------------------------ public API


def test_the_public_api_is_declared_and_cheap_to_import() -> None:
    for name in pytest_itera.__all__:
        assert getattr(pytest_itera, name) is not None, name
    probe = ("import sys, pytest_itera; "
             "print(sorted(m for m in ('torch', 'jsonschema', 'pytest_itera.record', "
             "'pytest_itera.verify') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, cwd=REPO)
    assert out.stdout.strip() == "[]"
    with pytest.raises(AttributeError):
        _ = pytest_itera.not_a_name  # type: ignore[attr-defined]
