"""How the DeepSpeed checkpoints beside this file were made: by DeepSpeed itself (0.19.8,
``DS_ACCELERATOR=cpu``, gloo), 2 data-parallel ranks, 3 steps of a tiny MLP, AdamW and
WarmupLR, ``save_checkpoint(dir, client_state={"epoch": 1})``; the copies of
``zero_to_fp32.py`` / ``zero_to_torch.py`` DeepSpeed puts beside them were left out.

DeepSpeed is no dependency of the tests: it installs from an sdist that needs torch at
build time and JIT-compiles a C++ op on first use (minutes), so its files are kept here
(a few KiB each).  Regenerate, with deepspeed installed (``DS_BUILD_OPS=0 pip install
--no-build-isolation -c constraints.txt deepspeed==0.19.8``), from this folder::

    for r in 0 1; do MASTER_ADDR=127.0.0.1 MASTER_PORT=29521 RANK=$r LOCAL_RANK=$r \\
        WORLD_SIZE=2 python make.py 2 zero2 & done; wait      # also: 3 zero3, 2 zero2-bf16 bf16

Rank 0 then reads the checkpoint back with ``zero_to_fp32``'s reader (the oracle) and
checks it rebuilds exactly the weights the engine trained.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import torch


def main(stage: int, out: str, bf16: bool) -> None:
    os.environ["DS_ACCELERATOR"] = "cpu"
    deepspeed = importlib.import_module("deepspeed")
    zero_to_fp32 = importlib.import_module("deepspeed.utils.zero_to_fp32")

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    cfg: dict[str, Any] = {
        "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 1,
        "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "torch_adam": True}},
        "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 10}},
        "zero_optimization": {"stage": stage}}
    if bf16:
        cfg["bf16"] = {"enabled": True}
    deepspeed.init_distributed(dist_backend="gloo")
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(),
                                           config=cfg)
    dtype = torch.bfloat16 if bf16 else torch.float32
    for _ in range(3):
        loss = engine(torch.randn(2, 4, dtype=dtype)).float().pow(2).mean()
        engine.backward(loss)
        engine.step()
    engine.save_checkpoint(out, client_state={"epoch": 1})
    torch.distributed.barrier()
    if int(os.environ["RANK"]) == 0:
        rebuilt = zero_to_fp32.get_fp32_state_dict_from_zero_checkpoint(out)
        assert sorted(rebuilt) == ["0.bias", "0.weight", "2.bias", "2.weight"], sorted(rebuilt)
        assert sum(t.numel() for t in rebuilt.values()) == 58
        for path in ("zero_to_fp32.py", "zero_to_torch.py"):
            if os.path.exists(os.path.join(out, path)):
                os.remove(os.path.join(out, path))


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2], len(sys.argv) > 3)
