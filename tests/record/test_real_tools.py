"""The plugin as a new user meets it: campaign folders written by the real tools.

Each tool (transformers Trainer, Lightning, accelerate, torch.distributed.checkpoint, PEFT,
plain torch.save) writes its complete, unmodified output where a user points it, inside a
campaign folder under pytest's temporary folder (so the absolute paths the tools record are
paths into /tmp: into the campaign itself, which is fine). tests/real_tools.py then records
the campaign with pytest_itera.record.CampaignRecorder. Good campaigns must pass every check
(their verdict is PLAYED CLOCK: tests/real_tools.py records on a simulated clock);
subtly broken ones (damaged after the manifest was written, or recorded honestly but with a
real defect) must fail exactly the items that name their defect, with the right message.

Training runs are shared through module-scoped fixtures: one per tool, building the good
campaign and its broken variants in place (never copied: a copy would move the absolute
paths the tools recorded out of the campaign).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest
import torch

from pytest_itera.record import RecordError
from tests import real_tools as rt
from tests.factory import expect
from tests.runner import Itera

os.environ.setdefault("HF_HUB_OFFLINE", "1")

C = rt.CONTROL
Campaigns = dict[str, Path]
# What a broken campaign must fail: {(check, target): message fragments of that item}.
Expected = dict[tuple[str, str | None], Sequence[str]]


# ------------------------------------------------------------------- building


def _build(base: Path, name: str, tools: rt.Tools, parts: Sequence[str],
           damage: Callable[[Path], None] | None = None) -> Path:
    root = rt.record_campaign(base / name, tools, resume_state=parts)
    if damage is not None:
        damage(root)  # after manifest.json: what transfer, a logger or a user did later
    return root


def _remove(*relpaths: str) -> Callable[[Path], None]:
    def damage(root: Path) -> None:
        for relpath in relpaths:
            (root / relpath).unlink()

    return damage


@pytest.fixture(scope="module")
def trainer(tmp_path_factory: pytest.TempPathFactory) -> Campaigns:
    base = tmp_path_factory.mktemp("trainer")
    cache = tmp_path_factory.mktemp("hf-cache") / "runs" / "control"
    return {
        # Tracking the best checkpoint: trainer_state.json names it by its absolute path.
        "good": _build(base, "good", rt.trainer_tools(best=True), rt.TRAINER_PARTS),
        "damaged": _build(base, "damaged", rt.trainer_tools(), rt.TRAINER_PARTS,
                          _remove(f"{C}/trainer/checkpoint-2/optimizer.pt",
                                  f"{C}/trainer/checkpoint-4/rng_state.pth")),
        # Trained in a cache folder, checkpoints copied in: they still name the cache.
        "cache": _build(base, "cache", rt.trainer_tools(output_dir=cache), rt.TRAINER_PARTS),
    }


def _append_metrics_row(root: Path) -> None:
    csv = next((root / C / "lightning").rglob("metrics.csv"))
    with csv.open("a") as handle:
        handle.write("0,9,0.5\n")  # a logger still writing after closure


@pytest.fixture(scope="module")
def lightning(tmp_path_factory: pytest.TempPathFactory) -> Campaigns:
    base = tmp_path_factory.mktemp("lightning")
    cache = tmp_path_factory.mktemp("hf-cache") / "datasets" / "tiny"
    # A sibling folder whose name extends the campaign's, and a path that starts in the
    # campaign but leaves it through '..': neither is the campaign.
    sibling = base / "sibling-cache" / "datasets"
    dotdot = f"{base}/dotdot/../dotdot-cache/datasets"
    parts = rt.LIGHTNING_PARTS
    return {
        "good": _build(base, "good", rt.lightning_tools(), parts),
        "cache": _build(base, "cache", rt.lightning_tools(data_dir=str(cache)), parts),
        "sibling": _build(base, "sibling", rt.lightning_tools(data_dir=str(sibling)), parts),
        "dotdot": _build(base, "dotdot", rt.lightning_tools(data_dir=dotdot), parts),
        "modified": _build(base, "modified", rt.lightning_tools(), parts, _append_metrics_row),
        # save_hyperparameters() of a pathlib.Path argument: pickled as an object.
        "path-object": _build(base, "path-object",
                              rt.lightning_tools(data_dir=Path("/data/tiny")), parts),
    }


def _swap_base(root: Path) -> None:
    """After closure, the shipped base's weights are replaced by another base of the same
    architecture (another seed): same names, same config, other weights."""
    import shutil

    from tests.checkpoints import hf_base

    other = hf_base(root.parent / f"{root.name}-other-base", seed=1)
    shutil.copyfile(other / "model.safetensors", root / C / "base" / "model.safetensors")


@pytest.fixture(scope="module")
def small_tools(tmp_path_factory: pytest.TempPathFactory) -> Campaigns:
    """accelerate, PEFT and plain torch.save: cheap, so one fixture."""
    base = tmp_path_factory.mktemp("small")
    return {
        "accelerate": _build(base, "accelerate", rt.accelerate_tools, rt.ACCELERATE_PARTS),
        "peft": _build(base, "peft", rt.peft_tools(rt.COMMIT, rt.COMMIT), rt.TUTORIAL_PARTS),
        "peft-null": _build(base, "peft-null", rt.peft_tools(None, rt.COMMIT),
                            rt.TUTORIAL_PARTS),
        "peft-main": _build(base, "peft-main", rt.peft_tools("main", "main"), rt.TUTORIAL_PARTS),
        "peft-shipped": _build(base, "peft-shipped", rt.peft_shipped_tools, rt.TUTORIAL_PARTS),
        "peft-swapped": _build(base, "peft-swapped", rt.peft_shipped_tools, rt.TUTORIAL_PARTS,
                               _swap_base),
        "torch": _build(base, "torch", rt.torch_tools(), rt.TUTORIAL_PARTS),
        "torch-broken": _build(base, "torch-broken", rt.torch_tools(nan=True, whole_module=True),
                               rt.TUTORIAL_PARTS),
    }


@pytest.fixture(scope="module")
def dcp(tmp_path_factory: pytest.TempPathFactory) -> Campaigns:
    base = tmp_path_factory.mktemp("dcp")
    names = ("good", "missing-shard")
    rt.dcp_two_rank_run(*(base / name / C / "dcp-2-ranks" for name in names))
    return {
        "good": _build(base, "good", rt.dcp_tools, rt.DCP_PARTS),
        "missing-shard": _build(base, "missing-shard", rt.dcp_tools, rt.DCP_PARTS,
                                _remove(f"{C}/dcp-2-ranks/__1_0.distcp")),
    }


# -------------------------------------------------------------------- running


def failures(report: dict[str, Any]) -> dict[tuple[str, str | None], dict[str, Any]]:
    return {(c["check"], c["target"]): c for c in report["checks"] if c["outcome"] != "passed"}


def assert_accepted(itera: Itera, root: Path) -> None:
    """Every check passes. The campaign is recorded on tests/real_tools.py's simulated clock,
    a played clock: its verdict is PLAYED CLOCK, the one a real clock would make ACCEPTED."""
    result, report = itera.reported(root)
    assert failures(report) == {}, json.dumps(list(failures(report).values()), indent=1)
    assert report["verdict"] == "played clock"
    expect(result, "campaign tiny-2026-11: PLAYED CLOCK — * checks passed on a played clock*")
    assert result.ret == 0


def assert_rejected(itera: Itera, root: Path, expected: Expected) -> dict[str, Any]:
    """Exactly the expected items fail, each with its message fragments, and the node ids
    and failure lines are printed (items not judged because of them are the caller's to
    check): the JSON report."""
    result, report = itera.reported(root)
    failed = {key: c for key, c in failures(report).items() if c["outcome"] == "failed"}
    assert set(failed) == set(expected), json.dumps(list(failed.values()), indent=1)
    for key, fragments in expected.items():
        item = failed[key]
        for fragment in fragments:
            assert fragment in item["message"], (fragment, item["message"])
        assert item["nodeid"].endswith(f"manifest.json::{_name(*key)}")
        expect(result, f"FAILED *{item['nodeid']}*")
    assert report["verdict"] == "rejected"
    expect(result, "campaign tiny-2026-11: REJECTED*")
    assert result.ret == 1
    return report


def _name(check: str, target: str | None) -> str:
    return check if target is None else f"{check}[{target}]"


def _checkpoint_items(targets: Iterable[str]) -> set[tuple[str, str]]:
    return {(check, t) for t in targets for check in ("checkpoint-reloads", "resume-complete")}


# ---------------------------------------------------------------- good campaigns


def test_trainer_output_dir_is_accepted(itera: Itera, trainer: Campaigns) -> None:
    root = trainer["good"]
    # The Trainer's own files, complete: training_args.bin names output_dir (inside /tmp).
    ckpt = root / C / "trainer" / "checkpoint-4"
    assert {p.name for p in ckpt.iterdir()} >= {
        "config.json", "model.safetensors", "optimizer.pt", "scheduler.pt", "rng_state.pth",
        "trainer_state.json", "training_args.bin"}
    assert str(root).encode() in (ckpt / "training_args.bin").read_bytes()
    state = json.loads((ckpt / "trainer_state.json").read_text())
    assert state["best_model_checkpoint"].startswith(f"{root}/")
    assert (root / C / "trainer" / "model.safetensors").is_file()
    assert_accepted(itera, root)


def test_lightning_default_root_dir_is_accepted(
    itera: Itera, lightning: Campaigns
) -> None:
    root = lightning["good"]
    version = root / C / "lightning" / "lightning_logs" / "version_0"
    assert (version / "hparams.yaml").read_text() == "data_dir: null\nlr: 0.1\n"
    assert (version / "metrics.csv").stat().st_size > 0
    (ckpt,) = (version / "checkpoints").glob("epoch=*-step=*.ckpt")
    # ModelCheckpoint records its absolute dirpath / best_model_path: into the campaign.
    assert str(version / "checkpoints").encode() in ckpt.read_bytes()
    assert_accepted(itera, root)


@pytest.mark.parametrize("tool", ["accelerate", "peft", "peft-shipped", "torch"])
def test_small_tools_are_accepted(
    itera: Itera, small_tools: Campaigns, tool: str
) -> None:
    assert_accepted(itera, small_tools[tool])


# --------------------------------------------------------------- broken campaigns


def test_trainer_checkpoint_missing_optimizer_and_rng(
    itera: Itera, trainer: Campaigns
) -> None:
    ck2, ck4 = f"{C}/trainer/checkpoint-2", f"{C}/trainer/checkpoint-4"
    assert_rejected(itera, trainer["damaged"], {
        ("files-intact", f"{ck2}/optimizer.pt"): [f"{ck2}/optimizer.pt", "missing"],
        ("files-intact", f"{ck4}/rng_state.pth"): [f"{ck4}/rng_state.pth", "missing"],
        ("resume-complete", ck2): [f"resume checkpoint {ck2} lacks optimizer, required by the "
                                   "plan's checkpoint_policy.resume_state", "optimizer.pt",
                                   "the manifest claims optimizer"],
        ("resume-complete", ck4): [f"resume checkpoint {ck4} lacks rng, required by the plan's "
                                   "checkpoint_policy.resume_state", "rng_state.pth",
                                   "the manifest claims rng"],
    })


def test_trainer_checkpoints_copied_from_a_cache_folder(
    itera: Itera, trainer: Campaigns
) -> None:
    """output_dir was /tmp/.../hf-cache: trainer_state.json's best_model_checkpoint and the
    pickled TrainingArguments name a folder that vanishes with the rental."""
    root = trainer["cache"]
    expected: Expected = {}
    for step in (2, 4):
        folder = f"{C}/trainer/checkpoint-{step}"
        state = json.loads((root / folder / "trainer_state.json").read_text())
        assert "hf-cache" in state["best_model_checkpoint"]
        expected[("no-temp-paths", f"{folder}/trainer_state.json")] = [
            "path into a temporary folder: ", "hf-cache", "trainer_state.json:"]
        expected[("no-temp-paths", f"{folder}/training_args.bin")] = [
            "path into a temporary folder: ", "hf-cache", "(pickle record)"]
    # save_model() writes the pickled TrainingArguments next to the final model too.
    expected[("no-temp-paths", f"{C}/trainer/training_args.bin")] = [
        "path into a temporary folder: ", "hf-cache", "(pickle record)"]
    assert_rejected(itera, root, expected)


def test_lightning_checkpoint_cannot_resume_a_plan_that_requires_rng(tmp_path: Path) -> None:
    """The recorder refuses the listing at once, with resume-complete's own sentence (the
    plugin's rejection of the same manifest is tests/checks' rule test)."""
    with pytest.raises(RecordError) as refused:
        _build(tmp_path, "rng", rt.lightning_tools(), (*rt.LIGHTNING_PARTS, "rng"))
    said = str(refused.value)
    assert "(resume-complete)" in said, said
    assert "cannot hold rng, required by the plan" in said, said
    assert "Lightning" in said, said


def test_lightning_hparams_naming_a_cache_folder(
    itera: Itera, lightning: Campaigns
) -> None:
    root = lightning["cache"]
    (ckpt,) = (p.relative_to(root).as_posix() for p in root.rglob("*.ckpt"))
    hparams = f"{C}/lightning/lightning_logs/version_0/hparams.yaml"
    assert_rejected(itera, root, {
        ("no-temp-paths", hparams): ["path into a temporary folder: ", "hf-cache",
                                     f"{hparams}:1:11"],
        ("no-temp-paths", ckpt): ["path into a temporary folder: ", "hf-cache"],
    })


def test_lightning_hparams_naming_a_sibling_temp_folder(
    itera: Itera, lightning: Campaigns
) -> None:
    root = lightning["sibling"]
    (ckpt,) = (p.relative_to(root).as_posix() for p in root.rglob("*.ckpt"))
    hparams = f"{C}/lightning/lightning_logs/version_0/hparams.yaml"
    assert_rejected(itera, root, {
        ("no-temp-paths", hparams): ["path into a temporary folder: ", "sibling-cache"],
        ("no-temp-paths", ckpt): ["path into a temporary folder: ", "sibling-cache"],
    })


def test_lightning_hparams_leaving_the_campaign_through_dotdot(
    itera: Itera, lightning: Campaigns
) -> None:
    root = lightning["dotdot"]
    (ckpt,) = (p.relative_to(root).as_posix() for p in root.rglob("*.ckpt"))
    hparams = f"{C}/lightning/lightning_logs/version_0/hparams.yaml"
    assert_rejected(itera, root, {
        ("no-temp-paths", hparams): ["path into a temporary folder: ", "dotdot-cache"],
        ("no-temp-paths", ckpt): ["path into a temporary folder: ", "dotdot-cache"],
    })


def test_lightning_hparams_holding_a_path_object(itera: Itera, lightning: Campaigns) -> None:
    """A Path hyperparameter is pickled as a pathlib.PosixPath object: torch.load(weights_only=
    True) refuses the .ckpt (Lightning's own resume too), so it is not reloadable; the
    message says it is a path saved as an object and how to save it, not that the file is
    hostile, and no format disagreement is invented for a file that did not load."""
    root = lightning["path-object"]
    (ckpt,) = (p.relative_to(root).as_posix() for p in root.rglob("*.ckpt"))
    report = assert_rejected(itera, root, {
        ("checkpoint-reloads", ckpt): [
            "does not reload in a fresh process with weights_only=True: ",
            ": pickles pathlib.PosixPath objects (paths saved as objects, not strings), outside "
            "the weights-only allowlist: torch.load(weights_only=True) refuses it, as torch's "
            "and Lightning's own reload do by default; refused before any load\n",
            "    fix:      save plain data instead (save str(path)): Lightning's "
            "save_hyperparameters() keeps its arguments as given (or leave one out: "
            "save_hyperparameters(ignore=[...])); then save the checkpoint again from the run; "
            "do not load this file with weights_only=False to convert it"],
        ("resume-complete", ckpt): ["it does not reload", "fix checkpoint-reloads["],
    })
    reloads = next(c for c in report["checks"] if c["check"] == "checkpoint-reloads"
                   and c["target"] == ckpt)
    assert reloads["message"].startswith(f"checkpoint-reloads[{ckpt}]: 1 problem\n")
    assert "hostile" not in reloads["message"]


def test_file_modified_after_the_manifest(itera: Itera, lightning: Campaigns) -> None:
    metrics = f"{C}/lightning/lightning_logs/version_0/metrics.csv"
    assert_rejected(itera, lightning["modified"], {
        ("files-intact", metrics): [f"{metrics} does not have the ", "recorded in the manifest"],
    })


def test_dcp_folders_accepted_then_missing_a_shard(
    itera: Itera, dcp: Campaigns
) -> None:
    """One test: the two-rank save (a process group) is built once for both campaigns."""
    shards = sorted(p.name for p in (dcp["good"] / C / "dcp-2-ranks").iterdir())
    assert shards == [".metadata", "__0_0.distcp", "__1_0.distcp"]
    assert_accepted(itera, dcp["good"])
    folder = f"{C}/dcp-2-ranks"
    # One cause, one failure (issue 26): the lost rank file is files-intact's; the folder's
    # reload (which names that file) and its resume parts wait on it, not judged.
    report = assert_rejected(itera, dcp["missing-shard"], {
        ("files-intact", f"{folder}/__1_0.distcp"): [f"{folder}/__1_0.distcp", "missing"],
    })
    waiting = {(c["check"], c["outcome"]) for c in report["checks"] if c["target"] == folder}
    assert waiting == {("checkpoint-reloads", "skipped"), ("resume-complete", "skipped")}
    assert all(f"not judged: files-intact[{folder}/__1_0.distcp] failed" in c["message"]
               for c in report["checks"] if c["target"] == folder)


def test_peft_adapter_saved_without_revision(
    itera: Itera, small_tools: Campaigns
) -> None:
    root = small_tools["peft-null"]
    config = f"{C}/adapter/adapter_config.json"
    assert json.loads((root / config).read_text())["revision"] is None
    assert_rejected(itera, root, {
        ("adapter-pinned", f"{C}/adapter"): [
            f"{config} records revision null, the manifest records base_revision "
            f"'{rt.COMMIT}'", f"{config}:"],
    })


def test_peft_adapter_pinned_to_a_branch(itera: Itera, small_tools: Campaigns) -> None:
    root = small_tools["peft-main"]
    assert json.loads((root / C / "adapter" / "adapter_config.json").read_text())[
        "revision"] == "main"
    assert_rejected(itera, root, {
        ("adapter-pinned", f"{C}/adapter"): [
            f"the base revision of adapter {C}/adapter 'main' is a branch: it moves with "
            "every push"],
        # The recorder refused the branch, so the adapter was written into the closed
        # manifest by hand: the journal's closure says so (issue 26, point 2).
        ("journal-agrees", "itera-journal.jsonl"): [
            "manifest.json is not the manifest the recorder wrote when it closed the "
            "campaign"],
    })


def test_peft_adapter_on_a_swapped_shipped_base(
    itera: Itera, small_tools: Campaigns
) -> None:
    root = small_tools["peft-swapped"]
    assert json.loads((root / C / "base" / "itera-base.json").read_text()) == {
        "model": rt.BASE_MODEL, "revision": rt.COMMIT}
    weights = f"{C}/base/model.safetensors"
    assert_rejected(itera, root, {
        ("files-intact", weights): [f"{weights} does not have the "],
        ("adapter-pinned", f"{C}/adapter"): [
            f"the files of shipped base {C}/base do not hash to the base_digest recorded for "
            f"adapter {C}/adapter"],
    })


def test_whole_module_and_nan_weights(itera: Itera, small_tools: Campaigns) -> None:
    assert_rejected(itera, small_tools["torch-broken"], {
        ("checkpoint-reloads", f"{C}/model.pt"): [
            "does not reload in a fresh process with weights_only=True",
            "a whole module: save `model.state_dict()` instead (torch.save(model) pickles "
            "the module's class, so it holds code: unpickling it would call torch.nn.modules.",
            "deliver torch.save(model.state_dict(), ...) (plain tensors) instead"],
        ("checkpoint-reloads", f"{C}/diverged.tar"): [
            f"{C}/diverged.tar holds non-finite model weights: 1 NaN value in 1 tensor",
            "2.weight"],
    })



# ------------------------------------------------- part of the model fine-tuned


def test_frozen_parameters_need_a_named_optimizer(tmp_path: Path) -> None:
    """A Trainer with frozen embeddings and Lightning on a frozen backbone: their optimizers
    hold fewer parameters than the models have tensors. Numbered (as the Trainer builds its
    own, as most configure_optimizers do), that cannot be told from another model's state:
    refused, each saying how to build it with that tool from named parameters; built so,
    the names prove the fit and the campaign is ACCEPTED. Judged in-process."""
    from pytest_itera.report.verify import check_campaign

    numbered = check_campaign(rt.record_campaign(tmp_path / "numbered", rt.frozen_tools(
        named=False), resume_state=rt.TUTORIAL_PARTS))
    said = {(p.check, p.target): p.finding for p in numbered.findings}
    (ckpt,) = (t for _, t in said if t and t.endswith(".ckpt"))
    assert set(said) == {("resume-complete", f"{C}/trainer/checkpoint-2"),
                         ("resume-complete", ckpt)}, [p.render() for p in numbered.findings]
    trainer, lightning = said["resume-complete", f"{C}/trainer/checkpoint-2"], \
        said["resume-complete", ckpt]
    assert trainer.message.startswith(
        f"cannot prove that the optimizer state of resume checkpoint {C}/trainer/checkpoint-2 "
        "fits its model: optimizer.pt has 20 parameter(s) for the model's 25 floating-point "
        "tensors: the other tensors are frozen parameters or buffers")
    assert trainer.hint == (
        "the Trainer builds its optimizer from numbered parameters: build it yourself from "
        "named ones, Trainer(..., optimizers=(torch.optim.AdamW([(n, p) for n, p in "
        "model.named_parameters() if p.requires_grad], lr=...), None)) (torch >= 2.6 then "
        "saves param_names, which prove which tensor each state belongs to), and train the "
        "run again")
    assert "optimizer_states.0 has 2 parameter(s) for the model's 4" in lightning.message
    assert str(lightning.hint).startswith(
        "return from configure_optimizers() an optimizer built from named parameters, e.g. "
        "torch.optim.AdamW([(n, p) for n, p in self.named_parameters() if p.requires_grad])")
    assert numbered.verdict == "rejected"
    named = check_campaign(rt.record_campaign(tmp_path / "named", rt.frozen_tools(named=True),
                                              resume_state=rt.TUTORIAL_PARTS))
    assert named.findings == (), [p.render() for p in named.findings]
    assert named.verdict == "played clock"  # every check passed, on a simulated clock


def test_a_numpy_metric_in_a_torch_checkpoint_is_refused_as_data_not_code(
        tmp_path: Path) -> None:
    """A hand-written loop saves its best accuracy as numpy returned it (np.float64) beside
    the tutorial's keys: torch.load(weights_only=True) refuses the file, so the plugin does;
    the fix says to save a number, and speaks of no Lightning hyperparameters (the file is
    not Lightning's). Judged in-process."""
    import numpy as np

    from pytest_itera.report.verify import check_campaign

    def tools(root: Path) -> rt.Declared:
        path = rt.tutorial_checkpoint(root / C / "checkpoint.tar")
        ckpt = torch.load(path, weights_only=True)
        torch.save({**ckpt, "best_acc": np.float64(0.75)}, path)
        declared = rt.Declared()
        declared.checkpoint(f"{C}/checkpoint.tar", "torch", claims=rt.TUTORIAL_PARTS)
        return declared

    verdict = check_campaign(rt.record_campaign(tmp_path / "numpy", tools,
                                                resume_state=rt.TUTORIAL_PARTS))
    said = {(p.check, p.target): p.finding for p in verdict.findings}
    target = f"{C}/checkpoint.tar"
    assert set(said) == {("checkpoint-reloads", target), ("resume-complete", target)}
    reload = said["checkpoint-reloads", target]
    assert "pickles numpy._core.multiarray.scalar objects (numpy scalars saved as objects, " \
        "not numbers)" in reload.message
    assert reload.hint == ("save plain data instead (save float(x) or int(x)): then save the "
                           "checkpoint again from the run; do not load this file with "
                           "weights_only=False to convert it")
    assert verdict.verdict == "rejected"
