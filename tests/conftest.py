from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.factory import CampaignBuilder, tree_digest

os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture(autouse=True)
def _lean_inner_sessions(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Inner pytest sessions skip plugins they never use.

    Each in-process pytester run would re-import and re-rewrite hypothesis's and
    anyio's pytest plugins (~2 s per run on our 2-core machines).
    """
    if "pytester" in request.fixturenames:
        monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:hypothesispytest -p no:anyio")


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
