"""The run checks' campaign: stop records, configs and predictions are judged on an itera-plan/2
(no metric computation), so what they find is theirs alone."""

from __future__ import annotations

import pytest

from tests.factory import CampaignBuilder, as_plan_2

Campaign = CampaignBuilder


@pytest.fixture
def plan2_campaign(campaign: Campaign) -> Campaign:
    """The factory's campaign with an itera-plan/2: these rules judge the measurements files
    (the itera-plan/3 recomputation and the conclusion on it: tests/checks/metrics/)."""
    as_plan_2(campaign.plan)
    return campaign
