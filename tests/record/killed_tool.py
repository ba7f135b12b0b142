"""A control trained by a real tool, killed by SIGKILL mid-training (issue 26, point 1).

``python -m tests.record.killed_tool ROOT trainer|lightning`` begins the campaign of
tests/record/test_integrations.py, times the control's training with the real clock
(``rec.step("train-control")``) and kills itself after the tool's first checkpoint was
saved and journaled (the Trainer's checkpoint-2, once step 3 is logged; Lightning's step-4
.ckpt, at step 5); tests/record/test_continue.py continues it with
``resume_from_checkpoint`` / ``ckpt_path``.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

from tests.record.test_integrations import (
    LIGHTNING_PARTS,
    TRAINER_PARTS,
    begin,
    lightning_fit,
    trainer_fit,
)

KILL_AT = {"trainer": 3, "lightning": 5}  # after the first save


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)  # no cleanup, no atexit: the machine is gone


def trainer_killer() -> Any:
    from transformers import TrainerCallback

    class Killer(TrainerCallback):
        def on_log(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if state.global_step == KILL_AT["trainer"]:
                die()

    return Killer()


def lightning_killer() -> Any:
    import lightning as L

    class Killer(L.Callback):
        def on_train_batch_end(self, trainer: Any, *args: Any) -> None:
            if trainer.global_step == KILL_AT["lightning"]:
                die()

    return Killer()


def main(root: Path, tool: str) -> None:
    rec = begin(root, TRAINER_PARTS if tool == "trainer" else LIGHTNING_PARTS)
    rec.step("train-control").start()
    if tool == "trainer":
        trainer_fit(rec, "control", rec.path("runs/control/trainer"),
                    callbacks=[trainer_killer()])
    else:
        lightning_fit(rec, "control", rec.path("runs/control/ckpt"),
                      callbacks=[lightning_killer()])
    raise SystemExit("the tool finished: it was not killed")


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
