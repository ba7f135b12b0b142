"""The README and docs/ are the user's pages: every example in them is run or validated here.

Every fenced block names its language. Each ```json block is validated against its own format
(a plan, a manifest, a catalogue, a report, waivers), each ```toml block is a waivers file, and
each ```python block is run by the runner SNIPPETS names for it, with the context it needs given
explicitly. A block no runner or validator knows fails the test: a new example comes with its
check. Blocks that show output or shell commands are marked as such (``text``, ``console``,
``yaml``, ``html``) and are not run; the README's example session is compared with what the
plugin prints.

The example campaign is the docs' own (docs/campaign-format.md, docs/recorder.md): its recorder
script, run beside its plan.json, must write exactly its plan.json and manifest.json, and every
check must pass on that folder (PLAYED CLOCK: its hours are played).
"""

from __future__ import annotations

import ast
import io
import json
import re
import shutil
import tokenize
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from pytest_itera.core.campaign import parse_json, validate
from tests.runner import REPO, Itera

README = REPO / "README.md"
DOCUMENTS = [README, REPO / "CONTRIBUTING.md", *sorted((REPO / "docs").glob("*.md"))]
EXECUTED = {"json", "toml", "python"}  # validated or run below
SHOWN = {"text", "console", "yaml", "html"}  # output, shell sessions, configs of other tools


@dataclass(frozen=True)
class Block:
    lang: str
    path: Path
    line: int  # of the block's first code line in its document
    text: str

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"


def _fences(path: Path) -> list[tuple[int, str]]:
    """(line number, language) of each opening fence of a document."""
    found, inside = [], False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("```"):
            if not inside:
                found.append((number, line[3:].strip()))
            inside = not inside
    assert not inside, f"{path.relative_to(REPO)}: a fence is not closed"
    return found


def _blocks(lang: str) -> list[Block]:
    found = []
    pattern = re.compile(r"^```" + re.escape(lang) + r"\n(.*?)^```", flags=re.S | re.M)
    for path in DOCUMENTS:
        text = path.read_text(encoding="utf-8")
        for match in pattern.finditer(text):
            line = text.count("\n", 0, match.start(1)) + 1
            found.append(Block(lang, path, line, match.group(1)))
    return found


def test_the_documents_are_the_readme_contributing_and_docs() -> None:
    assert all(path.is_file() for path in DOCUMENTS)
    names = {path.name for path in DOCUMENTS}
    assert {"README.md", "CONTRIBUTING.md", "checks.md", "checkpoints.md"} <= names


def _indented_blocks(path: Path) -> list[int]:
    """Line numbers of indented (4-space) code blocks outside fences: blocks no test sees."""
    found, inside, previous = [], False, ""
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("```"):
            inside = not inside
        elif not inside and line.startswith("    ") and not previous.strip():
            found.append(number)
        previous = line
    return found


def test_no_block_is_indented_instead_of_fenced() -> None:
    indented = [f"{path.relative_to(REPO)}:{line}" for path in DOCUMENTS
                for line in _indented_blocks(path)]
    assert not indented, f"indented code blocks: {indented}; fence them and name the language"


def test_every_fenced_block_is_run_or_marked_as_shown() -> None:
    unmarked = [f"{path.relative_to(REPO)}:{line} ```{lang}" for path in DOCUMENTS
                for line, lang in _fences(path) if lang not in EXECUTED | SHOWN]
    assert not unmarked, (
        f"fenced blocks that no test runs: {unmarked}; give them a runner here, or mark them "
        f"as one of {sorted(SHOWN)} when they are output or another tool's file")


def _documents() -> tuple[dict[str, Any], dict[str, Any]]:
    """The docs' example plan and manifest (exactly one of each: itera-plan/3, itera-manifest/2)."""
    docs = [parse_json(b.text) for b in _blocks("json")]
    plans = [d for d in docs if str(d.get("format", "")).startswith("itera-plan/")]
    manifests = [d for d in docs if str(d.get("format", "")).startswith("itera-manifest/")]
    assert len(plans) == 1, "the docs show one plan"
    assert len(manifests) == 1, "the docs show one manifest"
    assert plans[0]["format"] == "itera-plan/3"
    assert manifests[0]["format"] == "itera-manifest/2"
    return plans[0], manifests[0]


# ---------------------------------------------------------------- JSON blocks


