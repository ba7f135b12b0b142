"""The folder under judgment never steers its judge (issue 35, docs/safety.md).

A campaign that ships a pytest configuration (every file name pytest reads), a reload
interpreter or a price list: from the parent folder and from inside, in every command form,
the run is refused before any of it is used, the planted program never runs, and the folder
is untouched (the ``campaign`` fixture compares its tree after each test). Settings given
outside the campaign are obeyed, and the verdict line and the reports say where they came
from. Usage errors come before any worker starts: one mode each.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from tests.factory import CampaignBuilder
from tests.runner import run_pytest_command

pytestmark = pytest.mark.one_mode("usage errors and the summary's lines: before any worker")

# Every file name pytest takes settings from, each holding the same planted settings.
PLANTED = "addopts = -k files-intact\nitera_python = tools/python\nitera_ignore = RELOAD.md\n"
CONFIGS = {
    "pytest.ini": f"[pytest]\n{PLANTED}",
    ".pytest.ini": f"[pytest]\n{PLANTED}",
    "tox.ini": f"[pytest]\n{PLANTED}",
    "setup.cfg": f"[tool:pytest]\n{PLANTED}",
    "pyproject.toml": '[tool.pytest.ini_options]\naddopts = "-k files-intact"\n'
                      'itera_python = "tools/python"\n',
    "pytest.toml": '[pytest]\naddopts = ["-k", "files-intact"]\nitera_python = "tools/python"\n',
}
REFUSED = "*pytest read its configuration from *{name}, inside the folder under judgment*"


def plant(campaign: CampaignBuilder, config: str | None, marker: Path, extra: str = "") -> None:
    """The campaign ships ``config`` (with ``extra`` lines) and the interpreter it names,
    which writes ``marker``; None: the interpreter only."""
    if config is not None:
        campaign.files[config] = (CONFIGS[config] + extra).encode()
    # No literal path in it (a checkout under /tmp would fail no-temp-paths): the marker is
    # named from the script's own place, out/tools/python -> <marker's folder>/<its name>.
    assert marker.parent == campaign.root.parent
    campaign.files["tools/python"] = (f'#!/bin/sh\necho ran > "$(dirname "$0")/../../'
                                      f'{marker.name}"\nexec python3 "$@"\n').encode()
    campaign.write()
    (campaign.root / "tools/python").chmod(0o755 | stat.S_IRUSR)


@pytest.mark.parametrize("config", sorted(CONFIGS))
@pytest.mark.parametrize("form", ["out/", "out", "absolute", "two campaigns"])
def test_a_configuration_inside_the_campaign_is_refused_from_the_parent(
    pytester: pytest.Pytester, campaign: CampaignBuilder, config: str, form: str
) -> None:
    marker = pytester.path / "planted-ran"
    plant(campaign, config, marker)
    named = {"out/": ["out/"], "out": ["out"], "absolute": [str(campaign.root)],
             "two campaigns": ["out", "other"]}[form]
    if form == "two campaigns":
        CampaignBuilder(pytester.path / "other").write()
    args = [a for path in named for a in ("--itera-campaign", path)]
    result = pytester.runpytest(*args, "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([REFUSED.format(name=config)])
    result.stderr.fnmatch_lines(["*are never obeyed*--itera-campaign=out/*-c PATH*"])
    assert not marker.exists()


@pytest.mark.parametrize("config", ["pytest.ini", "pyproject.toml", "setup.cfg"])
@pytest.mark.parametrize("form", [["--itera-campaign", "."], ["--itera-campaign=."],
                                  ["--itera-campaign", "{root}"], []])
def test_a_configuration_inside_the_campaign_is_refused_from_inside(
    pytester: pytest.Pytester, campaign: CampaignBuilder, config: str, form: list[str]
) -> None:
    """``[]``: the campaign's own file names it (``itera_campaign = .``)."""
    marker = pytester.path / "planted-ran"
    names_itself = ('itera_campaign = ["."]\n' if config == "pyproject.toml"
                    else "itera_campaign = .\n")
    plant(campaign, config, marker, extra="" if form else names_itself)
    args = [a.format(root=campaign.root) for a in form]
    result = run_pytest_command(*args, "-p", "no:cacheprovider", cwd=campaign.root)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.outlines
    result.stderr.fnmatch_lines([REFUSED.format(name=config)])
    result.stderr.fnmatch_lines(["*from the folder above it, `cd * && pytest "
                                 "--itera-campaign=out/`*"])
    assert not marker.exists()


