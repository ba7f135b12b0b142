"""No check loses a failing fixture or a passing twin (issue 40): per finding code of every
check's KINDS, the rule tests hold a case that expects it (``expect_finding(found, "code")``) and a
case that expects it absent (``expect_no_finding(found, "code")``).

Read statically from the test sources (tests/checks/judging.py's helpers), so the answer is the
same whichever process runs which test (xdist or not): a literal code, or a parameter of the
test whose ``pytest.mark.parametrize`` table gives literal codes.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from pytest_itera.checks.kinds import builtin_checks
from tests.checks.coverage_gaps import NO_FAILING_CASE, NO_PASSING_CASE

TESTS = Path(__file__).parent
HELPERS = {"expect_finding": "failing", "expect_no_finding": "passing"}


def _table(function: ast.FunctionDef) -> dict[str, set[str]]:
    """Parameter name -> the literal strings its parametrize tables give it."""
    values: dict[str, set[str]] = {}
    for decorator in function.decorator_list:
        if not (isinstance(decorator, ast.Call) and ast.unparse(decorator.func).endswith(
                "mark.parametrize") and len(decorator.args) >= 2):
            continue
        names_node, rows = decorator.args[0], decorator.args[1]
        if isinstance(names_node, ast.Constant):
            names = [n.strip() for n in str(names_node.value).split(",")]
        elif isinstance(names_node, ast.List | ast.Tuple):
            names = [str(n.value) for n in names_node.elts if isinstance(n, ast.Constant)]
        else:
            continue
        if not isinstance(rows, ast.List | ast.Tuple):
            continue
        for row in rows.elts:
            if isinstance(row, ast.Call) and ast.unparse(row.func).endswith("param"):
                row = row.args[0] if len(row.args) == 1 else ast.Tuple(elts=row.args)
            cells = row.elts if isinstance(row, ast.Tuple) and len(names) > 1 else [row]
            for name, cell in zip(names, cells, strict=False):
                if isinstance(cell, ast.Constant) and isinstance(cell.value, str):
                    values.setdefault(name, set()).add(cell.value)
    return values


def _cases(path: Path) -> Iterator[tuple[str, str]]:
    """(code, "failing" | "passing") for each helper call of the file's tests."""
    for function in ast.walk(ast.parse(path.read_text("utf-8"))):
        if not isinstance(function, ast.FunctionDef):
            continue
        table = _table(function)
        for call in ast.walk(function):
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                    and call.func.id in HELPERS and len(call.args) >= 2):
                continue
            code = call.args[1]
            if isinstance(code, ast.Constant) and isinstance(code.value, str):
                yield code.value, HELPERS[call.func.id]
            elif isinstance(code, ast.Name):
                yield from ((c, HELPERS[call.func.id]) for c in table.get(code.id, ()))


def _covered() -> dict[str, set[str]]:
    covered: dict[str, set[str]] = {"failing": set(), "passing": set()}
    for path in sorted(TESTS.rglob("test_*.py")):
        for code, case in _cases(path):
            covered[case].add(code)
    return covered


CODES = sorted(code for check in builtin_checks() for code in check.kinds)


def test_every_code_has_a_failing_case_and_a_passing_twin() -> None:
    covered = _covered()
    missing = {case: sorted(set(CODES) - covered[case] - set(known)) for case, known in (
        ("failing", NO_FAILING_CASE), ("passing", NO_PASSING_CASE))}
    assert missing == {"failing": [], "passing": []}


def test_the_known_gaps_only_shrink() -> None:
    """A gap that a test now covers, or a code no check declares, leaves the list."""
    covered = _covered()
    stale = {case: sorted(set(known) & covered[case] | set(known) - set(CODES)) for case, known in (
        ("failing", NO_FAILING_CASE), ("passing", NO_PASSING_CASE))}
    assert stale == {"failing": [], "passing": []}
    assert len(set(NO_FAILING_CASE)) == len(NO_FAILING_CASE)
    assert len(set(NO_PASSING_CASE)) == len(NO_PASSING_CASE)


def test_the_scan_reads_literal_codes_and_parametrize_tables(tmp_path: Path) -> None:
    source = tmp_path / "test_x.py"
    source.write_text(
        "import pytest\n"
        "@pytest.mark.parametrize(('break_', 'code'),\n"
        "                         [('a', 'c.one'), pytest.param('b', 'c.two')])\n"
        "def test_refused(break_, code):\n"
        "    expect_finding(judge(x), code)\n"
        "def test_honest():\n"
        "    expect_no_finding(judge(x), 'c.one')\n")
    assert sorted(_cases(source)) == [("c.one", "failing"), ("c.one", "passing"),
                                      ("c.two", "failing")]
