"""Handing a listed artifact to the loader, and judging what came back (every check here).

A path is located first (inside the campaign, present, a file or a folder: ``locate_problem``),
then reloaded through ``Context.reload`` (memoised: one load per file for all four checks);
``reload_findings`` turns the verdict into findings under the asking check's id, with a fix
line chosen by the typed kind of the failure, never parsed from its text: a file that holds
code is treated as hostile and never gets a load or re-save hint.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Sequence
from typing import TypeVar

from pytest_itera.checks.context import Context
from pytest_itera.checks.model import Kind
from pytest_itera.core.campaign import (
    AdapterRecord,
    Campaign,
    CheckpointRecord,
)
from pytest_itera.core.findings import Finding
from pytest_itera.files.tree import os_reason
from pytest_itera.reload import ReloadResult, formats

R = TypeVar("R", CheckpointRecord, AdapterRecord)


def checkpoints(ctx: Context) -> tuple[CheckpointRecord, ...]:
    man = ctx.campaign.manifest
    return man.checkpoints if man is not None else ()


def adapters(ctx: Context) -> tuple[AdapterRecord, ...]:
    man = ctx.campaign.manifest
    return man.adapters if man is not None else ()


def indexed(records: Sequence[R], target: str | None) -> list[tuple[int, R]]:
    return [(i, r) for i, r in enumerate(records) if r.path == target]


def locate_problem(ctx: Context, relpath: str, where: str, what: str,
                   check: str = "located", *, loaded: bool = True) -> Finding | None:
    """Why ``relpath`` cannot be handed to a loader, or None: inside, present, file or folder
    (``loaded``: a folder holding no link that leaves the campaign, which a loader would
    follow). ``check``: the id of the check that reports it (the codes' prefix)."""
    inside = ctx.inside(relpath)
    if isinstance(inside, str):
        return Finding(f"{what} path {relpath!r} {inside}: it is not loaded",
                       where=f"{where}.path",
                       hint="copy the file itself into the campaign folder"
                       if inside.kind == "link-leaves" else
                       "record paths relative to the campaign folder, and keep the files "
                       "inside it",
                       code=f"{check}.outside")
    if ctx.stored is not None and ctx.stored.over_cap(relpath):
        return None  # in the store, over the cache cap: ctx.reload says it cannot be proven
    try:
        mode = os.lstat(inside).st_mode  # a real path: no link left to follow
    except FileNotFoundError:
        return Finding(f"{what} {relpath} is missing", where=f"{where}.path",
                       hint="retrieve it before the rental ends, or correct the manifest",
                       code=f"{check}.missing")
    except OSError as exc:
        return Finding(f"{what} {relpath} cannot be read: {os_reason(exc)}", where=f"{where}.path",
                       code=f"{check}.unreadable")
    out = ctx.links_out(relpath) if loaded and stat.S_ISDIR(mode) else []
    if out:  # a loader reads what a link names: never a file outside the folder
        more = f" (and {len(out) - 1} more)" if len(out) > 1 else ""
        return Finding(f"{what} {relpath} holds a link that does not stay inside the "
                       f"campaign folder (it leads out, dangles or loops), {out[0]}{more}: it "
                       "is not loaded", where=f"{where}.path",
                       hint="copy the file itself into the campaign folder",
                       code=f"{check}.outside")
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        # A FIFO or device would block a loader: it is never opened.
        return Finding(f"{what} {relpath} is neither a regular file nor a folder",
                       where=f"{where}.path",
                       code=f"{check}.not-a-file")
    return None


def load_error(result: ReloadResult) -> str | None:
    """The cause when the checkpoint did not load at all; None when it loaded (even if its
    weights are non-finite: judged apart, as its format against the claim)."""
    if result.ok:
        return None
    if result.failure == "nonfinite":
        return None
    return result.cause or f"{result.path}: not loaded (the loader gave no cause)"


def reload_findings(
    ctx: Context, relpath: str, claimed: str | None, where: str, check: str, *,
    diverged_ok: bool = False
) -> Iterator[Finding]:
    """``diverged_ok``: non-finite weights are the expected evidence of a stop (the
    checkpoint must still reload; see :func:`informational`)."""
    result = ctx.reload(relpath, claimed)
    error = load_error(result)
    if result.failure == "not-copied":  # it may reload: that is not proven, so not passed
        yield Finding(error or relpath, where=where, code=f"{check}.not-copied")
        return
    if error is not None:
        # Typed, not parsed: a file that holds code never gets a load or re-save hint.
        yield Finding(f"does not reload in a fresh process with weights_only=True: {error}",
                      where=where,
                      hint=MODULE_OBJECTS_HINT if result.failure == "whole-module"
                      else code_hint(result.holds_code, claimed) if result.holds_code
                      else _load_hint(result.failure),
                      code=f"{check}.no-reload")
    if not result.ok and result.nonfinite and not diverged_ok:
        yield _nonfinite_finding(result, where, check)
    if claimed is not None and not _agrees(claimed, result.format, loaded=error is None):
        yield Finding(
            f"{relpath} holds {result.format!r} content, but the manifest declares format "
            f"{claimed!r}",
            where=f"{where}.format", expected=claimed, found=result.format,
            hint=_format_hint(result.format),
            code=f"{check}.format",
        )


def _agrees(claimed: str, found: str | None, *, loaded: bool) -> bool:
    """A Lightning .ckpt is a torch.save file: declaring it 'torch' is not wrong; and only its
    loaded keys tell it from another torch.save file, so one that did not load is not said
    to be plain 'torch'."""
    return found is None or found == claimed or (claimed, found) == ("torch", "lightning") \
        or (not loaded and (claimed, found) == ("lightning", "torch"))


def nonfinite_counts(result: ReloadResult) -> str:
    """``1 NaN value in 1 tensor``, ``3 NaN and 2 inf values in 2 tensors``; a hook's verdict
    without counts: ``NaN or inf values in 2 tensors``."""
    tensors = max(result.nonfinite_tensors, len(result.nonfinite))
    nan, inf = result.nan_values, result.inf_values
    counted = " and ".join(f"{n} {what}" for n, what in ((nan, "NaN"), (inf, "inf")) if n)
    values = f"{counted} value{'s' if nan + inf != 1 else ''}" if counted else \
        "NaN or inf values"
    return f"{values} in {tensors} tensor{'s' if tensors != 1 else ''}"


def _nonfinite_finding(result: ReloadResult, where: str, check: str) -> Finding:
    total = max(result.nonfinite_tensors, len(result.nonfinite))
    shown = ", ".join(result.nonfinite)
    more = f" (and {total - len(result.nonfinite)} more)" if total > len(result.nonfinite) else ""
    return Finding(
        f"{result.path} holds non-finite model weights: {nonfinite_counts(result)}",
        where=where, found=shown + more,
        hint="training diverged before this save: resume from the last finite checkpoint, "
        "or record the run as stopped by its non-finite stop rule (its last checkpoint is "
        "then evidence of the stop)",
        code=f"{check}.non-finite",
    )


CODE_HINT = ("the file holds code that runs when it is unpickled: treat it as hostile; do "
             "not load, convert or re-save it in any way (no weights_only=False, no "
             "allowlisting); remove it, find out how it got into the campaign, and deliver "
             "the weights the training run itself wrote as plain tensors")


MODULE_OBJECTS_HINT = (
    "the file pickles whole torch.nn module objects (torch.save(model)), which "
    "weights_only=True cannot load: do not load this file; from the training environment, "
    "deliver torch.save(model.state_dict(), ...) (plain tensors) instead")


def data_objects_hint(names: tuple[str, ...], fmt: str | None = None) -> str:
    """The fix for standard-library data pickled as objects (formats.DATA_OBJECTS); the
    word on Lightning's hyperparameters only where the file may be Lightning's (``fmt``:
    the format the manifest declares, None when unknown)."""
    fixes = "; ".join(dict.fromkeys(formats.DATA_OBJECTS[n][1] for n in names))
    lightning = ("Lightning's save_hyperparameters() keeps its arguments as given (or leave "
                 "one out: save_hyperparameters(ignore=[...])); " if fmt in (None, "lightning")
                 else "")
    return (f"save plain data instead ({fixes}): {lightning}then save the checkpoint again "
            "from the run; do not load this file with weights_only=False to convert it")


def code_hint(names: tuple[str, ...], fmt: str | None = None) -> str:
    """What to do about a file whose pickles would call ``names``: torch's own nn module
    classes are a whole-module save, standard-library data objects (a pathlib path, an
    argparse.Namespace) plain data saved as objects: format mistakes; anything else is
    hostile. ``fmt``: the format the manifest declares."""
    if names and all(n.startswith("torch.nn.modules.") for n in names):
        return MODULE_OBJECTS_HINT
    if names and all(n in formats.DATA_OBJECTS for n in names):
        return data_objects_hint(names, fmt)
    return CODE_HINT


_LOAD_HINTS = {
    "weights-only": "loading it needs weights_only=False, which runs code from the file: never "
                    "do that; save tensors and plain containers only (state_dict()s, numbers, "
                    "strings) or safetensors, from a trusted process",
    "timeout": "raise --itera-timeout (ini itera_timeout) if the checkpoint is that large; a "
               "load that never ends is a broken file",
    "interpreter": "pass --itera-python with the training environment's Python (torch >= 2.10)",
    "missing-package": "install it in the reload interpreter (--itera-python)",
    "memory": "the checkpoint needs more memory than the reload allows: check its size",
}


def _load_hint(failure: str | None) -> str:
    """The fix line for a checkpoint that did not load, by the typed kind of its failure."""
    return _LOAD_HINTS.get(failure or "", "the file is truncated, corrupt or not a checkpoint: "
                           "retrieve it again, or save it again from the run")


def _format_hint(found: str | None) -> str:
    if found == "peft":
        return ("a PEFT adapter folder belongs in adapters (adapter-pinned reloads it); or list "
                "its weights file here: adapter_model.safetensors with format 'safetensors', "
                "adapter_model.bin (save_pretrained(safe_serialization=False)) with format "
                "'torch'")
    return "correct the manifest's format: the content decides, not the file name"


def has_artifacts(campaign: Campaign) -> bool:
    """The campaign lists checkpoints or adapters: something to reload."""
    man = campaign.manifest
    return man is not None and bool(man.checkpoints or man.adapters)


def located(ctx: Context, relpath: str) -> bool:
    """The path resolves to something a loader may be handed (inside the folder, present)."""
    return locate_problem(ctx, relpath, "", "") is None


def located_kinds(check: str, what: str) -> dict[str, Kind]:
    """The kinds of :func:`locate_problem`'s findings under ``check``'s id; ``what``: the
    listed path, in the rule's words."""
    return {
        f"{check}.outside": Kind(
            rule=f"the {what} path is not inside the campaign folder (absolute, '..', or a link "
            "leading out, or a folder holding one): it is not loaded",
            fix="record paths relative to the campaign folder and keep the files inside it; "
            "copy a linked file itself in"),
        f"{check}.missing": Kind(
            rule=f"the {what} the manifest lists is not in the campaign folder",
            fix="retrieve it before the rental ends, or correct the manifest"),
        f"{check}.unreadable": Kind(
            rule=f"the {what} cannot be read (permissions, an I/O error)",
            fix="make it readable, or retrieve it again"),
        f"{check}.not-a-file": Kind(
            rule=f"the {what} path is neither a regular file nor a folder (a FIFO, a device): "
            "it is never opened",
            fix="list the file or folder itself"),
    }


def reload_kinds(check: str, what: str) -> dict[str, Kind]:
    """The kinds of :func:`reload_findings`' findings under ``check``'s id, but the format's
    (only a checkpoint declares one)."""
    return {
        f"{check}.not-copied": Kind(
            rule=f"the {what}, left in the store by the local cache cap, could not be spooled "
            "when it was judged (the store did not give it, or it changed since the listing): "
            "that it reloads is not proven, so it does not pass",
            fix="check the object in the store (push the campaign again), or judge a local copy "
            "that holds the whole file"),
        f"{check}.no-reload": Kind(
            rule=f"the {what} does not load in a fresh interpreter with weights_only=True "
            "(code in its pickles, whole modules, corrupt, a timeout)",
            fix="never load a file that holds code; save plain tensors (state_dict(), "
            "safetensors) from the run; the hint names the cause's fix"),
        f"{check}.non-finite": Kind(
            rule=f"the {what}'s model weights hold NaN or inf values: training diverged "
            "before the save",
            fix="resume from the last finite checkpoint, or record the run as stopped by its "
            "non-finite stop rule"),
    }
