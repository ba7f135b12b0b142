"""The same campaigns give the same JSON report, byte for byte, in every xdist mode.

The rule tests (tests/checks/) run once, mostly in-process: what lets them is this test,
which runs a good and a broken campaign with xdist absent, off and on and compares the
closure reports (each valid against the report schema). Only what is legitimately
run-specific is normalised: when the report was made (``provenance.created``), the command
line (it names the xdist option) and how long each reload took (``reloads[].seconds``).
The wiring's tests of what a report says run in one mode on the strength of it
(``@pytest.mark.one_mode``, tests/plugin/conftest.py).
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from tests.factory import VARIANT_WEIGHTS, CampaignBuilder
from tests.plugin.test_report import validate_report
from tests.runner import ALL_MODES_ENV, XDIST_MODES, Itera, only_xdist

# Field paths set to None before the comparison, and why they differ from run to run.
RUN_SPECIFIC = {
    ("provenance", "created"): "the time the report was made",
    ("provenance", "command"): "the command line: -p no:xdist, -n 0 or -n 2",
}


def normalised(text: str) -> str:
    """The report's bytes with its run-specific fields set to None, written back as the
    plugin writes a report (which must give back the very bytes read, unnormalised)."""
    data: dict[str, Any] = json.loads(text)
    assert _dumped(data) == text, "the report is not written as json.dumps(indent=2)"
    for (section, field) in RUN_SPECIFIC:
        assert field in data[section], (section, field)
        data[section][field] = None
    for reload in data["reloads"]:
        reload["seconds"] = None  # how long each reload took
    return _dumped(data)


def _dumped(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


@only_xdist("absent")  # it runs each mode itself and compares them
def test_same_json_report_in_every_xdist_mode(itera: Itera, pytester: pytest.Pytester) -> None:
    good = CampaignBuilder(pytester.path / "good")
    good.write()
    broken = CampaignBuilder(pytester.path / "broken")
    broken.files["analysis.md"] = b""  # a listed file that says nothing
    weights = broken.files[VARIANT_WEIGHTS]
    broken.files[VARIANT_WEIGHTS] = weights[: len(weights) // 2]  # a torn checkpoint
    broken.write()
    for folder, verdict in (("good", "accepted"), ("broken", "rejected")):
        texts = {}
        for mode in XDIST_MODES:
            report = pytester.path / f"{folder}-{mode}.json"
            itera("--itera-report", str(report), campaign=folder, xdist=mode)
            texts[mode] = report.read_text()
            validate_report(json.loads(texts[mode]))
        data = json.loads(texts["absent"])
        assert data["verdict"] == verdict, folder
        assert len(data["reloads"]) == 3, folder
        assert data["provenance"]["reload_interpreter"]["probed"] is True
        first, *others = (normalised(texts[mode]) for mode in XDIST_MODES)
        for mode, other in zip(XDIST_MODES[1:], others, strict=True):
            assert other == first, f"{folder}: xdist {mode} differs from xdist absent"


# ------------------------------------------------------------------ one_mode

@pytest.mark.one_mode("it checks the marker itself")
def test_a_one_mode_test_runs_once_with_xdist_absent(
    request: pytest.FixtureRequest, xdist: str
) -> None:
    if os.environ.get(ALL_MODES_ENV) == "all":  # asked for every mode
        assert xdist in XDIST_MODES
    else:
        assert (xdist, request.node.name) == (
            "absent", f"{request.node.originalname}[xdist-absent]")


def test_one_mode_needs_a_reason_and_leaves_the_other_tests_three_modes(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest("import pytest\n"
                          "from tests.plugin.conftest import pytest_generate_tests\n"
                          "@pytest.fixture\n"
                          "def xdist():\n    return 'absent'\n")
    pytester.makepyfile(test_modes="""
        import pytest

        @pytest.mark.one_mode("the reason")
        def test_once(xdist): pass

        def test_thrice(xdist): pass

        @pytest.mark.parametrize("xdist", ["on"])
        def test_pinned(xdist): pass
    """)
    listed = pytester.runpytest("-p", "no:xdist", "--collect-only", "-q")
    assert [line for line in listed.outlines if "::" in line] == [
        "test_modes.py::test_once[xdist-absent]",
        *(f"test_modes.py::test_thrice[xdist-{mode}]" for mode in XDIST_MODES),
        "test_modes.py::test_pinned[on]"]
    pytester.makepyfile(test_modes="""
        import pytest

        @pytest.mark.one_mode()
        def test_once(xdist): pass
    """)
    refused = pytester.runpytest("-p", "no:xdist", "--collect-only", "-q")
    assert refused.ret == pytest.ExitCode.INTERRUPTED  # a collection error
    refused.stdout.fnmatch_lines(["E * test_modes.py::test_once: one_mode needs one reason: *"])
