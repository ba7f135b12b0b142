"""Which resume part lives where, per checkpoint format: one table, pure data.

The home of the resume parts and of where each format keeps them.  The reload server
(``server/``, in the reload interpreter) takes from it the keys it reads and the folder
members it loads, ``checks.artifacts`` the place a fix line names, and PARTS.md and
docs/checkpoints.md the table :func:`render` writes.  Standard library only and no import of
pytest-itera: the server loads this file by path, where pytest-itera may not be installed.

Regenerate the documented table with ``python pytest_itera/reload/formats.py`` (it prints it;
run by path like the server runs it, so it needs nothing installed).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = ["BY_DESIGN", "DATA_OBJECTS", "DEFAULT_TIMEOUT", "FAILURES", "FORMATS", "PARTS",
           "VARIANT", "Format", "Home", "absent", "files", "folders", "hints", "key_parts", "keys",
           "render"]

# Seconds a reload may take by default (--itera-timeout): the client's, the server's and the
# recorder's default, here because the server loads this file by path.
DEFAULT_TIMEOUT = 120.0
# Why a checkpoint did not load, as a kind (ReloadResult.failure) rather than a sentence to
# parse: the loading child's (weights_only refused a pickle, the memory limit, the timeout, a
# package the reload interpreter lacks, non-finite weights, anything else unreadable, a whole
# nn.Module saved with torch.save(model): code, but a common mistake, not an attack) and the
# client's (an unusable --itera-python, a failed server; an s3:// checkpoint the local cache
# cap left in the store, never handed to a loader).
FAILURES = ("weights-only", "memory", "timeout", "missing-package", "nonfinite", "unreadable",
            "interpreter", "server", "whole-module", "not-copied")

# Standard-library data saved as Python objects rather than plain values, as a pickle names
# their classes -> (what they are, how to save them instead): pathlib's paths (Python 3.13
# defines them in pathlib._local; Lightning's save_hyperparameters() of a Path argument) and
# parsed arguments (timm's checkpoints, scripts that save ``args``), numpy scalars (a metric
# from scikit-learn saved as is; numpy arrays are allowed, their scalars not), and the
# standard library's defaultdict, frozenset, slice and datetime objects. Outside torch's
# weights-only allowlist, so such a file is refused like code; but the fix is to save plain
# data, not to suspect an attack. Never allowlisted: a pickled path's parts are separate
# strings, which the temporary-path scan could not judge.
_PATH = ("paths saved as objects, not strings", "save str(path)")
DATA_OBJECTS: Mapping[str, tuple[str, str]] = MappingProxyType({
    **{f"{module}.{name}": _PATH for module in ("pathlib", "pathlib._local")
       for name in ("Path", "PosixPath", "WindowsPath", "PurePath", "PurePosixPath",
                    "PureWindowsPath")},
    "argparse.Namespace": ("parsed arguments saved as an object, not a dict",
                           "save vars(args)"),
    # A metric from numpy or scikit-learn (np.float64) saved as is (numpy 2 / numpy 1).
    **{f"{module}.multiarray.scalar": ("numpy scalars saved as objects, not numbers",
                                       "save float(x) or int(x)")
       for module in ("numpy._core", "numpy.core")},
    # A loss history kept in a defaultdict(list): the class, and its factory by reference.
    "collections.defaultdict": ("a defaultdict saved as an object, not a dict", "save dict(d)"),
    **{f"builtins.{name}": ("a type saved by reference, as a defaultdict's factory",
                            "save dict(d)")
       for name in ("list", "dict", "int", "float", "str", "tuple", "set")},
    "builtins.frozenset": ("a frozenset saved as an object, not a list", "save sorted(s)"),
    "builtins.slice": ("a slice saved as an object, not numbers", "save (start, stop, step)"),
    **{f"datetime.{name}": ("dates or times saved as objects, not strings",
                            "save d.isoformat() or a number of seconds")
       for name in ("datetime", "date", "time", "timedelta", "timezone")}})

# The resume parts, in the order every list of them follows (the schemas' enum too).
PARTS = ("model", "optimizer", "progress", "scheduler", "scaler", "rng", "data")

# transformers' save_pretrained(variant="fp16") writes model.fp16.safetensors, its shards
# model.fp16-00001-of-00002.safetensors and the index model.safetensors.index.fp16.json.
VARIANT = r"(\.[A-Za-z0-9_]+)?"
BY_DESIGN = "no, by design"


@dataclass(frozen=True)
class Home:
    """Where one part lives in one format.

    ``doc``: its cell in the documented table (``{keys}`` stands for ``keys``, each in
    backticks; only a format with a column needs one); ``keys``: the keys the server reads it
    from, in the order it judges them (a ``torch.save`` dict's top-level keys; Lightning's,
    dotted when nested); ``files``: regular expressions of the folder members it loads it
    from; ``folders``: regular expressions of the DCP sub-folders it loads it from
    (accelerate's FSDP sharded state); ``hint``: where a fix line says to save it;
    ``absent``: why the format cannot hold it, by design.
    """

    doc: str = ""
    keys: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    folders: tuple[str, ...] = ()
    hint: str | None = None
    absent: str | None = None

    def cell(self) -> str:
        return self.doc.replace("{keys}", ", ".join(f"`{k}`" for k in self.keys))


@dataclass(frozen=True)
class Format:
    """A checkpoint format (the manifest's name for it) and where it keeps each part.

    ``title``: its column in the documented table, None when it has none; ``members``:
    regular expressions of folder members loaded that hold no part by themselves (accelerate's
    registered objects, read like a ``torch.save`` dict).
    """

    name: str
    title: str | None
    homes: Mapping[str, Home]
    members: tuple[str, ...] = ()


def _weights_only(model: Home, why: str) -> Mapping[str, Home]:
    """A format that holds the model and, by design, nothing else."""
    return MappingProxyType({"model": model,
                             **{part: Home(BY_DESIGN, absent=why) for part in PARTS[1:]}})


_TORCH = MappingProxyType({
    "model": Home(
        "{keys}; or a bare state dict (a dict of tensors with none of these keys)",
        keys=("model", "model_state_dict", "model_state", "state_dict", "net", "network",
              "module", "weights"),
        hint="a 'model_state_dict' key"),
    "optimizer": Home(
        "{keys}; or a bare optimizer state dict (`state` + `param_groups`)",
        keys=("optimizer", "optimizer_state_dict", "optimizer_state", "optim", "optimizers",
              "optimizer_states"),
        hint="an 'optimizer_state_dict' key"),
    "progress": Home(
        "{keys} (`progress` is what `pytest_itera.record.save_resume_checkpoint` writes); "
        "also inside `train_state`, `trainer_state`, `state`, ...",
        keys=("progress", "epoch", "step", "global_step", "iteration", "iter", "steps_done"),
        hint="a 'progress' (or 'epoch' / 'global_step') key"),
    "scheduler": Home(
        "{keys}",
        keys=("scheduler", "lr_scheduler", "scheduler_state_dict", "lr_schedulers",
              "schedulers"),
        hint="a 'scheduler' key"),
    "scaler": Home(
        "{keys}", keys=("scaler", "grad_scaler", "amp", "scaler_state_dict", "amp_state"),
        hint="a 'scaler' key (GradScaler.state_dict())"),
    "rng": Home(
        "{keys}",
        keys=("rng", "rng_state", "rng_states", "random_state", "random_states",
              "torch_rng_state", "cuda_rng_state", "numpy_rng_state", "python_rng_state"),
        hint="an 'rng_state' key (torch, numpy and python RNG states)"),
    "data": Home(
        "{keys}",
        keys=("data", "sampler", "sampler_state", "dataloader", "dataloader_state",
              "data_position", "data_state"),
        hint="a 'sampler' key (the data position)"),
})

_DCP_DOC = {"model": "same keys as torch; a bare flat state dict",
            "progress": "same keys as torch, nested too (torchtitan's `train_state`)"}

FORMATS: tuple[Format, ...] = (
    Format("torch", "plain `torch.save` dict (top-level key)", _TORCH),
    Format("lightning", "Lightning `.ckpt`", MappingProxyType({
        "model": Home("{keys}", keys=("state_dict",), hint="state_dict"),
        "optimizer": Home("{keys}", keys=("optimizer_states",),
                          hint="optimizer_states (not save_weights_only=True)"),
        "progress": Home("{keys}", keys=("global_step", "epoch"), hint="epoch / global_step"),
        "scheduler": Home("{keys}", keys=("lr_schedulers",), hint="lr_schedulers"),
        "scaler": Home("{keys} (the precision plugin's state)",
                       keys=("MixedPrecision", "MixedPrecisionPlugin",
                             "native_amp_scaling_state", "amp_scaling_state"),
                       hint="the precision plugin's state (mixed precision)"),
        "rng": Home("**never: Lightning stores no RNG state by design**",
                    absent="Lightning checkpoints store no RNG state by design"),
        "data": Home("{keys} (a stateful dataloader)",
                     keys=("loops.fit_loop.state_dict.combined_loader",),
                     hint="a stateful dataloader (loops.fit_loop ... combined_loader)"),
    })),
    Format("hf-trainer", "HF Trainer `checkpoint-N/`", MappingProxyType({
        "model": Home(
            "`model.safetensors`, `pytorch_model.bin` (or their shards), `adapter_model.*`",
            files=(rf"(model|pytorch_model|adapter_model){VARIANT}(-\d+-of-\d+)?"
                   r"\.(safetensors|bin)",),
            hint="model.safetensors or pytorch_model.bin"),
        "optimizer": Home("`optimizer.pt`", files=(r"optimizer\.pt",), hint="optimizer.pt"),
        "progress": Home("`trainer_state.json` with an integer `global_step`",
                         hint="trainer_state.json with global_step"),
        "scheduler": Home("`scheduler.pt`", files=(r"scheduler\.pt",), hint="scheduler.pt"),
        "scaler": Home("`scaler.pt`", files=(r"scaler\.pt",),
                       hint="scaler.pt (mixed precision)"),
        "rng": Home("`rng_state.pth` / `rng_state_<rank>.pth`", files=(r"rng_state(_\d+)?\.pth",),
                    hint="rng_state.pth or rng_state_<rank>.pth"),
        "data": Home("`trainer_state.json`'s `global_step`: the Trainer replays the sampler to "
                     "that step (unless `ignore_data_skip`)",
                     hint="trainer_state.json with global_step"),
    })),
    Format("accelerate", "accelerate `save_state`", MappingProxyType({
        "model": Home("`model*.safetensors`, `pytorch_model*.bin`; under FSDP "
                      "`pytorch_model_fsdp*.bin` (full state dict) or the DCP folder "
                      "`pytorch_model_fsdp_<i>/` (sharded)",
                      files=(r"(model|pytorch_model)(_\d+)?(-\d+-of-\d+)?\.(safetensors|bin)",
                             r"pytorch_model_fsdp(_\d+)?\.bin"),
                      folders=(r"pytorch_model_fsdp_\d+",),
                      hint="model.safetensors"),
        "optimizer": Home("`optimizer*.bin`; under FSDP sharded, the DCP folder `optimizer_<i>/`",
                          files=(r"optimizer(_\d+)?\.bin",), folders=(r"optimizer_\d+",),
                          hint="optimizer.bin"),
        "progress": Home("a registered object (`custom_checkpoint_<i>.pkl`) whose state has a "
                         "progress key; accelerate saves none by itself",
                         hint="a registered object holding step/epoch "
                              "(register_for_checkpointing)"),
        "scheduler": Home("`scheduler*.bin`", files=(r"scheduler(_\d+)?\.bin",),
                          hint="scheduler.bin"),
        "scaler": Home("`scaler.pt`", files=(r"scaler\.pt",), hint="scaler.pt (mixed precision)"),
        "rng": Home("`random_states_<rank>.pkl`", files=(r"random_states_\d+\.pkl",),
                    hint="random_states_<rank>.pkl"),
        # accelerate writes sampler.bin only for an iterable-dataset shard, and
        # dl_state_dict.bin only for a torchdata StatefulDataLoader.
        "data": Home("`sampler*.bin`, `dl_state_dict*.bin`, or a registered object with a data "
                     "key",
                     files=(r"(sampler|dl_state_dict)(_\d+)?\.bin",),
                     hint="an object registered with register_for_checkpointing whose "
                          "state_dict holds the data position (a 'data_position' key: the "
                          "batches to skip_first_batches past), or dl_state_dict.bin (a "
                          "StatefulDataLoader)"),
    }), members=(r"custom_checkpoint_\d+\.pkl",)),
    # Read back into the nested state it was saved from, then judged like a torch.save dict.
    Format("dcp", "DCP folder", MappingProxyType({
        part: Home(_DCP_DOC.get(part, "same keys as torch"), keys=home.keys, hint=home.hint)
        for part, home in _TORCH.items()})),
    # DeepSpeed ZeRO's save_checkpoint: global_step<N>/ (the `latest` tag file beside it).
    # Its client state (save_checkpoint(client_state=...)) is read like a torch.save dict.
    Format("deepspeed", "DeepSpeed ZeRO `global_stepN/`", MappingProxyType({
        "model": Home("the module of `mp_rank_00_model_states.pt`; ZeRO-3: every rank's "
                      "`zero_pp_rank_<rank>_mp_rank_00_model_states.pt` and its fp32 "
                      "partitions, which together cover the model's param_shapes",
                      keys=("module",),
                      files=(r"(zero_pp_rank_\d+_)?mp_rank_\d+_model_states\.pt",),
                      hint="save_checkpoint's mp_rank_00_model_states.pt"),
        "optimizer": Home("every rank's `*zero_pp_rank_<rank>_mp_rank_00_optim_states.pt` "
                          "(bf16_ too), its optimizer_state_dict; without ZeRO, the model "
                          "states' optimizer",
                          files=(r"(bf16_)?zero_pp_rank_\d+_mp_rank_\d+_optim_states\.pt",),
                          hint="every rank's zero_pp_rank_<rank>_mp_rank_00_optim_states.pt"),
        "progress": Home("{keys}; or a progress key of the client state",
                         keys=("global_steps",), hint="global_steps (the engine saves it)"),
        "scheduler": Home("{keys} (a scheduler given to deepspeed.initialize or its config)",
                          keys=("lr_scheduler",),
                          hint="an lr_scheduler given to deepspeed.initialize"),
        "scaler": Home("the client state's scaler key (the optimizer states hold DeepSpeed's "
                       "own loss scaler)", hint="a 'scaler' key in client_state"),
        "rng": Home("`rng_state_<rank>.pth` beside the tag folder (the HF Trainer's), or an rng "
                    "key of the client state", files=(r"rng_state(_\d+)?\.pth",),
                    hint="an 'rng_state' key in client_state"),
        "data": Home("{keys}, or a data key of the client state", keys=("data_sampler",),
                     hint="a 'sampler' key in client_state"),
    })),
    Format("safetensors", "safetensors / PEFT", _weights_only(
        Home("always (the file is weights)"),
        "a safetensors file holds a flat map of tensors only")),
    Format("peft", None, _weights_only(
        Home(files=(r"adapter_model\.safetensors", r"adapter_model\.bin")),
        "a PEFT adapter folder holds adapter weights only")),
    # A saved model (transformers' save_pretrained): weights, their shards and config.
    Format("hf-model", None, _weights_only(
        Home(files=(rf"(model|pytorch_model){VARIANT}(-\d+-of-\d+)?\.(safetensors|bin)",)),
        "a saved model folder holds model weights only")),
)
_BY_NAME = {fmt.name: fmt for fmt in FORMATS}


def key_parts(name: str) -> dict[str, str]:
    """Key -> the part it holds, for a format whose parts are keys."""
    return {key: part for part, home in _BY_NAME[name].homes.items() for key in home.keys}


def keys(name: str) -> tuple[tuple[str, str], ...]:
    """(part, key) in the order the server judges them."""
    return tuple((part, key) for part, home in _BY_NAME[name].homes.items() for key in home.keys)


def files(name: str) -> tuple[tuple[str, str, bool], ...]:
    """(pattern, part, is model weights) of a folder format's members, in the order the server
    tries them; part "" for a member that holds no part by itself."""
    fmt = _BY_NAME[name]
    return (*((pattern, part, part == "model") for part, home in fmt.homes.items()
              for pattern in home.files),
            *((pattern, "", False) for pattern in fmt.members))


def folders(name: str) -> tuple[tuple[str, str], ...]:
    """(pattern, part) of a folder format's DCP sub-folders."""
    return tuple((pattern, part) for part, home in _BY_NAME[name].homes.items()
                 for pattern in home.folders)


def absent(name: str) -> dict[str, str]:
    """Part -> why the format cannot hold it (by design)."""
    return {part: home.absent for part, home in _BY_NAME[name].homes.items()
            if home.absent is not None}


def hints(name: str) -> dict[str, str]:
    """Part -> where a fix line says to save it in this format."""
    return {part: home.hint for part, home in _BY_NAME[name].homes.items()
            if home.hint is not None}


def render() -> str:
    """The documented table (PARTS.md, docs/checkpoints.md): a row per part, a column per
    titled format."""
    columns = [fmt for fmt in FORMATS if fmt.title is not None]
    lines = ["| part | " + " | ".join(str(fmt.title) for fmt in columns) + " |",
             "|" + " --- |" * (len(columns) + 1)]
    for part in PARTS:
        lines.append(f"| {part} | " + " | ".join(fmt.homes[part].cell() for fmt in columns)
                     + " |")
    return "\n".join(lines) + "\n"

if __name__ == "__main__":
    print(render(), end="")
