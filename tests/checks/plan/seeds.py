"""The plan gate's rule tests start from the seed's plan (tests.plans.seed_plan) broken one
way, written alone in a folder and judged by one gate check."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.checks.judging import Found, judge
from tests.plans import seed_plan, write


def judge_broken_seed(folder: Path, breaks: Callable[[dict[str, Any]], None],
                      check: str) -> Found:
    """``check``'s findings on the seed's plan once ``breaks`` changed it."""
    plan = seed_plan()
    breaks(plan)
    return judge(write(folder, plan), check)
