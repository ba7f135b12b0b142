"""The verdict as the gate (issue 17): --itera-require-accepted, the user's acceptance tests,
the reload environment, terminal hygiene."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from tests.factory import CampaignBuilder, expect
from tests.plugin.test_integration import accepting
from tests.runner import Itera

GATE = "--itera-require-accepted"
ACCEPTANCE_TESTS = '''
def test_variant_beats_control(itera_campaign):
    runs = {r.id: r for r in itera_campaign.manifest.runs}
    assert runs["variant-a"].metrics["accuracy"] > runs["control"].metrics["accuracy"]

def test_control_reaches_the_threshold(itera_campaign):
    runs = {r.id: r for r in itera_campaign.manifest.runs}
    assert runs["control"].metrics["accuracy"] >= itera_campaign.plan.decision.threshold

def test_unrelated():
    assert True
'''


def gate_lines(result: pytest.RunResult) -> list[str]:
    return [line for line in result.stdout.lines if line.startswith(f"{GATE}:")]


# ------------------------------------------------------------------ 1. the one-line gate


@pytest.mark.parametrize(("args", "ran"), [pytest.param((), True, id="accepted"),
                                            pytest.param(("--collect-only",), False,
                                                         id="collect-only")])
def test_an_accepted_campaign_or_a_collection_passes_the_gate(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder, args: tuple[str, ...],
    ran: bool,
) -> None:
    """An accepted campaign passes the gate and writes its summary and report; under
    --collect-only nothing ran: no summary, no report either, and no gate line."""
    campaign.write()
    result = itera(*args, GATE, "--itera-report", "r.json")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert gate_lines(result) == []
    assert ("pytest-itera" in result.stdout.str()) is ran
    assert (pytester.path / "r.json").exists() is ran


def test_a_selection_fails_the_gate_saying_why(itera: Itera, campaign: CampaignBuilder) -> None:
    short_of_accepted_fails_the_gate(
        itera, campaign, ("-k", "manifest"),
        "campaign tiny-2026-11: INCOMPLETE — * of 70 checks ran")


@pytest.mark.one_mode("the gate reads the verdict, whose reasons test_integration.py and "
                      "test_fast_mode.py check in every xdist mode; the selection case above "
                      "checks the gate itself in every mode")
@pytest.mark.parametrize(
    ("args", "why"),
    [
        (("-p", "no:itera.budget", "-k", "not reloads and not resume"),
         "campaign tiny-2026-11: INCOMPLETE — *check families switched off: itera.budget"),
        (("--itera-fast",), "campaign tiny-2026-11: PLAUSIBLE (fast mode) — */* checks"),
    ],
    ids=["family-off", "fast"],
)
def test_anything_else_short_of_accepted_fails_the_gate_saying_why(
    itera: Itera, campaign: CampaignBuilder, args: tuple[str, ...], why: str
) -> None:
    short_of_accepted_fails_the_gate(itera, campaign, args, why)


def short_of_accepted_fails_the_gate(
    itera: Itera, campaign: CampaignBuilder, args: tuple[str, ...], why: str
) -> None:
    """Without the gate: pytest's exit status; with it: 1, and one line saying ``why``."""
    campaign.write()
    plain = itera(*args)
    assert plain.ret == pytest.ExitCode.OK  # without the option: pytest's semantics
    assert gate_lines(plain) == []
    gated = itera(*args, GATE)
    assert gated.ret == pytest.ExitCode.TESTS_FAILED
    expect(gated, f"{GATE}: exit status 1: {why}")
    assert len(gate_lines(gated)) == 1


