"""What training scripts call to write a campaign folder: the recorder, resume checkpoints,
and the integrations for the Hugging Face Trainer and Lightning (``record.integrations``).

The recorder refuses at once what the checks would reject on a run's own evidence: it calls
the checks' rules, never a copy of them.
"""

from __future__ import annotations

from pytest_itera.record.base import (
    BASE_RECORD,
    RecordError,
    atomic_write_bytes,
    atomic_write_json,
    atomic_write_text,
    check_relpath,
    find_temp_path,
    sha256_file,
    timestamp,
)
from pytest_itera.record.campaign import CampaignRecorder
from pytest_itera.record.close import Closure
from pytest_itera.record.replay import JournalWarning
from pytest_itera.record.resume import load_resume_checkpoint, save_resume_checkpoint
from pytest_itera.record.run import OpenRun, RunRecorder
from pytest_itera.record.steps import Interruption, OpenStep, StepTimer

__all__ = [
    "BASE_RECORD",
    "CampaignRecorder",
    "Closure",
    "Interruption",
    "JournalWarning",
    "OpenRun",
    "OpenStep",
    "RecordError",
    "RunRecorder",
    "StepTimer",
    "atomic_write_bytes",
    "atomic_write_json",
    "atomic_write_text",
    "check_relpath",
    "find_temp_path",
    "load_resume_checkpoint",
    "save_resume_checkpoint",
    "sha256_file",
    "timestamp",
]
