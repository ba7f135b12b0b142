"""The ``itera_campaign`` fixture, for hand-written acceptance tests beside the built-in checks.

With one ``--itera-campaign`` the fixture is that campaign; with several, a
test that asks for it runs once per campaign (parametrized, ids are the
folders as given relative to the rootdir); without any, it errors saying
how to give one (an acceptance test that silently skips would pass CI).

A test that uses it is part of that campaign's verdict (check id
``acceptance-test``, under its own node id): its failure rejects the campaign.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_itera.plugin.options import CAMPAIGN, INI_CAMPAIGN, settings_key

if TYPE_CHECKING:
    from pytest_itera.core.campaign import Campaign

FIXTURE = "itera_campaign"


def _campaigns(config: pytest.Config) -> tuple[Path, ...]:
    settings = config.stash.get(settings_key, None)
    return settings.campaigns if settings is not None else ()


def _param_id(config: pytest.Config, root: Path) -> str:
    if root.is_relative_to(config.rootpath):
        return root.relative_to(config.rootpath).as_posix()
    return Path(os.path.relpath(root, config.invocation_params.dir)).as_posix()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Several campaigns: a test using the fixture runs once for each."""
    roots = _campaigns(metafunc.config)
    if FIXTURE in metafunc.fixturenames and len(roots) > 1:
        ids = [_param_id(metafunc.config, r) for r in roots]
        metafunc.parametrize(FIXTURE, roots, ids=ids, indirect=True, scope="session")


@pytest.fixture(scope="session")
def itera_campaign(request: pytest.FixtureRequest) -> Campaign:
    """The loaded campaign (plan, manifest, runs, budget, schedule); treat it as read-only.

    Example (tests/test_acceptance.py, run with ``pytest --itera-campaign out tests``)::

        def test_variant_beats_control(itera_campaign):
            runs = {r.id: r for r in itera_campaign.manifest.runs}
            metric = itera_campaign.plan.decision.metric
            assert runs["variant-a"].metrics[metric] > runs["control"].metrics[metric]
    """
    roots = _campaigns(request.config)
    root: Path | None = getattr(request, "param", None)
    if root is None:
        if not roots:
            pytest.fail(
                f"the {FIXTURE} fixture needs a campaign: run pytest with {CAMPAIGN} DIR "
                f"(or set the ini option {INI_CAMPAIGN})",
                pytrace=False,
            )
        root = roots[0]
    return _load(request.config, root)


def campaign_of(item: pytest.Item) -> Path | None:
    """The campaign a test that uses the fixture judges (its verdict counts the test); None
    for a test that does not use it, or when no campaign is given."""
    if FIXTURE not in getattr(item, "fixturenames", ()):
        return None
    callspec = getattr(item, "callspec", None)
    if callspec is not None and FIXTURE in callspec.params:
        return Path(callspec.params[FIXTURE])
    roots = _campaigns(item.config)
    return roots[0] if roots else None


def _load(config: pytest.Config, root: Path) -> Campaign:
    from pytest_itera.plugin.collect import loaded_campaign
    from pytest_itera.report import clean_block

    campaign = loaded_campaign(config, root)
    if campaign.errors:
        problems = "\n".join(f"  {e.where()}: {e.message}" for e in campaign.errors[:20])
        # Campaign text reaches the terminal without its control characters.
        pytest.fail(clean_block(f"campaign {root} did not load:\n{problems}"), pytrace=False)
    return campaign
