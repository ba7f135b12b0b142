"""Resume a run in a new process: ``python -m example_campaign.resume_worker``.

Arguments: CONFIG CORPUS CHECKPOINT_IN CHECKPOINT_OUT, or none: then they come as one
JSON list on stdin, so the build can start this process (and its torch import) while it
still trains the run this one resumes. Restores the complete resume checkpoint (another
run's early save), trains to the config's ``resume_until_step``, saves its own resume
checkpoint and prints JSON
``{"resumed_at_step": N, "losses": [[step, loss], ...], "stopped": bool}``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

from example_campaign.data import read_corpus, tensors
from example_campaign.train import make_trainer, train
from pytest_itera.record.resume import load_resume_checkpoint, save_resume_checkpoint


def main(argv: list[str]) -> int:
    if not argv:
        line = sys.stdin.readline()
        if not line:  # the build ended before it needed this resume
            return 0
        argv = json.loads(line)
    config_path, corpus_path, checkpoint_in, checkpoint_out = map(Path, argv)
    torch.set_num_threads(1)
    config = json.loads(config_path.read_text("utf-8"))
    train_rows = [e for e in read_corpus(corpus_path) if e.split == "train"]
    features, labels = tensors(train_rows)
    trainer = make_trainer(config, len(train_rows))
    state = load_resume_checkpoint(
        checkpoint_in, model=trainer.model, optimizer=trainer.optimizer, scheduler=trainer.scheduler
    )
    trainer.step = resumed_at = state["step"]
    trainer.epoch, trainer.batch = state["data"]["epoch"], state["data"]["batch"]
    stopped = train(trainer, features, labels, until_step=config["resume_until_step"])
    save_resume_checkpoint(
        checkpoint_out, model=trainer.model, optimizer=trainer.optimizer,
        scheduler=trainer.scheduler, step=trainer.step, epoch=trainer.epoch,
        data_state=trainer.data_state(),
    )
    json.dump({"resumed_at_step": resumed_at, "losses": trainer.losses,
               "stopped": stopped is not None}, sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
