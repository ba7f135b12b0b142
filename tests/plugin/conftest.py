from __future__ import annotations

import pytest

from tests.runner import XDIST_MODES


@pytest.fixture(params=XDIST_MODES, ids=[f"xdist-{mode}" for mode in XDIST_MODES])
def xdist(request: pytest.FixtureRequest) -> str:
    """The wiring's tests run in each xdist mode: absent, off and on (pytest-mypy's habit).

    A test whose point is one process model pins it: ``@only_xdist("on")``."""
    mode: str = request.param
    return mode
