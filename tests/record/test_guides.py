"""The guides (docs/guide-torch.md, guide-trainer.md, guide-lightning.md) run as a user runs them.

Each guide is a complete script (its one ```python block) and the commands around it (its
```console block): ``python -m pytest_itera new-plan draft --campaign <name>``, the script
beside draft/, then ``pytest --itera-campaign out``. Each script runs
once per module, in-process, in a folder of its own, on its played clock (``PLAYED_CLOCK =
True``: seconds of CPU play the planned hours); its ``closure`` (close() ran the checks in the
process, with the reloads in a fresh one) must be PLAYED CLOCK (every check passed, never
ACCEPTED: the hours were not measured) and must print what the guide shows that command
printing. One guide's folder is also judged by a real pytest session.

The shown counts of checks (``95/95``) are compared as ``*``: a check added to the plugin must
not break the guides; the verdict, the runs, their roles and statuses, the budget and the
schedule are compared as written.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
import warnings
from pathlib import Path
from typing import Any

import pytest

from pytest_itera.cli import main as itera_cli
from tests.runner import REPO, Itera

GUIDES = ("torch", "trainer", "lightning")
PYTEST_COMMAND = "$ pytest --itera-campaign out"


def guide(name: str) -> Path:
    return REPO / "docs" / f"guide-{name}.md"


def fenced(path: Path, lang: str) -> list[str]:
    """The text of each ```lang block of a document."""
    pattern = re.compile(r"^```" + re.escape(lang) + r"\n(.*?)^```", flags=re.S | re.M)
    return pattern.findall(path.read_text(encoding="utf-8"))


def script(name: str) -> str:
    [block] = fenced(guide(name), "python")
    return block


def shown(name: str) -> list[str]:
    """What the guide shows the pytest command printing: fnmatch patterns, counts as '*'."""
    [block] = [b for b in fenced(guide(name), "console") if PYTEST_COMMAND in b]
    lines = block.splitlines()
    return [re.sub(r"\d+/\d+", "*", line).replace("[", "[[]")
            for line in lines[lines.index(PYTEST_COMMAND) + 1:]]


def commands(name: str) -> list[list[str]]:
    """The guide's shell commands, as words (comments left out)."""
    [block] = [b for b in fenced(guide(name), "console") if PYTEST_COMMAND in b]
    return [line.split("#")[0].split() for line in block.splitlines() if line.startswith("$ ")]


def run_guide(name: str, folder: Path) -> dict[str, Any]:
    """The guide's commands in ``folder``: new-plan, then its script (in this process);
    returns the script's namespace and what it printed."""
    new_plan = commands(name)[0]
    printed = io.StringIO()
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(folder)
        mp.setenv("HF_HUB_OFFLINE", "1")
        assert itera_cli(new_plan[4:]) == 0
        namespace: dict[str, Any] = {"__name__": "__main__"}
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(io.StringIO()), \
                warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")  # the tools' deprecations are not the guide's
            exec(compile(script(name), str(guide(name)), "exec"), namespace)
    ours = [str(w.message) for w in caught if w.category.__module__.startswith("pytest_itera")]
    assert not ours, ours
    namespace["printed"] = printed.getvalue()
    namespace["out"] = folder / "out"
    return namespace


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Each guide run once, in a folder of its own."""
    return {name: run_guide(name, tmp_path_factory.mktemp(f"guide-{name}")) for name in GUIDES}


@pytest.mark.parametrize("name", GUIDES)
def test_each_guide_is_one_script_and_the_commands_that_run_it(name: str) -> None:
    assert script(name).startswith(f"# train_{name}.py: ")
    new_plan, run_script, accept = commands(name)
    assert new_plan == ["$", "python", "-m", "pytest_itera", "new-plan", "draft", "--campaign",
                        f"{name}-guide"]
    assert run_script[-2:] == ["python", f"train_{name}.py"]
    assert accept == PYTEST_COMMAND.split()


@pytest.mark.parametrize("name", GUIDES)
def test_the_guide_closes_its_campaign_on_its_played_clock(
        name: str, ran: dict[str, dict[str, Any]]) -> None:
    closure = ran[name]["closure"]
    assert closure.verdict == "played clock", "\n".join(p.render() for p in closure.findings)
    assert not closure.accepted  # the hours were played: never ACCEPTED
    assert closure.findings == ()
    # What close() printed is what the guide shows the pytest command printing.
    header, *summary = shown(name)
    assert header.strip("= ") == "pytest-itera"
    pytest.LineMatcher(closure.result.lines()).fnmatch_lines(summary, consecutive=True)
    pytest.LineMatcher(ran[name]["printed"].splitlines()).fnmatch_lines(summary)


def _manifest(ran: dict[str, Any]) -> dict[str, Any]:
    manifest: dict[str, Any] = json.loads((ran["out"] / "manifest.json").read_text())
    return manifest


def _checkpoints(ran: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["path"]: (c["format"], c["kind"]) for c in _manifest(ran)["checkpoints"]}


def test_the_trainer_guide_ships_what_it_says(ran: dict[str, dict[str, Any]]) -> None:
    """The Trainer's checkpoint-N folders are resume checkpoints, the save_pretrained folders
    weights; the resume check resumed the control's checkpoint-8; the pilot, which saved
    nothing, left no empty output_dir."""
    listed = _checkpoints(ran["trainer"])
    assert listed["runs/control/trainer/checkpoint-8"] == ("hf-trainer", "resume")
    assert listed["runs/resume-check/trainer/checkpoint-16"] == ("hf-trainer", "resume")
    assert listed["runs/control/model"] == listed["runs/variant/model"] == (
        "safetensors", "weights")
    assert not (ran["trainer"]["out"] / "runs/pilot/trainer").exists()
    [resume] = [r for r in _manifest(ran["trainer"])["runs"] if r["id"] == "resume-check"]
    assert resume["resumed_from"] == {"checkpoint": "runs/control/trainer/checkpoint-8",
                                      "step": 8}


def test_the_lightning_guide_closes_on_a_negative_result(
        ran: dict[str, dict[str, Any]]) -> None:
    manifest = _manifest(ran["lightning"])
    assert manifest["conclusion"]["meets_threshold"] == []
    assert manifest["conclusion"]["text"].startswith("negative result")
    assert _checkpoints(ran["lightning"])["runs/control/ckpt/epoch=1-step=8.ckpt"] == (
        "lightning", "resume")


def test_pytest_judges_the_torch_guide_as_it_shows(
        ran: dict[str, dict[str, Any]], itera: Itera, pytester: pytest.Pytester) -> None:
    """One real pytest session, on the torch guide's folder (the cheapest to reload): every
    check passes, the verdict says the clock was played, and the gate refuses it."""
    shutil.copytree(ran["torch"]["out"], pytester.path / "out")
    result = itera()
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(shown("torch"), consecutive=True)
    assert itera("--itera-require-accepted").ret == pytest.ExitCode.TESTS_FAILED
