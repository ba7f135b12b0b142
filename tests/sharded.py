"""Checkpoints written by several ranks: FSDP2 (``fully_shard``) on 2 CPU processes over gloo.

One spawn of 2 processes writes both folders (multi-process runs cost tens of seconds):
``dcp/``, what torch's own recipe saves (``get_state_dict`` then ``dcp.save``), and
``accelerate/``, accelerate's FSDP ``save_state`` layout (``pytorch_model_fsdp_0/``,
``optimizer_0/``, ``scheduler.bin``, ``random_states_<rank>.pkl``).  accelerate's
``Accelerator`` does not apply an FSDP plugin on CPU (it becomes ``MULTI_CPU`` and saves
unsharded files), so that folder is written by accelerate's own FSDP save functions
(``save_fsdp_model``, ``save_fsdp_optimizer``) and ``save_accelerator_state``, on the ranks
``fully_shard`` sharded: the files and folders save_state writes under FSDP.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import warnings
from pathlib import Path
from types import SimpleNamespace

import torch

WORLD = 2
FOLDERS = ("dcp", "accelerate", "accelerate-full")  # what fsdp_checkpoints writes


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def fsdp_checkpoints(folder: Path) -> dict[str, Path]:
    """``{"dcp", "accelerate", "accelerate-full"}`` written by 2 FSDP2 ranks (CPU, gloo): DCP,
    accelerate's sharded and full state-dict layouts; spawned by
    a child interpreter (spawn re-imports the main module: not pytest's)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(Path(__file__).resolve().parent.parent), os.environ.get("PYTHONPATH", "")])}
    for _ in range(2):  # gloo on a shared CPU box has aborted a rank once in a while
        done = subprocess.run([sys.executable, "-m", "tests.sharded", str(folder)], env=env,
                              capture_output=True, text=True, timeout=600, check=False)
        if done.returncode == 0:
            break
        for made in FOLDERS:
            shutil.rmtree(folder / made, ignore_errors=True)
    assert done.returncode == 0, done.stderr[-6000:]
    return {name: folder / name for name in FOLDERS}


def _rank(rank: int, folder: str, port: int) -> None:
    import torch.distributed as dist
    from torch.distributed.checkpoint import state_dict_saver
    from torch.distributed.checkpoint.state_dict import get_state_dict
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    warnings.simplefilter("ignore")
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      LOCAL_RANK=str(rank), WORLD_SIZE=str(WORLD))
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    try:
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(),
                                    torch.nn.Linear(8, 2))
        mesh = init_device_mesh("cpu", (WORLD,))
        for layer in (model[0], model[2]):
            fully_shard(layer, mesh=mesh)
        fully_shard(model, mesh=mesh)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        sched = torch.optim.lr_scheduler.StepLR(opt, 1)
        for _ in range(2):
            model(torch.randn(2, 4)).pow(2).mean().backward()
            opt.step()
            opt.zero_grad()
            sched.step()
        msd, osd = get_state_dict(model, opt)
        state = {"model": msd, "optimizer": osd, "scheduler": sched.state_dict(),
                 "train_state": {"step": 2}}
        state_dict_saver.save(state, checkpoint_id=os.path.join(folder, "dcp"))
        _accelerate_layout(rank, os.path.join(folder, "accelerate"), model, opt, sched)
        dist.barrier()
    finally:
        dist.destroy_process_group()


def _accelerate_layout(rank: int, out: str, model: torch.nn.Module,
                       opt: torch.optim.Optimizer, sched: object) -> None:
    from accelerate import PartialState  # type: ignore[import-untyped]
    from accelerate.checkpointing import (  # type: ignore[import-untyped]
        save_accelerator_state,
    )
    from accelerate.utils import (  # type: ignore[import-untyped]
        FullyShardedDataParallelPlugin,
    )
    from accelerate.utils.fsdp_utils import (  # type: ignore[import-untyped]
        save_fsdp_model,
        save_fsdp_optimizer,
    )

    PartialState(cpu=True)  # accelerate's logging needs its state (MULTI_CPU here)
    accelerator = SimpleNamespace(num_processes=WORLD, process_index=rank,
                                  is_main_process=rank == 0)
    for kind, folder in (("SHARDED_STATE_DICT", out), ("FULL_STATE_DICT", f"{out}-full")):
        plugin = FullyShardedDataParallelPlugin(fsdp_version=2, state_dict_type=kind)
        save_fsdp_model(plugin, accelerator, model, folder)
        save_fsdp_optimizer(plugin, accelerator, opt, model, folder)
        save_accelerator_state(folder, model_states=[], optimizers=[], schedulers=[sched],
                               dataloaders=[], process_index=rank, step=2)


if __name__ == "__main__":
    # The ranks are forked from this interpreter once torch, its distributed packages and
    # accelerate are imported: two spawned ranks would import them again (seconds each).
    import accelerate.checkpointing
    import accelerate.utils.fsdp_utils  # noqa: F401
    import torch.distributed.checkpoint.state_dict
    import torch.distributed.fsdp
    from torch.multiprocessing.spawn import start_processes

    start_processes(  # type: ignore[no-untyped-call]
        _rank, args=(sys.argv[1], _free_port()), nprocs=WORLD, join=True, start_method="fork")
