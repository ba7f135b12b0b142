"""The rules of ``checkpoint-reloads`` (pytest_itera/checks/artifacts/checkpoint_reloads.py): each
break refused, with its honest twin.

Where the cases come from (the files they were first written in):

checkpoint-reloads, resume-complete, adapter-pinned on REAL artifacts inside real campaigns.

Expensive artifacts (Lightning, HF Trainer, accelerate, DCP, PEFT) are built once per module
by the real libraries and copied into each campaign as bytes. Each pytester run checks many
targets at once (one torch import per run), and every target's verdict and message is asserted.

A campaign that ships DeepSpeed ZeRO and FSDP (accelerate) checkpoints: accepted when every
rank's file is there, rejected naming the missing rank when not.
"""
from __future__ import annotations

import io
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest
import torch

from pytest_itera.core.findings import Finding
from pytest_itera.files.source import S3Location, S3Source, stage
from pytest_itera.reload import PROBE, SERVER
from tests import checkpoints
from tests.checks.campaigns import with_saved_model
from tests.checks.judging import expect_finding, expect_no_finding, judge
from tests.factory import (
    CONTROL_CKPT,
    VARIANT_WEIGHTS,
    CampaignBuilder,
    expect,
    expect_each,
    sha256,
    verdicts,
)
from tests.files.test_s3 import s3 as s3  # the fixtures of the local S3 server
from tests.files.test_s3 import server as server
from tests.files.test_s3 import upload
from tests.runner import Itera, only_xdist

os.environ.setdefault("HF_HUB_OFFLINE", "1")

ARTIFACT_CHECKS = "checkpoint-reloads or resume-complete or adapter-pinned"
COMMIT = "3f0c2a9d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39"
ALL_PARTS = ["model", "optimizer", "progress", "scheduler", "scaler", "rng", "data"]

def _nan_safetensors(folder: Path) -> Path:
    nan = torch.ones(2, 2)
    nan[1, 1] = float("nan")
    return checkpoints.safetensors_file(folder, "nan.safetensors",
                                      {"head.weight": nan, "head.bias": torch.zeros(2)})


BUILDERS: dict[str, Callable[[Path], Path]] = {
    "general": checkpoints.general_checkpoint,
    "no-scaler": lambda folder: checkpoints.general_checkpoint(folder, scaler=True),
    "state-dict": checkpoints.state_dict_file,
    "safetensors": checkpoints.safetensors_file,
    "nan-safetensors": _nan_safetensors,
    "lightning": checkpoints.lightning_checkpoint,
    "hf": checkpoints.hf_trainer_checkpoint,
    "accelerate": checkpoints.accelerate_checkpoint,
    "dcp": checkpoints.dcp_checkpoint,
    "dcp-nan": lambda folder: checkpoints.dcp_checkpoint(folder, nan=True),
    "peft": lambda folder: checkpoints.peft_adapter(folder, base_model="org/tiny-gpt2",
                                                  revision=COMMIT),
}


Built = dict[str, dict[str, bytes]]


def _build(root: Path, keys: Iterable[str]) -> Built:
    """Artifacts as {relative path: bytes} ('' for a file)."""
    out = {}
    for key in keys:
        (root / key).mkdir()
        out[key] = checkpoints.folder_bytes(BUILDERS[key](root / key))
    return out


# Module-scoped, so they are built before pytester snapshots sys.modules: torch and the
# libraries import submodules lazily, and re-importing them after the snapshot is restored
# registers torch ops twice. Split so a test (an xdist worker) pays only for what it needs.


@pytest.fixture(scope="module")
def cheap(tmp_path_factory: pytest.TempPathFactory) -> Built:
    keys = ("general", "no-scaler", "state-dict", "safetensors", "nan-safetensors")
    return _build(tmp_path_factory.mktemp("cheap"), keys)


@pytest.fixture(scope="module")
def trainers(tmp_path_factory: pytest.TempPathFactory) -> Built:
    keys = ("lightning", "hf", "accelerate", "dcp", "dcp-nan")
    return _build(tmp_path_factory.mktemp("trainers"), keys)


@pytest.fixture(scope="module")
def peft(tmp_path_factory: pytest.TempPathFactory, cheap: Built) -> Built:
    return {**cheap, **_build(tmp_path_factory.mktemp("peft"), ("peft",))}


def only_listed_here(campaign: CampaignBuilder) -> CampaignBuilder:
    """The factory's default checkpoints unlisted (their files stay): the test lists its own."""
    campaign.manifest["checkpoints"] = []
    return campaign


def place(campaign: CampaignBuilder, files: dict[str, bytes], dest: str) -> None:
    for rel, data in files.items():
        campaign.files[f"{dest}/{rel}" if rel else dest] = data


def add_checkpoint(campaign: CampaignBuilder, path: str, fmt: str, kind: str = "weights",
                   claims: Iterable[str] | None = None, run: str = "control") -> None:
    record: dict[str, Any] = {"path": path, "run": run, "format": fmt, "kind": kind}
    if claims is not None:
        record["claims"] = list(claims)
    campaign.manifest["checkpoints"].append(record)


