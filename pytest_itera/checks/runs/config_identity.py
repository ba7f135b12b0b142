"""config-identity: a run ran with the configuration the plan froze under its ID.

R5: a changed configuration gets a new ID. The config file's sha256 is compared with the
manifest's record and with the plan's for that run, so a fix made after freezing cannot
run under the old name.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from pytest_itera.checks.common.corpus_ids import (
    file_sha256,
)
from pytest_itera.checks.context import Check, Context
from pytest_itera.checks.model import Kind
from pytest_itera.core.campaign import MANIFEST_FILE, PLAN_FILE
from pytest_itera.core.findings import Finding
from pytest_itera.core.findings import where as json_where

KINDS: dict[str, Kind] = {
    "config-identity.no-config": Kind(
        rule="a run that used the machine records no config file",
        fix="record the configuration the run ran with (RunRecorder.set_config)"),
    "config-identity.unreadable": Kind(
        rule="a run's config file is missing from the folder or cannot be read",
        fix="ship the run's configuration inside the campaign folder"),
    "config-identity.sha256": Kind(
        rule="a run's config file changed after the run recorded it (its sha256 differs from "
        "the manifest's)",
        fix="restore the configuration the run used"),
    "config-identity.other-config": Kind(
        rule="a run ran another configuration than the one the plan froze under its ID",
        fix="keep the planned config under the old ID and record the changed one as a new run "
        "added by a decision (schedule.decisions[].adds)"),
}


def config_targets(ctx: Context) -> Iterable[str]:
    """Every run that ran (it must have a config) and any dropped run that records one."""
    _, man = ctx.documents()
    return {r.id for r in man.runs
            if r.outcome != "dropped" or r.config is not None or r.config_sha256 is not None}


def config_identity(ctx: Context, target: str | None) -> Iterator[Finding]:
    """The config file's bytes are the ones the plan froze under this run ID."""
    assert target is not None
    plan = ctx.documents()[0]
    index, run = ctx.recorded(target)
    where = json_where(MANIFEST_FILE, "runs", index)
    if run.config is None:
        yield Finding(f"run {run.id} records no config file", where=where,
                      expected="config: the path of the configuration it ran with",
                      hint="a run that used the machine ships its parameters, so that its "
                      "identity can be checked against the plan: record config (RunRecorder."
                      "set_config)",
                      code="config-identity.no-config")
        return
    actual, problem = file_sha256(ctx, run.config)
    if actual is None:
        yield Finding(f"config {run.config} of run {run.id} {problem}", where=f"{where}.config",
                      hint="ship the run's configuration inside the campaign folder",
                      code="config-identity.unreadable")
        return
    if run.config_sha256 is not None and run.config_sha256 != actual:
        yield Finding(f"config {run.config} of run {run.id} changed after the run recorded it",
                      where=f"{where}.config_sha256", expected=run.config_sha256, found=actual,
                      hint="restore the configuration the run used",
                      code="config-identity.sha256")
    planned = plan.run(run.id)
    if planned is not None and planned.config_sha256 != actual:
        pindex = plan.runs.index(planned)
        yield Finding(
            f"run {run.id} ran a configuration other than the one planned under its ID: "
            "a new configuration after a fix needs a new ID",
            where=f"{where}.config ({json_where(PLAN_FILE, 'runs', pindex, 'config_sha256')})",
            expected=planned.config_sha256, found=f"{actual} ({run.config})",
            hint="keep the planned config under the old ID (with its own outcome) and record "
            "the changed one as a new run added by a decision (schedule.decisions[].adds)",
            code="config-identity.other-config")


CHECK = Check("config-identity", "a run's config is the one planned under its ID", config_identity,
              scope="run", targets=config_targets, kinds=KINDS)
