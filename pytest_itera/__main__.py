"""``python -m pytest_itera``: see :mod:`pytest_itera.cli`."""

from pytest_itera.cli import main

raise SystemExit(main())