def add_adapter(campaign: CampaignBuilder, built: Built, path: str, pinned: str | None,
                base_path: str | None = None, **config: Any) -> None:
    """The PEFT adapter at ``path``, pinned to ``pinned`` in the manifest (base_model
    org/tiny-gpt2), its adapter_config.json edited as ``config`` says."""
    files = dict(built["peft"])
    data = json.loads(files["adapter_config.json"])
    data.update(config)
    files["adapter_config.json"] = (json.dumps(data, indent=2, sort_keys=True) + "\n").encode()
    place(campaign, files, path)
    record: dict[str, Any] = {"path": path, "run": "control", "base_model": "org/tiny-gpt2",
                              "base_revision": pinned}
    if base_path is not None:
        record["base_path"] = base_path
    campaign.manifest["adapters"].append(record)


# ------------------------------------------------------------------ every format passes


def test_every_format_reloads_resumes_and_pins(
    itera: Itera, campaign: CampaignBuilder, trainers: Built, peft: Built
) -> None:
    built = {**peft, **trainers}
    only_listed_here(campaign)
    campaign.plan["checkpoint_policy"]["resume_state"] = ["model", "optimizer", "progress"]
    layout = [
        ("general", "runs/control/resume.pt", "torch", "resume", ALL_PARTS),
        ("state-dict", "runs/control/weights.pt", "torch", "weights", None),
        ("safetensors", "runs/control/model.safetensors", "safetensors", "weights", None),
        ("lightning", "runs/variant-a/last.ckpt", "lightning", "resume",
         ["model", "optimizer", "progress", "scheduler"]),
        ("hf", "runs/variant-a/checkpoint-2", "hf-trainer", "resume",
         ["model", "optimizer", "progress", "scheduler", "rng", "data"]),
        ("accelerate", "runs/resume-check/acc", "accelerate", "resume",
         ["model", "optimizer", "progress", "scheduler", "rng"]),
        ("dcp", "runs/resume-check/dcp", "dcp", "weights", None),
    ]
    for key, path, fmt, kind, claims in layout:
        place(campaign, built[key], path)
        add_checkpoint(campaign, path, fmt, kind, claims)
    add_adapter(campaign, built, "runs/control/adapter", COMMIT)
    campaign.write()
    result = itera("-rA", "-k", ARTIFACT_CHECKS)
    expected = {f"checkpoint-reloads[{path}]": "PASSED" for _, path, *_ in layout}
    expected |= {f"resume-complete[{path}]": "PASSED"
                 for _, path, _, kind, _ in layout if kind == "resume"}
    expected["adapter-pinned[runs/control/adapter]"] = "PASSED"
    assert verdicts(result) == expected
    result.assert_outcomes(passed=12)


# ------------------------------------------------------------------ checkpoints that fail


