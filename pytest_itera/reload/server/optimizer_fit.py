"""Whether the optimizer states of a checkpoint fit its model, and are finite.

``Optimizer.state_dict()`` names its parameters by integer index (the order the optimizer
was given them, group after group) or, built from ``named_parameters()`` (torch >= 2.6),
by ``param_names``; its per-parameter buffers (``exp_avg``, ``momentum_buffer``, ...) have
their parameter's shape.  The model's state dict also holds buffers (``running_mean``) and
frozen parameters that no optimizer holds, so an index is never mapped to a model tensor by
position: what is proven is said (a buffer of a shape no model tensor has, more parameters
than the model has tensors), what is not is said too ("cannot prove").
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import torch

from .finite import count_nonfinite, tensor_finite
from .verdict import Findings

# State entries with their parameter's shape, in torch's optimizers (Adam, AdamW, NAdam,
# RAdam, Adamax, SGD, RMSprop, Adagrad, Adadelta, ASGD, Rprop).  Other keys (a factored
# second moment, an 8-bit optimizer's quantised state, scalars) are not compared.
PARAM_SHAPED = frozenset({"exp_avg", "exp_avg_sq", "max_exp_avg_sq", "momentum_buffer",
                          "square_avg", "acc_delta", "sum", "grad_avg", "exp_inf", "ax",
                          "prev", "step_size"})
# Model state-dict entries that are buffers, never parameters (by their last name).
BUFFER_NAMES = frozenset({"running_mean", "running_var", "num_batches_tracked", "inv_freq",
                          "masked_bias", "position_ids", "token_type_ids"})
MAX_NAMED = 20


def optimizers_of(key: str, value: Any) -> list[tuple[str, dict[str, Any]]]:
    """The optimizer state dicts a part holds: one, a list of them, or a dict of them."""
    if isinstance(value, dict) and "param_groups" in value:
        return [(key, value)]
    if isinstance(value, (list, tuple)):
        return [o for i, v in enumerate(value) for o in optimizers_of(f"{key}.{i}", v)]
    if isinstance(value, dict):
        return [o for k, v in value.items() for o in optimizers_of(f"{key}.{k}", v)]
    return []


def judge_optimizers(found: Findings) -> None:
    """Judge every optimizer state found against the model tensors found beside it."""
    states = [o for key, value in found.optimizers for o in optimizers_of(key, value)]
    if not states:
        return
    problems: list[dict[str, str]] = []
    nonfinite: list[dict[str, Any]] = []
    params: list[tuple[str, Any, list[int] | None]] = []  # (where, index or name, shape)
    for key, state in states:
        params += parameters(key, state, problems)
        nonfinite += nonfinite_buffers(key, state)
    if found.model:
        fit_model(found, params, problems)
    found.optimizer = {
        "params": len(params), "problems": problems[:MAX_NAMED],
        "nonfinite": nonfinite[:MAX_NAMED], "nonfinite_buffers": len(nonfinite),
        "nan_values": sum(b["nan"] for b in nonfinite),
        "inf_values": sum(b["inf"] for b in nonfinite)}


def problem(problems: list[dict[str, str]], kind: str, key: str, detail: str) -> None:
    problems.append({"kind": kind, "key": key, "detail": detail})


def entries(state: dict[str, Any]) -> dict[str, Any]:
    """Per-parameter state by the parameter's id as text: DCP gives an index-keyed dict back
    as a list, or with its keys as strings."""
    raw = state.get("state")
    if isinstance(raw, (list, tuple)):
        raw = dict(enumerate(raw))
    return {str(k): v for k, v in raw.items()} if isinstance(raw, dict) else {}


def parameters(key: str, state: dict[str, Any],
               problems: list[dict[str, str]]) -> list[tuple[str, Any, list[int] | None]]:
    """Each parameter the groups list, with the shape its buffers give it (None: no
    buffer of a known kind, e.g. a stateless SGD)."""
    listed: list[Any] = []
    names: list[Any] = []
    for group in state.get("param_groups") or ():
        if isinstance(group, dict):
            listed += list(group.get("params") or ())
            names += list(group.get("param_names") or ())
    if len(names) != len(listed):
        names = []
    held = entries(state)
    repeated = sorted({str(p) for p, n in Counter(map(str, listed)).items() if n > 1})
    if repeated:
        problem(problems, "mismatch", f"{key}.param_groups",
                f"lists parameter(s) {', '.join(repeated[:5])} in more than one place")
    ids = {str(p) for p in listed}
    unlisted = [k for k in held if k not in ids]
    if unlisted:
        problem(problems, "mismatch", f"{key}.state",
                f"holds state for parameter(s) {', '.join(unlisted[:5])}, which no parameter "
                f"group lists ({len(listed)} listed): it is not this optimizer's state")
    out = []
    for i, param in enumerate(listed):
        name = names[i] if names else param
        out.append((f"{key}.state.{param}", name, buffer_shape(
            key, param, held.get(str(param)), problems)))
    return out


def buffer_shape(key: str, param: Any, entry: Any,
                 problems: list[dict[str, str]]) -> list[int] | None:
    """The shape a parameter's buffers agree on, None when it has none to compare."""
    if not isinstance(entry, dict):
        return None
    shapes = {name: list(t.shape) for name, t in entry.items()
              if name in PARAM_SHAPED and isinstance(t, torch.Tensor)}
    if len({str(s) for s in shapes.values()}) > 1:
        said = ", ".join(f"{n} {s}" for n, s in sorted(shapes.items()))
        problem(problems, "mismatch", f"{key}.state.{param}",
                f"has buffers that disagree on their parameter's shape: {said}")
        return None
    return next(iter(shapes.values()), None)


