"""No check loses a failing fixture or a passing twin (issue 40): per finding code of every
check's KINDS, the rule tests hold a case that finds it and a case that does not.

Read statically from the test sources, so the answer is the same whichever process runs which
test (xdist or not):

- a failing case: ``expect_finding(found, "code")`` (tests/checks/judging.py), or
  ``advises_then_fails(campaign, check, "code")``, or an ``assert`` that compares findings'
  ``.code`` with a literal code;
- a passing case: ``expect_no_finding(found, "code")``, or ``expect_no_finding(judge(campaign,
  check))`` -- the check judged on a campaign and nothing found, a passing case of each of its
  codes;

a code is a literal, a module constant (of the file or tests/checks/campaigns.py), or a
parameter of the test whose ``pytest.mark.parametrize`` table gives literal codes.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from pytest_itera.checks.kinds import builtin_checks

TESTS = Path(__file__).parent
# The helpers that state a case, and where their code is.
CODE_AT = {"expect_finding": ("failing", 1), "advises_then_fails": ("failing", 2),
           "expect_no_finding": ("passing", 1)}


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


def _constants(tree: ast.Module) -> dict[str, str]:
    """Module-level NAME = "string" assignments."""
    return {t.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
            for t in node.targets if isinstance(t, ast.Name)}


SHARED = _constants(ast.parse((TESTS / "campaigns.py").read_text("utf-8")))


def _strings(node: ast.expr, table: dict[str, set[str]], names: dict[str, str]) -> set[str]:
    """The literal strings an argument stands for."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.Name):
        return table.get(node.id, set()) | ({names[node.id]} if node.id in names else set())
    return set()


def _cases(path: Path) -> Iterator[tuple[str, str]]:
    """(code, "failing" | "passing") for each case the file's tests state; a whole check
    judged and found clean is (check id + ".*", "passing")."""
    tree = ast.parse(path.read_text("utf-8"))
    names = SHARED | _constants(tree)
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef):
            continue
        table = _table(function)
        for node in ast.walk(function):
            if isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare) \
                    and all(isinstance(op, ast.Eq | ast.In) for op in node.test.ops) \
                    and ".code" in ast.unparse(node.test):
                literal = {c.value for c in ast.walk(node.test) if isinstance(c, ast.Constant)
                           and isinstance(c.value, str)}
                yield from ((code, "failing") for code in literal)
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                continue
            at = CODE_AT.get(node.func.id)
            if at is None:
                continue
            case, index = at
            if len(node.args) > index:
                yield from ((c, case) for c in _strings(node.args[index], table, names))
            elif case == "passing" and len(node.args) == 1 and not node.keywords:
                judged = node.args[0]
                if isinstance(judged, ast.Call) and isinstance(judged.func, ast.Name) \
                        and judged.func.id == "judge" and len(judged.args) >= 2:
                    yield from ((f"{c}.*", "passing")
                                for c in _strings(judged.args[1], table, names))


def _covered() -> dict[str, set[str]]:
    covered: dict[str, set[str]] = {"failing": set(), "passing": set()}
    for path in sorted(TESTS.rglob("test_*.py")):
        for code, case in _cases(path):
            covered[case].add(code)
    clean = {c.removesuffix(".*") for c in covered["passing"] if c.endswith(".*")}
    covered["passing"] |= {code for check in builtin_checks() if check.id in clean
                           for code in check.kinds}
    return covered


CODES = sorted(code for check in builtin_checks() for code in check.kinds)


def test_every_code_has_a_failing_case_and_a_passing_twin() -> None:
    """No exception list: a code no test can break is dead code, and goes."""
    covered = _covered()
    missing = {case: sorted(set(CODES) - covered[case]) for case in ("failing", "passing")}
    assert missing == {"failing": [], "passing": []}
