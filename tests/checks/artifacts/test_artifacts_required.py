"""The rules of ``artifacts-required`` (pytest_itera/checks/artifacts/artifacts_required.py): each
break refused, with its honest twin.

Where the cases come from (the files they were first written in):

Issue 14: artifacts judged on the evidence they hold, on REAL artifacts written by the tools.

- resume parts by content (a seed is not an RNG state; ``{}`` is present but empty; a
  stateless SGD is an optimizer), per-run resume requirements (a Lightning run has no RNG);
- progress and the other parts found where real code nests them (DCP ``train_state``,
  ``trainer_state``, ``state["progress"]``);
- required artifacts (``artifacts-required``: an accepted control or variant ships one, the
  must resume check ships a resume checkpoint covering its resume state);
- an adapter's base identified by revision and content (tree digest, hub snapshot folder,
  ``itera-base.json``);
- the diverged weights of a run stopped by its non-finite rule are evidence, not a failure;
- messages: NaN/inf counts, a listed symlink that leaves says to copy the file.

Every failing case has a passing twin in the same campaign. Artifacts are built once per
module by the real libraries (before pytester snapshots sys.modules) and copied in as bytes.
"""
from __future__ import annotations

import json
import os
import random
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from pytest_itera.checks import Context, Options
from pytest_itera.checks.artifacts import CHECKS
from pytest_itera.checks.artifacts.checkpoint_reloads import informational
from pytest_itera.checks.engine import judge as engine_judge
from pytest_itera.core.campaign import RESUME_PARTS, load_campaign
from pytest_itera.core.findings import Finding
from pytest_itera.files.tree import DigestRefused, tree_digest
from pytest_itera.reload import Reloader
from tests import checkpoints
from tests.checks.campaigns import _control, _set_config, _torch_bytes, with_saved_model
from tests.checks.judging import Found, expect_finding, expect_no_finding, judge
from tests.factory import (
    CONTROL_CKPT,
    RESUME_CKPT,
    VARIANT_WEIGHTS,
    CampaignBuilder,
    expect,
    expect_each,
    verdicts,
)
from tests.runner import Itera

os.environ.setdefault("HF_HUB_OFFLINE", "1")

COMMIT = "3f0c2a9d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39"
OTHER = "b" * 40
ALL_PARTS = list(RESUME_PARTS)
Built = dict[str, dict[str, bytes]]


# ------------------------------------------------------------------ the real artifacts


def _trained(momentum: float = 0.9) -> tuple[torch.nn.Module, torch.optim.Optimizer, Any]:
    model = checkpoints.tiny_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=momentum)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1)
    model(torch.randn(3, 4)).pow(2).mean().backward()
    opt.step()
    sched.step()
    return model, opt, sched


def _real_rng() -> dict[str, Any]:
    return {"torch": torch.get_rng_state(), "numpy": np.random.get_state(),
            "python": random.getstate()}


def _save(folder: Path, name: str, obj: Any) -> Path:
    torch.save(obj, folder / name)
    return folder / name


def _parts_by_content(folder: Path) -> dict[str, Path]:
    model, opt, sched = _trained()
    scaler = torch.amp.GradScaler("cpu")
    good = {"model_state_dict": model.state_dict(), "optimizer_state_dict": opt.state_dict(),
            "scheduler": sched.state_dict(), "scaler": scaler.state_dict(), "epoch": 1,
            "rng_state": _real_rng(), "sampler": {"epoch": 1, "index": 30}}
    stateless, _, _ = _trained(momentum=0.0)
    sgd = torch.optim.SGD(stateless.parameters(), lr=0.1)  # plain SGD: its state is {}
    assert sgd.state_dict()["state"] == {}
    return {
        "good.pt": _save(folder, "good.pt", good),
        "seed.pt": _save(folder, "seed.pt", {**good, "rng_state": {"seed": 7}}),
        "short-rng.pt": _save(folder, "short-rng.pt", {
            **good, "rng_state": {**_real_rng(), "torch": torch.get_rng_state()[:8]}}),
        "empty-optimizer.pt": _save(folder, "empty-optimizer.pt",
                                    {**good, "optimizer_state_dict": {}}),
        # With its own scheduler: the good one's (stepped once) would disagree with a fresh
        # SGD's lr (resume-complete.lr-disagrees).
        "sgd.pt": _save(folder, "sgd.pt", {
            **good, "model_state_dict": stateless.state_dict(),
            "scheduler": torch.optim.lr_scheduler.StepLR(sgd, step_size=1).state_dict(),
            "optimizer_state_dict": sgd.state_dict()}),
        # A disabled GradScaler saves {}; a scheduler's config is not its state.
        "hollow.pt": _save(folder, "hollow.pt", {
            **good, "scheduler": {"step_size": 1},
            "scaler": torch.amp.GradScaler("cpu", enabled=False).state_dict(),
            "epoch": "ten", "sampler": []}),
    }