def candidates(model: dict[str, tuple[list[int], str, int]],
               tied: dict[str, str]) -> dict[str, list[int]]:
    """Model tensors that can be parameters: floating point, not a known buffer, not the
    second name of a tied weight (one parameter, one optimizer state)."""
    return {name: shape for name, (shape, dtype, _) in model.items()
            if dtype.startswith(("float", "bfloat", "complex"))
            and name.rpartition(".")[2] not in BUFFER_NAMES and name not in tied}


def fit_model(found: Findings, params: list[tuple[str, Any, list[int] | None]],
              problems: list[dict[str, str]]) -> None:
    model = candidates(found.model, found.tied)
    named = [p for p in params if isinstance(p[1], str)]
    if named and len(named) == len(params):
        fit_by_name(found, params, problems)
        return
    have = Counter(str(s) for s in model.values())
    need = Counter(str(shape) for _, _, shape in params if shape is not None)
    for shape, count in sorted(need.items()):
        if count > have[shape]:
            where = [w for w, _, s in params if str(s) == shape]
            problem(problems, "mismatch", where[0],
                    f"has buffers of shape {shape} ({count} parameter(s): "
                    f"{', '.join(w.rpartition('.')[2] for w in where[:5])}), but the model has "
                    f"{have[shape]} tensor(s) of that shape: the optimizer state does not fit "
                    "this model")
    if len(params) > len(model):
        problem(problems, "mismatch", params[0][0].rpartition(".state.")[0],
                f"has {len(params)} parameters, but the model has only {len(model)} tensor(s) that "
                "can be parameters: the optimizer state is another model's")
    elif len(params) < len(model) and not peft_trainable(model, params):
        problem(problems, "unproven", params[0][0].rpartition(".state.")[0],
                f"has {len(params)} parameter(s) for the model's {len(model)} floating-point "
                "tensors: the other tensors are frozen parameters or buffers, or the "
                "optimizer state is another model's (its parameters are numbered, not named)")


# The tensors a PEFT model trains (its base frozen): LoRA/IA3/DoRA matrices and vectors,
# prompt/prefix encoders, and the copies of modules_to_save.
PEFT_TRAINED = ("lora_", "ia3_", "prompt_encoder", "prefix_encoder", ".modules_to_save.",
                "hada_", "lokr_", "oft_", "boft_", "vera_")


def peft_trainable(model: dict[str, list[int]], params: list[tuple[str, Any, list[int] | None]]
                   ) -> bool:
    """An optimizer over exactly a PEFT model's own tensors (the base frozen, as PEFT leaves
    it): as many parameters as the model has PEFT tensors, of the same shapes."""
    trained = [shape for name, shape in model.items() if any(m in name for m in PEFT_TRAINED)]
    if not trained or len(trained) != len(params):
        return False
    shapes = [shape for _, _, shape in params if shape is not None]
    return not (Counter(map(str, shapes)) - Counter(map(str, trained)))


