from __future__ import annotations

from collections.abc import Iterator

import pytest

from pytest_itera.reload import Reloader
from tests.runner import Itera, python_path_with_repo


@pytest.fixture(scope="session")
def rules_reloader() -> Iterator[Reloader]:
    """One reload server for every rule test of this process (started at the first reload:
    its torch import takes seconds), as a pytest process has one for all its campaigns."""
    with Reloader(timeout=120.0) as reloader:
        yield reloader


@pytest.fixture
def itera(pytester: pytest.Pytester, xdist: str, monkeypatch: pytest.MonkeyPatch,
          rules_reloader: Reloader) -> Itera:
    """The rules' ``itera``: what needs only ``-k``, ``-rf`` or ``-rA`` is answered
    in-process (tests/inprocess.py), the rest by a pytest session with xdist absent."""
    python_path_with_repo(monkeypatch)
    return Itera(pytester, xdist, reloader=lambda: rules_reloader)
