"""The pytest_itera_model hook is wiring: each xdist worker collects predictions-from-model
items from the judge's own conftest (docs/hooks.md's blocks, run here on the example
campaign built by example_campaign/, whose runs are MLPs)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.plugin.test_readme import _snippet
from tests.runner import Itera


def test_the_docs_model_blocks_prove_the_example_predictions_came_from_its_weights(
        example_campaign: Path, itera: Itera, pytester: pytest.Pytester) -> None:
    shutil.copytree(example_campaign, pytester.path / "out")
    (pytester.path / "models.py").write_text(_snippet("model").text, encoding="utf-8")
    pytester.makeconftest(_snippet("model-hook").text)
    result = itera("-v")
    out = result.stdout.str()
    assert result.ret == 0, out
    passed = set(re.findall(r"PASSED out/manifest.json::predictions-from-model\[([\w-]+)\]|"
                            r"::predictions-from-model\[([\w-]+)\] PASSED", out))
    # every accepted run with predictions; not the stopped variant-hot-lr, not the data check
    assert {a or b for a, b in passed} == {"pilot", "control", "variant-wide", "control-noisy",
                                           "variant-wide-noisy"}, out
