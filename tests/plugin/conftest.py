"""The wiring's tests run in each xdist mode: absent, off and on (pytest-mypy's habit).

A test whose point is one process model pins it: ``@only_xdist("on")``. A test whose answer
no process model can change runs once, xdist absent: ``@pytest.mark.one_mode("why")``, the
reason saying what it judges (the content of a report that ``test_xdist_modes.py`` shows
byte-identical in every mode, a usage error raised before any worker starts, ...).
``ITERA_TESTS_XDIST=all`` runs those in the three modes too.
"""

from __future__ import annotations

import os

import pytest

from tests.runner import ALL_MODES_ENV, XDIST_MODES


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize ``xdist`` with every mode, or with xdist absent for a ``one_mode`` test;
    a test pinned with ``only_xdist`` keeps its own modes."""
    if "xdist" not in metafunc.fixturenames or any(
        "xdist" in _names(mark.args[0]) for mark in metafunc.definition.iter_markers("parametrize")
    ):
        return
    modes = XDIST_MODES
    mark = metafunc.definition.get_closest_marker("one_mode")
    if mark is not None:
        why = mark.args[0] if len(mark.args) == 1 and not mark.kwargs else None
        if not isinstance(why, str) or not why.strip():
            raise pytest.UsageError(f"{metafunc.definition.nodeid}: one_mode needs one reason: "
                                    "@pytest.mark.one_mode(\"why xdist cannot change it\")")
        if os.environ.get(ALL_MODES_ENV) != "all":
            modes = ("absent",)
    metafunc.parametrize("xdist", modes, ids=[f"xdist-{mode}" for mode in modes])


def _names(argnames: object) -> list[str]:
    """The argument names of a parametrize mark: ``"a, b"`` or ``("a", "b")``."""
    if isinstance(argnames, str):
        return [name.strip() for name in argnames.split(",")]
    assert isinstance(argnames, (list, tuple)), argnames
    return [str(name) for name in argnames]
