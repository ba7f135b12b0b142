from __future__ import annotations

from collections.abc import Iterator

import pytest

from pytest_itera.reload import Reloader


@pytest.fixture(scope="module")
def reloader() -> Iterator[Reloader]:
    """One reload server for a module's tests (its start-up imports torch: seconds)."""
    with Reloader(timeout=60) as r:
        yield r