def _broken_checkpoints(pytester: pytest.Pytester, campaign: CampaignBuilder, built: Built,
                        tmp_path: Path) -> Path:
    """Checkpoints broken each for one reason (a hostile pickle, truncated, empty, NaN,
    mislabeled, outside the folder, missing, parts missing or overclaimed), written; the
    marker file the hostile pickle's payload would create."""
    only_listed_here(campaign)
    marker = tmp_path / "payload-ran"
    evil = checkpoints.hostile_checkpoint(tmp_path, marker).read_bytes()
    # A hostile file just outside the campaign, named by '..' and by a symlink: never loaded.
    (pytester.path / "outside.pt").write_bytes(evil)
    general = built["general"][""]
    hf = {k: v for k, v in built["hf"].items() if k != "optimizer.pt"}
    campaign.files |= {
        "runs/control/evil.pt": evil,
        "runs/control/truncated.pt": general[: len(general) // 2],
        "runs/control/empty.pt": b"",
        "runs/control/nan.safetensors": built["nan-safetensors"][""],
        "runs/control/mislabeled.pt": built["safetensors"][""],
        "runs/variant-a/weights.pt": built["state-dict"][""],
        "runs/variant-a/last.ckpt": built["lightning"][""],
        "runs/variant-a/declared-torch.ckpt": built["lightning"][""],
        "runs/resume-check/resume.pt": built["no-scaler"][""],
    }
    place(campaign, built["dcp-nan"], "runs/control/dcp")
    place(campaign, hf, "runs/resume-check/checkpoint-2")
    for path, fmt in [("runs/control/evil.pt", "torch"), ("runs/control/truncated.pt", "torch"),
                      ("runs/control/empty.pt", "torch"),
                      ("runs/control/nan.safetensors", "safetensors"),
                      ("runs/control/dcp", "dcp"), ("runs/control/mislabeled.pt", "torch"),
                      ("../outside.pt", "torch"), ("runs/control/link.pt", "torch"),
                      ("runs/control/gone.pt", "torch"),
                      ("runs/variant-a/declared-torch.ckpt", "torch")]:
        add_checkpoint(campaign, path, fmt)
    add_checkpoint(campaign, "runs/variant-a/weights.pt", "torch", "resume", ["model"])
    add_checkpoint(campaign, "runs/variant-a/last.ckpt", "lightning", "resume")
    add_checkpoint(campaign, "runs/resume-check/checkpoint-2", "hf-trainer", "resume")
    add_checkpoint(campaign, "runs/resume-check/resume.pt", "torch", "resume", ALL_PARTS)
    campaign.write(before_manifest=lambda root: (root / "runs/control/link.pt").symlink_to(
        "../../../outside.pt"))
    return marker


def test_broken_checkpoints_fail_for_their_reason(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder, cheap: Built,
    trainers: Built, tmp_path: Path,
) -> None:
    marker = _broken_checkpoints(pytester, campaign, {**cheap, **trainers}, tmp_path)

    result = itera("-rA", "-k", f"{ARTIFACT_CHECKS} or no-empty-files")

    assert not marker.exists(), "the hostile pickle's payload ran"
    failed = ["evil.pt", "truncated.pt", "empty.pt", "nan.safetensors", "dcp", "mislabeled.pt",
              "link.pt", "gone.pt"]
    expected = {f"checkpoint-reloads[runs/control/{name}]": "FAILED" for name in failed}
    expected |= {f"checkpoint-reloads[{path}]": "PASSED" for path in (
        "runs/variant-a/weights.pt", "runs/variant-a/last.ckpt",
        "runs/resume-check/checkpoint-2", "runs/resume-check/resume.pt",
        "runs/variant-a/declared-torch.ckpt")}  # a Lightning .ckpt is a torch.save file
    expected |= {f"resume-complete[{path}]": "FAILED" for path in (
        "runs/variant-a/weights.pt", "runs/variant-a/last.ckpt",
        "runs/resume-check/checkpoint-2", "runs/resume-check/resume.pt")}
    expected["checkpoint-reloads[../outside.pt]"] = "FAILED"
    expected["no-empty-files"] = "FAILED"
    assert verdicts(result) == expected
    expect_each(
        result,
        # hostile pickle: the offending global is named
        "manifest.json $.checkpoints[0]: does not reload in a fresh process with "
        "weights_only=True: runs/control/evil.pt: holds code: unpickling it would call "
        "posix.system (os.system), outside the weights-only allowlist*",
        "    fix:      the file holds code that runs when it is unpickled: treat it as hostile*",
        # truncated, zero-byte
        "manifest.json $.checkpoints[1]: does not reload * runs/control/truncated.pt: *"
        "truncated or corrupt*",
        "manifest.json $.checkpoints[2]: does not reload * runs/control/empty.pt: empty file "
        "(0 bytes)",
        "runs/control/empty.pt: runs/control/empty.pt is empty (listed in the manifest)",
        # non-finite weights, named
        "manifest.json $.checkpoints[3]: runs/control/nan.safetensors holds non-finite model "
        "weights: 1 NaN value in 1 tensor",
        "    found:    head.weight",
        "manifest.json $.checkpoints[4]: runs/control/dcp holds non-finite model weights: 1 NaN "
        "value in 1 tensor",
        "    found:    model.0.weight",
        # wrong claimed format
        "manifest.json $.checkpoints[5].format: runs/control/mislabeled.pt holds 'safetensors' "
        "content, but the manifest declares format 'torch'",
        # outside the campaign: refused before any loader
        "manifest.json $.checkpoints[6].path: checkpoint path '../outside.pt' '..' leaves the "
        "campaign folder: it is not loaded",
        "manifest.json $.checkpoints[7].path: checkpoint path 'runs/control/link.pt' symlink "
        "runs/control/link.pt -> ../../../outside.pt leaves the campaign folder: it is not "
        "loaded",
        "manifest.json $.checkpoints[8].path: checkpoint runs/control/gone.pt is missing",
        # model-only state dict offered as resume
        "manifest.json $.checkpoints[10]: resume checkpoint runs/variant-a/weights.pt lacks "
        "optimizer, progress, scheduler, rng, data, required by the plan's "
        "checkpoint_policy.resume_state (it holds model weights only: a state dict is not a "
        "resume checkpoint)",
        # Lightning: rng impossible by design, data not saved
        "manifest.json $.checkpoints[11]: resume checkpoint runs/variant-a/last.ckpt cannot hold "
        "rng, required by the plan's checkpoint_policy.resume_state: Lightning checkpoints store "
        "no RNG state by design",
        "manifest.json $.checkpoints[11]: resume checkpoint runs/variant-a/last.ckpt lacks data,*",
        # HF Trainer folder without optimizer.pt
        "manifest.json $.checkpoints[12]: resume checkpoint runs/resume-check/checkpoint-2 lacks "
        "optimizer, required by*",
        "    found:    model, progress, scheduler, rng, data",
        "    fix:      save every required part (hf-trainer: optimizer in optimizer.pt)*",
        # claims cross-checked
        "manifest.json $.checkpoints[13].claims: the manifest claims scaler for "
        "runs/resume-check/resume.pt, which does not hold it",
    )
    result.stdout.no_fnmatch_line("*resume-complete*resume.pt*lacks*")  # scaler is not required
    # A link that leaves: the path is already relative, the file itself must be copied in.
    result.stdout.fnmatch_lines([
        "manifest.json $.checkpoints[[]7].path: checkpoint path 'runs/control/link.pt' symlink *",
        "    fix:      copy the file itself into the campaign folder"])


# ------------------------------------------------------------------------------ adapters


def _v1_adapter_pins(pytester: pytest.Pytester, peft: Built) -> tuple[CampaignBuilder, bytes]:
    """An itera-manifest/1 campaign whose adapters pin their base each in one way (a hub
    commit, a branch, a short hash, a tag, null, a shipped base's sha256, ...), written; with
    the shipped base's bytes."""
    campaign = CampaignBuilder(pytester.path / "out", version=1)
    built = peft
    base = built["safetensors"][""]
    campaign.files["base/model.safetensors"] = base
    other = "b" * 40
    add_adapter(campaign, built, "adapters/good", COMMIT)
    add_adapter(campaign, built, "adapters/shipped", sha256(base),
                base_path="base/model.safetensors", revision=sha256(base),
                base_model_name_or_path="base")
    add_adapter(campaign, built, "adapters/main", "main", revision="main")
    add_adapter(campaign, built, "adapters/short", "3f0c2a9", revision="3f0c2a9")
    add_adapter(campaign, built, "adapters/tag", "v1.0", revision="v1.0")
    add_adapter(campaign, built, "adapters/null", None, revision=None)
    add_adapter(campaign, built, "adapters/mismatch", COMMIT, revision=other)
    add_adapter(campaign, built, "adapters/changed-base", "0" * 64,
                base_path="base/model.safetensors", revision="0" * 64)
    add_adapter(campaign, built, "adapters/temp", COMMIT,
                base_model_name_or_path="/tmp/hf/models--org--tiny-gpt2")
    add_adapter(campaign, built, "adapters/other-base", COMMIT, base_model_name_or_path="org/other")
    # PEFT records the path the base was loaded from: absolute into the campaign (here under
    # /tmp, where pytester works), or relative from the training script's folder.
    shipped = {"base_path": "base/model.safetensors", "revision": sha256(base)}
    add_adapter(campaign, built, "adapters/shipped-abs", sha256(base),
                base_model_name_or_path=str(campaign.root / "base"), **shipped)
    add_adapter(campaign, built, "adapters/shipped-rel", sha256(base),
                base_model_name_or_path="experiments/out/base", **shipped)
    add_adapter(campaign, built, "adapters/abs-elsewhere", sha256(base),
                base_model_name_or_path=str(campaign.root / "adapters"), **shipped)
    campaign.write()
    return campaign, base



def test_adapter_pins_of_a_v1_manifest(
    itera: Itera, pytester: pytest.Pytester, peft: Built
) -> None:
    """itera-manifest/1: a hub commit, or a shipped base file's sha256; a /1 shipped base is
    told that one file's sha256 cannot prove which base it is (the /2 rules are in
    test_artifact_evidence.py)."""
    campaign, base = _v1_adapter_pins(pytester, peft)
    other = "b" * 40

    result = itera("-rA", "-k", "adapter-pinned")

    passing = {"good"}
    names = ["good", "shipped", "main", "short", "tag", "null", "mismatch", "changed-base", "temp",
             "other-base", "shipped-abs", "shipped-rel", "abs-elsewhere"]
    assert verdicts(result) == {f"adapter-pinned[adapters/{n}]":
                                "PASSED" if n in passing else "FAILED" for n in names}
    expect_each(
        result,
        "manifest.json $.adapters[2].base_revision: the base revision of adapter adapters/main "
        "'main' is a branch: it moves with every push",
        "    expected: the full 40-hex commit id of the base (or, with base_path, the sha256 of "
        "the shipped base)",
        "    found:    'main'",
        "manifest.json $.adapters[3].base_revision: the base revision of adapter adapters/short "
        "'3f0c2a9' is a short commit hash (7 hex digits)*",
        "manifest.json $.adapters[4].base_revision: * adapters/tag 'v1.0' is a tag or branch "
        "name, not an immutable commit id*",
        "manifest.json $.adapters[5].base_revision: the base revision of adapter adapters/null "
        "is missing (null)",
        f"adapters/mismatch/adapter_config.json:*:* $.revision: adapters/mismatch/"
        f"adapter_config.json records revision '{other}', the manifest records base_revision "
        f"'{COMMIT}'",
        "manifest.json $.adapters[7].base_revision: the shipped base base/model.safetensors does "
        "not have the sha256 recorded as base_revision",
        f"    found:    {sha256(base)}",
        "adapters/temp/adapter_config.json:*:* $.base_model_name_or_path: "
        "base_model_name_or_path '/tmp/hf/models--org--tiny-gpt2' is a path into a temporary "
        "folder (/tmp/)",
        "adapters/other-base/adapter_config.json:*:* $.base_model_name_or_path: "
        "adapters/other-base/adapter_config.json names base model 'org/other', the manifest's "
        "base_model is 'org/tiny-gpt2'",
        "adapters/abs-elsewhere/adapter_config.json:*:* $.base_model_name_or_path: "
        f"adapters/abs-elsewhere/adapter_config.json names base model "
        f"'{campaign.root / 'adapters'}', the manifest's base_model is *",
    )
    for index, name in ((1, "shipped"), (10, "shipped-abs"), (11, "shipped-rel")):
        item = result.stdout.str().split(f"adapter-pinned[adapters/{name}]: ")[1]
        assert item.startswith("1 problem\n"), item[:300]
        assert (f"manifest.json $.adapters[{index}].base_path: itera-manifest/1 cannot prove the "
                "identity of the shipped base base/model.safetensors: the sha256 of one file "
                "cannot tell two bases of the same architecture apart") in item


def _reads_any_file() -> bool:
    """This process reads a file of mode 000 (root, with CAP_DAC_OVERRIDE)."""
    with tempfile.TemporaryDirectory() as folder:
        probe = Path(folder) / "probe"
        probe.write_bytes(b"")
        probe.chmod(0o000)
        try:
            probe.open("rb").close()
        except PermissionError:
            return False
        return True


@pytest.mark.parametrize(("base", "mode", "code", "says"), [
    pytest.param("base", None, "adapter-pinned.base-not-a-file",
                 "shipped base base is a folder: base_revision pins one file's sha256",
                 id="a-folder"),
    # Only where a file of mode 000 cannot be read (not as root with CAP_DAC_OVERRIDE).
    pytest.param("base/model.safetensors", 0o000, "adapter-pinned.base-unreadable",
                 "shipped base base/model.safetensors cannot be hashed: permission denied",
                 id="unreadable", marks=pytest.mark.skipif(
                     _reads_any_file(), reason="this process reads a file of mode 000")),
])
def test_a_v1_shipped_base_that_is_no_readable_file_is_refused(
    tmp_path: Path, peft: Built, base: str, mode: int | None, code: str, says: str
) -> None:
    """itera-manifest/1 pins a shipped base by one file's sha256: a folder, or a file that
    cannot be hashed, pins nothing."""
    b = CampaignBuilder(tmp_path / "out", version=1)
    weights = peft["safetensors"][""]
    b.files["base/model.safetensors"] = weights
    add_adapter(b, peft, "adapters/shipped", sha256(weights), base_path=base,
                revision=sha256(weights), base_model_name_or_path="base")
    root = b.write()
    if mode is not None:
        (root / base).chmod(mode)
    expect_finding(judge(b, "adapter-pinned", write=False), code,
                   where="manifest.json $.adapters[0].base_path", says=says)


def test_adapter_folder_without_config(campaign: CampaignBuilder, peft: Built) -> None:
    weights = peft["peft"]["adapter_model.safetensors"]
    only_listed_here(campaign)
    campaign.files["adapters/bare/adapter_model.safetensors"] = weights
    campaign.manifest["adapters"].append({"path": "adapters/bare", "run": "control",
                                          "base_model": "org/tiny-gpt2", "base_revision": COMMIT})
    found = judge(campaign, "adapter-pinned", target="adapters/bare")
    assert len(found) == 2, [f.render() for f in found]
    expect_finding(found, "adapter-pinned.config-missing",
                   where="adapters/bare/adapter_config.json",
                   says="adapters/bare/adapter_config.json is missing: an adapter folder "
                   "without its config cannot be loaded")
    expect_finding(found, "adapter-pinned.no-reload", where="manifest.json $.adapters[0]",
                   says="adapters/bare: not a recognised checkpoint folder")


# ------------------------------------------------------------- the reload interpreter


def _fake_python(tmp_path: Path, body: str) -> str:
    script = tmp_path / "python"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    return str(script)


def _small_campaign(campaign: CampaignBuilder, built: Built) -> None:
    only_listed_here(campaign)
    campaign.files["runs/control/weights.pt"] = built["state-dict"][""]
    add_checkpoint(campaign, "runs/control/weights.pt", "torch")
    campaign.write()


@pytest.mark.parametrize(
    ("python", "reason"),
    [
        ("/bin/true", "not a usable Python with torch (probe exited with status 0*"),
        ("{tmp}/missing", "not an executable file. The campaign*"),
        ("old-torch", "torch 2.9.1 is older than 2.10: weights_only=True can be bypassed*"),
    ],
)
def test_unusable_interpreter_is_one_usage_error(
    itera: Itera, campaign: CampaignBuilder, cheap: Built, tmp_path: Path,
    python: str, reason: str,
) -> None:
    if python == "old-torch":
        # A torch 2.9.1 as the server sees it: read from its files before the import (the
        # probe's line, from the probe module the server loads by path), then imported.
        python = _fake_python(tmp_path, f"exec {sys.executable} -I -B -u -c 'import runpy, sys, "
                              "torch, importlib.util as u; torch.__version__ = \"2.9.1\"; "
                              "s = u.spec_from_file_location(\"_itera_reload_probe\", "
                              f"\"{PROBE}\"); "
                              "m = sys.modules[s.name] = u.module_from_spec(s); "
                              "s.loader.exec_module(m); m.torch_version = lambda: \"2.9.1\"; "
                              f"runpy.run_path(\"{SERVER}\", run_name=\"__main__\")'")
    python = python.format(tmp=tmp_path)
    _small_campaign(campaign, cheap)
    result = itera("-rA", "--itera-python", python)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: pytest-itera: --itera-python {python}: {reason}"])
    assert sum("pytest-itera:" in line for line in result.errlines) == 1
    assert not verdicts(result)  # nothing ran
    assert "pytest-itera" not in result.stdout.str()  # no summary of a session that never ran


def test_interpreter_is_only_required_when_something_reloads(
    itera: Itera, campaign: CampaignBuilder, cheap: Built
) -> None:
    """No checkpoint, or --itera-fast: the reload interpreter is never used, never probed."""
    only_listed_here(campaign)
    campaign.write()
    bare = itera("-rA", "--itera-python", "/bin/true")
    # Every item ran (no usage error): only the runs that ship no artifact fail.
    assert bare.ret == pytest.ExitCode.TESTS_FAILED
    assert not [line for line in bare.errlines if "pytest-itera:" in line]
    assert verdicts(bare)["artifacts-required[control]"] == "FAILED"
    assert not [name for name in verdicts(bare) if "reloads" in name]
    _small_campaign(campaign, cheap)
    fast = itera("-rA", "--itera-python", "/bin/true", "--itera-fast")
    assert fast.ret == 0
    assert not [name for name in verdicts(fast) if "reloads" in name]


def test_itera_python_and_timeout_are_used(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder, cheap: Built, tmp_path: Path
) -> None:
    used = tmp_path / "used"
    python = _fake_python(tmp_path, f'echo "$@" >> {used}\nexec {sys.executable} "$@"')
    _small_campaign(campaign, cheap)
    ok = itera("-rA", "--itera-python", python, "-k", "checkpoint-reloads")
    ok.assert_outcomes(passed=1)
    assert str(SERVER) in used.read_text()  # the reload server ran under --itera-python

    pytester.makeini(f"[pytest]\nitera_python = {python}\nitera_timeout = 0.000001\n")
    slow = itera("-rA", "-k", "checkpoint-reloads")
    slow.assert_outcomes(failed=1)
    expect_each(slow, "*runs/control/weights.pt: timed out after 1e-06 s (the loading process "
                "was killed)", "    fix:      raise --itera-timeout (ini itera_timeout)*")
    assert used.read_text().count(str(SERVER)) >= 2  # the ini twin named the interpreter too


# ------------------------------------------------------------------------ the reload hook

RELOAD_HOOK = """
from pytest_itera.reload import ReloadResult

def pytest_itera_reload(path, display, claimed_format, config):
    with open({log!r}, "a") as log:
        log.write(display + "\\n")
    if path.suffix != ".myfmt":
        return None
    ok = path.read_bytes().startswith(b"MYFMT1")
    return ReloadResult(path=display, ok=ok, format=claimed_format,
                        cause=None if ok else f"{{display}}: bad magic", parts=("model",))
"""


def test_reload_hook_is_asked_first_and_never_sees_outside_paths(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder, cheap: Built, tmp_path: Path
) -> None:
    log = tmp_path / "asked"
    only_listed_here(campaign)
    pytester.makeconftest(RELOAD_HOOK.format(log=str(log)))
    (pytester.path / "outside.myfmt").write_bytes(b"MYFMT1")
    campaign.files |= {"runs/control/a.myfmt": b"MYFMT1 weights",
                       "runs/control/b.myfmt": b"garbage",
                       "runs/control/weights.pt": cheap["state-dict"][""]}
    for path in ("runs/control/a.myfmt", "runs/control/b.myfmt", "runs/control/weights.pt",
                 "../outside.myfmt"):
        add_checkpoint(campaign, path, "torch")
    campaign.write()
    result = itera("-rA", "-k", "checkpoint-reloads")
    assert verdicts(result) == {
        "checkpoint-reloads[runs/control/a.myfmt]": "PASSED",
        "checkpoint-reloads[runs/control/b.myfmt]": "FAILED",
        "checkpoint-reloads[runs/control/weights.pt]": "PASSED",  # the hook passed: built-in
        "checkpoint-reloads[../outside.myfmt]": "FAILED",
    }
    expect_each(result, "*does not reload * runs/control/b.myfmt: bad magic")
    assert sorted(log.read_text().split()) == [
        "runs/control/a.myfmt", "runs/control/b.myfmt", "runs/control/weights.pt"]


# ------------------------------------------------------------------------------- xdist


@only_xdist("on")  # it compares the workers' outcomes with one process's itself
def test_same_outcomes_with_and_without_xdist(
    itera: Itera, campaign: CampaignBuilder, cheap: Built
) -> None:
    built = cheap
    only_listed_here(campaign)
    general = built["general"][""]
    campaign.files |= {
        "runs/control/resume.pt": general,
        "runs/control/truncated.pt": general[:-100],
        "runs/control/nan.safetensors": built["nan-safetensors"][""],
        "runs/variant-a/weights.pt": built["state-dict"][""],
        "runs/variant-a/model.safetensors": built["safetensors"][""],
    }
    add_checkpoint(campaign, "runs/control/resume.pt", "torch", "resume", ALL_PARTS)
    add_checkpoint(campaign, "runs/control/truncated.pt", "torch", "resume")
    add_checkpoint(campaign, "runs/control/nan.safetensors", "safetensors")
    add_checkpoint(campaign, "runs/variant-a/weights.pt", "torch", "resume", run="variant-a")
    add_checkpoint(campaign, "runs/variant-a/model.safetensors", "torch", run="variant-a")
    campaign.write()
    serial = itera("-rA", "-k", ARTIFACT_CHECKS, xdist="off")
    spread = itera("-rA", "-k", ARTIFACT_CHECKS)
    assert verdicts(serial) == verdicts(spread)
    assert sorted(verdicts(serial).values()) == ["FAILED"] * 5 + ["PASSED"] * 3


@pytest.mark.parametrize(("path", "fifo", "code", "says"), [
    # A FIFO is never opened: it would block the loader.
    pytest.param("runs/control/weights.pt", True, "checkpoint-reloads.not-a-file",
                 "checkpoint runs/control/weights.pt is neither a regular file nor a folder",
                 id="a-fifo"),
    # Through a regular file: its lstat fails with ENOTDIR, not FileNotFoundError.
    pytest.param(f"{CONTROL_CKPT}/weights.pt", False, "checkpoint-reloads.unreadable",
                 f"checkpoint {CONTROL_CKPT}/weights.pt cannot be read: not a directory",
                 id="through-a-file"),
])
def test_a_checkpoint_path_that_names_no_file_is_refused(
    campaign: CampaignBuilder, path: str, fifo: bool, code: str, says: str
) -> None:
    only_listed_here(campaign)
    add_checkpoint(campaign, path, "torch")
    campaign.write(before_manifest=(lambda root: os.mkfifo(root / path)) if fifo else None)
    expect_finding(judge(campaign, "checkpoint-reloads", target=path, write=False), code,
                   where="manifest.json $.checkpoints[0].path", says=says)


def test_an_artifact_the_cache_cap_left_in_the_store_is_spooled_alone_to_be_reloaded(
    tmp_path: Path, peft: Built, s3: Any,
) -> None:
    """An s3:// campaign judged from its local copy under a cache cap of 0 (no checkpoint
    stays on local disk): a checkpoint or an adapter the cap left in the store is spooled
    alone, reloaded and removed, so it is judged as a local one; one the store no longer
    gives when it is spooled (deleted since the listing) may reload, but that is not proven,
    so it does not pass."""
    adapter = "runs/control/adapter"
    b = CampaignBuilder(tmp_path / "out")
    add_adapter(b, peft, adapter, COMMIT)
    url = upload(s3, b.write())
    staged = stage(S3Source(S3Location.parse(url), timeout=5), tmp_path / "copy", 0)
    assert not (staged.root / VARIANT_WEIGHTS).exists()
    assert (staged.root / adapter / "adapter_config.json").is_file()  # its document stays
    for check, target in (("checkpoint-reloads", VARIANT_WEIGHTS), ("adapter-pinned", adapter)):
        expect_no_finding(judge(staged.root, check, target=target, stored=staged))
    location = S3Location.parse(url)
    for key in (VARIANT_WEIGHTS, f"{adapter}/adapter_model.safetensors"):
        s3.delete_object(Bucket=location.bucket, Key=location.key(key))
    gone = "could not be spooled"
    expect_finding(judge(staged.root, "checkpoint-reloads", target=VARIANT_WEIGHTS,
                         stored=staged), "checkpoint-reloads.not-copied",
                   where="manifest.json $.checkpoints[2]",
                   says=(f"cannot prove {VARIANT_WEIGHTS} reloads", gone))
    expect_finding(judge(staged.root, "adapter-pinned", target=adapter, stored=staged),
                   "adapter-pinned.not-copied", where="manifest.json $.adapters[0]",
                   says=(f"cannot prove {adapter} reloads", gone))


def test_weights_checkpoint_without_model_weights_fails(campaign: CampaignBuilder) -> None:
    """An optimizer's state alone, declared as the run's weights, restores no model."""
    model = torch.nn.Linear(3, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    buffer = io.BytesIO()
    torch.save({"optimizer": optimizer.state_dict(), "epoch": 1}, buffer)
    only_listed_here(campaign)
    campaign.files["runs/control/weights.pt"] = buffer.getvalue()
    add_checkpoint(campaign, "runs/control/weights.pt", "torch")
    found = judge(campaign, "checkpoint-reloads")
    assert len(found) == 1, [f.render() for f in found]
    expect_finding(found, "checkpoint-reloads.no-weights",
                   where="manifest.json $.checkpoints[0].kind",
                   says="runs/control/weights.pt is declared as weights but holds no model "
                   "weights (it holds: optimizer, progress)")


def test_a_checkpoint_listed_twice(campaign: CampaignBuilder) -> None:
    listed = campaign.manifest["checkpoints"]
    listed.append(dict(listed[0]))
    path = listed[0]["path"]
    expect_finding(judge(campaign, "checkpoint-reloads", target=path),
                   "checkpoint-reloads.listed-twice",
                   where=f"manifest.json $.checkpoints[{len(listed) - 1}]",  # the second entry
                   says=f"{path} is listed 2 times in checkpoints")


@pytest.mark.parametrize(
    ("name", "reading"),
    [
        ("runs/control/base", "runs/control/base"),  # the folder's name inside the path
        ("out/base/runs/control/base", "runs/control/base"),  # through the folder, then again
        ("work/base/models", "models"),  # through the folder: the cut, though absent
        ("base", "."),
        ("runs/control", None),  # no folder name in it: compared as written
        ("../base/runs/control/base", None),
    ],
)
def test_a_base_path_naming_the_campaign_folder_reads_as_what_exists_in_it(
    tmp_path: Path, name: str, reading: str | None
) -> None:
    """A campaign folder named 'base' holding its shipped base in runs/control/base: the
    adapter's relative base path is that folder, not the campaign root (the example campaign
    built into a folder named 'base' was rejected)."""
    from pytest_itera.checks import Context, Options
    from pytest_itera.checks.artifacts.adapter_config import name_in_campaign
    from pytest_itera.core.campaign import load_campaign

    root = CampaignBuilder(tmp_path / "base").write()
    (root / "runs/control/base").mkdir(parents=True)
    ctx = Context(load_campaign(root), Options(), {})
    assert name_in_campaign(ctx, name) == reading

os.environ.setdefault("HF_HUB_OFFLINE", "1")
DEEPSPEED = Path(__file__).parents[2] / "reload" / "deepspeed_made"
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


# ---------------------------------------- first written in test_artifact_content.py


# ------------------------------------------------------------------ shards


def test_a_saved_model_whose_shard_was_overwritten(tmp_path: Path) -> None:
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    saved = tmp_path / "saved"
    model = GPT2LMHeadModel(GPT2Config(vocab_size=50, n_embd=8, n_layer=2, n_head=2,
                                       n_positions=16))
    model.save_pretrained(str(saved), max_shard_size="2KB")
    index = json.loads((saved / "model.safetensors.index.json").read_text())["weight_map"]
    first, second = sorted(set(index.values()))[:2]
    b = with_saved_model(tmp_path / "out", saved)
    good = b.write()
    expect_no_finding(judge(good))
    shutil.rmtree(good)
    b.files[f"runs/variant-a/model/{second}"] = b.files[f"runs/variant-a/model/{first}"]
    [problem] = judge(b.write(), "checkpoint-reloads")
    lost = sorted(k for k, v in index.items() if v == second)
    assert f"runs/variant-a/model/{second}: holds " in problem.message
    assert (f"and lacks {len(lost)} tensor(s) model.safetensors.index.json places in it: "
            f"{lost[0]}") in problem.message



def test_each_broken_checkpoint_is_refused_under_its_code(
    pytester: pytest.Pytester, campaign: CampaignBuilder, cheap: Built, trainers: Built,
    tmp_path: Path,
) -> None:
    """The breaks above, judged in-process: each checkpoint its code, place and reason."""
    marker = _broken_checkpoints(pytester, campaign, {**cheap, **trainers}, tmp_path)

    def reloads(path: str) -> Sequence[Finding]:
        return judge(campaign, "checkpoint-reloads", target=path, write=False)

    def resumes(path: str) -> Sequence[Finding]:
        return judge(campaign, "resume-complete", target=path, write=False)

    at = "manifest.json $.checkpoints"
    expect_finding(reloads("runs/control/evil.pt"), "checkpoint-reloads.no-reload",
                   where=f"{at}[0]", says="holds code: unpickling it would call posix.system")
    assert not marker.exists(), "the hostile pickle's payload ran"
    expect_finding(reloads("runs/control/empty.pt"), "checkpoint-reloads.no-reload",
                   where=f"{at}[2]", says="runs/control/empty.pt: empty file (0 bytes)")
    expect_finding(reloads("runs/control/nan.safetensors"), "checkpoint-reloads.non-finite",
                   where=f"{at}[3]", says="holds non-finite model weights: 1 NaN value")
    expect_finding(reloads("runs/control/mislabeled.pt"), "checkpoint-reloads.format",
                   where=f"{at}[5].format", says="holds 'safetensors' content, but the "
                   "manifest declares format 'torch'")
    expect_finding(reloads("../outside.pt"), "checkpoint-reloads.outside",
                   where=f"{at}[6].path", says="'..' leaves the campaign folder")
    expect_finding(reloads("runs/control/gone.pt"), "checkpoint-reloads.missing",
                   where=f"{at}[8].path", says="checkpoint runs/control/gone.pt is missing")
    expect_no_finding(reloads("runs/variant-a/declared-torch.ckpt"))  # a torch.save file
    expect_finding(resumes("runs/variant-a/weights.pt"), "resume-complete.parts-missing",
                   where=f"{at}[10]", says="a state dict is not a resume checkpoint")
    expect_finding(resumes("runs/variant-a/last.ckpt"), "resume-complete.format-cannot-hold",
                   where=f"{at}[11]", says="Lightning checkpoints store no RNG state by design")
    expect_finding(resumes("runs/resume-check/resume.pt"), "resume-complete.overclaimed",
                   where=f"{at}[13].claims", says="the manifest claims scaler for "
                   "runs/resume-check/resume.pt, which does not hold it")
    expect_no_finding(resumes("runs/resume-check/resume.pt"), "resume-complete.parts-missing")


def test_the_factory_s_checkpoints_reload(campaign: CampaignBuilder) -> None:
    expect_no_finding(judge(campaign, "checkpoint-reloads"))
    expect_no_finding(judge(campaign, "resume-complete", write=False))



def test_each_v1_adapter_pin_is_judged_under_its_code(
    pytester: pytest.Pytester, peft: Built
) -> None:
    """The pins above, judged in-process: each adapter its code, place and reason."""
    campaign, base = _v1_adapter_pins(pytester, peft)

    def pinned(name: str) -> Sequence[Finding]:
        return judge(campaign, "adapter-pinned", target=f"adapters/{name}", write=False)

    at = "manifest.json $.adapters"
    expect_no_finding(pinned("good"))
    for name, says in (("main", "'main' is a branch: it moves with every push"),
                       ("short", "'3f0c2a9' is a short commit hash (7 hex digits)"),
                       ("tag", "'v1.0' is a tag or branch name, not an immutable commit id"),
                       ("null", "is missing (null)")):
        expect_finding(pinned(name), "adapter-pinned.revision", says=says)
    expect_finding(pinned("mismatch"), "adapter-pinned.config-revision",
                   where="adapters/mismatch/adapter_config.json:",
                   says=f"records revision '{'b' * 40}', the manifest records base_revision "
                   f"'{COMMIT}'")
    finding = expect_finding(pinned("changed-base"), "adapter-pinned.base-sha256",
                             where=f"{at}[7].base_revision", says="the shipped base "
                             "base/model.safetensors does not have the sha256 recorded as "
                             "base_revision")
    assert finding.found == sha256(base)
    expect_finding(pinned("temp"), "adapter-pinned.temp-path",
                   where="adapters/temp/adapter_config.json:",
                   says="'/tmp/hf/models--org--tiny-gpt2' is a path into a temporary folder")
    expect_finding(pinned("other-base"), "adapter-pinned.config-base-differs",
                   says="names base model 'org/other', the manifest's base_model is "
                   "'org/tiny-gpt2'")
    for index, name in ((1, "shipped"), (10, "shipped-abs"), (11, "shipped-rel")):
        found = pinned(name)
        assert len(found) == 1, [f.render() for f in found]
        expect_finding(found, "adapter-pinned.v1-base-unproven", where=f"{at}[{index}].base_path",
                       says="the sha256 of one file cannot tell two bases of the same "
                       "architecture apart")