def _nested_progress(folder: Path) -> dict[str, Path]:
    from torch.distributed.checkpoint import state_dict_saver

    model, opt, _ = _trained()
    base = {"model": model.state_dict(), "optimizer": opt.state_dict()}
    with checkpoints._quiet():
        # torchtitan keeps its step in a Stateful train_state.
        state_dict_saver.save({**base, "train_state": {"step": 3, "epoch": 0}},
                              checkpoint_id=str(folder / "titan"), no_dist=True)
        state_dict_saver.save({**base, "train_state": {"step": None}},
                              checkpoint_id=str(folder / "titan-no-step"), no_dist=True)
    return {
        "titan": folder / "titan", "titan-no-step": folder / "titan-no-step",
        "trainer-state.pt": _save(folder, "trainer-state.pt", {
            **base, "trainer_state": {"global_step": 10, "epoch": 1.0, "log_history": []}}),
        "state-progress.pt": _save(folder, "state-progress.pt", {
            **base, "state": {"progress": {"step": 5, "epoch": 0}}}),
    }


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    folder = tmp_path_factory.mktemp("evidence")
    paths = {**_parts_by_content(folder), **_nested_progress(folder)}
    (folder / "lightning").mkdir()
    paths["lightning.ckpt"] = checkpoints.lightning_checkpoint(folder / "lightning")
    paths["weights.pt"] = checkpoints.state_dict_file(folder)
    paths["diverged.pt"], step = checkpoints.diverged_checkpoint(folder / "diverged.pt")
    assert step == DIVERGED_AT
    paths["whole-module.pt"] = _save(folder, "whole-module.pt", checkpoints.tiny_model())
    return {name: checkpoints.folder_bytes(path) for name, path in paths.items()}


DIVERGED_AT = 2


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """Two save_pretrained bases of one architecture (seeds 0 and 1) and a PEFT adapter
    trained on the seed-0 one, saved with the revision its base was fetched at."""
    folder = tmp_path_factory.mktemp("bases")
    return {
        "base-a": checkpoints.folder_bytes(checkpoints.hf_base(folder / "a", seed=0)),
        "base-b": checkpoints.folder_bytes(checkpoints.hf_base(folder / "b", seed=1)),
        "adapter": checkpoints.folder_bytes(checkpoints.peft_adapter(
            folder, base_model="org/tiny-gpt2", revision=COMMIT)),
    }


# ------------------------------------------------------------------ helpers


def place(campaign: CampaignBuilder, files: dict[str, bytes], dest: str) -> None:
    for rel, data in files.items():
        campaign.files[f"{dest}/{rel}" if rel else dest] = data


def add_checkpoint(campaign: CampaignBuilder, built: Built, name: str, path: str,
                   run: str = "control", kind: str = "resume", fmt: str = "torch",
                   claims: list[str] | None = None) -> None:
    place(campaign, built[name], path)
    record: dict[str, Any] = {"path": path, "run": run, "format": fmt, "kind": kind}
    if claims is not None:
        record["claims"] = claims
    campaign.manifest["checkpoints"].append(record)


def item_text(result: pytest.RunResult, item: str) -> str:
    """The failure section of one item."""
    text = result.stdout.str()
    head = f"{item}: "
    assert head in text, f"no failure section for {item}"
    return text.split(head, 1)[1].split("\n_____", 1)[0]


@pytest.fixture
def context_of() -> Iterator[Any]:
    """A Context over a written campaign with the artifact checks (outside pytest's items:
    what the pytest layer and the budget ask)."""
    made: list[Context] = []

    def make(root: Path) -> Context:
        ctx = Context(load_campaign(root), Options(), {c.id: c for c in CHECKS},
                      reloader_factory=Reloader)
        made.append(ctx)
        return ctx

    yield make
    for ctx in made:
        ctx.close()


# ------------------------------------------------------------------ resume parts by content


def resumes(campaign: CampaignBuilder, *paths: str) -> dict[str, Found]:
    """resume-complete's findings on each of these checkpoints of the written campaign."""
    campaign.write()
    return {path: judge(campaign, "resume-complete", target=path, write=False)
            for path in paths}


