"""--itera-fast: structure, ids, sizes, empty files; no hashes, no reloads, never "accepted".

Also proves the pytest process never imports torch (a checkpoint is only ever loaded by the
reload server, under its own interpreter): start-up stays cheap (issue 8, target c).
"""

from __future__ import annotations

import importlib
import json
import os
import pickle

import pytest

from pytest_itera.checks.model import FAMILIES
from tests.factory import CampaignBuilder, expect, sha256
from tests.runner import SAME_REPORT, Itera

HOSTILE = "runs/resume-check/last.pt"

# Written at the pytester root (never inside the campaign): records what the pytest process
# imported and whether a Reloader was ever made, without changing what either does.
PROBE = """
import json, os, sys
import pytest

made = []

def pytest_configure(config):
    from pytest_itera import reload
    original = reload.Reloader.__init__
    def spy(self, *args, **kwargs):
        made.append(1)
        original(self, *args, **kwargs)
    reload.Reloader.__init__ = spy

def pytest_unconfigure(config):  # one file per process: the controller and each worker
    path = os.path.join(os.environ["ITERA_PROBE_DIR"], f"{os.getpid()}.json")
    with open(path, "w") as out:
        json.dump({"torch": "torch" in sys.modules, "reloaders": len(made)}, out)
"""


class _Hostile:
    """Unpickling this would run a shell command: weights_only=True must refuse it."""

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, ("echo pwned > pwned.txt",))


def fast_check_ids() -> set[str]:
    ids = set()
    for module in FAMILIES.values():
        ids |= {c.id for c in importlib.import_module(module).CHECKS if c.fast}
    return ids



def with_hostile_checkpoint(campaign: CampaignBuilder) -> None:
    campaign.files[HOSTILE] = pickle.dumps({"model": _Hostile()}, protocol=2)
    campaign.manifest["checkpoints"] = [
        {"path": HOSTILE, "run": "resume-check", "format": "torch", "kind": "resume",
         "claims": ["model"]}
    ]


def probed_run(itera: Itera, *args: str) -> tuple[pytest.RunResult, dict[str, int]]:
    """A real pytest process (plugins load as installed), with the probe conftest: whether
    any of its processes imported torch, and how many Reloaders they made."""
    itera.pytester.makeconftest(PROBE)
    out = itera.pytester.mkdir("probes")
    itera.pytester._monkeypatch.setenv("ITERA_PROBE_DIR", str(out))
    result = itera(*args, subprocess=True)
    probes = [json.loads(p.read_text()) for p in out.iterdir()]
    assert len(probes) == (3 if itera.distributed else 1), probes  # workers are probed too
    return result, {"torch": any(p["torch"] for p in probes),
                    "reloaders": sum(p["reloaders"] for p in probes)}


def test_verdict_is_plausible_never_accepted(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    campaign.write()

    result = itera("--itera-fast")

    assert result.ret == 0
    expect(result, "campaign tiny-2026-11: PLAUSIBLE (fast mode) — */* checks")
    assert "ACCEPTED" not in result.stdout.str()
    full = itera()
    expect(full, "campaign tiny-2026-11: ACCEPTED — */* checks")  # the same campaign, full look


def test_only_fast_checks_are_collected(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    campaign.write()

    result = itera("--itera-fast", "--collect-only", "-q")

    collected = collected_checks(result)
    assert {"manifest", "files-intact", "no-empty-files"} <= collected <= fast_check_ids()
    assert {"plan-frozen", "no-temp-paths"}.isdisjoint(collected)  # they hash and scan


def collected_checks(result: pytest.RunResult) -> set[str]:
    """Check ids of the items a --collect-only -q run lists."""
    return {line.split("::", 1)[1].split("[")[0] for line in result.outlines
            if "manifest.json::" in line}


def test_no_hashes_same_size_different_bytes_passes(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    campaign.write()
    path = campaign.root / "runs/control/measurements.jsonl"
    data = path.read_bytes()
    path.write_bytes(data.replace(b"0.75", b"0.95"))
    campaign.seal()

    fast = itera("--itera-fast", "-k", "files-intact and control/measurements")
    full = itera("-k", "files-intact and control/measurements")

    fast.assert_outcomes(passed=1)
    full.assert_outcomes(failed=1)
    expect(full, "*runs/control/measurements.jsonl does not have the sha256 recorded*",
           f"    found:    {sha256(path.read_bytes())}")


@pytest.mark.one_mode("what a fast item says: the items run fast on the workers "
                      "(test_no_hashes_same_size_different_bytes_passes, in every xdist mode)")
def test_sizes_are_still_checked(itera: Itera, campaign: CampaignBuilder) -> None:
    campaign.write()
    with (campaign.root / "RELOAD.md").open("ab") as handle:
        handle.write(b"more\n")
    campaign.seal()

    result = itera("--itera-fast", "-k", "files-intact and RELOAD")

    result.assert_outcomes(failed=1)
    size = len(campaign.files["RELOAD.md"])
    expect(result, f"*RELOAD.md is {size + 5} bytes, the manifest says {size}",
           "campaign tiny-2026-11: REJECTED — 1 of 1 checks failed")


def test_no_reload_of_a_hostile_checkpoint(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    with_hostile_checkpoint(campaign)
    campaign.write()

    result, probe = probed_run(itera, "--itera-fast")

    assert result.ret == 0, result.stdout.str()
    expect(result, "campaign tiny-2026-11: PLAUSIBLE (fast mode) — */* checks")
    assert probe == {"torch": False, "reloaders": 0}
    assert not (pytester.path / "pwned.txt").exists()
    listed = itera("--itera-fast", "--collect-only", "-q")
    assert not any(check.startswith("checkpoint") for check in collected_checks(listed))


def test_the_full_look_reloads_what_fast_mode_skips(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    with_hostile_checkpoint(campaign)
    campaign.write()

    collected = itera("--collect-only", "-q").stdout.str()
    if "::checkpoint-reloads[" not in collected:
        pytest.skip("no checkpoint-reloads check registered in this build")
    result = itera("-k", "checkpoint-reloads")

    result.assert_outcomes(failed=1)
    expect(result, "*holds code: unpickling it would call posix.system (os.system)*")
    assert not (pytester.path / "pwned.txt").exists()


@pytest.mark.one_mode(f"{SAME_REPORT}; test_verdict_is_plausible_never_accepted checks the "
                      "fast verdict in every mode")
def test_json_report_says_plausible(itera: Itera, campaign: CampaignBuilder) -> None:
    campaign.write()

    result, report = itera.reported(campaign.root, "--itera-fast")

    assert result.ret == 0
    assert (report["verdict"], report["fast"]) == ("plausible (fast mode)", True)
    assert {c["outcome"] for c in report["checks"]} == {"passed"}


def test_a_full_run_never_imports_torch_in_the_pytest_process(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    campaign.write()

    result, probe = probed_run(itera)

    assert result.ret == 0, result.stdout.str()
    expect(result, "campaign tiny-2026-11: ACCEPTED — */* checks")
    assert probe["torch"] is False
