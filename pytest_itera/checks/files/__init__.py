"""File checks: files-intact, no-empty-files, no-temp-paths (R8).

Every file is read once (Context.facts): size, sha256 and the temp-path scan
come from the same streamed pass.
"""

from __future__ import annotations

from pytest_itera.checks.context import Check
from pytest_itera.checks.files import files_intact, no_empty_files, no_temp_paths

CHECKS = (files_intact.CHECK, no_empty_files.CHECK, no_temp_paths.CHECK)


def pytest_itera_checks(config: object) -> tuple[Check, ...]:
    return CHECKS
