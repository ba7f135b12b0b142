"""README is the user's first page: its examples must stay true."""

from __future__ import annotations

import json
import re
from pathlib import Path

from pytest_itera.campaign import parse_json, validate

README = Path(__file__).resolve().parent.parent / "README.md"


def _json_blocks() -> list[str]:
    return re.findall(r"```json\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_readme_plan_and_manifest_examples_are_schema_valid() -> None:
    """Every plan or manifest README shows, of either contract version, is schema-valid."""
    blocks = [parse_json(b) for b in _json_blocks()]
    plans = [b for b in blocks if str(b.get("format", "")).startswith("itera-plan/")]
    manifests = [b for b in blocks if str(b.get("format", "")).startswith("itera-manifest/")]
    assert plans
    assert manifests
    for plan in plans:
        assert validate("plan", plan) == [], json.dumps(plan)[:200]
    for manifest in manifests:
        assert validate("manifest", manifest) == [], json.dumps(manifest)[:200]


def test_readme_names_the_two_commands_that_ci_runs() -> None:
    text = README.read_text(encoding="utf-8")
    assert "bash scripts/demo" in text
    assert "bash scripts/test" in text
    ci = (README.parent / ".ci" / "run").read_text(encoding="utf-8")
    assert "bash scripts/test" in ci