def _validate_json(block: Block, tmp_path: Path) -> None:
    data = parse_json(block.text)
    kind = str(data.get("format", "")) if isinstance(data, dict) else ""
    if kind.startswith("itera-plan/"):
        assert validate("plan", data) == [], block.where
    elif kind.startswith("itera-manifest/"):
        assert validate("manifest", data) == [], block.where
    elif kind.startswith("itera-catalogue/"):
        from pytest_itera.core.money import load_catalogue

        (tmp_path / "catalogue.json").write_text(block.text)
        load_catalogue(tmp_path / "catalogue.json")
    elif kind.startswith("itera-report/"):
        import jsonschema

        schema = json.loads((REPO / "pytest_itera/schemas/report.schema.json").read_text())
        jsonschema.validate(data, schema)
    elif isinstance(data, dict) and set(data) == {"waivers"}:
        _load_waivers(block.text, tmp_path / "waivers.json")
    else:
        pytest.fail(f"{block.where}: a JSON block of no known format; add its validator here")


def _load_waivers(text: str, path: Path) -> None:
    from pytest_itera.checks import waivers

    path.write_text(text)
    assert waivers.load(path), "the docs' waivers load"


def test_every_json_block_is_valid(tmp_path: Path) -> None:
    blocks = _blocks("json")
    assert blocks
    for block in blocks:
        _validate_json(block, tmp_path)


def test_every_toml_block_is_a_waivers_file(tmp_path: Path) -> None:
    for block in _blocks("toml"):
        _load_waivers(block.text, tmp_path / "waivers.toml")


# ---------------------------------------------------------------- Python blocks


def _expected_comment(comment: str) -> Any:
    """The value a ``# value: prose`` comment states, or raise SyntaxError/ValueError."""
    text = comment.lstrip("#").strip()
    for cut in (len(text), *(m.start() for m in re.finditer(r": | \(|  ", text))):
        try:
            return eval(text[:cut], {"Decimal": Decimal})
        except (SyntaxError, NameError, TypeError):
            continue
    raise ValueError(comment)