def fit_by_name(found: Findings, params: list[tuple[str, Any, list[int] | None]],
                problems: list[dict[str, str]]) -> None:
    """``param_names`` prove the mapping: each name is a model tensor of the buffers' shape.
    An optimizer built from a wrapper's ``named_parameters()`` (DDP's ``module.``,
    torch.compile's ``_orig_mod.``) beside the unwrapped model's state dict, or the reverse,
    names the same tensors: compared without the wrappers' components. Names of another
    scheme prove nothing."""
    if not any(name in found.model for _, name, _ in params):
        params = unwrapped_names(found.model, params)
    if not any(name in found.model for _, name, _ in params):
        problem(problems, "unproven", params[0][0].rpartition(".state.")[0],
                f"names its parameters ({shown_names(params)}) by names the model's state "
                "dict does not use")
        return
    for where, name, shape in params:
        entry = found.model.get(name)
        if entry is None:
            problem(problems, "mismatch", where,
                    f"is the state of parameter {name!r}, which the model does not hold")
        elif shape is not None and shape != entry[0]:
            problem(problems, "mismatch", where,
                    f"has buffers of shape {shape} for parameter {name!r} of shape {entry[0]}")


# What wrappers add to parameter names: DDP/DataParallel's and torch.compile's leading
# ``module.`` / ``_orig_mod.``; FSDP's and activation checkpointing's wrapped-module components.
LEADING_WRAPPERS = ("module.", "_orig_mod.")
WRAPPER_COMPONENTS = frozenset({"_fsdp_wrapped_module", "_checkpoint_wrapped_module"})


def unwrapped(name: str) -> str:
    while name.startswith(LEADING_WRAPPERS):
        name = name.partition(".")[2]
    return ".".join(p for p in name.split(".") if p not in WRAPPER_COMPONENTS)


def unwrapped_names(model: dict[str, Any], params: list[tuple[str, Any, list[int] | None]]
                    ) -> list[tuple[str, Any, list[int] | None]]:
    """``params`` named by the model's own names where they differ only by wrappers; as
    they are when the unwrapped names would be ambiguous (two model tensors, one name)."""
    by_unwrapped = {unwrapped(name): name for name in model}
    if len(by_unwrapped) != len(model):
        return params
    return [(where, by_unwrapped.get(unwrapped(name), name), shape)
            for where, name, shape in params]


def shown_names(params: list[tuple[str, Any, list[int] | None]]) -> str:
    names = [repr(name) for _, name, _ in params[:3]]
    return ", ".join(names) + (", ..." if len(params) > 3 else "")


def nonfinite_buffers(key: str, state: dict[str, Any]) -> list[dict[str, Any]]:
    """Each optimizer buffer holding NaN or inf: a resumed step spreads it to the weights."""
    out = []
    files = file_mappings()
    for param, entry in entries(state).items():
        if not isinstance(entry, dict):
            continue
        for name, t in entry.items():
            if isinstance(t, torch.Tensor) and not finite(t, files):
                nan, inf = count_nonfinite(t)
                out.append({"name": f"{key}.state.{param}.{name}", "nan": nan, "inf": inf})
    return out


def file_mappings() -> list[tuple[int, int]]:
    """The address ranges mapped from files (a torch.load(mmap=True) checkpoint's among
    them): only there may checked pages be dropped (they refault from the file)."""
    ranges = []
    try:
        with open("/proc/self/maps") as fh:
            for line in fh:
                fields = line.split(None, 5)
                if len(fields) == 6 and fields[5].startswith("/"):
                    lo, _, hi = fields[0].partition("-")
                    ranges.append((int(lo, 16), int(hi, 16)))
    except (OSError, ValueError):
        return []
    return ranges


def finite(t: torch.Tensor, files: list[tuple[int, int]]) -> bool:
    start = t.data_ptr()
    mapped = t.layout == torch.strided and any(lo <= start < hi for lo, hi in files)
    try:
        return tensor_finite(t, mapped=mapped)
    except (RuntimeError, TypeError, NotImplementedError):
        return True  # no kernel for its dtype: not judged
