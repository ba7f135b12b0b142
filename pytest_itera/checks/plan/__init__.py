"""The plan gate (``--itera-plan``): a plan judged alone, before renting, and re-forecast at
the post-pilot decision point (R2-R6). Registered as the plugin ``itera.plan``.

Its checks have scope ``plan``: they are collected for a plan given with ``--itera-plan``,
never for a closed campaign. They reuse the closure's plan rules (one home per rule):

- ``plan-valid``: JSON and schema-valid (``manifest``'s rule), a computable schedule
  (no dependency cycle), and no ``input_truncated`` rule contradicting its corpus entry
  (the recorder's rule too), each problem with its JSON path and line:column;
- ``plan-frozen-ready``: what the closure checks will need is declared (``itera-plan/2``,
  corpora, the must category, stop rules with evaluable parameters, a decision point after
  the pilot, a checkpoint policy that says where checkpoints live);
- ``plan-schedule-fits``: ``schedule-fits`` on the plan alone (window, lots with the
  cheapest lot that fits and the reduced protocol, stated hours, step kinds with positive
  hours, checkpoint interval plus save cost within the tolerable loss);
- ``plan-forecast`` (a campaign folder with a journal): the forecast against the window
  and the lots, with the same advice;
- ``plan-journal`` (idem): every line of the journal is complete and usable.

The journal is the recorder's (:mod:`pytest_itera.core.journal`, ``itera-journal.jsonl``),
read by :mod:`pytest_itera.checks.plan.journal`; the summary the gate prints is
:mod:`pytest_itera.checks.plan.summary`.
"""

from __future__ import annotations

from pytest_itera.checks.context import Check
from pytest_itera.checks.plan import (
    plan_forecast,
    plan_frozen_ready,
    plan_journal,
    plan_schedule_fits,
    plan_valid,
)

CHECKS = (plan_valid.CHECK, plan_frozen_ready.CHECK, plan_schedule_fits.CHECK,
          plan_journal.CHECK, plan_forecast.CHECK)


def pytest_itera_checks(config: object) -> tuple[Check, ...]:
    return CHECKS
