"""A campaign that ships DeepSpeed ZeRO and FSDP (accelerate) checkpoints: accepted when every
rank's file is there, rejected naming the missing rank when not."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests import checkpoints
from tests.factory import CampaignBuilder, expect, verdicts
from tests.runner import Itera

os.environ.setdefault("HF_HUB_OFFLINE", "1")
DEEPSPEED = Path(__file__).parent.parent / "reload" / "deepspeed_made"
CLAIMS = ["model", "optimizer", "progress"]


@pytest.fixture
def fsdp(fsdp_checkpoints: dict[str, Path]) -> dict[str, dict[str, bytes]]:
    return {key: checkpoints.folder_bytes(path) for key, path in fsdp_checkpoints.items()}


def add(campaign: CampaignBuilder, files: dict[str, bytes], path: str, fmt: str,
        claims: list[str], drop: str | None = None) -> None:
    for rel, data in files.items():
        if rel != drop:
            campaign.files[f"{path}/{rel}"] = data
    campaign.manifest["checkpoints"].append(
        {"path": path, "run": "control", "format": fmt, "kind": "resume", "claims": claims})


def test_sharded_checkpoints_pass_whole_and_fail_naming_a_missing_rank(
        itera: Itera, campaign: CampaignBuilder, fsdp: dict[str, dict[str, bytes]]) -> None:
    # accelerate saves no progress by itself (its layout here registers no object).
    campaign.plan["checkpoint_policy"]["resume_state"] = ["model", "optimizer"]
    zero3 = checkpoints.folder_bytes(DEEPSPEED / "zero3")
    lost = "global_step3/zero_pp_rank_1_mp_rank_00_optim_states.pt"
    add(campaign, zero3, "runs/control/ds", "deepspeed", CLAIMS)
    add(campaign, checkpoints.folder_bytes(DEEPSPEED / "zero2-bf16"), "runs/control/ds2",
        "deepspeed", CLAIMS)
    add(campaign, zero3, "runs/control/ds-lost", "deepspeed", CLAIMS, drop=lost)
    add(campaign, fsdp["accelerate"], "runs/control/acc", "accelerate",
        ["model", "optimizer"])
    add(campaign, fsdp["accelerate-full"], "runs/control/acc-full", "accelerate",
        ["model", "optimizer"])
    add(campaign, fsdp["dcp"], "runs/control/fsdp-whole", "dcp", CLAIMS)
    add(campaign, fsdp["dcp"], "runs/control/fsdp", "dcp", CLAIMS,
        drop="__1_0.distcp")
    campaign.write()
    result = itera("-rA", "-k", "(checkpoint-reloads or resume-complete) and control")
    mine = {"ds": "PASSED", "ds2": "PASSED", "ds-lost": "FAILED", "acc": "PASSED",
            "acc-full": "PASSED", "fsdp-whole": "PASSED", "fsdp": "FAILED"}
    assert {k: v for k, v in verdicts(result).items() if k.split("/")[-1].rstrip("]") in mine} \
        == {f"{check}[runs/control/{name}]": verdict for name, verdict in mine.items()
            for check in ("checkpoint-reloads", "resume-complete")}
    expect(result, "*runs/control/ds-lost/global_step3/zero_pp_rank_1_mp_rank_00_optim_states"
           ".pt: rank 1's optimizer states file is missing: the checkpoint was saved by 2 "
           "data-parallel rank(s) (zero_pp_rank_0_mp_rank_00_model_states.pt's dp_world_size)*")
    assert "does not fit its model" not in result.stdout.str()  # ZeRO's flat partitions
    expect(result, "*runs/control/fsdp/__1_0.distcp: rank 1's data file is missing: .metadata "
           "places 38 entries in it*")


def test_a_deepspeed_checkpoint_without_rng_says_where_deepspeed_keeps_it(
        itera: Itera, campaign: CampaignBuilder) -> None:
    campaign.plan["checkpoint_policy"]["resume_state"] = [*CLAIMS, "rng"]
    add(campaign, checkpoints.folder_bytes(DEEPSPEED / "zero2"), "runs/control/ds",
        "deepspeed", [*CLAIMS, "rng"])
    campaign.write()
    result = itera("-rA", "-k", "resume-complete and runs/control/ds")
    assert verdicts(result) == {"resume-complete[runs/control/ds]": "FAILED"}
    expect(result, "manifest.json $.checkpoints[3]: resume checkpoint runs/control/ds lacks "
           "rng, required by the plan's checkpoint_policy.resume_state",
           "    fix:      save every required part (deepspeed: rng in an 'rng_state' key in "
           "client_state)*")