def test_the_ini_twin_and_the_quietest_output(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    campaign.write()
    pytester.makeini("[pytest]\nitera_require_accepted = true\n")
    result = itera("-k", "manifest", "-qq")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "pytest-itera" not in result.stdout.str()  # no summary under -qq ...
    assert len(gate_lines(result)) == 1  # ... but the reason for the exit status


def test_a_rejected_campaign_keeps_pytests_exit_status(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    campaign.files["analysis.md"] = b""
    campaign.write()
    result = itera(GATE, "-k", "analysis or empty")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    expect(result, f"{GATE}: exit status 1: campaign tiny-2026-11: REJECTED — 2 of 4 checks failed")


def test_the_controller_decides_under_xdist(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    """Only an acceptance test is deselected: the controller learns it from the workers (the
    test's node id names no campaign folder)."""
    result = accepting(itera, pytester, campaign, ACCEPTANCE_TESTS, GATE, "-k",
                       "not control_reaches")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    lines = gate_lines(result)
    assert len(lines) == 1
    counts = re.search(r"INCOMPLETE — (\d+) of (\d+) checks ran$", lines[0])
    assert counts is not None, lines
    assert int(counts[1]) == int(counts[2]) - 1


# ------------------------------------------------------------------ 2. acceptance tests count


def test_a_failing_acceptance_test_rejects_the_campaign(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    result = accepting(itera, pytester, campaign, ACCEPTANCE_TESTS,
                       "-k", "not reloads and not resume",
                       "--itera-report", "r.json", "--itera-report", "r.md")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    expect(result, "campaign tiny-2026-11: REJECTED — 1 of * checks failed",
           "  acceptance test test_acceptance.py::test_control_reaches_the_threshold: failed",
           "  acceptance test test_acceptance.py::test_variant_beats_control: passed")
    data = json.loads((pytester.path / "r.json").read_text())
    tests = {c["nodeid"]: c for c in data["checks"] if c["check"] == "acceptance-test"}
    assert set(tests) == {"test_acceptance.py::test_variant_beats_control",
                          "test_acceptance.py::test_control_reaches_the_threshold"}
    failing = tests["test_acceptance.py::test_control_reaches_the_threshold"]
    assert (failing["outcome"], failing["scope"], failing["target"]) == (
        "failed", "test", "test_acceptance.py::test_control_reaches_the_threshold")
    assert "assert 0.75 >= 0.8" in failing["message"]
    md = (pytester.path / "r.md").read_text()
    assert "| test_acceptance.py::test_control_reaches_the_threshold | failed |" in md
    assert md.index("## Failures") < md.index("## Runs")  # rejected: failures first


def test_a_deselected_acceptance_test_makes_the_verdict_incomplete(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    result = accepting(itera, pytester, campaign, ACCEPTANCE_TESTS, "-k", "not control_reaches")
    expect(result, "campaign tiny-2026-11: INCOMPLETE — * of * checks ran")
    assert result.ret == pytest.ExitCode.OK


# ------------------------------------------------------------------ 6. the environment


def _python_without(tmp_path: Path, package: str) -> str:
    """This interpreter, with ``package`` made unimportable (torch stays)."""
    script = tmp_path / f"python-without-{package}"
    blocker = tmp_path / f"block_{package}"
    blocker.mkdir()
    # Not named sitecustomize: Debian's Python has its own, already imported at start-up.
    (blocker / "itera_block.py").write_text(
        "import importlib.abc, sys\n"
        "class _Block(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        f"        if name == {package!r} or name.startswith({package!r} + '.'):\n"
        f"            raise ModuleNotFoundError('No module named ' + repr(name))\n"
        "        return None\n"
        "sys.meta_path.insert(0, _Block())\n"
    )
    # -I ignores PYTHONPATH: the wrapper drops it and puts the blocker first itself.
    script.write_text(  # called as: python -I -B -u SCRIPT ARGS (the probe, the server)
        "#!/bin/sh\nshift 3\n"
        f"exec {sys.executable} -I -B -u -c 'import sys; sys.path.insert(0, \"{blocker}\"); "
        "import itera_block, runpy; sys.argv = sys.argv[1:]; "
        "runpy.run_path(sys.argv[0], run_name=\"__main__\")' \"$@\"\n"
    )
    script.chmod(0o755)
    return str(script)


@pytest.mark.parametrize("package", ["numpy", "safetensors"])
def test_a_missing_package_in_the_reload_interpreter_is_a_usage_error(
    itera: Itera, campaign: CampaignBuilder, tmp_path: Path, package: str
) -> None:
    """The default campaign's resume checkpoints claim RNG states (numpy's among them); an
    adapter folder holding a .safetensors file needs safetensors."""
    why = "* (claims RNG states)"
    if package == "safetensors":
        campaign.files["runs/control/adapter/adapter_model.safetensors"] = b"not read"
        campaign.files["runs/control/adapter/adapter_config.json"] = b"{}"
        campaign.manifest["adapters"] = [{"path": "runs/control/adapter", "run": "control",
                                          "base_model": "tiny", "base_revision": "0" * 40}]
        why = "runs/control/adapter"
    campaign.write()
    python = _python_without(tmp_path, package)
    result = itera("--itera-python", python)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stderr.fnmatch_lines([
        f"ERROR: pytest-itera: --itera-python {python}: the reload interpreter lacks {package} "
        f"(for {why}). The environment is not evidence: install it there "
        f"(pip install {package})*"])
    assert "REJECTED" not in result.stdout.str()


def test_safetensors_needed_by_a_declared_format(
    pytester: pytest.Pytester, campaign: CampaignBuilder, tmp_path: Path
) -> None:
    from pytest_itera.core import provenance
    from pytest_itera.core.campaign import load_campaign

    campaign.write()
    plain = load_campaign(campaign.root)
    assert "safetensors" not in provenance.needed_packages(plain)
    campaign.files["runs/variant-a/model.safetensors"] = b"{}"
    campaign.manifest["checkpoints"].append({"path": "runs/variant-a/model.safetensors",
                                             "run": "variant-a", "format": "safetensors",
                                             "kind": "weights"})
    campaign.write()
    needs = provenance.needed_packages(load_campaign(campaign.root))
    assert needs["safetensors"] == "runs/variant-a/model.safetensors"
    without = {"probed": True, "torch": "2.13.0", "numpy": "2.0", "safetensors": None}
    assert provenance.missing_packages([load_campaign(campaign.root)], without) == [
        ("safetensors", "runs/variant-a/model.safetensors")]
    assert provenance.missing_packages([load_campaign(campaign.root)], {"probed": False}) == []


# ------------------------------------------------------------------ 7. terminal hygiene

ESC_NAME = "notes-\x1b[2J.txt"


def test_control_characters_from_campaign_data_never_reach_the_terminal(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    campaign.files[ESC_NAME] = b"unlisted\n"
    campaign.unlisted.add(ESC_NAME)
    campaign.write()
    result = itera("--color=no", "-rA", "-k", "files-intact")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    text = result.stdout.str() + result.stderr.str()
    assert "\x1b" not in text
    assert "notes-\\x1b[2J.txt" in text
