"""Run the reload server: ``python -I -B -u <this file> [JOBS]`` (what the client does).

This folder is loaded as the package ``_itera_reload_server`` from its files: ``-I`` keeps it
off sys.path and pytest-itera may not be installed in the reload interpreter.  The server
then dies with its client, prints the probe's line (``probe.py``), imports torch (~1 s)
and serves.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys

PACKAGE = "_itera_reload_server"


def load_package() -> None:
    """This folder as the package PACKAGE, so that its modules import each other relatively
    (each once)."""
    if PACKAGE in sys.modules:
        return
    folder = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location(
        PACKAGE, os.path.join(folder, "__init__.py"), submodule_search_locations=[folder])
    assert spec is not None
    assert spec.loader is not None
    package = importlib.util.module_from_spec(spec)
    sys.modules[PACKAGE] = package
    spec.loader.exec_module(package)


if __name__ == "__main__":
    load_package()
    importlib.import_module(f"{PACKAGE}.lifeline").die_with_client()
    # The probe's line first (versions read without importing torch): the client judges the
    # interpreter from it while torch imports, with no probe process of its own.
    facts = importlib.import_module(f"{PACKAGE}.siblings").probe.hello()
    os.write(1, (json.dumps(facts) + "\n").encode())
    importlib.import_module(f"{PACKAGE}.serve").main()