def test_with_an_equals_sign_the_parent_never_reads_the_campaigns_configuration(
    pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    """`--itera-campaign=out/` is no path argument to pytest: out/pytest.ini is not read, its
    planted -k and interpreter change nothing, and the file is judged as a listed file."""
    marker = pytester.path / "planted-ran"
    plant(campaign, "pytest.ini", marker)
    result = pytester.runpytest("--itera-campaign=out/", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK, result.outlines
    result.stdout.fnmatch_lines(["campaign *: ACCEPTED — */* checks"])
    result.stdout.no_fnmatch_line("*deselected*")
    assert not marker.exists()


def test_a_pyproject_without_pytest_settings_is_a_listed_file_like_any_other(
    pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    """A training repository's pyproject.toml kept as a parameter: pytest names it as the
    rootdir's marker, no setting comes from it, and the campaign is judged."""
    campaign.files["pyproject.toml"] = b'[project]\nname = "trainer"\n[tool.ruff]\nfix = true\n'
    campaign.write()
    result = pytester.runpytest("--itera-campaign", "out", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK, result.outlines
    result.stdout.fnmatch_lines(["campaign *: ACCEPTED — */* checks"])


def test_a_plugin_of_the_campaign_that_pytest_imported_first_is_named(
    pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    """pytest imports the -p plugins its configuration names (on its pythonpath) before it
    loads any plugin: no plugin can stop that import (docs/safety.md). The run is refused,
    naming the module that ran, and no verdict is given. (pytest would also write the
    plugin's bytecode beside it, into the folder: this run keeps none, so that the fixture's
    tree comparison still proves the plugin itself wrote nothing; docs/safety.md.)"""
    campaign.files["pytest.ini"] = b"[pytest]\npythonpath = .\naddopts = -p planted_plugin\n"
    campaign.files["planted_plugin.py"] = b"PLANTED = True\n"
    campaign.write()
    result = run_pytest_command("--itera-campaign", "out", "-p", "no:cacheprovider",
                                cwd=pytester.path, env={"PYTHONDONTWRITEBYTECODE": "1"})
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*code from the folder under judgment was imported into "
                                 "this pytest process before pytest-itera was loaded: "
                                 "*out/planted_plugin.py*"])
    result.stdout.no_fnmatch_line("*ACCEPTED*")


def test_python_m_from_inside_the_campaign_is_refused_and_python_p_is_not(
    pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    """`python -m pytest` puts the current folder first on sys.path: a json.py of the campaign
    would be imported in place of the library's."""
    import subprocess

    campaign.write()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONSAFEPATH"}
    done = subprocess.run([sys.executable, "-m", "pytest", "--itera-campaign", ".", "-p",
                           "no:cacheprovider"], cwd=campaign.root, capture_output=True,
                          text=True, env=env, timeout=300, check=False)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout
    assert "sys.path lists" in done.stderr
    assert "python -P -m pytest" in done.stderr
    result = run_pytest_command("--itera-campaign", ".", "-p", "no:cacheprovider",
                                cwd=campaign.root)
    assert result.ret == pytest.ExitCode.OK, result.outlines


@pytest.mark.parametrize(("setting", "says"), [
    ("itera_python = out/tools/python", "itera_python: *out/tools/python is inside the "
     "campaign *(an interpreter the campaign supplied would run its code)"),
    ("itera_catalogue = out/catalogue.json", "itera_catalogue: out/catalogue.json is inside "
     "the campaign *(a price list the campaign supplied would decide what its lots may cost)"),
])
def test_an_outside_ini_naming_a_program_or_a_price_list_inside_the_campaign_is_refused(
    pytester: pytest.Pytester, campaign: CampaignBuilder, setting: str, says: str
) -> None:
    marker = pytester.path / "planted-ran"
    campaign.files["catalogue.json"] = b"{}"
    plant(campaign, None, marker)
    pytester.makeini(f"[pytest]\n{setting}\n")
    result = pytester.runpytest("--itera-campaign=out", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{says}*"])
    assert not marker.exists()


def test_an_interpreter_inside_the_campaign_on_the_command_line_is_refused(
    pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    marker = pytester.path / "planted-ran"
    plant(campaign, None, marker)
    result = pytester.runpytest("--itera-campaign=out", "--itera-python", "out/tools/python",
                                "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--itera-python: *out/tools/python is inside the campaign*"])
    assert not marker.exists()


def test_a_selection_from_an_ini_file_is_said_on_the_verdict_line_and_in_the_report(
    pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    campaign.write()
    ini = pytester.makeini("[pytest]\naddopts = -k files-intact\nitera_ignore = notes/*\n")
    result = pytester.runpytest("--itera-campaign=out", "--itera-report", "r.json",
                                "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines([
        f"campaign *: INCOMPLETE — * checks ran (-k files-intact from addopts in {ini}, not "
        "the command line)",
        f"  settings in force: -k files-intact (addopts in {ini}); itera_ignore = notes/* "
        f"({ini})",
    ])
    report = json.loads((pytester.path / "r.json").read_text())
    assert report["settings"] == [
        {"setting": "-k files-intact", "source": f"addopts in {ini}", "selects": True},
        {"setting": "itera_ignore = notes/*", "source": str(ini), "selects": False},
    ]


def test_fast_mode_from_the_environment_is_said_and_the_gate_refuses_it(
    pytester: pytest.Pytester, campaign: CampaignBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    campaign.write()
    monkeypatch.setenv("PYTEST_ADDOPTS", "--itera-fast")
    result = pytester.runpytest("--itera-campaign", "out", "--itera-require-accepted",
                                "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        "campaign *: PLAUSIBLE (fast mode) — * checks (--itera-fast from PYTEST_ADDOPTS, not "
        "the command line)",
        "  settings in force: --itera-fast (PYTEST_ADDOPTS); --itera-require-accepted "
        "(command line)",
        "--itera-require-accepted: exit status 1: *PLAUSIBLE*",
    ])


def test_a_selection_typed_on_the_command_line_is_listed_but_not_flagged(
    pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    campaign.write()
    result = pytester.runpytest("--itera-campaign", "out", "-k", "files-intact",
                                "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["campaign *: INCOMPLETE — * checks ran",
                                 "  settings in force: -k files-intact (command line)"])
    result.stdout.no_fnmatch_line("*not the command line*")


def test_code_planted_in_the_campaign_is_found_by_its_module_file(tmp_path: Path) -> None:
    """The guard's own reading of sys.modules: a module whose file lies in a judged folder."""
    from pytest_itera.plugin.guard import holds_settings, inside

    (tmp_path / "out").mkdir()
    assert inside(tmp_path / "out" / "x.py", [tmp_path / "out"]) == tmp_path / "out"
    assert inside(tmp_path / "outside.py", [tmp_path / "out"]) is None
    (tmp_path / "link").symlink_to(tmp_path / "out")
    assert inside(tmp_path / "link" / "x.py", [tmp_path / "out"]) == tmp_path / "out"
    toml = tmp_path / "pyproject.toml"
    toml.write_text('[tool.black]\nline-length = 1\n')
    assert not holds_settings(toml)
    toml.write_text('[tool.pytest]\nminversion = "9"\n')
    assert holds_settings(toml)
    toml.write_text("not toml = = \n")
    assert not holds_settings(toml)


def test_an_override_and_a_family_switched_off_name_their_sources(
    pytester: pytest.Pytester, campaign: CampaignBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    campaign.write()
    monkeypatch.setenv("PYTEST_ADDOPTS", "-pno:itera.budget")
    result = pytester.runpytest("--itera-campaign", "out", "-o", "itera_ignore=notes/*",
                                "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines([
        "campaign *: INCOMPLETE — * (-p no:itera.budget from PYTEST_ADDOPTS, not the command "
        "line)",
        "  settings in force: -p no:itera.budget (PYTEST_ADDOPTS); itera_ignore = notes/* "
        "(-o itera_ignore=... (command line))",
    ])
