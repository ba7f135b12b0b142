"""Recorder integrations with the tools users train with (optional modules).

- :mod:`pytest_itera.record.integrations.transformers`: ``IteraCallback(rec, run_id)``, a
  ``transformers.TrainerCallback``;
- :mod:`pytest_itera.record.integrations.lightning`: ``IteraCallback(rec, run_id)``, a
  ``lightning.pytorch.Callback``.

Each records the checkpoints its tool saves (resume checkpoints, with the claims the files
actually written support) and the tool's loss/metrics into the run's series, through a
:class:`pytest_itera.record.CampaignRecorder`. Importing this package imports neither
transformers nor lightning: only the submodule of the tool in use does.
"""

from __future__ import annotations

__all__: list[str] = []