def test_resume_parts_are_judged_by_their_content(
    campaign: CampaignBuilder, built: Built
) -> None:
    campaign.plan["checkpoint_policy"]["resume_state"] = ALL_PARTS
    campaign.manifest["checkpoints"] = []  # the factory's hold no scaler
    names = ("good.pt", "seed.pt", "empty-optimizer.pt", "sgd.pt", "hollow.pt", "short-rng.pt")
    for name in names:
        add_checkpoint(campaign, built, name, f"runs/control/{name}")
    found = resumes(campaign, *(f"runs/control/{name}" for name in names))
    expect_no_finding(found["runs/control/good.pt"])
    expect_no_finding(found["runs/control/sgd.pt"])  # a stateless SGD is an optimizer
    unrestorable = "resume-complete.part-unrestorable"
    expect_finding(found["runs/control/short-rng.pt"], unrestorable, alone=True,
                   says="'rng_state' holds under 'torch' a torch CPU generator state of 8 "
                   "bytes where torch.get_rng_state() has 5056")
    expect_finding(found["runs/control/seed.pt"], unrestorable, alone=True,
                   says="holds {'seed': 7}, which is no random generator state",
                   fix="save the generators' states: torch.get_rng_state()")
    empty = expect_finding(found["runs/control/empty-optimizer.pt"], unrestorable, alone=True,
                           says="optimizer is present but empty ('optimizer_state_dict' holds "
                           "{}): it restores nothing",
                           fix="save optimizer.state_dict() ('state' and 'param_groups'")
    assert "lacks optimizer" not in empty.render()  # the key is right: no "rename it" advice
    hollow = found["runs/control/hollow.pt"]
    assert [f.code for f in hollow] == [unrestorable] * 4
    said = " | ".join(f.message for f in hollow)
    for words in ("no restorable progress: 'epoch' holds 'ten', not a step or epoch count",
                  "no restorable scheduler: 'scheduler' holds {'step_size': 1}",
                  "scaler is present but empty ('scaler' holds {})",
                  "data is present but empty ('sampler' holds [])"):
        assert words in said, words


def test_claims_are_checked_against_the_content(campaign: CampaignBuilder, built: Built) -> None:
    """A claim of rng over a seed is an overclaim, whatever the key is called."""
    campaign.plan["checkpoint_policy"]["resume_state"] = ["model"]
    add_checkpoint(campaign, built, "seed.pt", "runs/control/seed.pt", claims=["model", "rng"])
    add_checkpoint(campaign, built, "good.pt", "runs/control/good.pt", claims=["model", "rng"])
    found = resumes(campaign, "runs/control/seed.pt", "runs/control/good.pt")
    expect_no_finding(found["runs/control/good.pt"])
    expect_finding(found["runs/control/seed.pt"], "resume-complete.overclaimed", alone=True,
                   where="manifest.json $.checkpoints[3].claims",
                   says="the manifest claims rng (not restorable) for runs/control/seed.pt, "
                   "which does not hold it")


def test_resume_state_per_run(campaign: CampaignBuilder, built: Built) -> None:
    """A Lightning run (no RNG by design) beside a plain-torch run: the plan says so for that
    run instead of dropping rng from the whole plan."""
    campaign.plan["checkpoint_policy"]["resume_state"] = [
        "model", "optimizer", "progress", "scheduler", "rng"]
    variant = next(r for r in campaign.plan["runs"] if r["id"] == "variant-a")
    variant["resume_state"] = ["model", "optimizer", "progress", "scheduler"]
    add_checkpoint(campaign, built, "lightning.ckpt", "runs/variant-a/last.ckpt",
                   run="variant-a", fmt="lightning")
    add_checkpoint(campaign, built, "lightning.ckpt", "runs/control/last.ckpt", fmt="lightning")
    found = resumes(campaign, "runs/variant-a/last.ckpt", "runs/control/last.ckpt")
    expect_no_finding(found["runs/variant-a/last.ckpt"])
    expect_finding(found["runs/control/last.ckpt"], "resume-complete.format-cannot-hold",
                   alone=True, where="manifest.json $.checkpoints[4]",
                   says="cannot hold rng, required by the plan's checkpoint_policy.resume_state: "
                   "Lightning checkpoints store no RNG state by design",
                   fix="runs[].resume_state for this run")


# ------------------------------------------------------------------ nested progress


def test_progress_where_real_training_code_nests_it(
    campaign: CampaignBuilder, built: Built
) -> None:
    campaign.plan["checkpoint_policy"]["resume_state"] = ["model", "optimizer", "progress"]
    claims = ["model", "optimizer", "progress"]
    add_checkpoint(campaign, built, "titan", "runs/control/titan", fmt="dcp", claims=claims)
    add_checkpoint(campaign, built, "titan-no-step", "runs/control/titan-no-step", fmt="dcp")
    add_checkpoint(campaign, built, "trainer-state.pt", "runs/control/trainer-state.pt",
                   claims=claims)
    add_checkpoint(campaign, built, "state-progress.pt", "runs/control/state-progress.pt",
                   claims=claims)
    found = resumes(campaign, "runs/control/titan", "runs/control/titan-no-step",
                    "runs/control/trainer-state.pt", "runs/control/state-progress.pt")
    for nested in ("runs/control/titan", "runs/control/trainer-state.pt",
                   "runs/control/state-progress.pt"):
        expect_no_finding(found[nested])
    expect_finding(found["runs/control/titan-no-step"], "resume-complete.part-unrestorable",
                   where="manifest.json $.checkpoints[4]", alone=True,
                   says="progress is present but empty ('train_state.step' holds None)")


# ------------------------------------------------------------------ required artifacts


CHECK = "artifacts-required"


