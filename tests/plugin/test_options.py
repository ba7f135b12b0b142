"""options.py on its own: every option and its ini twin resolve once into the frozen Settings.

Each test parses a real command line and ini file (``pytester.parseconfig``) and calls
``build_settings`` directly: no session runs. A campaign folder here only needs a plan.json
(the options never load it).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from pytest_itera.checks import PlanPin
from pytest_itera.checks.context import GROUP_FILES_ABOVE
from pytest_itera.plugin.options import (
    PinLine,
    Settings,
    build_settings,
    folder_holding,
    ini_catalogue,
)

SHA_A = "a" * 64
SHA_B = "b" * 64


def folder(pytester: pytest.Pytester, name: str = "out") -> Path:
    """A folder the options take for a campaign: it holds a plan.json."""
    path = pytester.path / name
    path.mkdir(parents=True)
    (path / "plan.json").write_text("{}")
    return path


def settings(pytester: pytest.Pytester, *args: str) -> Settings:
    return build_settings(pytester.parseconfig(*args))


def usage_error(pytester: pytest.Pytester, *args: str) -> str:
    with pytest.raises(pytest.UsageError) as raised:
        settings(pytester, *args)
    return str(raised.value)


# ------------------------------------------------------------------ defaults


def test_without_any_option_the_settings_are_inactive_with_one_default_each(
    pytester: pytest.Pytester,
) -> None:
    got = settings(pytester)
    assert got == Settings(
        campaigns=(), reports=(), python=None, timeout=120.0, fast=False, plan_sha256=None,
        ignore=(), temp_patterns=(), deviation_tolerance=0.10, report_inside=False,
    )
    assert got.group_files_above == GROUP_FILES_ABOVE == 2000
    assert (got.active, got.folders, got.require_accepted) == (False, (), False)


def test_settings_are_frozen(pytester: pytest.Pytester) -> None:
    got = settings(pytester)
    with pytest.raises(dataclasses.FrozenInstanceError):
        got.timeout = 1.0  # type: ignore[misc]


# ------------------------------------------------------------------ campaigns


def test_a_relative_campaign_becomes_absolute_from_the_invocation_folder(
    pytester: pytest.Pytester,
) -> None:
    out = folder(pytester)
    got = settings(pytester, "--itera-campaign", "out")
    assert got.campaigns == (out,)
    assert got.active
    assert got.folders == (out,)


def test_a_folder_with_only_a_manifest_is_a_campaign(pytester: pytest.Pytester) -> None:
    out = pytester.mkdir("out")
    (out / "manifest.json").write_text("{}")
    assert settings(pytester, "--itera-campaign", "out").campaigns == (out,)


def test_the_ini_campaigns_are_relative_to_the_ini_file_not_the_cwd(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = folder(pytester)
    pytester.makeini("[pytest]\nitera_campaign = out\n")
    monkeypatch.chdir(pytester.mkdir("elsewhere"))
    assert settings(pytester).campaigns == (out,)


def test_the_command_line_campaigns_replace_the_ini_ones(pytester: pytest.Pytester) -> None:
    folder(pytester, "from-ini")
    cli = folder(pytester, "from-cli")
    pytester.makeini("[pytest]\nitera_campaign = from-ini\n")
    assert settings(pytester, "--itera-campaign", "from-cli").campaigns == (cli,)


def test_several_campaigns_keep_the_order_given(pytester: pytest.Pytester) -> None:
    b, a = folder(pytester, "b"), folder(pytester, "a")
    got = settings(pytester, "--itera-campaign", "b", "--itera-campaign", "a")
    assert got.campaigns == (b, a)


@pytest.mark.parametrize(
    ("make", "given", "message"),
    [
        (None, "nowhere", "--itera-campaign: nowhere: no such directory"),
        ("file", "notes.txt", "--itera-campaign: notes.txt: not a directory (give the campaign "
                              "folder)"),
        ("empty", "results", "--itera-campaign: results: not a campaign folder (it has neither "
                             "plan.json nor manifest.json)"),
    ],
    ids=["missing", "file", "no-documents"],
)
def test_a_campaign_that_is_no_campaign_folder_is_a_usage_error(
    pytester: pytest.Pytester, make: str | None, given: str, message: str
) -> None:
    if make == "file":
        (pytester.path / given).write_text("x")
    elif make == "empty":
        pytester.mkdir(given)
    assert usage_error(pytester, "--itera-campaign", given) == message


def test_the_same_campaign_twice_under_two_spellings_is_a_usage_error(
    pytester: pytest.Pytester,
) -> None:
    folder(pytester)
    assert usage_error(pytester, "--itera-campaign", "out", "--itera-campaign", "./out/") == (
        "--itera-campaign: ./out/: the same campaign is given twice")


def test_a_campaign_inside_another_is_a_usage_error(pytester: pytest.Pytester) -> None:
    outer = folder(pytester)
    inner = folder(pytester, "out/inner")
    assert usage_error(pytester, "--itera-campaign", "out", "--itera-campaign", "out/inner") == (
        f"--itera-campaign: {inner} is inside another campaign, {outer}")


# ------------------------------------------------------------------ folder_holding


@pytest.mark.parametrize(
    ("path", "strictly", "expected"),
    [
        ("/c/out", False, "/c/out"),
        ("/c/out", True, None),
        ("/c/out/runs/x.pt", True, "/c/out"),
        ("/c/out2/plan.json", False, None),  # a sibling whose name starts alike
        ("/c", False, None),
        ("/d/plan/plan.json", True, "/d/plan"),
    ],
)
def test_folder_holding_names_the_folder_a_path_is_or_lies_in(
    path: str, strictly: bool, expected: str | None
) -> None:
    roots = (Path("/c/out"), Path("/d/plan"))
    found = folder_holding(Path(path), roots, strictly=strictly)
    assert found == (Path(expected) if expected is not None else None)


def test_settings_holding_covers_campaigns_and_plan_folders(pytester: pytest.Pytester) -> None:
    out = folder(pytester)
    plan = folder(pytester, "before")
    got = settings(pytester, "--itera-campaign", "out", "--itera-plan", "before")
    assert got.folders == (out, plan)
    assert got.holding(plan / "plan.json") == plan
    assert got.holding(out, strictly=True) is None
    assert got.holding(pytester.path / "test_x.py") is None


# ------------------------------------------------------------------ numbers


@pytest.mark.parametrize(
    ("args", "ini", "timeout"),
    [((), "", 120.0), ((), "itera_timeout = 30", 30.0),
     (("--itera-timeout", "7.5"), "itera_timeout = 30", 7.5), ((), "itera_timeout =", 120.0)],
    ids=["default", "ini", "cli-wins", "blank-ini"],
)
def test_the_reload_timeout_from_the_command_line_the_ini_file_or_the_default(
    pytester: pytest.Pytester, args: tuple[str, ...], ini: str, timeout: float
) -> None:
    pytester.makeini(f"[pytest]\n{ini}\n")
    assert settings(pytester, *args).timeout == timeout


@pytest.mark.parametrize(
    ("args", "ini", "message"),
    [
        (("--itera-timeout", "0"), "", "--itera-timeout: 0.0: must be a positive number"),
        (("--itera-timeout", "-1"), "", "--itera-timeout: -1.0: must be a positive number"),
        (("--itera-timeout", "nan"), "", "--itera-timeout: nan: must be a positive number"),
        (("--itera-timeout", "inf"), "", "--itera-timeout: inf: must be a positive number"),
        ((), "itera_timeout = soon", "itera_timeout = soon: not a number"),
        ((), "itera_timeout = in a while", "itera_timeout = 'in a while': not a number"),
        # A bad ini value is named as the ini option the user wrote, not as --itera-timeout.
        ((), "itera_timeout = -5", "itera_timeout: -5.0: must be a positive number"),
        ((), "itera_timeout = inf", "itera_timeout: inf: must be a positive number"),
    ],
)
def test_a_timeout_that_is_no_positive_number_is_a_usage_error_naming_the_option(
    pytester: pytest.Pytester, args: tuple[str, ...], ini: str, message: str
) -> None:
    pytester.makeini(f"[pytest]\n{ini}\n")
    assert usage_error(pytester, *args) == message


def test_a_timeout_argparse_cannot_read_is_a_usage_error(pytester: pytest.Pytester) -> None:
    assert "argument --itera-timeout: invalid float value: 'abc'" in usage_error(
        pytester, "--itera-timeout", "abc")


@pytest.mark.parametrize(("value", "expected"), [("0.5", 0.5), ("0.01", 0.01), ("", 0.10)])
def test_the_deviation_tolerance_up_to_one_half(
    pytester: pytest.Pytester, value: str, expected: float
) -> None:
    pytester.makeini(f"[pytest]\nitera_deviation_tolerance = {value}\n")
    assert settings(pytester).deviation_tolerance == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("0.51", "itera_deviation_tolerance: 0.51: at most 0.5 (a step that ran less than half "
                 "its planned hours always needs an explanation)"),
        ("0", "itera_deviation_tolerance: 0.0: must be a positive number"),
        ("ten%", "itera_deviation_tolerance = ten%: not a number"),
    ],
)
def test_a_deviation_tolerance_out_of_range_is_a_usage_error(
    pytester: pytest.Pytester, value: str, message: str
) -> None:
    pytester.makeini(f"[pytest]\nitera_deviation_tolerance = {value}\n")
    assert usage_error(pytester) == message


@pytest.mark.parametrize(("value", "expected"), [("0", 0), ("15", 15), (" ", GROUP_FILES_ABOVE)])
def test_group_files_above_is_a_whole_number(
    pytester: pytest.Pytester, value: str, expected: int
) -> None:
    pytester.makeini(f"[pytest]\nitera_group_files_above = {value}\n")
    assert settings(pytester).group_files_above == expected


@pytest.mark.parametrize("value", ["-1", "1e3", "2.5", "many"])
def test_group_files_above_that_is_no_whole_number_is_a_usage_error(
    pytester: pytest.Pytester, value: str
) -> None:
    pytester.makeini(f"[pytest]\nitera_group_files_above = {value}\n")
    assert usage_error(pytester) == (
        f"itera_group_files_above = {value}: not a whole number of files")


# ------------------------------------------------------------------ lists and flags


def test_ignore_and_temp_patterns_are_lines_of_the_ini_file(pytester: pytest.Pytester) -> None:
    pytester.makeini(
        "[pytest]\nitera_ignore =\n    *.log\n    notes/*\n"
        "itera_temp_patterns =\n    /scratch/\n    D:\\\\tmp\n")
    got = settings(pytester)
    assert got.ignore == ("*.log", "notes/*")
    assert got.temp_patterns == ("/scratch/", "D:\\\\tmp")


def test_fast_and_report_inside_are_command_line_flags(pytester: pytest.Pytester) -> None:
    got = settings(pytester, "--itera-fast", "--itera-report-inside")
    assert (got.fast, got.report_inside) == (True, True)


@pytest.mark.parametrize(
    ("args", "ini", "expected"),
    [((), "", False), ((), "itera_require_accepted = true", True),
     (("--itera-require-accepted",), "", True),
     (("--itera-require-accepted",), "itera_require_accepted = false", True)],
    ids=["default", "ini", "cli", "cli-over-ini"],
)
def test_require_accepted_from_the_flag_or_its_ini_twin(
    pytester: pytest.Pytester, args: tuple[str, ...], ini: str, expected: bool
) -> None:
    pytester.makeini(f"[pytest]\n{ini}\n")
    assert settings(pytester, *args).require_accepted is expected


@pytest.mark.parametrize(
    ("args", "ini", "expected"),
    [
        ((), "", None),
        (("--itera-python", "python3.12"), "", "python3.12"),  # a name: looked up on PATH
        ((), "itera_python = /opt/venv/bin/python", "/opt/venv/bin/python"),
        (("--itera-python", "/usr/bin/python3"), "itera_python = /opt/p", "/usr/bin/python3"),
    ],
    ids=["default", "name", "ini", "cli-wins"],
)
def test_the_reload_interpreter_as_given(
    pytester: pytest.Pytester, args: tuple[str, ...], ini: str, expected: str | None
) -> None:
    pytester.makeini(f"[pytest]\n{ini}\n")
    assert settings(pytester, *args).python == expected


def test_a_relative_interpreter_path_is_resolved_from_the_invocation_folder(
    pytester: pytest.Pytester,
) -> None:
    got = settings(pytester, "--itera-python", "venv/bin/python")
    assert got.python == str(pytester.path / "venv/bin/python")


def test_a_home_relative_interpreter_path_is_expanded(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", "/home/reviewer")
    assert settings(pytester, "--itera-python", "~/venv/bin/python").python == (
        "/home/reviewer/venv/bin/python")


# ------------------------------------------------------------------ plan pins


def test_the_plan_sha256_is_lower_cased_and_trimmed(pytester: pytest.Pytester) -> None:
    got = settings(pytester, "--itera-plan-sha256", f" {'AB' * 32} ")
    assert got.plan_sha256 == "ab" * 32


@pytest.mark.parametrize("value", ["abc", "g" * 64, "a" * 65])
def test_a_plan_sha256_that_is_no_sha256_is_a_usage_error(
    pytester: pytest.Pytester, value: str
) -> None:
    assert usage_error(pytester, "--itera-plan-sha256", value) == (
        f"--itera-plan-sha256: {value!r} is not a 64-hex sha256")


def test_pin_lines_bare_by_folder_and_by_id_with_comments_skipped(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeini(
        "[pytest]\nitera_plan_sha256 =\n"
        f"    {SHA_A.upper()}\n    # a comment\n    out = {SHA_B}\n    tiny-2026-11={SHA_A}\n")
    got = settings(pytester)
    assert got.plan_pins == (
        PinLine(None, None, SHA_A),
        PinLine("out", pytester.path / "out", SHA_B),
        PinLine("tiny-2026-11", pytester.path / "tiny-2026-11", SHA_A),
    )


def test_pins_for_a_campaign_by_folder_by_id_or_for_every_campaign(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeini(f"[pytest]\nitera_plan_sha256 =\n    out = {SHA_A}\n    rings = {SHA_B}\n")
    got = settings(pytester)
    here = pytester.path
    assert got.pins_for(here / "out", "whatever") == (PlanPin(SHA_A, "itera_plan_sha256 (out)"),)
    assert got.pins_for(here / "other", "rings") == (PlanPin(SHA_B, "itera_plan_sha256 (rings)"),)
    assert got.pins_for(here / "other", "other") == ()
    assert got.unpinned(here / "other", None)
    assert not got.unpinned(here / "out", None)


def test_the_command_line_pin_replaces_every_ini_pin(pytester: pytest.Pytester) -> None:
    pytester.makeini(f"[pytest]\nitera_plan_sha256 =\n    {SHA_A}\n    out = {SHA_A}\n")
    got = settings(pytester, "--itera-plan-sha256", SHA_B)
    assert got.pins_for(pytester.path / "out", "x") == (PlanPin(SHA_B, "--itera-plan-sha256"),)


@pytest.mark.parametrize(
    ("line", "message"),
    [(f"= {SHA_A}", f"itera_plan_sha256: '= {SHA_A}': name the campaign before '=' "
                    "('<campaign folder or id> = <sha256>')"),
     ("out = 1234", "itera_plan_sha256: ' 1234' is not a 64-hex sha256")],
)
def test_a_malformed_pin_line_is_a_usage_error(
    pytester: pytest.Pytester, line: str, message: str
) -> None:
    pytester.makeini(f"[pytest]\nitera_plan_sha256 =\n    {line}\n")
    assert usage_error(pytester) == message


# ------------------------------------------------------------------ reports


def test_reports_of_every_type_resolved_from_the_invocation_folder(
    pytester: pytest.Pytester,
) -> None:
    got = settings(pytester, "--itera-report", "r.json", "--itera-report", "sub/R.MD",
                   "--itera-report", "r.html")
    here = pytester.path
    assert got.reports == (here / "r.json", here / "sub/R.MD", here / "r.html")


def test_a_report_of_an_unknown_type_is_a_usage_error(pytester: pytest.Pytester) -> None:
    assert usage_error(pytester, "--itera-report", "r.txt") == (
        "--itera-report: r.txt: unknown report type; use a .json, .md or .html path")


def test_a_report_inside_a_campaign_is_refused_unless_forced(pytester: pytest.Pytester) -> None:
    out = folder(pytester)
    assert usage_error(pytester, "--itera-campaign", "out", "--itera-report", "out/r.json") == (
        f"--itera-report: {out / 'r.json'} is inside the campaign {out}, which is read-only; "
        "write it elsewhere or pass --itera-report-inside")
    forced = settings(pytester, "--itera-campaign", "out", "--itera-report", "out/r.json",
                      "--itera-report-inside")
    assert forced.reports == (out / "r.json",)


# ------------------------------------------------------------------ plans before renting


def test_a_plan_file_and_a_plan_folder(pytester: pytest.Pytester) -> None:
    (pytester.path / "p.json").write_text("{}")
    before = folder(pytester, "before")
    got = settings(pytester, "--itera-plan", "p.json", "--itera-plan", "before")
    assert got.plans == (pytester.path / "p.json", before / "plan.json")
    assert got.plan_folders == (before,)
    assert got.campaigns == ()
    assert got.active


def test_the_ini_plans_apply_without_the_option(pytester: pytest.Pytester) -> None:
    (pytester.path / "p.json").write_text("{}")
    pytester.makeini("[pytest]\nitera_plan = p.json\n")
    assert settings(pytester).plans == (pytester.path / "p.json",)


def test_plan_paths_that_cannot_be_judged_are_usage_errors(pytester: pytest.Pytester) -> None:
    closed = folder(pytester, "closed")
    (closed / "manifest.json").write_text("{}")
    pytester.mkdir("bare")
    (pytester.path / "p.json").write_text("{}")
    folder(pytester)
    assert usage_error(pytester, "--itera-plan", "closed") == (
        "--itera-plan: closed: the campaign has a manifest.json, it is closed: accept it with "
        "--itera-campaign")
    assert usage_error(pytester, "--itera-plan", "bare") == (
        "--itera-plan: bare: the folder has no plan.json")
    assert usage_error(pytester, "--itera-plan", "nothing.json") == (
        "--itera-plan: nothing.json: no such file or folder")
    assert usage_error(pytester, "--itera-plan", "p.json", "--itera-plan", "./p.json") == (
        "--itera-plan: ./p.json: the same plan is given twice")
    assert usage_error(pytester, "--itera-campaign", "out", "--itera-plan", "out") == (
        "--itera-plan: out is also given to --itera-campaign")


# ------------------------------------------------------------------ catalogue


def test_a_catalogue_that_cannot_be_read_is_a_usage_error_once_a_campaign_is_given(
    pytester: pytest.Pytester,
) -> None:
    folder(pytester)
    pytester.makeini("[pytest]\nitera_catalogue = prices.json\n")
    assert settings(pytester).campaigns == ()  # inert: the catalogue is not read
    message = usage_error(pytester, "--itera-campaign", "out")
    assert message.startswith(
        f"itera_catalogue = prices.json: {pytester.path / 'prices.json'}: cannot be read")


def test_the_catalogue_is_relative_to_the_ini_file_and_read_once(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_itera.core.money import example_catalogue

    shipped = Path(__file__).parents[2] / "pytest_itera/catalogues/iteragpu-rtx4090.json"
    (pytester.path / "prices.json").write_text(shipped.read_text())
    pytester.makeini("[pytest]\nitera_catalogue = prices.json\n")
    monkeypatch.chdir(pytester.mkdir("sub"))
    config = pytester.parseconfig()
    first = ini_catalogue(config)
    assert first is not None
    assert first.offers == example_catalogue().offers
    (pytester.path / "prices.json").unlink()
    assert ini_catalogue(config) is first


def test_a_catalogue_with_duplicate_keys_is_a_usage_error(pytester: pytest.Pytester) -> None:
    folder(pytester)
    (pytester.path / "prices.json").write_text('{"provider": "a", "provider": "b"}')
    pytester.makeini("[pytest]\nitera_catalogue = prices.json\n")
    assert usage_error(pytester, "--itera-campaign", "out") == (
        f"itera_catalogue = prices.json: {pytester.path / 'prices.json'}: not acceptable JSON: "
        "duplicate key 'provider' in one object")


# ------------------------------------------------------------------ the gate's files


def waivers_file(path: Path) -> Path:
    path.write_text(json.dumps({"waivers": [{
        "check": "no-empty-files", "target": "*", "reason": "agreed", "approved_by": "M. R.",
        "expires": "2999-01-01"}]}))
    return path


def test_the_waivers_file_is_read_into_the_settings(pytester: pytest.Pytester) -> None:
    folder(pytester)
    path = waivers_file(pytester.path / "w.json")
    got = settings(pytester, "--itera-campaign", "out", "--itera-waivers", "w.json")
    assert got.waivers_file == path
    assert [(w.check, w.target, w.approved_by) for w in got.waivers] == [
        ("no-empty-files", "*", "M. R.")]


def test_the_waivers_ini_twin_is_relative_to_the_ini_file(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = waivers_file(pytester.path / "w.json")
    pytester.makeini("[pytest]\nitera_waivers = w.json\n")
    monkeypatch.chdir(pytester.mkdir("sub"))
    assert settings(pytester).waivers_file == path


@pytest.mark.parametrize(
    ("args", "ini", "message"),
    [
        (("--itera-waivers", "none.json"), "", "--itera-waivers: none.json: no such file"),
        ((), "itera_waivers = none.json", "itera_waivers = none.json: no such file"),
    ],
)
def test_a_missing_waivers_file_is_a_usage_error(
    pytester: pytest.Pytester, args: tuple[str, ...], ini: str, message: str
) -> None:
    pytester.makeini(f"[pytest]\n{ini}\n")
    assert usage_error(pytester, *args) == message


def test_a_waivers_file_that_is_no_waivers_file_is_a_usage_error(
    pytester: pytest.Pytester,
) -> None:
    (pytester.path / "w.yaml").write_text("waivers: []")
    assert usage_error(pytester, "--itera-waivers", "w.yaml") == (
        f"--itera-waivers: {pytester.path / 'w.yaml'}: unknown waivers file type; use a .toml "
        "or .json file")


def test_a_waivers_file_linked_from_inside_the_campaign_is_refused(
    pytester: pytest.Pytester,
) -> None:
    out = folder(pytester)
    waivers_file(out / "w.json")
    (pytester.path / "link.json").symlink_to(out / "w.json")
    assert usage_error(pytester, "--itera-campaign", "out", "--itera-waivers", "link.json") == (
        f"--itera-waivers: link.json is inside the campaign {out}: keep it outside (a campaign "
        "cannot vouch for itself)")


def test_seal_options_are_checked_together(pytester: pytest.Pytester) -> None:
    folder(pytester)
    folder(pytester, "second")
    (pytester.path / "key.pem").write_text("not a key")
    camp = ("--itera-campaign", "out")
    assert usage_error(pytester, *camp, "--itera-seal-key", "key.pem") == (
        "--itera-seal-key and --itera-seal-pubkey go with --itera-seal or --itera-verify-seal")
    assert usage_error(pytester, *camp, "--itera-campaign", "second", "--itera-seal",
                       "s.json") == (
        "--itera-seal: a seal covers one campaign; give exactly one --itera-campaign")
    assert usage_error(pytester, *camp, "--itera-seal", "s.json", "--itera-fast") == (
        "--itera-seal: not with --itera-fast (a seal needs a full verdict)")
    assert usage_error(pytester, *camp, "--itera-seal", "s.json") == (
        "--itera-seal: the seal carries the JSON report's sha256: add --itera-report PATH.json")
    assert usage_error(pytester, *camp, "--itera-seal", "out/s.json") == (
        "--itera-seal: out/s.json is inside the campaign "
        f"{pytester.path / 'out'}: keep it outside (a campaign cannot vouch for itself)")
    assert usage_error(pytester, *camp, "--itera-seal", "s.json", "--itera-report", "r.json",
                       "--itera-seal-key", "key.pem").startswith(
        f"--itera-seal-key: {pytester.path / 'key.pem'}: not a usable PEM private key")


def test_verify_seal_takes_no_report_and_no_private_key(pytester: pytest.Pytester) -> None:
    folder(pytester)
    (pytester.path / "s.json").write_text("{}")
    (pytester.path / "key.pem").write_text("x")
    camp = ("--itera-campaign", "out", "--itera-verify-seal", "s.json")
    assert usage_error(pytester, *camp, "--itera-seal", "t.json") == (
        "--itera-seal writes a seal, --itera-verify-seal checks one: give one")
    assert usage_error(pytester, *camp, "--itera-report", "r.json") == (
        "--itera-verify-seal only re-checks a sealed folder; it writes no closure report "
        "(--itera-report)")
    assert usage_error(pytester, *camp, "--itera-seal-key", "key.pem") == (
        "--itera-verify-seal checks with a public key: --itera-seal-pubkey")
    got = settings(pytester, *camp)
    assert (got.verify_seal, got.seal) == (pytester.path / "s.json", None)
