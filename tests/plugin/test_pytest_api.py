"""The package speaks to pytest through its public API only: no module imports ``_pytest`` at
run time (a private module moves or changes between pytest releases without notice). An
import under ``if TYPE_CHECKING:`` is a type's name for mypy, never run."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest_itera

PACKAGE = Path(pytest_itera.__file__).parent


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def runtime_imports(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, module) of every import that runs: outside ``if TYPE_CHECKING:`` bodies."""
    pending: list[ast.AST] = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            pending.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module
        pending.extend(ast.iter_child_nodes(node))


def private_pytest_imports(source: str) -> list[tuple[int, str]]:
    return sorted((line, module) for line, module in runtime_imports(ast.parse(source))
            if module == "_pytest" or module.startswith("_pytest."))


def test_no_module_of_the_package_imports_pytest_internals_at_run_time() -> None:
    found = [f"{path.relative_to(PACKAGE.parent)}:{line}: {module}"
             for path in sorted(PACKAGE.rglob("*.py"))
             for line, module in private_pytest_imports(path.read_text(encoding="utf-8"))]
    assert not found, found


def test_the_scan_sees_a_runtime_import_and_skips_a_type_checking_one() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from _pytest.nodes import Node\n"
        "else:\n    import _pytest.mark\n"
        "def f():\n    from _pytest.mark.expression import Expression\n")
    assert private_pytest_imports(source) == [(5, "_pytest.mark"),
                                              (7, "_pytest.mark.expression")]