def _no_variant_weights_no_resume_kind(campaign: CampaignBuilder) -> None:
    """variant-a ships nothing, and every checkpoint is declared weights."""
    checkpoints = campaign.manifest["checkpoints"]
    campaign.manifest["checkpoints"] = [c for c in checkpoints if c["path"] != VARIANT_WEIGHTS]
    del campaign.files[VARIANT_WEIGHTS]
    for record in campaign.manifest["checkpoints"]:
        record["kind"] = "weights"  # every checkpoint declared weights: no resume-complete item
        record.pop("claims", None)


def test_accepted_runs_ship_an_artifact_and_the_resume_check_a_resume_checkpoint(
    campaign: CampaignBuilder, context_of: Any
) -> None:
    _no_variant_weights_no_resume_kind(campaign)
    expect_no_finding(judge(campaign, CHECK, target="control"))
    finding = expect_finding(judge(campaign, CHECK, target="variant-a", write=False),
                             "artifacts-required.no-artifact", where="manifest.json $.runs[3]",
                             says="accepted variant run variant-a ships no artifact: no "
                             "checkpoint or adapter of it is listed in the manifest")
    assert (finding.hint or "").startswith("a compared run delivers a reloadable artifact (R1)")
    expect_finding(judge(campaign, CHECK, target="resume-check", write=False),
                   "artifacts-required.no-resume-checkpoint", where="manifest.json $.runs[2]",
                   says="must resume-check run resume-check ships no resume checkpoint: its "
                   "checkpoints are all declared 'weights' (runs/resume-check/last.pt), which "
                   "proves nothing about resuming")
    # The run without an artifact is not an accepted deliverable.
    ctx = context_of(campaign.root)
    assert engine_judge(ctx).run_failures("variant-a") == [("artifacts-required", "variant-a")]
    assert engine_judge(ctx).run_failures("control") == []


def test_one_item_per_accepted_run(itera: Itera, campaign: CampaignBuilder) -> None:
    _no_variant_weights_no_resume_kind(campaign)
    campaign.write()
    result = itera("-rA", "-k", "artifacts-required or resume-complete")
    assert verdicts(result) == {
        "artifacts-required[control]": "PASSED",
        "artifacts-required[resume-check]": "FAILED",
        "artifacts-required[variant-a]": "FAILED",
    }


def test_the_resume_check_s_checkpoint_must_cover_its_resume_state(
    campaign: CampaignBuilder, built: Built
) -> None:
    campaign.plan["checkpoint_policy"]["resume_state"] = ALL_PARTS  # the default lacks scaler
    place(campaign, built["seed.pt"], RESUME_CKPT)  # resume-check: rng is a seed
    finding = expect_finding(
        judge(campaign, CHECK, target="resume-check"),
        "artifacts-required.resume-state-uncovered", where="manifest.json $.runs[2]",
        says="no resume checkpoint of must resume-check run resume-check covers its resume "
        "state (model, optimizer, progress, scheduler, scaler, rng, data; required by the "
        "plan's checkpoint_policy.resume_state)")
    assert finding.found == ("runs/resume-check/last.pt lacks rng (not restorable); "
                             "runs/control/step-2.pt lacks scaler")


def test_the_resume_check_passes_with_a_complete_checkpoint(
    campaign: CampaignBuilder, built: Built
) -> None:
    campaign.plan["checkpoint_policy"]["resume_state"] = ALL_PARTS
    place(campaign, built["good.pt"], RESUME_CKPT)
    expect_no_finding(judge(campaign, CHECK))


# ------------------------------------------------------------------ adapter base identity


def _digest(files: dict[str, bytes], tmp: Path) -> str:
    """The tree digest of a folder holding ``files``, computed by pytest_itera.files.tree."""
    if tmp.exists():
        shutil.rmtree(tmp)
    for rel, data in files.items():
        (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp / rel).write_bytes(data)
    return tree_digest(tmp)


def _base_files(bases: Built, key: str, model: str | None = None,
                revision: str | None = COMMIT) -> dict[str, bytes]:
    files = dict(bases[key])
    if model is not None:
        files["itera-base.json"] = json.dumps({"model": model, "revision": revision}).encode()
    return files


def add_adapter(campaign: CampaignBuilder, bases: Built, name: str, revision: str | None,
                **fields: Any) -> None:
    """The real PEFT adapter at adapters/<name>, its adapter_config.json revision set to
    ``revision`` (or ``config_revision``), its manifest record given ``fields``."""
    files = dict(bases["adapter"])
    config = json.loads(files["adapter_config.json"])
    config["revision"] = fields.pop("config_revision", revision)
    if "config_base" in fields:
        config["base_model_name_or_path"] = fields.pop("config_base")
    files["adapter_config.json"] = json.dumps(config, indent=2).encode()
    place(campaign, files, f"adapters/{name}")
    record = {"path": f"adapters/{name}", "run": "control", "base_model": "org/tiny-gpt2",
              "base_revision": revision, **fields}
    campaign.manifest["adapters"].append(record)


