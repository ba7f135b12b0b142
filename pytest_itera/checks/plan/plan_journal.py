"""plan-journal: every line of the campaign's journal is complete and usable (R9).

Collected for a folder with a journal (the recorder's ``itera-journal.jsonl``): a torn last
line, a line that is not used, or a step the plan does not have is reported, and left out
of the forecast (plan-forecast). The gate only reads the journal, never edits it.
"""

from __future__ import annotations

from collections.abc import Iterator

from pytest_itera.checks.context import Check, Context
from pytest_itera.checks.model import Kind
from pytest_itera.checks.plan.journal import journal_of, journal_targets
from pytest_itera.core.findings import Finding
from pytest_itera.core.journal import JOURNAL_FILE


def plan_journal(ctx: Context, _target: str | None) -> Iterator[Finding]:
    """Every line of the journal is complete and usable by the forecast."""
    journal = journal_of(ctx)
    if journal is None:
        return
    if isinstance(journal, str):
        yield Finding(journal, where=JOURNAL_FILE, code="plan-journal.unreadable")
        return
    if journal.torn is not None:
        yield Finding(
            f"the last line of the journal is torn (no newline: an interrupted write); the "
            f"forecast uses the {journal.lines} complete lines only",
            where=f"{JOURNAL_FILE}:{journal.torn}",
            hint="re-record the step whose line was cut (the recorder continues from its "
            "journal); the plan gate never edits the campaign",
            code="plan-journal.torn-line")
    for number, why in journal.unreadable:
        yield Finding(f"journal line {number} is not used: {why}",
                      where=f"{JOURNAL_FILE}:{number}",
                      code="plan-journal.unused-line")
    plan = ctx.campaign.plan
    known = {s.id for s in plan.schedule.steps} if plan is not None else set()
    for step, number in sorted(journal.steps_at.items(), key=lambda kv: kv[1]):
        if plan is not None and step not in known:
            yield Finding(f"journal step {step!r} is not a step of the plan; the forecast "
                          "leaves it out", where=f"{JOURNAL_FILE}:{number}",
                          hint="the plan is frozen: record unplanned work under a planned "
                          "step, or explain it at closure (schedule.deviations)",
                          code="plan-journal.unknown-step")


KINDS: dict[str, Kind] = {
    "plan-journal.unreadable": Kind(
        rule="the journal is not a regular file, is over the size limit, or cannot be read",
        fix="restore the journal the recorder wrote"),
    "plan-journal.torn-line": Kind(
        rule="the journal's last line is torn (no newline: an interrupted write)",
        fix="re-record the step whose line was cut (the recorder continues from its journal)"),
    "plan-journal.unused-line": Kind(
        rule="a journal line is not usable by the forecast (not a JSON object, no step id, "
        "hours not a number)",
        fix="restore the journal line as the recorder wrote it"),
    "plan-journal.unknown-step": Kind(
        rule="the journal times a step the plan does not have",
        fix="record unplanned work under a planned step, or explain it at closure "
        "(schedule.deviations)"),
}

CHECK = Check("plan-journal", "every line of the journal is complete and usable", plan_journal,
              scope="plan", targets=journal_targets, needs=frozenset(), fast=True,
              kinds=KINDS)