def run_with_stated_values(block: Block, namespace: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run a notebook-style block statement by statement; an expression whose line (or the
    comment line right after it) states a value must evaluate to that value."""
    namespace = {"__name__": "__readme__"} if namespace is None else namespace
    comments = {tok.start[0]: tok.string for tok in tokenize.generate_tokens(
        io.StringIO(block.text).readline) if tok.type == tokenize.COMMENT}
    lines = block.text.splitlines()
    checked = 0
    for stmt in ast.parse(block.text).body:
        code = compile(ast.Module([stmt], []), block.where, "exec")
        end = stmt.end_lineno or stmt.lineno
        comment = comments.get(end)
        if comment is None and end < len(lines) and lines[end].lstrip().startswith("#"):
            comment = comments.get(end + 1)
        if isinstance(stmt, ast.Expr) and comment is not None:
            value = eval(compile(ast.Expression(stmt.value), block.where, "eval"), namespace)
            expected = _expected_comment(comment)
            assert value == expected, f"{block.where}+{end - 1}: {value!r} != {expected!r}"
            checked += 1
        else:
            exec(code, namespace)
    assert checked, f"{block.where}: no stated value was checked"
    return namespace


def run_property(block: Block) -> None:
    namespace: dict[str, Any] = {"__name__": "__readme__"}
    exec(compile(block.text, block.where, "exec"), namespace)
    tests = [f for name, f in namespace.items() if name.startswith("test_") and callable(f)]
    assert tests
    for test in tests:
        # A Hypothesis @given test runs its examples when called. Its speed is the machine's,
        # not the example's: on a loaded 2-core machine too_slow and the deadline are noise.
        settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])(test)()


def record_example(block: Block, folder: Path) -> None:
    """Run the docs' recorder script in ``folder``, beside the docs' plan."""
    plan, _ = _documents()
    (folder / "draft").mkdir(parents=True, exist_ok=True)
    (folder / "draft" / "plan.json").write_text(json.dumps(plan, indent=2))
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(folder)
        exec(compile(block.text, block.where, "exec"), {"__name__": "__readme__"})


SNIPPETS: dict[str, str] = {
    # the first line of each python block of the docs -> the runner below that covers it
    "from pytest_itera.core.campaign import Step": "values",
    "from pytest_itera.core.campaign import Lot, Step": "values",
    "from pytest_itera.core.lot_forecast import forecast_lot": "values",
    "from hypothesis import given": "property",
    "# record.py: run it beside draft/plan.json; it writes out/": "recorder",
    "# conftest.py": "hooks",
    "# tests/test_acceptance.py — run: pytest --itera-campaign out tests/test_acceptance.py":
        "fixture",
    # the guides' scripts: run, their campaigns judged, by tests/record/test_guides.py
    "# train_torch.py: a plain torch loop, recorded into out/ (run it beside draft/plan.json)":
        "guide",
    "# train_trainer.py: the Hugging Face Trainer, recorded into out/ (run it beside "
    "draft/plan.json)": "guide",
    "# train_lightning.py: Lightning, recorded into out/ (run it beside draft/plan.json)":
        "guide",
    "# the way back: run beside out/, the campaign closed above": "way-back",
    "# models.py: the judge's model of the example campaign's runs, beside conftest.py":
        "model",
    "# conftest.py beside models.py: the runs whose config is an MLP's are re-predicted":
        "model-hook",
    "# continue.py: killed and continued, on a played clock and on the real clock (beside "
    "draft/plan.json)": "continue",
}


def _snippet(runner: str) -> Block:
    found = [b for b in _blocks("python") if SNIPPETS.get(b.text.splitlines()[0]) == runner]
    assert len(found) == 1, f"one python block of the docs for the {runner!r} runner"
    return found[0]


def test_every_python_block_has_a_runner() -> None:
    unknown = [b.where for b in _blocks("python") if b.text.splitlines()[0] not in SNIPPETS]
    assert not unknown, f"python blocks no test runs: {unknown}; add them to SNIPPETS"
    assert set(SNIPPETS.values()) == {"values", "property", "recorder", "hooks", "fixture",
                                      "guide", "way-back", "continue", "model", "model-hook"}


@pytest.mark.parametrize(
    "first_line", [k for k, v in SNIPPETS.items() if v == "values"], ids=lambda s: s[-12:])
def test_notebook_blocks_state_true_values(first_line: str) -> None:
    block = next(b for b in _blocks("python") if b.text.splitlines()[0] == first_line)
    run_with_stated_values(block)


def test_property_block_runs() -> None:
    run_property(_snippet("property"))


@pytest.fixture(scope="module")
def example_campaign(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The docs' recorder script, run once: the folder holding out/."""
    folder = tmp_path_factory.mktemp("readme")
    record_example(_snippet("recorder"), folder)
    return folder / "out"


def test_recorder_writes_the_documented_documents(example_campaign: Path) -> None:
    plan, manifest = _documents()
    assert parse_json((example_campaign / "plan.json").read_text()) == plan
    written = parse_json((example_campaign / "manifest.json").read_text())
    assert written == manifest, (
        "docs/campaign-format.md's manifest.json is not what its recorder script writes: paste "
        "the new one (tests/plugin/test_readme.py: record_example)")


def test_the_way_back_block_repairs_the_documented_campaign(
        example_campaign: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/recorder.md's way back, run on a copy of the documented campaign: reopened,
    repaired, closed again and PLAYED CLOCK (all checks pass), the journal and the summary
    saying so."""
    shutil.copytree(example_campaign, tmp_path / "out")
    block = _snippet("way-back")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(tmp_path)
        exec(compile(block.text, block.where, "exec"), {"__name__": "__readme__"})
    assert "  reopened once: RELOAD.md left out the resume check's checkpoint" in (
        capsys.readouterr().out.splitlines())
    journal = [json.loads(line) for line in
               (tmp_path / "out" / "itera-journal.jsonl").read_text().splitlines()]
    [changed] = [e for e in journal if e["event"] == "file"]
    assert (changed["path"], changed["change"]) == ("RELOAD.md", "replaced")


def test_the_continue_block_continues_a_killed_script(tmp_path: Path) -> None:
    """docs/recorder.md's kill-and-continue script, beside the docs' plan: on a played clock
    and on the real clock, its own asserts are the test."""
    record_example(_snippet("continue"), tmp_path)
    journal = (tmp_path / "played" / "itera-journal.jsonl").read_text().splitlines()
    assert json.loads(journal[0])["clock"] == "played"
    real = (tmp_path / "real" / "itera-journal.jsonl").read_text().splitlines()
    assert json.loads(real[0])["clock"] == "real"


def _copy(example_campaign: Path, pytester: pytest.Pytester) -> None:
    shutil.copytree(example_campaign, pytester.path / "out")


README_COMMAND = "$ pytest --itera-campaign out"


# Why a documentation example runs in one xdist mode (tests/plugin/conftest.py).
EXAMPLE = ("a documentation example: the summary, the hooks and the fixture it shows are checked "
           "in every xdist mode by test_integration.py")


def _readme_session() -> list[str]:
    """What the README's example shows that command printing (fnmatch patterns)."""
    block = next(b for b in _blocks("console") if b.path == README and README_COMMAND in b.text)
    lines = block.text.splitlines()
    return lines[lines.index(README_COMMAND) + 1:]


@pytest.mark.one_mode(EXAMPLE)
def test_the_plugin_accepts_the_documented_campaign_as_the_readme_shows(
        example_campaign: Path, itera: Itera, pytester: pytest.Pytester) -> None:
    _copy(example_campaign, pytester)
    result = itera()
    assert result.ret == 0, result.stdout.str()
    shown = _readme_session()
    assert shown[1].startswith("campaign tiny-2026-11: PLAYED CLOCK — 73/73 checks passed")
    result.stdout.fnmatch_lines(shown)
    # its hours were played: the gate refuses it
    assert itera("--itera-require-accepted").ret == pytest.ExitCode.TESTS_FAILED


@pytest.mark.one_mode(EXAMPLE)
def test_hooks_block_plugs_into_the_plugin(
        example_campaign: Path, itera: Itera, pytester: pytest.Pytester) -> None:
    _copy(example_campaign, pytester)
    pytester.makeconftest(_snippet("hooks").text)
    shutil.copy(REPO / "pytest_itera/catalogues/iteragpu-rtx4090.json",
                pytester.path / "prices.json")
    result = itera("-rf")
    # its check runs (and fails: these runs record no seed); the catalogue hook's prices hold
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed") == 1, result.stdout.str()
    result.stdout.fnmatch_lines(["*run control has no 'seed' metric*",
                                 "FAILED out/manifest.json::seed-recorded*"])


@pytest.mark.one_mode(EXAMPLE)
def test_fixture_block_is_part_of_the_verdict(
        example_campaign: Path, itera: Itera, pytester: pytest.Pytester) -> None:
    _copy(example_campaign, pytester)
    pytester.makepyfile(**{"tests/test_acceptance": _snippet("fixture").text})
    result = itera("tests/test_acceptance.py")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["campaign tiny-2026-11: PLAYED CLOCK — * checks passed *"])


# ---------------------------------------------------------------- commands


def test_readme_names_the_two_commands_that_ci_runs() -> None:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## The two commands"):text.index("## Install")]
    commands = re.findall(r"^(bash scripts/\S+)", section, flags=re.M)
    assert commands == ["bash scripts/demo", "bash scripts/test"]
    ci = (README.parent / ".ci" / "run").read_text(encoding="utf-8")
    assert "bash scripts/test" in ci


def test_the_readme_is_short() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, "the README is the first page: move the detail into docs/"


def _built_in_checks() -> dict[str, str]:
    """check id -> scope, of every built-in family."""
    import importlib

    from pytest_itera.checks.model import FAMILIES

    return {check.id: check.scope for module in FAMILIES.values()
            for check in importlib.import_module(module).pytest_itera_checks(None)}


def test_the_check_table_lists_every_check_once_with_its_section() -> None:
    """The README's table: one row per check of a closed campaign, each linking to its section
    of docs/checks.md; the plan gate's checks are named in docs/plan-gate.md."""
    checks = _built_in_checks()
    rows = re.findall(r"^\| \[`([a-z-]+)`\]\(docs/checks\.md#([a-z-]+)\) \|",
                      README.read_text(encoding="utf-8"), flags=re.M)
    assert sorted(check for check, _ in rows) == sorted(
        check for check, scope in checks.items() if scope != "plan")
    assert all(check == anchor for check, anchor in rows)
    sections = re.findall(r"^## `([a-z-]+)`$", (REPO / "docs" / "checks.md").read_text(
        encoding="utf-8"), flags=re.M)
    assert sorted(sections) == sorted(check for check, _ in rows)
    gate = (REPO / "docs" / "plan-gate.md").read_text(encoding="utf-8")
    assert all(f"`{check}" in gate for check, scope in checks.items() if scope == "plan")