def _adapter_bases(campaign: CampaignBuilder, bases: Built, tmp_path: Path) -> dict[str, str]:
    """Adapters whose base is pinned each in one way (a hub commit, a shipped folder and its
    digest, a hub snapshot, a base of the campaign's own) or broken in one, written; the tree
    digests of the shipped bases."""
    shipped = _base_files(bases, "base-a", "org/tiny-gpt2")
    other = _base_files(bases, "base-b", "org/tiny-gpt2", revision=OTHER)
    # Same architecture, same recorded identity, other weights: only the digest tells.
    swapped = _base_files(bases, "base-b", "org/tiny-gpt2")
    own = _base_files(bases, "base-a")  # trained in the campaign: on no hub
    snapshot = f"hub/models--org--tiny-gpt2/snapshots/{COMMIT}"
    stale = f"hub/models--org--tiny-gpt2/snapshots/{OTHER}"
    for folder, files in (("bases/a", shipped), ("bases/b", other), ("bases/swapped", swapped),
                          ("bases/own", own), (snapshot, bases["base-a"]),
                          (stale, bases["base-a"])):
        place(campaign, files, folder)
    digest = {name: _digest(files, tmp_path / name) for name, files in (
        ("a", shipped), ("b", other), ("own", own), ("snapshot", bases["base-a"]))}

    add_adapter(campaign, bases, "hub", COMMIT)
    add_adapter(campaign, bases, "shipped", COMMIT, base_path="bases/a", base_digest=digest["a"])
    add_adapter(campaign, bases, "snapshot", COMMIT, base_path=snapshot,
                base_digest=digest["snapshot"])
    add_adapter(campaign, bases, "own", None, base_path="bases/own", base_digest=digest["own"],
                config_base="bases/own")
    add_adapter(campaign, bases, "main", "main")
    add_adapter(campaign, bases, "null", None)
    add_adapter(campaign, bases, "other-base", COMMIT, base_path="bases/b",
                base_digest=digest["b"])
    add_adapter(campaign, bases, "swapped", COMMIT, base_path="bases/swapped",
                base_digest=digest["a"])
    add_adapter(campaign, bases, "no-digest", COMMIT, base_path="bases/a")
    add_adapter(campaign, bases, "local-path", COMMIT, base_model="/data/models/tiny-gpt2",
                config_base="/data/models/tiny-gpt2")
    add_adapter(campaign, bases, "file-sha", "a" * 64, base_path="bases/a/model.safetensors")
    add_adapter(campaign, bases, "stale-snapshot", COMMIT, base_path=stale,
                base_digest=digest["snapshot"])
    add_adapter(campaign, bases, "config-disagrees", COMMIT, config_revision=OTHER)
    campaign.write()
    return digest



def test_an_adapter_base_is_identified_by_revision_and_content(
    itera: Itera, campaign: CampaignBuilder, bases: Built, tmp_path: Path
) -> None:
    digest = _adapter_bases(campaign, bases, tmp_path)
    stale = f"hub/models--org--tiny-gpt2/snapshots/{OTHER}"

    result = itera("-rA", "-k", "adapter-pinned")

    passing = {"hub", "shipped", "snapshot", "own"}
    names = [r["path"].removeprefix("adapters/") for r in campaign.manifest["adapters"]]
    assert verdicts(result) == {f"adapter-pinned[adapters/{n}]":
                                "PASSED" if n in passing else "FAILED" for n in names}
    at = {n: f"manifest.json $.adapters[{i}]" for i, n in enumerate(names)}
    expect_each(
        result,
        f"{at['main']}.base_revision: the base revision of adapter adapters/main 'main' is a "
        "branch: it moves with every push",
        "    expected: a full 40-hex commit id of the base on the hub, or null for a base shipped "
        "in the campaign (base_path) and pinned by its tree digest (base_digest)",
        f"{at['null']}.base_revision: the base revision of adapter adapters/null is null: base "
        "'org/tiny-gpt2' is not pinned (PEFT then loads whatever its main branch is)",
        f"{at['other-base']}.base_revision: shipped base bases/b records revision '{OTHER}' "
        f"(bases/b/itera-base.json), the manifest records base_revision '{COMMIT}'",
        f"{at['swapped']}.base_digest: the files of shipped base bases/swapped do not hash to the "
        "base_digest recorded for adapter adapters/swapped",
        f"    expected: {digest['a']}",
        f"{at['no-digest']}.base_digest: shipped base bases/a has no base_digest: a base named by "
        "a local path without a digest is unpinned",
        f"    found:    no base_digest (the folder's tree digest is {digest['a']})",
        f"{at['local-path']}.base_model: the base of adapter adapters/local-path is named by a "
        "local path ('/data/models/tiny-gpt2') without a digest: it is unpinned*",
        f"{at['file-sha']}.base_revision: the base revision of adapter adapters/file-sha "
        f"'{'a' * 64}' is a sha256 (64 hex digits), not a hub commit: itera-manifest/2 pins a "
        "shipped base by base_digest*",
        f"{at['file-sha']}.base_path: shipped base bases/a/model.safetensors is a file: "
        "itera-manifest/2 ships a base as a folder*",
        f"{at['stale-snapshot']}.base_revision: shipped base {stale} records revision '{OTHER}' "
        f"(its hub cache folder snapshots/{OTHER}), the manifest records base_revision "
        f"'{COMMIT}'",
        "adapters/config-disagrees/adapter_config.json:*:* $.revision: adapters/config-disagrees/"
        f"adapter_config.json records revision '{OTHER}', the manifest records base_revision "
        f"'{COMMIT}'",
    )
    for name in ("other-base", "swapped", "no-digest", "stale-snapshot", "null", "main"):
        text = item_text(result, f"adapter-pinned[adapters/{name}]")
        assert text.startswith("1 problem\n"), (name, text[:400])


