"""The package's layers hold: import-linter's contracts (pyproject.toml), and the core
imports with pytest blocked."""

from __future__ import annotations

import ast
import pkgutil
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import pytest_itera
from tests.runner import REPO

LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
# The pytest-facing layer: everything else must import without pytest.
PYTEST_FACING = {"plugin"}
# Run as scripts, never imported: the reload interpreter's (loaded by path), and the command
# line (``python -m pytest_itera``, which runs on import).
SCRIPTS = ("pytest_itera.reload.server", "pytest_itera.reload.probe", "pytest_itera.__main__")
# What runs in the reload interpreter, loaded by path (pytest-itera may not be installed there),
# and what it may import: the standard library, torch, numpy, safetensors.
RELOAD = REPO / "pytest_itera" / "reload"
RELOAD_INTERPRETER = sorted((RELOAD / "server").glob("*.py")) + [
    RELOAD / name for name in ("formats.py", "probe.py", "sandbox.py")]
RELOAD_IMPORTS = set(sys.stdlib_module_names) | {"torch", "numpy", "safetensors"}


def _lint(cwd: Path, config: Path) -> subprocess.CompletedProcess[str]:
    if not LINT_IMPORTS.exists():
        pytest.fail(f"{LINT_IMPORTS} is missing: install the dev extra (bash scripts/setup)")
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(config), "--no-cache"],
        cwd=cwd, capture_output=True, text=True, timeout=300,
        env={"PYTHONPATH": str(cwd), "PATH": "/usr/bin:/bin"},
    )


def test_the_layer_contracts_hold() -> None:
    result = _lint(REPO, REPO / "pyproject.toml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"Contracts: [1-9]\d* kept, 0 broken", result.stdout)


@pytest.mark.parametrize(("module", "added", "said"), [
    pytest.param("core/money.py", "import pytest  # a layer violation",
                 ("pytest_itera.core.money -> pytest",), id="core-imports-pytest"),
    pytest.param("core/campaign.py", "from pytest_itera import checks  # upward",
                 ("pytest_itera.core is not allowed to import pytest_itera.checks",
                  "pytest_itera.core.campaign -> pytest_itera.checks (l."), id="core-imports-up"),
])
def test_a_forbidden_import_breaks_a_contract(
    tmp_path: Path, module: str, added: str, said: tuple[str, ...]
) -> None:
    """The contracts bite: a copy of the package where one module imports what its layer
    may not (pytest in the core; a higher layer) fails, naming the import."""
    shutil.copytree(REPO / "pytest_itera", tmp_path / "pytest_itera",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    changed = tmp_path / "pytest_itera" / module
    changed.write_text(changed.read_text() + f"\n{added}\n")
    result = _lint(tmp_path, tmp_path / "pyproject.toml")
    assert result.returncode != 0
    assert "BROKEN" in result.stdout
    for words in said:
        assert words in result.stdout, result.stdout


def _runtime_imports(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, top-level module) of each absolute import, those under ``if TYPE_CHECKING:``
    left out (mypy's view, never run)."""
    skipped = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
               and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
               for stmt in node.body for n in ast.walk(stmt)}
    found = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name.split(".")[0]) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.append((node.lineno, node.module.split(".")[0]))
    return found


@pytest.mark.parametrize("path", RELOAD_INTERPRETER, ids=lambda p: p.relative_to(RELOAD).as_posix())
def test_the_reload_interpreters_code_imports_no_pytest_itera(path: Path) -> None:
    """The server, and the files it loads by path, import the standard library, torch, numpy
    and safetensors, and each other relatively or by path: never pytest-itera or pytest."""
    tree = ast.parse(path.read_text(), str(path))
    wrong = [f"{path.name}:{line} imports {name}" for line, name in _runtime_imports(tree)
             if name not in RELOAD_IMPORTS]
    assert not wrong


def _core_modules() -> list[str]:
    names = []
    for info in pkgutil.walk_packages(pytest_itera.__path__, "pytest_itera."):
        top = info.name.split(".")[1]
        if top not in PYTEST_FACING and not info.name.startswith(SCRIPTS):
            names.append(info.name)
    return sorted(names)


def test_the_core_imports_with_pytest_blocked() -> None:
    """No module outside the pytest-facing layer needs pytest or pluggy to import (a
    notebook or the recorder on a training machine has neither)."""
    modules = _core_modules()
    assert {"pytest_itera.core.campaign", "pytest_itera.checks.artifacts",
            "pytest_itera.strategies", "pytest_itera.record.campaign",
            "pytest_itera.report"} <= set(modules)
    code = (
        "import sys\n"
        "for name in ('pytest', '_pytest', 'pluggy'):\n"
        "    sys.modules[name] = None  # any import of it raises ImportError\n"
        "import importlib\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print('imported', len(sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=300, cwd=REPO)
    assert result.returncode == 0, result.stderr
    assert "imported" in result.stdout


# ---------------------------------------------------------------- the tree is the architecture


def _contracts() -> list[dict[str, object]]:
    import tomllib

    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    return list(config["tool"]["importlinter"]["contracts"])


def _layer_names(contract: dict[str, object]) -> set[str]:
    layers = contract.get("layers", [])
    assert isinstance(layers, list)
    return {name.strip() for layer in layers for name in str(layer).split("|")}


def _children(package: Path) -> set[str]:
    """The modules and subpackages directly in a package folder (``__init__`` aside)."""
    return {p.stem for p in package.glob("*.py") if p.stem != "__init__"} | {
        p.name for p in package.iterdir() if (p / "__init__.py").exists()}


def test_the_top_level_contract_names_every_module_and_folder() -> None:
    """Each module or folder at the package root is a layer of the package's contract: a new
    module cannot sit outside the architecture."""
    top = next(c for c in _contracts() if c["type"] == "layers" and "containers" not in c)
    named = {name.removeprefix("pytest_itera.") for name in _layer_names(top)}
    assert _children(REPO / "pytest_itera") == named


@pytest.mark.parametrize("folder", ["core", "files", "reload", "checks", "report", "record",
                                    "plugin"])
def test_each_layer_folder_has_a_contract_naming_every_module(folder: str) -> None:
    contract = next(c for c in _contracts() if c.get("containers") == [f"pytest_itera.{folder}"])
    assert _children(REPO / "pytest_itera" / folder) == _layer_names(contract)


def _module_of(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_graph() -> dict[str, set[str]]:
    """module -> the package modules it imports, ``if TYPE_CHECKING:`` imports included (a
    cycle of annotations is still a cycle to read), each edge to the most precise module."""
    files = {_module_of(p): p for p in (REPO / "pytest_itera").rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in files else base
                           for a in node.names]
            else:
                continue
            graph[name] |= {t for t in targets if t in files and t != name
                            and not name.startswith(t + ".")}  # a module's own parents aside
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle_in_the_package() -> None:
    graph = _import_graph()
    assert "pytest_itera.checks.context" in graph["pytest_itera.checks.evidence"]
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_module_imports_another_modules_private_names() -> None:
    """A helper two modules need is public in one of them (or in a shared module): an import
    of ``_name`` from another package module couples them behind the layers' back."""
    wrong = []
    for path in sorted((REPO / "pytest_itera").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (isinstance(node, ast.ImportFrom) and not node.level and node.module
                    and node.module.startswith("pytest_itera")):
                wrong += [f"{path.relative_to(REPO)}:{node.lineno} {node.module}.{a.name}"
                          for a in node.names if a.name.startswith("_")
                          and not a.name.startswith("__")]
    assert wrong == []
