"""A simulated clock on the rental's timeline.

The example runs a 48-hour protocol in seconds. Its timestamps and observed
hours are projected onto the rental's timeline instead of being invented: each
step starts when its dependencies and its resource allow, and lasts its planned
hours scaled by the work it really did (a run stopped at step 14 of 420 used
14/420 of its hours; a dropped run used none). The real wall seconds of each
step are recorded beside them.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta
from typing import Any


class SimClock:
    def __init__(self, start: datetime, steps: list[dict[str, Any]]) -> None:
        self.start = start
        self.current = start
        self.steps = {s["id"]: s for s in steps}
        self.spans: dict[str, tuple[float, float]] = {}
        self.observed: dict[str, float] = {}
        self.wall_seconds: dict[str, float] = {}
        self._free: dict[str, float] = {}
        self._began: dict[str, tuple[float, float]] = {}

    def now(self) -> datetime:
        return self.current

    def begin(self, step_id: str) -> datetime:
        step = self.steps[step_id]
        ends = [self.spans[d][1] for d in step.get("after", [])]
        start = max([*ends, self._free.get(step["resource"], 0.0)])
        self._began[step_id] = (start, time.perf_counter())
        self.current = self.start + timedelta(hours=start)
        return self.current

    def during(self, step_id: str, fraction: float) -> datetime:
        """The moment a begun step has done ``fraction`` of its planned work (a checkpoint
        saved part-way through training is saved then)."""
        start, _ = self._began[step_id]
        hours = round(float(self.steps[step_id]["hours"]) * fraction, 4)
        return self.start + timedelta(hours=start + hours)

    def finish(self, step_id: str, fraction: float = 1.0) -> datetime:
        """End a begun step that did ``fraction`` of its planned work."""
        start, wall = self._began.pop(step_id)
        hours = round(float(self.steps[step_id]["hours"]) * fraction, 4)
        self.observed[step_id] = hours
        self.wall_seconds[step_id] = round(time.perf_counter() - wall, 3)
        self.spans[step_id] = (start, start + hours)
        self._free[self.steps[step_id]["resource"]] = start + hours
        self.current = self.start + timedelta(hours=start + hours)
        return self.current

    def skip(self, step_id: str) -> None:
        """A step that never ran (its run was dropped): zero hours, no time passes."""
        self.begin(step_id)
        saved = self.current
        self.finish(step_id, 0.0)
        self.current = saved

    def makespan(self) -> float:
        return max(end for _, end in self.spans.values()) - min(s for s, _ in self.spans.values())