def test_a_missing_base_revision_and_a_null_one_say_different_things(
    itera: Itera, campaign: CampaignBuilder, bases: Built
) -> None:
    add_adapter(campaign, bases, "null", None)
    add_adapter(campaign, bases, "keyless", None)
    del campaign.manifest["adapters"][1]["base_revision"]
    campaign.write()
    result = itera("-rA", "-k", "adapter-pinned or manifest")
    expect_each(
        result,
        "manifest.json:*:* $.adapters[1]: 'base_revision' is a required property",
        "SKIPPED [1] out/manifest.json:1: not judged: manifest failed (manifest.json did not "
        "load)",
    )
    campaign.manifest["adapters"].pop()
    campaign.write()
    result = itera("-rA", "-k", "adapter-pinned")
    expect(result, "*adapters/null is null: base 'org/tiny-gpt2' is not pinned*")
    result.stdout.no_fnmatch_line("*required property*")


def test_a_v1_shipped_base_cannot_prove_its_identity(
    itera: Itera, pytester: pytest.Pytester, bases: Built
) -> None:
    legacy = CampaignBuilder(pytester.path / "out", version=1)
    weights = bases["base-a"]["model.safetensors"]
    legacy.files["base/model.safetensors"] = weights
    add_adapter(legacy, bases, "shipped", artifacts_sha256(weights),
                base_path="base/model.safetensors", config_base="base")
    legacy.write()
    result = itera("-rA", "-k", "adapter-pinned")
    assert verdicts(result) == {"adapter-pinned[adapters/shipped]": "FAILED"}
    expect(result, "manifest.json $.adapters[0].base_path: itera-manifest/1 cannot prove the "
           "identity of the shipped base base/model.safetensors: the sha256 of one file cannot "
           "tell two bases of the same architecture apart",
           "    fix:      re-close the campaign with itera-manifest/2: *")


