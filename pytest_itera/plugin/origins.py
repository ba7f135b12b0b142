"""Where each setting that changes a verdict came from: the command line, PYTEST_ADDOPTS,
an ini file's addopts, or an ini file's own key.

pytest merges its argument sources as ``[*ini addopts, *PYTEST_ADDOPTS, *command line]``, the
last one winning; an ini key is the ini file's unless ``-o key=value`` overrode it. A setting
found in no source the user typed (a default) is not listed.
"""

from __future__ import annotations

import contextlib
import os
import shlex
from collections.abc import Sequence

import pytest

from pytest_itera.checks.context import GROUP_FILES_ABOVE
from pytest_itera.core.schedule import DEFAULT_TOLERANCE
from pytest_itera.plugin import options as o
from pytest_itera.reload.formats import DEFAULT_TIMEOUT
from pytest_itera.report.model import SettingFacts as Origin

COMMAND_LINE = "command line"
BY_CODE = "a plugin or conftest.py"  # set by code, not by an argument


def _sources(config: pytest.Config) -> list[tuple[str, list[str]]]:
    """The argument sources, the one that wins first."""
    sources = [(COMMAND_LINE, [str(a) for a in config.invocation_params.args])]
    env = os.environ.get("PYTEST_ADDOPTS", "")
    if env.strip():
        with contextlib.suppress(ValueError):  # pytest refused it before us
            sources.append(("PYTEST_ADDOPTS", shlex.split(env)))
    if config.inipath is not None:
        sources.append((f"addopts in {config.inipath}", [str(a) for a in
                                                          config.getini("addopts")]))
    return sources


def _has(tokens: Sequence[str], flag: str) -> bool:
    """``flag`` given in ``tokens``: ``--long``, ``--long=value``, ``-k EXPR`` or ``-kEXPR``."""
    for token in tokens:
        if token == flag or token.startswith(flag + "="):
            return True
        if len(flag) == 2 and token.startswith(flag) and not token.startswith("--"):
            return True
    return False


def option_source(config: pytest.Config, *flags: str) -> str:
    """The source of the winning value of an option spelled ``flags``."""
    for source, tokens in _sources(config):
        if any(_has(tokens, flag) for flag in flags):
            return source
    return BY_CODE


def _values(tokens: Sequence[str], short: str, long: str | None = None) -> list[str]:
    """The values given to an option in ``tokens``: ``-o VALUE``, ``-oVALUE``,
    ``--long VALUE``, ``--long=VALUE``."""
    found = []
    for i, token in enumerate(tokens):
        if token in (short, long) and i + 1 < len(tokens):
            found.append(tokens[i + 1])
        elif long is not None and token.startswith(long + "="):
            found.append(token.removeprefix(long + "="))
        elif token.startswith(short) and len(token) > 2 and not token.startswith("--"):
            found.append(token[2:])
    return found


def ini_source(config: pytest.Config, key: str) -> str:
    """The source of an ini key's value: an ``-o key=...`` override, else the ini file."""
    for source, tokens in _sources(config):
        if any(v.partition("=")[0].strip() == key
               for v in _values(tokens, "-o", "--override-ini")):
            return f"-o {key}=... ({source})"
    return str(config.inipath) if config.inipath is not None else "an ini file"


def arg_source(config: pytest.Config, arg: str) -> str:
    """The source of a positional argument (a path or node id)."""
    for source, tokens in _sources(config):
        if arg in tokens:
            return source
    return "testpaths" if config.args_source == pytest.Config.ArgsSource.TESTPATHS else BY_CODE


def selection(config: pytest.Config, inside: Sequence[str]) -> list[Origin]:
    """``-k``, ``-m``, ``--deselect`` and the node ids ``inside`` a campaign, where given."""
    found = []
    option = config.option
    if getattr(option, "keyword", ""):
        found.append(Origin(f"-k {option.keyword}", option_source(config, "-k"), True))
    if getattr(option, "markexpr", ""):
        found.append(Origin(f"-m {option.markexpr}", option_source(config, "-m"), True))
    for deselect in getattr(option, "deselect", None) or []:
        found.append(Origin(f"--deselect {deselect}", option_source(config, "--deselect"), True))
    found += [Origin(arg, arg_source(config, arg), True) for arg in inside]
    return found


def in_force(config: pytest.Config, switched_off: Sequence[str]) -> list[Origin]:
    """Every setting given that changes what runs or how it is judged, with its source."""
    found = []
    if config.getoption(o.FAST):
        found.append(Origin(o.FAST, option_source(config, o.FAST), True))
    if config.getoption(o.ACCEPT_PLAYED_CLOCK):
        found.append(Origin(o.ACCEPT_PLAYED_CLOCK, option_source(config, o.ACCEPT_PLAYED_CLOCK)))
    found += [Origin(f"-p no:{name}", _plugin_source(config, name), True)
              for name in switched_off]
    pairs: tuple[tuple[str, str, object], ...] = ((o.PYTHON, o.INI_PYTHON, ""),
                               (o.TIMEOUT, o.INI_TIMEOUT, f"{DEFAULT_TIMEOUT:g}"),
                               (o.WAIVERS, o.INI_WAIVERS, ""),
                               (o.PLAN_SHA256, o.INI_PLAN_SHA256, []),
                               (o.REQUIRE_ACCEPTED, o.INI_REQUIRE_ACCEPTED, False),
                               (o.STRICT_TEXT, o.INI_STRICT_TEXT, False),
                               (o.JOURNAL_PIN, o.INI_JOURNAL_PINS, []))
    for flag, key, default in pairs:
        value = config.getoption(flag)
        if value not in (None, False, ""):
            shown = "" if value is True else (
                f" {' '.join(map(str, value))}" if isinstance(value, list) else f" {value}")
            found.append(Origin(f"{flag}{shown}", option_source(config, flag)))
        elif config.getini(key) != default:
            found.append(Origin(f"{key} = {_ini_text(config.getini(key))}",
                                ini_source(config, key)))
    defaults: dict[str, object] = {
        o.INI_IGNORE: [], o.INI_TEMP_PATTERNS: [], o.INI_CATALOGUE: "",
        o.INI_GROUP_FILES_ABOVE: str(GROUP_FILES_ABOVE), o.INI_TOLERANCE: str(DEFAULT_TOLERANCE)}
    for key, plain in defaults.items():
        if (given := config.getini(key)) != plain:
            found.append(Origin(f"{key} = {_ini_text(given)}", ini_source(config, key)))
    return found


def _ini_text(value: object) -> str:
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)


def _plugin_source(config: pytest.Config, name: str) -> str:
    for source, tokens in _sources(config):
        if any(v.strip() == f"no:{name}" for v in _values(tokens, "-p")):
            return source
    return BY_CODE
