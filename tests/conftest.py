from __future__ import annotations

import importlib
import os
import pkgutil
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from filelock import FileLock

from tests.factory import CampaignBuilder, built_example, tree_digest
from tests.runner import LEAN_ADDOPTS, Itera, python_path_with_repo

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "one_mode(why): a wiring test (tests/plugin) whose answer no xdist mode can change runs "
        "once, xdist absent; why says so (ITERA_TESTS_XDIST=all runs it in the three modes)",
    )


@pytest.fixture(autouse=True, scope="session")
def _torch_lazy_modules_loaded_once() -> None:
    """Import torch's lazily imported compiler package before any test can.

    The pytester fixture snapshots sys.modules and restores it after its test: a module first
    imported inside such a test (torch.manual_seed imports torch._dynamo on first use) is
    dropped from sys.modules, while the operators it registered stay registered in C++, so
    the next import in that worker fails ("Only a single TORCH_LIBRARY can be used ...").
    """
    import torch._dynamo  # noqa: F401


@pytest.fixture(autouse=True, scope="session")
def _package_modules_loaded_once() -> None:
    """Import every pytest_itera module before any test can, for the same reason.

    A module first imported inside an in-process pytester run is dropped after that test;
    the next test then imports a second copy, whose classes are not the first copy's (a
    Money of one copy is not equal to the same Money of the other).
    """
    import pytest_itera

    for module in pkgutil.walk_packages(pytest_itera.__path__, "pytest_itera."):
        if not module.name.endswith("__main__"):
            importlib.import_module(module.name)


@pytest.fixture(autouse=True)
def _lean_inner_sessions(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Inner pytest sessions skip plugins they never use.

    Each in-process pytester run would re-import and re-rewrite hypothesis's and
    anyio's pytest plugins (~2 s per run on our 2-core machines).
    """
    if "pytester" in request.fixturenames:
        # After pytester's own set-up, which deletes PYTEST_ADDOPTS.
        request.getfixturevalue("pytester")
        monkeypatch.setenv("PYTEST_ADDOPTS", LEAN_ADDOPTS)


def once_per_run(tmp_path_factory: pytest.TempPathFactory, name: str,
                 build: Callable[[Path], object]) -> Path:
    """A folder ``build`` fills, made once for the whole run: under pytest-xdist the first
    worker that asks builds it (under a file lock, into a folder of its own renamed into
    place when complete) and the others read it, instead of each worker building its own on
    the same cores. Read it, or copy it before changing it."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is None:
        folder = tmp_path_factory.mktemp(name)
        build(folder)
        return folder
    shared = tmp_path_factory.getbasetemp().parent  # every worker's basetemp is under it
    done = shared / name
    with FileLock(str(shared / f"{name}.lock")):
        if not done.is_dir():
            partial = shared / f"{name}.{worker}.partial"
            shutil.rmtree(partial, ignore_errors=True)
            partial.mkdir()
            build(partial)
            partial.rename(done)
    return done


@pytest.fixture(scope="session")
def fsdp_checkpoints(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """FSDP2 checkpoints of 2 CPU ranks (tests/sharded.py), written once per run (a
    multi-process run costs seconds): tests copy before damaging them."""
    from tests import sharded

    folder = once_per_run(tmp_path_factory, "fsdp", sharded.fsdp_checkpoints)
    return {name: folder / name for name in sharded.FOLDERS}


@pytest.fixture
def campaign(pytester: pytest.Pytester) -> Iterator[CampaignBuilder]:
    """A good campaign at <pytester>/out; the test breaks it, writes it, runs pytest.

    After the test, the folder must be exactly as written: a run never modifies it.
    """
    builder = CampaignBuilder(pytester.path / "out")
    yield builder
    if builder.root.exists() and builder.written_digest is not None:
        assert tree_digest(builder.root) == builder.written_digest, (
            "the campaign folder was modified"
        )


@pytest.fixture
def xdist() -> str:
    """The xdist mode of the test's pytest runs: absent, outside the wiring's tests.

    tests/plugin/conftest.py runs the wiring's tests in all three modes; a test whose point
    is one process model pins it: ``@only_xdist("on")``."""
    return "absent"


@pytest.fixture
def itera(pytester: pytest.Pytester, xdist: str, monkeypatch: pytest.MonkeyPatch) -> Itera:
    """Runs pytest on the campaign at <pytester>/out in this test's xdist mode."""
    python_path_with_repo(monkeypatch)
    return Itera(pytester, xdist)


@pytest.fixture(scope="session")
def example_campaign(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example campaign, built once per run (:func:`once_per_run`) for every module that
    reads it (tests/record/test_example_build.py, tests/checks/artifacts/test_adapter_pinned.py,
    ...): read it, or copy it before changing it (it holds no absolute path)."""
    return once_per_run(tmp_path_factory, "example", lambda f: built_example(f / "campaign")) \
        / "campaign"
