"""journal-agrees, the journal itself: it is there, whole and unedited.

The findings on the journal as a file rather than on what its events say: a recorded
campaign (the plan says ``"recorded": true``) ships a chained journal that ends with its
closure; each line chains to the one before it (line 1 to ``plan.json``); each
``--itera-journal-pin`` is the digest of its line (a journal rewritten and chained again
differs from a pin taken before).
"""

from __future__ import annotations

from collections.abc import Iterator

from pytest_itera.checks.context import Context
from pytest_itera.checks.evidence.journal_facts import JournalFacts, at
from pytest_itera.core.campaign import MANIFEST_FILE
from pytest_itera.core.findings import Finding
from pytest_itera.core.journal import JOURNAL_FILE


def no_journal(recorded: bool, pinned: bool) -> Iterator[Finding]:
    if recorded:
        yield Finding(
            f"the plan says the campaign is recorded (\"recorded\": true, frozen with it); its "
            f"journal {JOURNAL_FILE} is missing from the manifest", where=MANIFEST_FILE,
            code="journal-agrees.missing", expected=f"{JOURNAL_FILE} listed in {MANIFEST_FILE}",
            found="no journal",
            hint="ship the journal the recorder wrote: every rule that reads it (saves at their "
            "times, metrics as recorded, decisions) needs it")
    elif pinned:
        yield Finding(
            f"a journal pin was given, but the manifest lists no {JOURNAL_FILE}",
            where=MANIFEST_FILE, code="journal-agrees.pin", found="no journal",
            hint="ship the journal the pin was taken of, or drop --itera-journal-pin")


def chain_findings(ctx: Context, recorded: bool, facts: JournalFacts) -> Iterator[Finding]:
    """The chain holds from the plan to the last line, the pins are its lines', and a
    recorded campaign's journal is chained and closed."""
    plan_sha256 = ctx.campaign.manifest.plan.sha256 if ctx.campaign.manifest else None
    if facts.chained and facts.first_prev != plan_sha256:
        yield Finding(
            f"{JOURNAL_FILE} line 1 does not chain to the plan: its prev is not plan.json's "
            "sha256", where=at(1), code="journal-agrees.chain", expected=str(plan_sha256),
            found=str(facts.first_prev),
            hint="the journal begins with the plan it froze: ship that journal, unedited")
    if facts.broken is not None:
        line, why = facts.broken
        yield Finding(
            f"{JOURNAL_FILE} line {line} does not chain: {why} — a line before it was "
            "removed, inserted or rewritten", where=at(line), code="journal-agrees.chain",
            hint="ship the journal as the recorder wrote it; a repair goes through "
            "rec.reopen(reason=...), which journals it")
    for line, digest in ctx.options.journal_pins:
        if line > facts.lines:
            yield Finding(
                f"the journal pin {line}:{digest[:16]}… names line {line}, but {JOURNAL_FILE} "
                f"has {facts.lines} lines", where=at(facts.lines), code="journal-agrees.pin",
                expected=f"line {line}", found=f"{facts.lines} lines",
                hint="the journal was cut short of the pinned line, or the pin is another "
                "campaign's")
        elif facts.pinned.get(line) != digest:
            yield Finding(
                f"{JOURNAL_FILE} line {line} is not the line the pin {line}:{digest[:16]}… was "
                "taken of: the journal up to there was rewritten (or the pin is another "
                "campaign's)", where=at(line), code="journal-agrees.pin", expected=digest,
                found=str(facts.pinned.get(line)),
                hint="ship the journal the pin proves; a pin is printed by rec.pin() and at "
                "each decision and closure")
    if recorded and not facts.chained:
        yield Finding(
            f"the plan says the campaign is recorded; its journal {JOURNAL_FILE} is not "
            "chained (line 1 carries no prev)", where=at(1), code="journal-agrees.unchained",
            hint="ship the journal the recorder wrote (each line chained to the one before)")
    if recorded and facts.closure is None:
        yield Finding(
            f"the plan says the campaign is recorded; its journal {JOURNAL_FILE} ends at line "
            f"{facts.lines} without the closure", where=at(facts.lines),
            code="journal-agrees.not-closed",
            hint="ship the whole journal: its last line is the close() that wrote the manifest")
