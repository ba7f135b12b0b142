"""The folder under judgment never steers its judge.

pytest takes its configuration file from the path-like arguments of the command line
(``pytest --itera-campaign out/``: ``out/`` is one) or from the current folder, so a campaign
folder that ships a ``pytest.ini``, a ``pytest.toml``, a ``tox.ini`` with ``[pytest]``, a
``setup.cfg`` with ``[tool:pytest]`` or a ``pyproject.toml`` with ``[tool.pytest...]`` would
choose the run's ``addopts``, ``itera_*`` settings, ``pythonpath`` and ``-p`` plugins. This
module refuses such a run before anything of it is used (pytest reads the file before any
plugin runs: the refusal is the first thing the plugin does), and refuses a program, a price
list or a plugin that lives inside a judged folder, whatever named it.
"""

from __future__ import annotations

import os
import sys
import tomllib
from collections.abc import Iterable, Sequence
from pathlib import Path

import pytest


def inside(path: Path | str, folders: Iterable[Path]) -> Path | None:
    """The judged folder that ``path`` lies in, as named or once its links are resolved."""
    given = Path(os.path.abspath(path))
    real = Path(os.path.realpath(path))
    for folder in folders:
        if given.is_relative_to(folder) or real.is_relative_to(os.path.realpath(folder)):
            return folder
    return None


def judged_folders(config: pytest.Config) -> dict[Path, str]:
    """The local folders this run judges, each with the option that names it, from every
    source that can name one: the command line and its addopts (``--itera-campaign``,
    ``--itera-plan``) and the ini options (``itera_campaign``, ``itera_plan``). A plan file
    stands for its folder when that folder is a campaign's (it holds a manifest or a journal)."""
    namespace = config.known_args_namespace
    here = config.invocation_params.dir
    base = config.inipath.parent if config.inipath is not None else config.rootpath
    named = [(here / p, "--itera-campaign") for p in getattr(namespace, "itera_campaign", None)
             or []]
    named += [(base / str(p), "--itera-campaign") for p in _ini(config, "itera_campaign")]
    named += [(here / p, "--itera-plan") for p in getattr(namespace, "itera_plan", None) or []]
    named += [(Path(str(p)), "--itera-plan") for p in _ini(config, "itera_plan")]
    folders: dict[Path, str] = {}
    for raw, option in named:
        if str(raw).startswith("s3:"):
            continue  # an object store: nothing of it is on this machine's disk yet
        path = Path(os.path.abspath(raw))
        if path.is_file() and any(os.path.lexists(path.parent / name)
                                  for name in ("manifest.json", "itera-journal.jsonl")):
            path = path.parent
        if path.is_dir():
            folders.setdefault(path, option)
    return folders


def _ini(config: pytest.Config, name: str) -> Sequence[object]:
    try:
        value = config.getini(name)
    except ValueError:  # not registered: the plugin's options are not loaded
        return ()
    return value if isinstance(value, list) else ()


def holds_settings(path: Path) -> bool:
    """Whether pytest takes settings from this file: a pyproject.toml only when it has a
    ``[tool.pytest]`` table (pytest also names one without it as the rootdir's marker: it is
    then a listed file like any other); every other name pytest picked is its configuration."""
    if path.name != "pyproject.toml":
        return True
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, tomllib.TOMLDecodeError):
        return False  # pytest itself could not have read settings from it
    tool = data.get("tool")
    return isinstance(tool, dict) and "pytest" in tool


def refuse_campaign_config(config: pytest.Config, folders: dict[Path, str]) -> None:
    """A usage error when pytest's configuration file lies inside one of ``folders``
    (:func:`judged_folders`)."""
    inipath = config.inipath
    if inipath is None or not folders:
        return
    folder = inside(inipath, folders)
    if folder is None or not holds_settings(inipath):
        return
    raise pytest.UsageError(
        f"pytest read its configuration from {_shown(config, inipath)}, inside the folder "
        f"under judgment {_shown(config, folder)}: a judged folder is data, and its settings "
        "(addopts, itera_* options, pythonpath, -p plugins) are never obeyed. "
        f"Judge it with a configuration of your own: {_way_out(config, folder, folders[folder])}"
    )


def refuse_planted_code(config: pytest.Config, folders: Iterable[Path]) -> None:
    """A usage error when a module of a judged folder was imported into this process (a
    ``-p`` plugin, a module shadowing a library's), or when ``sys.path`` lists a judged folder
    (``python -m`` run from inside one puts it first: the next import of a library could take
    the folder's file of that name instead)."""
    folders = tuple(folders)
    if not folders:
        return
    # Module files are compared as named (no realpath per module: this runs at every start);
    # the folders both as named and resolved.
    roots = {*folders, *(Path(os.path.realpath(f)) for f in folders)}
    planted = sorted({file for file in _module_files()
                      if any(Path(file).is_relative_to(root) for root in roots)})
    if planted:
        raise pytest.UsageError(
            "code from the folder under judgment was imported into this pytest process "
            f"before pytest-itera was loaded: {', '.join(planted)} (pytest imports the -p "
            "plugins of its configuration first; see docs/safety.md). A judged folder is data "
            "and nothing in it may run: treat this machine's session as exposed, and judge "
            "the folder with `--itera-campaign=DIR` from outside it, or with `-c PATH`, so "
            "that no configuration inside it is read"
        )
    here = config.invocation_params.dir
    on_path = [entry for entry in dict.fromkeys(sys.path)
               if os.path.isdir(here / (entry or "."))
               and inside(here / (entry or "."), folders) is not None]
    if on_path:
        raise pytest.UsageError(
            f"sys.path lists {', '.join(repr(e) for e in on_path)}, inside the folder under "
            "judgment (`python -m pytest` run from inside a folder puts that folder first): a "
            "file of the folder named like a library would be imported in its place. Run the "
            "`pytest` command, or `python -P -m pytest` (-P: no such path)"
        )


def _module_files() -> Iterable[str]:
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if isinstance(file, str):
            yield os.path.abspath(file)


def _shown(config: pytest.Config, path: Path) -> str:
    here = config.invocation_params.dir
    return str(path.relative_to(here)) if path.is_relative_to(here) and path != here else str(path)


def _way_out(config: pytest.Config, folder: Path, option: str) -> str:
    """The command that judges ``folder`` (named by ``option``) without its configuration."""
    here = config.invocation_params.dir
    if here.is_relative_to(folder):
        name = folder.name or str(folder)
        return (f"from the folder above it, `cd {folder.parent} && pytest "
                f"{option}={name}/` (with '=' pytest looks for no configuration in "
                f"{name}/), or give a file outside it with `-c PATH` (`-c /dev/null`: none)")
    return (f"`pytest {option}={_shown(config, folder)}/` (with '=' pytest looks for "
            "no configuration in the folder), or give a file outside it with `-c PATH` "
            "(`-c /dev/null`: none)")
