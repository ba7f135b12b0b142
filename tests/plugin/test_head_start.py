"""The reload server's head start (plugin/head_start.py): what the command line alone tells.
Its sessions, in a new interpreter each, are in test_reload_start.py."""

from __future__ import annotations

import pytest

from pytest_itera.plugin.head_start import worth_it


@pytest.mark.parametrize(("args", "environ", "expected"), [
    (["--itera-campaign", "out"], {}, True),
    (["--itera-campaign=out", "-q", "-p", "no:xdist", "-rA"], {}, True),
    (["-q"], {"PYTEST_ADDOPTS": "--itera-campaign out"}, True),
    (["out"], {}, False),  # no campaign on the command line: pytest's ini may name one
    (["--itera-campaign", "out", "-n", "0"], {}, True),  # xdist off: a whole run
    (["--itera-campaign", "out", "-n0", "--dist=no"], {}, True),
    (["--itera-campaign", "out", "-n", "2"], {}, False),  # the controller reloads nothing
    (["--itera-campaign", "out", "-nauto"], {}, False),
    (["--itera-campaign", "out", "--numprocesses=4"], {}, False),
    (["--itera-campaign", "out", "--dist", "load"], {}, False),
    (["--itera-campaign", "out", "-d"], {}, False),
    (["--itera-campaign", "out", "-k", "files-intact"], {}, False),  # a selection
    (["--itera-campaign", "out", "-mitera"], {}, False),
    (["--itera-campaign", "out", "out/manifest.json::files-intact"], {}, False),
    (["--itera-campaign", "out", "--deselect", "out/manifest.json::manifest"], {}, False),
    (["--itera-campaign", "out", "--itera-python", "/opt/train/bin/python"], {}, False),
    (["--itera-campaign", "out", "--itera-fast"], {}, False),
    (["--itera-campaign", "out", "--co"], {}, False),
    (["--itera-campaign", "out", "--help"], {}, False),
    (["-q"], {"PYTEST_ADDOPTS": "--itera-campaign 'out"}, False),  # unbalanced quote
])
def test_the_command_line_alone_decides_the_head_start(
    args: list[str], environ: dict[str, str], expected: bool
) -> None:
    assert worth_it(args, environ) is expected
