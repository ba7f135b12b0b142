"""One home per rule (issue 18): where a rule must also be written down elsewhere (a module
that runs standalone, a JSON Schema, the documentation), the copy is checked against its home."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

import pytest_itera
from pytest_itera import report
from pytest_itera.checks import FAMILIES, item_name
from pytest_itera.checks.artifacts.resume_complete import PART_HOME
from pytest_itera.core.campaign import RESUME_PARTS
from pytest_itera.files.scan import (
    DEFAULT_TEMP_PATTERNS,
    TempMatcher,
    find_in_text,
    temp_pattern_of,
)
from pytest_itera.reload import formats
from tests.runner import REPO as ROOT

PACKAGE = ROOT / "pytest_itera"


# ------------------------------------------------------------------ resume parts


def test_the_resume_parts_have_one_order_everywhere() -> None:
    """reload/formats.py is their home: the client takes them from it, and so does the server
    (loading the same file by path). campaign, the bottom layer, may not import reload: its
    copy is checked, as is the schemas' enum."""
    from pytest_itera import reload
    from pytest_itera.reload.server import siblings, verdict

    schema = json.loads((PACKAGE / "schemas" / "common.schema.json").read_text())
    assert tuple(schema["$defs"]["resume_part"]["enum"]) == formats.PARTS
    assert RESUME_PARTS == formats.PARTS
    assert reload.PARTS is formats.PARTS
    assert Path(siblings.formats.__file__) == Path(formats.__file__)
    assert verdict.PARTS == formats.PARTS


# ------------------------------------------------------- parts per format, documented


@pytest.mark.parametrize("fmt", formats.FORMATS, ids=lambda fmt: fmt.name)
def test_every_format_says_where_each_part_lives(fmt: formats.Format) -> None:
    """A row per part, in order; a part the format cannot hold has nothing to read, nothing
    to suggest, and its cell says so; one it can hold has a place (keys, files or words)."""
    assert tuple(fmt.homes) == formats.PARTS
    for part, home in fmt.homes.items():
        for pattern in (*home.files, *fmt.members):
            re.compile(pattern)
        refused = home.doc.startswith((formats.BY_DESIGN, "**never"))
        if home.absent is not None:
            assert (home.keys, home.files, home.hint) == ((), (), None), (fmt.name, part)
            assert refused or fmt.title is None, (fmt.name, part)
        else:
            assert not refused, (fmt.name, part)
            assert home.doc or fmt.title is None, (fmt.name, part)
    assert any(home.keys or home.files for home in fmt.homes.values()) or \
        fmt.name == "safetensors", fmt.name  # a single safetensors file is weights


def test_a_fix_line_names_a_place_for_each_part_a_format_can_hold() -> None:
    """checks.artifacts' fix lines take their words from the table: a place for every part a
    format can hold, none for the weights-only formats."""
    weights_only = {"safetensors", "peft", "hf-model"}
    for fmt in formats.FORMATS:
        holds = {part for part, home in fmt.homes.items() if home.absent is None}
        assert set(PART_HOME.get(fmt.name, {})) == (
            set() if fmt.name in weights_only else holds), fmt.name


def test_the_documented_file_names_are_the_ones_the_server_loads() -> None:
    """Each file name a cell shows (``<rank>``, ``<i>``, ``*`` filled in) is a member the server
    loads for that part; a name ending in ``/`` is a sub-folder it loads."""
    for fmt in formats.FORMATS:
        for part, home in fmt.homes.items():
            if not home.files or fmt.title is None:
                continue
            for shown in re.findall(r"`([^`]+)`", home.doc):
                name = shown.replace("<rank>", "0").replace("<i>", "0").replace(
                    ".*", ".safetensors").replace("*", "")
                patterns = home.folders if name.endswith("/") else home.files
                assert any(re.fullmatch(p, name.rstrip("/")) for p in patterns), (
                    fmt.name, part, shown)


