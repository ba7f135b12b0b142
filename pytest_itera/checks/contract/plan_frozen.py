"""plan-frozen (R5, R9): the plan judged is the plan frozen before the trials. Its sha256 is
the manifest's record, any pin given from outside the campaign (which the campaign's writer
cannot rewrite) and the recorder journal's first line; no recorded moment predates its
frozen_at, since stop rules are written before any run starts."""

from __future__ import annotations

from collections.abc import Iterator

from pytest_itera.checks.context import Check, Context
from pytest_itera.checks.model import Kind
from pytest_itera.core.campaign import MANIFEST_FILE, PLAN_FILE, Manifest, Plan
from pytest_itera.core.findings import Finding
from pytest_itera.core.findings import where as json_where


def plan_frozen(ctx: Context, _target: str | None) -> Iterator[Finding]:
    """The plan is byte-identical to what the manifest recorded (and to any pin given from
    outside the campaign), and predates every recorded moment."""
    plan, man = ctx.documents()
    if man.plan.path != PLAN_FILE:
        yield Finding(
            f"the manifest records the plan as {man.plan.path!r}",
            where=json_where(MANIFEST_FILE, "plan", "path"),
            expected=repr(PLAN_FILE),
            found=repr(man.plan.path),
            code="plan-frozen.plan-path",
        )
    facts = ctx.facts(PLAN_FILE)
    if facts.error is not None or facts.sha256 is None:
        yield Finding(f"cannot hash {PLAN_FILE}: {facts.error}", where=PLAN_FILE,
                      code="plan-frozen.unreadable")
    else:
        if facts.sha256 != man.plan.sha256:
            yield Finding(
                "plan.json changed after it was frozen (its sha256 differs from the manifest's "
                "record)",
                where=json_where(MANIFEST_FILE, "plan", "sha256"),
                expected=man.plan.sha256,
                found=facts.sha256,
                hint="restore the plan as frozen; "
                "record changes as deviations and decisions in the manifest",
                code="plan-frozen.sha256",
            )
        yield from _pins(ctx, plan, facts.sha256)
        yield from _journal_pin(ctx, facts.sha256)
    yield from _moments_before_freeze(plan, man)


_JOURNAL_HEAD = 64 * 1024  # the plan event is the journal's first line, a few hundred bytes


def _journal_pin(ctx: Context, sha256: str) -> Iterator[Finding]:
    """The recorder's journal (listed in the campaign) opens with the plan it froze: its
    sha256, written before any run started, is evidence the manifest cannot rewrite."""
    import json

    from pytest_itera.core.journal import JOURNAL_FILE

    man = ctx.campaign.manifest
    if man is None or not any(f.path == JOURNAL_FILE for f in man.files):
        return
    path = ctx.regular_file(JOURNAL_FILE)
    if isinstance(path, str):
        return  # files-intact says what is wrong with a listed file
    try:
        with open(path, "rb") as fh:
            head = fh.read(_JOURNAL_HEAD).split(b"\n", 1)[0]
        first = json.loads(head)
    except (OSError, ValueError):
        return  # an unreadable journal is the plan gate's plan-journal item
    if not isinstance(first, dict) or first.get("event") != "plan":
        return
    frozen = first.get("sha256")
    if isinstance(frozen, str) and frozen != sha256:
        at = first.get("at")
        yield Finding(
            f"plan.json is not the plan the recorder froze: {JOURNAL_FILE} line 1 recorded "
            f"its sha256{f' at {at}' if isinstance(at, str) else ''}, before any run",
            where=f"{JOURNAL_FILE}:1", expected=frozen, found=sha256,
            hint="restore the plan as frozen; record changes as deviations and decisions in "
            "the manifest (R9: the initial plan is never rewritten)",
            code="plan-frozen.journal-sha256")