def artifacts_sha256(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def test_tree_digest_is_the_documented_shell_pipeline(tmp_path: Path, bases: Built) -> None:
    import subprocess

    folder = tmp_path / "base"
    _digest({**bases["base-a"], "sub/notes.txt": b"x\n", "Zed": b"z"}, folder)
    shell = subprocess.run(
        "find . -type f -printf '%P\\n' | LC_ALL=C sort | xargs -d '\\n' sha256sum | sha256sum",
        shell=True, cwd=folder, capture_output=True, text=True, check=True)
    assert tree_digest(folder) == shell.stdout.split()[0]
    (folder / "link").symlink_to("Zed")
    with pytest.raises(DigestRefused, match="link is a symbolic link"):
        tree_digest(folder)


# ------------------------------------------------------------------ a stopped run's weights


def _stopped_variant(campaign: CampaignBuilder, rule: str = "non-finite-loss") -> None:
    variant = next(r for r in campaign.manifest["runs"] if r["id"] == "variant-a")
    variant.update(outcome="stopped", stop={"rule": rule, "reason": "loss became inf at step 2",
                                            "step": DIVERGED_AT})


def test_a_stopped_run_ships_its_diverged_weights_as_evidence(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder, built: Built,
    context_of: Any,
) -> None:
    _stopped_variant(campaign)
    place(campaign, built["diverged.pt"], VARIANT_WEIGHTS)
    add_checkpoint(campaign, built, "diverged.pt", "runs/control/diverged.pt", kind="weights")
    add_checkpoint(campaign, built, "whole-module.pt", "runs/variant-a/module.pt",
                   run="variant-a", kind="weights")
    campaign.write()
    result = itera("-rA", "-k", "checkpoint-reloads and (variant-a or diverged)",
                   "-rA", "--itera-report", "r.json")
    assert verdicts(result) == {
        "checkpoint-reloads[runs/control/diverged.pt]": "FAILED",  # an accepted run's: a fault
        "checkpoint-reloads[runs/variant-a/module.pt]": "FAILED",  # evidence must still reload
        f"checkpoint-reloads[{VARIANT_WEIGHTS}]": "PASSED",
    }
    state = torch.load(campaign.root / VARIANT_WEIGHTS, weights_only=True)["model"]
    nan = sum(int(torch.isnan(t).sum()) for t in state.values())
    inf = sum(int(torch.isinf(t).sum()) for t in state.values())
    bad = sum(1 for t in state.values() if not torch.isfinite(t).all())
    counts = f"{nan} NaN and {inf} inf values in {bad} tensors"
    expect_each(
        result,
        f"manifest.json $.checkpoints[3]: runs/control/diverged.pt holds non-finite model "
        f"weights: {counts}",
        "manifest.json $.checkpoints[4]: does not reload in a fresh process with "
        "weights_only=True: runs/variant-a/module.pt: a whole module: save "
        "`model.state_dict()` instead (torch.save(model) pickles the module's class, so it "
        "holds code: unpickling it would call torch.nn.modules.*",
        "    fix:      the file pickles whole torch.nn module objects (torch.save(model))*",
    )
    ctx = context_of(campaign.root)
    assert engine_judge(ctx).findings("checkpoint-reloads", VARIANT_WEIGHTS) == ()
    assert informational(ctx, "checkpoint-reloads", VARIANT_WEIGHTS) == (
        f"evidence of the stop at step {DIVERGED_AT}: {VARIANT_WEIGHTS} holds non-finite model "
        f"weights ({counts}), as run variant-a, stopped by its rule 'non-finite-loss', "
        "diverged; informational, not a failure",)
    assert informational(ctx, "checkpoint-reloads", "runs/control/diverged.pt") == ()
    # Shown, not silent: the passing item's report section and the closure report's message.
    expect(result, "*itera evidence*", f"evidence of the stop at step {DIVERGED_AT}: *")
    report = json.loads((pytester.path / "r.json").read_text())
    item = next(c for c in report["checks"] if c["target"] == VARIANT_WEIGHTS)
    assert item["outcome"] == "passed"
    assert item["message"].startswith(f"evidence of the stop at step {DIVERGED_AT}: ")


def test_diverged_weights_of_a_run_stopped_by_another_rule_fail(
    itera: Itera, campaign: CampaignBuilder, built: Built
) -> None:
    campaign.plan["stop_rules"].append({"id": "too-slow", "kind": "other",
                                        "parameters": {"note": "budget"}})
    _stopped_variant(campaign, rule="too-slow")
    place(campaign, built["diverged.pt"], VARIANT_WEIGHTS)
    campaign.write()
    result = itera("-rA", "-k", f"checkpoint-reloads[{VARIANT_WEIGHTS}]")
    assert verdicts(result) == {f"checkpoint-reloads[{VARIANT_WEIGHTS}]": "FAILED"}
    expect(result, f"*{VARIANT_WEIGHTS} holds non-finite model weights: * NaN and * inf values*")


# ------------------------------------------------------------------ messages


def test_a_listed_symlink_that_leaves_says_copy_the_file(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder, built: Built
) -> None:
    outside = pytester.path / "elsewhere.pt"
    outside.write_bytes(built["weights.pt"][""])
    campaign.files["runs/control/inside.pt"] = built["weights.pt"][""]

    def link(root: Path) -> None:
        (root / "runs/control/linked.pt").symlink_to(outside)

    campaign.write(before_manifest=link)
    manifest = json.loads((campaign.root / "manifest.json").read_text())
    manifest["files"].append({"path": "runs/control/linked.pt",
                              "bytes": outside.stat().st_size,
                              "sha256": artifacts_sha256(outside.read_bytes())})
    (campaign.root / "manifest.json").write_text(json.dumps(manifest, indent=2))
    campaign.seal()
    result = itera("-rA", "-k", "files-intact and runs/control and .pt")
    assert verdicts(result) == {
        "files-intact[runs/control/inside.pt]": "PASSED",
        "files-intact[runs/control/linked.pt]": "FAILED",
        "files-intact[runs/control/step-2.pt]": "PASSED",
    }
    result.stdout.fnmatch_lines([
        "manifest.json $.files[[]*]: listed file 'runs/control/linked.pt': symlink "
        f"runs/control/linked.pt -> {outside} leaves the campaign folder",
        "    fix:      copy the file itself into the campaign folder",
    ])


# ---------------------------------------- first written in test_artifact_content.py


# ------------------------------------------------------------------ whose weights


def test_a_variant_shipping_the_controls_bytes(tmp_path: Path) -> None:
    b = CampaignBuilder(tmp_path / "out")
    b.files[VARIANT_WEIGHTS] = b.files[CONTROL_CKPT]
    root = b.write()
    code = "artifacts-required.same-weights"
    expect_finding(judge(root, "artifacts-required", target="control"), code)
    expect_finding(judge(root, "artifacts-required", target="variant-a"), code, says=(
        f"{VARIANT_WEIGHTS} of run variant-a is byte for byte {CONTROL_CKPT} of run control",
        "two deliverable runs ship the same weights"))


def test_a_variant_shipping_the_controls_tensors_in_other_bytes(tmp_path: Path) -> None:
    b = CampaignBuilder(tmp_path / "out")
    b.files[VARIANT_WEIGHTS] = _torch_bytes(_control(b)["model"])  # re-saved: other bytes
    found = judge(b.write(), "artifacts-required", target="variant-a")
    expect_finding(found, "artifacts-required.same-weights", says=(
        f"{VARIANT_WEIGHTS} of run variant-a holds the same model tensors (names, shapes, "
        f"dtypes and checksums) as {CONTROL_CKPT} of run control",
        "two deliverable runs ship the same weights"))


def test_weights_without_the_width_their_config_states(tmp_path: Path) -> None:
    b = CampaignBuilder(tmp_path / "out")
    _set_config(b, "variant-a", {"run": "variant-a", "lr": 0.01, "width": 64})
    problem = expect_finding(
        judge(b.write(), "artifacts-required"), "artifacts-required.config-shapes",
        says=(f"{VARIANT_WEIGHTS} of run variant-a holds no tensor with a dimension of 64",
              "configs/variant-a.json"))
    assert problem.found == "weight [2, 4], bias [2]"


def test_two_checkpoints_of_one_run_at_other_shapes(tmp_path: Path) -> None:
    b = CampaignBuilder(tmp_path / "out")
    torch.manual_seed(1)
    b.files["runs/variant-a/last.pt"] = _torch_bytes(torch.nn.Linear(4, 3).state_dict())
    b.manifest["checkpoints"].append({"path": "runs/variant-a/last.pt", "run": "variant-a",
                                      "format": "torch", "kind": "weights"})
    expect_finding(
        judge(b.write(), "artifacts-required"), "artifacts-required.shapes-differ",
        says=(f"{VARIANT_WEIGHTS} and runs/variant-a/last.pt", "bias: [2] and [3]"))


def test_a_saved_model_whose_config_states_another_size(tmp_path: Path) -> None:
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    saved = tmp_path / "saved"
    GPT2LMHeadModel(GPT2Config(vocab_size=50, n_embd=8, n_layer=1, n_head=2,
                               n_positions=16)).save_pretrained(str(saved))
    config = json.loads((saved / "config.json").read_text())
    config["n_embd"] = 64  # the config of a wider model beside these weights
    (saved / "config.json").write_text(json.dumps(config))
    b = with_saved_model(tmp_path / "out", saved)
    expect_finding(
        judge(b.write(), "artifacts-required"), "artifacts-required.config-shapes",
        says=("runs/variant-a/model", "runs/variant-a/model/config.json"))



def test_each_adapter_base_is_judged_under_its_code(
    campaign: CampaignBuilder, bases: Built, tmp_path: Path
) -> None:
    """The bases above, judged in-process: each adapter its code, place and reason."""
    digest = _adapter_bases(campaign, bases, tmp_path)
    names = [r["path"].removeprefix("adapters/") for r in campaign.manifest["adapters"]]
    at = {n: f"manifest.json $.adapters[{i}]" for i, n in enumerate(names)}

    def pinned(name: str) -> list[Finding]:
        return judge(campaign, "adapter-pinned", target=f"adapters/{name}", write=False)

    for name in ("hub", "shipped", "snapshot", "own"):
        expect_no_finding(pinned(name))
    expect_finding(pinned("main"), "adapter-pinned.revision", where=f"{at['main']}.base_revision",
                   says="'main' is a branch: it moves with every push")
    expect_finding(pinned("null"), "adapter-pinned.null-revision",
                   where=f"{at['null']}.base_revision",
                   says="is null: base 'org/tiny-gpt2' is not pinned")
    expect_finding(pinned("other-base"), "adapter-pinned.base-revision-differs",
                   where=f"{at['other-base']}.base_revision",
                   says=f"shipped base bases/b records revision '{OTHER}'")
    finding = expect_finding(pinned("swapped"), "adapter-pinned.base-digest",
                             where=f"{at['swapped']}.base_digest",
                             says="the files of shipped base bases/swapped do not hash to the "
                             "base_digest recorded")
    assert finding.expected == digest["a"]
    expect_finding(pinned("no-digest"), "adapter-pinned.base-digest-missing",
                   where=f"{at['no-digest']}.base_digest",
                   says="shipped base bases/a has no base_digest")
    expect_finding(pinned("local-path"), "adapter-pinned.local-base-unpinned",
                   where=f"{at['local-path']}.base_model",
                   says="is named by a local path ('/data/models/tiny-gpt2') without a digest")
    file_sha = pinned("file-sha")
    expect_finding(file_sha, "adapter-pinned.revision", where=f"{at['file-sha']}.base_revision",
                   says="is a sha256 (64 hex digits), not a hub commit")
    expect_finding(file_sha, "adapter-pinned.base-not-a-folder",
                   where=f"{at['file-sha']}.base_path",
                   says="shipped base bases/a/model.safetensors is a file")
    expect_finding(pinned("stale-snapshot"), "adapter-pinned.base-revision-differs",
                   where=f"{at['stale-snapshot']}.base_revision",
                   says=f"(its hub cache folder snapshots/{OTHER})")
    expect_finding(pinned("config-disagrees"), "adapter-pinned.config-revision",
                   where="adapters/config-disagrees/adapter_config.json:",
                   says=f"records revision '{OTHER}', the manifest records base_revision "
                   f"'{COMMIT}'")
