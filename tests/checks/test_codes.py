"""Every finding of the built-in checks carries a stable code, ``<check-id>.<kind>``, for machines
reading the JSON report: statically (every ``Finding(`` of the check families names one) and on
broken campaigns (each finding in the report is coded under the check of its item)."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path
from typing import Any

import pytest

import pytest_itera.checks
from pytest_itera.checks.kinds import GENERIC, builtin_checks, render
from pytest_itera.checks.model import FAMILIES
from tests.factory import CampaignBuilder
from tests.runner import Itera, only_xdist

CHECKS_DIR = Path(pytest_itera.checks.__file__).parent
KIND = r"[a-z0-9]+(?:-[a-z0-9]+)*"


def _check_ids() -> set[str]:
    return {check.id for check in builtin_checks()}


def _declared() -> dict[str, set[str]]:
    """Check id -> the codes it declares (its KINDS), and the generic ones every check has."""
    return {check.id: {*check.kinds, *(f"{check.id}.{kind}" for kind in GENERIC)}
            for check in builtin_checks()}


DECLARED = _declared()


def _finding_calls() -> list[tuple[str, ast.Call]]:
    calls = []
    for path in sorted(CHECKS_DIR.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and node.func.id == "Finding":
                calls.append((f"{path.relative_to(CHECKS_DIR)}:{node.lineno}", node))
    return calls


def test_every_finding_the_checks_build_names_its_code() -> None:
    calls = _finding_calls()
    assert len(calls) > 200  # the scan sees the families
    uncoded = [at for at, call in calls if not any(k.arg == "code" for k in call.keywords)]
    assert uncoded == []


def test_literal_codes_are_a_check_id_and_a_kebab_kind() -> None:
    ids = _check_ids() | {"waiver"}  # waivers.py: findings on the waivers file itself
    literal = re.compile(rf"(?P<check>[a-z-]+?)\.{KIND}")
    wrong = []
    for at, call in _finding_calls():
        code = next(k.value for k in call.keywords if k.arg == "code")
        if isinstance(code, ast.Constant):
            match = literal.fullmatch(str(code.value))
            if match is None or match["check"] not in ids:
                wrong.append(f"{at}: {code.value!r}")
    assert wrong == []


def _assert_coded(checks: list[dict[str, Any]]) -> set[str]:
    """Each finding's code is ``<the item's check>.<kind>``; the codes seen."""
    codes, wrong = set(), []
    for item in checks:
        for finding in item["findings"]:
            code = finding["code"]
            codes.add(code)
            if not re.fullmatch(rf"{re.escape(item['check'])}\.{KIND}", code):
                wrong.append(f"{item['nodeid']}: {code!r} ({finding['message']})")
            elif item["check"] in DECLARED and code not in DECLARED[item["check"]]:
                wrong.append(f"{item['nodeid']}: {code!r} is not one of its check's KINDS")
    assert wrong == []
    return codes


def _broken(builder: CampaignBuilder) -> None:
    """A campaign that many checks refuse: an empty analysis, a file changed after closing,
    an unlisted file, a metric that its measurements do not say, no stop rule."""
    builder.files["analysis.md"] = b""
    builder.plan["stop_rules"] = []
    builder.run_record("control")["metrics"]["accuracy"] = 0.123
    builder.write()
    (builder.root / "stray.txt").write_text("not listed\n")
    notes = builder.root / "RELOAD.md"
    notes.write_bytes(notes.read_bytes() + b"changed after closing\n")
    builder.seal()


@only_xdist("absent")  # the codes are the findings' own data, whatever the process model
def test_a_broken_campaign_reports_a_code_per_finding(
    itera: Itera, campaign: CampaignBuilder
) -> None:
    _broken(campaign)
    _, data = itera.reported(campaign.root)
    codes = _assert_coded([c for report in data.get("campaigns", [data]) for c in
                           report["checks"]])
    # No stop rule is a schema error: the manifest item's, once (issue 26).
    assert {"analysis-present.unusable", "files-intact.unlisted", "files-intact.size",
            "manifest.invalid-document"} <= codes, sorted(codes)
    assert "rules-declared.no-rules" not in codes


def test_the_plan_gate_codes_the_closure_rules_it_reuses_under_its_own_checks(
    tmp_path: Path,
) -> None:
    """In-process: the JSON report of a plan gate carries its items, not their findings."""
    from pytest_itera.checks import plan as plan_gate
    from pytest_itera.checks.context import Context, blocked_by_contract
    from pytest_itera.checks.model import Options
    from pytest_itera.core.campaign import load_campaign

    builder = CampaignBuilder(tmp_path / "late")
    builder.plan["schedule"]["window_hours"] = 1
    builder.plan["runs"] = [r for r in builder.plan["runs"] if r["role"] != "control"]
    builder.write()
    (tmp_path / "late" / "manifest.json").unlink()
    campaign = load_campaign(tmp_path / "late")
    checks = {c.id: c for c in plan_gate.CHECKS}
    ctx = Context(campaign, Options(), checks)
    results = []
    for check in plan_gate.CHECKS:
        if check.targets is None and blocked_by_contract(campaign, check) is None:
            findings = [{"code": f.code, "message": f.message} for f in check.run(ctx, None)]
            results.append({"check": check.id, "nodeid": check.id, "findings": findings})
    codes = _assert_coded(results)
    assert {"plan-frozen-ready.no-control", "plan-schedule-fits.window"} <= codes, sorted(codes)


def test_every_literal_code_is_a_kind_its_check_declares() -> None:
    declared = set().union(*DECLARED.values())
    undeclared = []
    for at, call in _finding_calls():
        code = next(k.value for k in call.keywords if k.arg == "code")
        if isinstance(code, ast.Constant) and str(code.value).partition(".")[0] != "waiver" \
                and code.value not in declared:
            undeclared.append(f"{at}: {code.value!r}")
    assert undeclared == []


def test_every_kind_is_its_checks_own_with_a_rule_and_a_fix() -> None:
    wrong = []
    for check in builtin_checks():
        assert check.kinds, f"{check.id} declares no KINDS"
        for code, kind in check.kinds.items():
            if not re.fullmatch(rf"{re.escape(check.id)}\.{KIND}", code):
                wrong.append(f"{check.id}: {code!r} is not <check-id>.<kind>")
            if not kind.rule.strip() or not kind.fix.strip() or "\n" in kind.rule:
                wrong.append(f"{code}: a rule in one line and a fix")
    assert wrong == []


def test_each_check_id_is_its_own_module_in_its_familys_package() -> None:
    wrong = []
    for family, module in FAMILIES.items():
        for check in importlib.import_module(module).CHECKS:
            expected = f"{module}.{check.id.replace('-', '_')}"
            try:
                own = importlib.import_module(expected).CHECK
            except (ImportError, AttributeError) as exc:
                wrong.append(f"{family}: {check.id}: {expected}.CHECK: {exc}")
                continue
            if own is not check:
                wrong.append(f"{family}: {expected}.CHECK is not the family's {check.id}")
    assert wrong == []


DOCS = Path(__file__).parents[2] / "docs"


@pytest.mark.parametrize("page", ["checks.md", "plan-gate.md"])
def test_the_documented_kinds_are_the_rendered_ones(page: str) -> None:
    text = (DOCS / page).read_text("utf-8")
    assert render(text) == text, (
        f"docs/{page}: run `python -m pytest_itera.checks.kinds docs/{page}`")


def test_each_check_has_its_section_and_its_kinds_block_once() -> None:
    text = "".join((DOCS / page).read_text("utf-8") for page in ("checks.md", "plan-gate.md"))
    wrong = [check.id for check in builtin_checks()
             if text.count(f"## `{check.id}`\n") != 1
             or text.count(f"<!-- kinds: {check.id} -->") != 1]
    assert wrong == []


def test_a_kind_says_whether_its_findings_decide_or_advise() -> None:
    """A finding built to advise (advisory=True, or an expression that may be) names a kind that
    advises or says on which reading it does; a kind that only advises is never built to
    decide."""
    kinds = {code: kind for check in builtin_checks() for code, kind in check.kinds.items()}
    wrong = []
    for at, call in _finding_calls():
        keywords = {k.arg: k.value for k in call.keywords}
        code, advisory = keywords["code"], keywords.get("advisory")
        if not isinstance(code, ast.Constant) or code.value not in kinds:
            continue
        kind = kinds[code.value]
        advises = advisory is not None and not (isinstance(advisory, ast.Constant)
                                                and advisory.value is False)
        decides = advisory is None or not isinstance(advisory, ast.Constant)
        if advises and not (kind.advisory or kind.advises_when):
            wrong.append(f"{at}: {code.value} advises, its kind says it decides")
        if decides and kind.advisory:
            wrong.append(f"{at}: {code.value} decides, its kind says it only advises")
    assert wrong == []