def _documented_table(text: str) -> str:
    """The table whose header starts '| part | plain `torch.save` dict', as written."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines)
                 if line.startswith("| part | plain `torch.save` dict"))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")),
               len(lines))
    return "\n".join(lines[start:end]) + "\n"


@pytest.mark.parametrize("document", ["pytest_itera/reload/PARTS.md", "docs/checkpoints.md"])
def test_the_documented_parts_table_is_the_rendered_one(document: str) -> None:
    text = (ROOT / document).read_text()
    assert _documented_table(text) == formats.render(), (
        f"{document}: paste the output of `python pytest_itera/reload/formats.py`")


def test_the_table_renders_from_the_command_line_that_parts_md_gives() -> None:
    command = "python pytest_itera/reload/formats.py"
    assert f"`{command}`" in (PACKAGE / "reload" / "PARTS.md").read_text()
    out = subprocess.run([sys.executable, *command.split()[1:]], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    assert (out.stdout, out.stderr) == (formats.render(), "")


# ------------------------------------------------------------------ temporary paths

MATCHER = TempMatcher(DEFAULT_TEMP_PATTERNS)
TEMPORARY = ["/tmp/x", "/tmp", "/var/tmp/m", "/dev/shm/x", "/private/var/folders/x",
             "/private/tmp/itera-run/out", "/private/var/tmp/m",
             "/var/folders/ab/T/x", "C:\\Users\\me\\AppData\\Local\\Temp\\m",
             "C:/Users/me/AppData/Local/Temp/m", "%TEMP%\\m", "%temp%/m", "%Temp%/m", "%TMP%/m",
             "C:\\Users\\me\\APPDATA\\LOCAL\\TEMP\\m", "/tmp\\x", "x%TEMP%y"]
NOT_TEMPORARY = ["/tmpfs/x", "/tmp_data/x", "/home/u/tmp/m", "x/tmp/y", "./tmp/x", "/TMP/x",
                 "/private/tmpfs/x", "runs/private/tmp",
                 "meta-llama/Llama-3.1-8B", "/scratch/x", "C:\\Windows\\Temp\\x", "models/base",
                 "/tmp.x", "\\tmp\\x", "C:\\Users\\me\\MyAppData\\Local\\Temp\\m",
                 "C:\\Users\\me\\AppData\\Local\\Temporary\\m"]


@pytest.mark.parametrize("name", TEMPORARY + NOT_TEMPORARY)
def test_a_named_path_is_temporary_by_the_file_scans_rules(name: str) -> None:
    """checks.artifacts judges one path value (a base model's name: the whole value is the
    path) with scan.temp_pattern_of; scan finds paths inside text. On these values they agree."""
    by_name = temp_pattern_of(name, MATCHER)
    by_scan = find_in_text(name, MATCHER)
    assert (by_name is not None) == (by_scan is not None) == (name in TEMPORARY)


# Where a path value and text differ, by design (temp_pattern_of's docstring): a Unix
# directory pattern is where the value starts; a Windows pattern is read as Windows reads it.
@pytest.mark.parametrize(("value", "as_path", "in_text"), [
    ("file:///tmp/x", None, "/tmp/"),
    ("--out=/tmp/x", None, "/tmp/"),
    ("x /tmp/y", None, "/tmp/"),
    ("%tEmP%\\m", "%TEMP%", None),
    ("C:\\Users\\me\\AppData/Local\\Temp\\m", "AppData\\Local\\Temp", None),
    ("c:/users/me/appdata/Local/TEMP/m", "AppData\\Local\\Temp", None),
])
def test_a_path_value_and_text_differ_only_where_a_path_is_read_as_a_path(
    value: str, as_path: str | None, in_text: str | None
) -> None:
    assert temp_pattern_of(value, MATCHER) == as_path
    assert find_in_text(value, MATCHER) == in_text


@pytest.mark.parametrize(("value", "expected"), [
    ("/scratch/job/base", "/scratch/"), ("/home/u/scratch/base", "/scratch/"),
    ("/SCRATCH/base", None), ("/scratch", None), ("$TMPDIR/base", "$TMPDIR"),
    ("$tmpdir/base", None), ("/tmp/base", "/tmp/"),
])
def test_user_patterns_are_the_literals_a_scan_finds(value: str, expected: str | None) -> None:
    matcher = TempMatcher([*DEFAULT_TEMP_PATTERNS, "/scratch/", "$TMPDIR"])
    assert temp_pattern_of(value, matcher) == find_in_text(value, matcher) == expected


def test_the_adapter_check_judges_a_base_name_by_that_rule(tmp_path: Path) -> None:
    """checks.artifacts keeps no copy: a base name goes to scan.temp_pattern_of with the
    Context's matcher, the user's patterns included."""
    from pytest_itera.checks import Context, Options
    from pytest_itera.checks.artifacts.adapter_config import temp_name
    from pytest_itera.core.campaign import load_campaign
    from tests.factory import CampaignBuilder

    campaign = CampaignBuilder(tmp_path / "campaign")
    campaign.write()
    ctx = Context(load_campaign(campaign.root), Options(temp_patterns=("/scratch/",)), {})
    try:
        names = ["/scratch/base", "%tmp%\\base", "/TMP/base", "file:///tmp/base", "org/base"]
        judged = {n: [f.message for f in temp_name(ctx, n, "w", "base")] for n in names}
    finally:
        ctx.close()
    assert judged == {n: [f"base {n!r} is a path into a temporary folder ({p})"] if p else []
                      for n, p in zip(names, ["/scratch/", "%TMP%", None, None, None],
                                      strict=True)}


# ------------------------------------------------------------------ non-finite numbers


@pytest.mark.parametrize("number", [math.nan, math.inf, -math.inf])
def test_both_json_readers_take_non_finite_constants_from_one_table(
    number: float, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bare constant json.dumps writes is refused by strict JSON (plan, manifest) and
    read as its number in a measurements file, bare or as a string: by campaign.NON_FINITE,
    the only table (shrink it and the measurements reader knows the constant no more)."""
    from pytest_itera.core import campaign
    from pytest_itera.files import measurements

    token = json.dumps(number)
    path = tmp_path / "measurements.jsonl"
    path.write_text(f'{{"step": 1, "bare": {token}}}\n{{"step": 1, "string": "{token}"}}\n')
    read = measurements.read_measurements(path)
    assert isinstance(read, measurements.Measurements)
    expected = repr(campaign.NON_FINITE[token.lower()])
    assert [repr(read.series[n].values[0]) for n in ("bare", "string")] == [expected] * 2
    with pytest.raises(ValueError, match=f"^{re.escape(token)} is not JSON \\(non-finite"):
        campaign.parse_json(f"[{token}]")

    monkeypatch.setattr(campaign, "NON_FINITE", {k: v for k, v in campaign.NON_FINITE.items()
                                                 if k != token.lower()})
    unread = measurements.read_measurements(path)
    assert isinstance(unread, measurements.Unreadable)
    assert [(p.line, p.message.split(",")[0]) for p in unread.problems] == [
        (1, f"not JSON ({token} is not JSON (non-finite numbers are refused))"),
        (2, f"series 'string' has the value {json.dumps(token)}")]


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
             "print(sorted(m for m in ('torch', 'jsonschema', 'pytest_itera.record.campaign', "
             "'pytest_itera.report.verify') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"
    with pytest.raises(AttributeError):
        _ = pytest_itera.not_a_name