def _pins(ctx: Context, plan: Plan, sha256: str) -> Iterator[Finding]:
    """The plan's sha256 against the pins given from outside the writer's reach."""
    pinned = ctx.options.plan_sha256
    if pinned is not None:  # --itera-plan-sha256, or a notebook's Options
        if sha256 != pinned:
            yield Finding(
                "plan.json is not the plan given by --itera-plan-sha256",
                where=PLAN_FILE,
                expected=pinned,
                found=sha256,
                code="plan-frozen.pin-sha256",
            )
        return
    pins = ctx.options.plan_pins
    if not pins and ctx.options.other_pins:
        keys = ", ".join(map(repr, ctx.options.other_pins))
        yield Finding(
            f"itera_plan_sha256 pins no plan for this campaign (folder {ctx.root.name!r}, "
            f"id {plan.campaign!r})",
            where=PLAN_FILE,
            expected=f"a line '{ctx.root.name} = <sha256>' or '{plan.campaign} = <sha256>'",
            found=f"pins for {keys}",
            hint="pin the sha256 of the campaign's frozen plan.json in the ini file before the "
            "campaign starts (a campaign whose id changed is not the pinned one)",
            code="plan-frozen.no-pin",
        )
    for pin in pins:
        if sha256 != pin.sha256:
            yield Finding(
                f"plan.json is not the plan pinned by {pin.origin}",
                where=PLAN_FILE,
                expected=pin.sha256,
                found=sha256,
                hint="restore the plan as frozen when the pin was written; a changed plan is "
                "a new campaign with its own pin",
                code="plan-frozen.pin-sha256",
            )


def _moments_before_freeze(plan: Plan, man: Manifest) -> Iterator[Finding]:
    """Every recorded moment lies at or after frozen_at (R5: stop rules before the trials).

    A run's end or stop proves it ran even when its start is not recorded.
    """
    frozen = plan.frozen_at
    if frozen is None:
        return  # a draft: the manifest item says so
    moments = [("the manifest was closed", "$.closed_at", man.closed_at), *man.moments()]
    for what, path, moment in moments:
        if moment < frozen:
            yield Finding(
                f"{what} before the plan (and its stop rules) was frozen",
                where=f"{MANIFEST_FILE} {path}",
                expected=f"at or after {frozen.isoformat()}",
                found=moment.isoformat(),
                hint=f"stop rules are written before any run starts ({PLAN_FILE} $.frozen_at): "
                "a plan frozen after the trials is not the plan they followed; freeze the plan "
                "first",
                code="plan-frozen.before-freeze",
            )


KINDS: dict[str, Kind] = {
    "plan-frozen.plan-path": Kind(
        rule="manifest.json records the plan under another path than plan.json",
        fix="record the plan as plan.json, the path of the frozen plan in the campaign folder"),
    "plan-frozen.unreadable": Kind(
        rule="plan.json cannot be read, so its sha256 cannot be compared",
        fix="make plan.json readable, then run again"),
    "plan-frozen.sha256": Kind(
        rule="plan.json changed after it was frozen: its sha256 differs from the manifest's "
        "record",
        fix="restore the plan as frozen; record changes as deviations and decisions in the "
        "manifest"),
    "plan-frozen.journal-sha256": Kind(
        rule="plan.json is not the plan the recorder froze (line 1 of the listed "
        "itera-journal.jsonl, written before any run)",
        fix="restore the plan as frozen (R9: the initial plan is never rewritten)"),
    "plan-frozen.pin-sha256": Kind(
        rule="plan.json's sha256 differs from the pin given outside the campaign "
        "(--itera-plan-sha256, itera_plan_sha256)",
        fix="restore the plan as frozen when the pin was written; a changed plan is a new "
        "campaign with its own pin"),
    "plan-frozen.no-pin": Kind(
        rule="itera_plan_sha256 pins plans for other campaigns, none for this one (by its "
        "folder name or its id)",
        fix="pin the sha256 of the campaign's frozen plan.json in the ini file before the "
        "campaign starts"),
    "plan-frozen.before-freeze": Kind(
        rule="a recorded moment (a run's start, end or stop, a decision, the closure) lies "
        "before the plan's frozen_at",
        fix="freeze the plan, with its stop rules, before any run starts"),
}

CHECK = Check("plan-frozen", "the plan is unchanged since it was frozen", plan_frozen,
              kinds=KINDS)
