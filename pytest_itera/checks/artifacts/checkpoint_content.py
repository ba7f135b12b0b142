"""Checkpoints judged by what they hold, against the manifest and each other (v3).

The reload child reports typed facts (``ReloadResult.step``, ``model_shapes``,
``model_digest``, ``optimizer``); here they are compared with what the manifest says:

* a resume checkpoint's optimizer fits its model and is finite (resume-complete);
* a resume checkpoint agrees with itself: its optimizer's per-group ``lr`` (``initial_lr``)
  is its LR scheduler's ``_last_lr`` (``base_lrs``), exactly (resume-complete);
* the step a resume checkpoint stores is the step a ``resumed_from`` naming it records
  (resume-complete);
* a resumed run's own resume checkpoints trained past the checkpoint it resumed from: not
  its bytes, not its model tensors, a later step (resume-complete);
* two deliverable runs never ship the same weights (same bytes, or the same tensors in
  other bytes); a run's checkpoints agree on the shapes of their common tensors, and hold
  the sizes their run's config states (artifacts-required).
"""

from __future__ import annotations

import math
import os
import struct
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from pytest_itera.core.campaign import (
    MANIFEST_FILE,
    CheckpointRecord,
    ResumedFrom,
    parse_json,
)
from pytest_itera.core.findings import Finding

if TYPE_CHECKING:
    from pytest_itera.checks.context import Context
    from pytest_itera.reload import OptimizerFit, OptimizerRates, Rate, ReloadResult, SchedulerRates

__all__ = ["STATED_SIZES", "resume_content", "run_weights"]

Reloaded = Callable[[CheckpointRecord], "ReloadResult | None"]

# Keys of a run's config that state a layer size every model of that config has.
STATED_SIZES = ("width", "hidden_size", "d_model", "n_embd", "hidden_dim", "embed_dim")
CONFIG_CAP = 1 << 20
_DELIVERING = ("control", "variant")


# ------------------------------------------------------------- resume-complete


def resume_content(ctx: Context, record: CheckpointRecord, result: ReloadResult,
                   where: str) -> Iterator[Finding]:
    """A resume checkpoint's optimizer fits its model and is finite; the step it stores is
    the one every ``resumed_from`` naming it records."""
    if result.optimizer is not None:
        yield from _optimizer_findings(record, result.optimizer, where)
    yield from _rate_findings(record, result, where)
    yield from _step_findings(ctx, record, result, where)
    yield from _trained_past(ctx, record, result, where)


def _optimizer_findings(record: CheckpointRecord, fit: OptimizerFit,
                        where: str) -> Iterator[Finding]:
    for problem in fit.problems:
        if problem.kind == "mismatch":
            yield Finding(
                f"the optimizer state of resume checkpoint {record.path} does not fit its "
                f"model: {problem.key} {problem.detail}",
                where=where, code="resume-complete.optimizer-mismatch",
                hint="save optimizer.state_dict() of the optimizer that trains this model, in "
                "the same checkpoint as model.state_dict() (save_resume_checkpoint does)")
        else:
            yield Finding(
                f"cannot prove that the optimizer state of resume checkpoint {record.path} "
                f"fits its model: {problem.key} {problem.detail}",
                where=where, code="resume-complete.optimizer-unproven",
                hint=_NAMED_HINTS.get(record.format, _NAMED_HINT))
    if fit.nonfinite_buffers:
        counted = " and ".join(f"{n} {what}" for n, what in
                               ((fit.nan_values, "NaN"), (fit.inf_values, "inf")) if n)
        names = ", ".join(f"{b.name} ({_values(b.nan, b.inf)})" for b in fit.nonfinite[:5])
        more = fit.nonfinite_buffers - min(5, len(fit.nonfinite))
        yield Finding(
            f"resume checkpoint {record.path} holds a non-finite optimizer state: {counted} "
            f"value(s) in {fit.nonfinite_buffers} buffer(s): {names}"
            f"{f' (and {more} more)' if more > 0 else ''}; a resumed step would turn the "
            "weights non-finite",
            where=where, code="resume-complete.optimizer-nonfinite",
            expected="finite optimizer buffers", found=names,
            hint="resume from the last checkpoint whose optimizer state is finite, or record "
            "the run as stopped by its non-finite rule")


_NAMED_HINT = ("build the optimizer from model.named_parameters() (torch >= 2.6 then saves "
               "param_names, which prove which tensor each state belongs to), or give it every "
               "parameter of the model")
_TRAINABLE = "[(n, p) for n, p in {}named_parameters() if p.requires_grad]"
# Where the tools build the optimizer themselves: how to give it named parameters there (a
# frozen backbone or embedding leaves it fewer parameters than the model has tensors).
_NAMED_HINTS = {
    "hf-trainer": "the Trainer builds its optimizer from numbered parameters: build it "
                  "yourself from named ones, Trainer(..., optimizers=(torch.optim.AdamW("
                  f"{_TRAINABLE.format('model.')}, lr=...), None)) (torch >= 2.6 then saves "
                  "param_names, which prove which tensor each state belongs to), and train "
                  "the run again",
    "lightning": "return from configure_optimizers() an optimizer built from named "
                 f"parameters, e.g. torch.optim.AdamW({_TRAINABLE.format('self.')}) "
                 "(torch >= 2.6 then saves param_names, which prove which tensor each state "
                 "belongs to), and train the run again",
}


# The pairs of lists that must be equal, group by group: (the optimizer group's key, the
# scheduler state's list, how the message names each).
_RATE_PAIRS = (("lr", "last_lr", "_last_lr", "lr", "last lr"),
               ("initial_lr", "base_lrs", "base_lrs", "initial_lr", "base lr"))
_SHOWN_GROUPS = 4


def rate_disagreements(optimizer: OptimizerRates, scheduler: SchedulerRates) -> list[str]:
    """The one home of the rule: an optimizer state and the LR scheduler state that drives
    it agree when each group's ``lr`` is the scheduler's ``_last_lr`` for that group and its
    ``initial_lr`` the scheduler's ``base_lrs``, exactly (a scheduler's step writes the one
    float into both). A list the scheduler does not store (ReduceLROnPlateau has no
    ``base_lrs``), a group without the number, or lists of other lengths are not judged.
    Each disagreement, in words."""
    groups = len(optimizer.lr)
    said = []
    for mine, theirs, field, own_name, their_name in _RATE_PAIRS:
        ours = getattr(optimizer, mine)
        stored = getattr(scheduler, theirs)
        if stored is None or len(stored) != len(ours):
            continue
        for index, (a, b) in enumerate(zip(ours, stored, strict=True)):
            if a is not None and b is not None and not same_rate(a, b):
                said.append(
                    f"in parameter group {index} (of {groups}) the optimizer's {own_name} is "
                    f"{_rate(a)} ({optimizer.key} param_groups[{index}]['{mine}']) but the LR "
                    f"scheduler's {their_name} is {_rate(b)} ({scheduler.key} "
                    f"{field}[{index}])")
    return said


def same_rate(a: Rate, b: Rate) -> bool:
    """Equal as stored: the same float, or one side a tensor holding the other's float in
    its dtype (a CyclicLR's float base_lrs beside a tensor lr's float32 initial_lr)."""
    if a.value == b.value or (math.isnan(a.value) and math.isnan(b.value)):
        return True
    return _as_stored(a.value, b.dtype) == b.value or _as_stored(b.value, a.dtype) == a.value


def _as_stored(value: float, dtype: str | None) -> float | None:
    """``value`` as a tensor of ``dtype`` holds it (torch rounds to nearest, ties to even);
    None for a dtype it is not rounded to."""
    try:
        if dtype in (None, "float64", "double"):
            return value
        if dtype in ("float32", "float"):
            return float(struct.unpack("<f", struct.pack("<f", value))[0])
        if dtype in ("float16", "half"):
            return float(struct.unpack("<e", struct.pack("<e", value))[0])
        if dtype == "bfloat16":
            bits = struct.unpack("<I", struct.pack("<f", value))[0]
            bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
            return float(struct.unpack("<f", struct.pack("<I", bits))[0])
    except (OverflowError, struct.error):
        return None
    return None


def _rate(rate: Rate) -> str:
    return repr(rate.value) if rate.dtype is None else f"{rate.value!r} (a {rate.dtype} tensor)"


def _rate_findings(record: CheckpointRecord, result: ReloadResult,
                   where: str) -> Iterator[Finding]:
    """A resume checkpoint that disagrees with itself is refused: its optimizer and its LR
    scheduler were saved at different steps (or a group's lr set by hand beside the
    scheduler), and a resume would restore neither as the run had them. Judged where it
    holds one optimizer state and one scheduler state: with several, which scheduler drives
    which optimizer is not in the file."""
    if len(result.optimizer_rates) != 1 or len(result.scheduler_rates) != 1:
        return
    optimizer, scheduler = result.optimizer_rates[0], result.scheduler_rates[0]
    said = rate_disagreements(optimizer, scheduler)
    if not said:
        return
    more = len(said) - _SHOWN_GROUPS
    yield Finding(
        f"resume checkpoint {record.path} cannot resume as saved: its optimizer and its LR "
        f"scheduler disagree: {'; '.join(said[:_SHOWN_GROUPS])}"
        f"{f' (and {more} more)' if more > 0 else ''}",
        where=where, code="resume-complete.lr-disagrees",
        expected=f"each parameter group's lr in {optimizer.key} equal to {scheduler.key} "
        "_last_lr, and its initial_lr to base_lrs",
        found=said[0],
        hint="save the optimizer and the LR scheduler state at the same step, after "
        "scheduler.step(): optimizer.state_dict() and scheduler.state_dict() taken together "
        "(pytest_itera.record.save_resume_checkpoint does); do not set a group's lr by hand "
        "beside a scheduler")


def _values(nan: int, inf: int) -> str:
    return " and ".join(f"{n} {what}" for n, what in ((nan, "NaN"), (inf, "inf")) if n) \
        or "non-finite values"


def _step_findings(ctx: Context, record: CheckpointRecord, result: ReloadResult,
                   where: str) -> Iterator[Finding]:
    man = ctx.campaign.manifest
    if man is None:
        return
    for index, run in enumerate(man.runs):
        resumed = run.resumed_from
        if resumed is None or resumed.checkpoint != record.path:
            continue
        at = f"{MANIFEST_FILE} $.runs[{index}].resumed_from.step"
        if result.step is None:
            stored = ", ".join(f"{k} {v}" for k, v in result.stored_steps)
            yield Finding(
                f"cannot prove that {record.path} holds step {resumed.step}, the step run "
                f"{run.id} records in resumed_from: "
                + (f"the steps it stores disagree ({stored})" if stored else
                   "it stores no training step (a step key in its progress)"),
                where=at, code="resume-complete.step-unproven",
                expected=f"a stored step of {resumed.step}", found="no step",
                hint="save the step in the checkpoint's progress ({'step': N}); "
                "pytest_itera.record.save_resume_checkpoint does")
        elif result.step != resumed.step:
            yield Finding(
                f"{record.path} stores step {result.step}, but run {run.id} records "
                f"resumed_from.step {resumed.step} for it: the run resumed from another "
                "checkpoint, or the record is wrong",
                where=at, code="resume-complete.step-mismatch",
                expected=str(resumed.step), found=str(result.step),
                hint="list the checkpoint the run actually resumed from, with the step that "
                "checkpoint holds (CampaignRecorder: run.resumed_from(path, step))")


def _trained_past(ctx: Context, record: CheckpointRecord, result: ReloadResult,
                  where: str) -> Iterator[Finding]:
    """A resumed run's own resume checkpoints hold training done after the resume: one of
    them is not the checkpoint it resumed from (bytes or model tensors) and stores a later
    step. A save right after the restore is no fault while a later one trained on."""
    man = ctx.campaign.manifest
    run = man.run(record.run) if man is not None else None
    origin = run.resumed_from if run is not None else None
    if man is None or origin is None:
        return
    source = next((c for c in man.checkpoints
                   if c.path.rstrip("/") == origin.checkpoint.rstrip("/")), None)
    if source is None or source.run == record.run or source.path == record.path:
        return  # role-evidence says what the resumed_from is not
    untrained = _untrained(ctx, record, result, source, origin)
    if untrained is None:
        return
    for other in man.checkpoints:
        if other.run == record.run and other.kind == "resume" and other.path != record.path \
                and _present(ctx, other.path):
            theirs = ctx.reload(other.path, other.format)
            if theirs.ok and _untrained(ctx, other, theirs, source, origin) is None:
                return
    same, found = untrained
    yield Finding(
        f"{record.path} of run {record.run} {same} {source.path}, the checkpoint it resumed "
        "from, and the run lists no later checkpoint: the resume never trained, so it "
        "proves no resume",
        where=where, code="resume-complete.never-trained",
        expected=f"a checkpoint of run {record.run} saved after training past step "
        f"{origin.step} in the new process", found=found,
        hint="resume the checkpoint in a new process, train on, and save the resumed run's "
        "own checkpoint (save_resume_checkpoint) at its later step")


def _untrained(ctx: Context, record: CheckpointRecord, result: ReloadResult,
               source: CheckpointRecord, origin: ResumedFrom) -> tuple[str, str] | None:
    """How ``record`` is still the checkpoint the run resumed from, or None when it holds
    training past it (or nothing says otherwise)."""
    sha = _sha256(ctx, record)
    if sha is not None and sha == _sha256(ctx, source):
        return "is byte for byte", f"the bytes of {source.path}"
    if result.model_digest is not None and _present(ctx, source.path) \
            and ctx.reload(source.path, source.format).model_digest == result.model_digest:
        return ("holds the same model tensors (names, shapes, dtypes and checksums) as",
                f"the model tensors of {source.path}")
    if result.step is not None and result.step <= origin.step:
        return f"stores step {result.step}, not after step {origin.step} of", \
            f"step {result.step}"
    return None


def _present(ctx: Context, relpath: str) -> bool:
    """A regular file or a folder a loader may be handed (never a FIFO or a device)."""
    path = ctx.root / relpath
    return path.is_file() or path.is_dir()


# ---------------------------------------------------------- artifacts-required


def run_weights(ctx: Context, run_id: str, where: str,
                reloaded: Reloaded) -> Iterator[Finding]:
    """A deliverable run's weights are its own: no other deliverable run ships the same
    weights, its checkpoints agree on their tensors' shapes, and they hold the sizes its
    config states.  ``reloaded`` gives a checkpoint's verdict when it reloads, else None."""
    man = ctx.campaign.manifest
    if man is None or run_id not in _deliverable(ctx):
        return
    own = [(c, r) for c in man.checkpoints if c.run == run_id
           if (r := reloaded(c)) is not None]
    yield from _same_weights(ctx, run_id, own, where, reloaded)
    yield from _shapes_agree(own, where)
    yield from _config_sizes(ctx, run_id, own, where)


def _deliverable(ctx: Context) -> set[str]:
    plan, man = ctx.campaign.plan, ctx.campaign.manifest
    if plan is None or man is None:
        return set()
    return {r.id for r in man.runs if r.outcome == "accepted"
            and (p := plan.run(r.id)) is not None and p.role in _DELIVERING}


def _sha256(ctx: Context, record: CheckpointRecord) -> str | None:
    if not (ctx.root / record.path).is_file():
        return None
    return ctx.facts(record.path).sha256


def _same_weights(ctx: Context, run_id: str,
                  own: list[tuple[CheckpointRecord, ReloadResult]], where: str,
                  reloaded: Reloaded) -> Iterator[Finding]:
    man = ctx.campaign.manifest
    assert man is not None
    bases = [a.base_path.rstrip("/") + "/" for a in man.adapters if a.base_path]
    # A shipped base is no run's training: adapters of several runs share it.
    others = [c for c in man.checkpoints if c.run != run_id and c.run in _deliverable(ctx)
              and not _under(c.path, bases)]
    for record, result in own:
        if _under(record.path, bases):
            continue
        digest, sha = result.model_digest, _sha256(ctx, record)
        for other in others:
            same = "bytes" if sha is not None and sha == _sha256(ctx, other) else None
            if same is None and digest is not None:
                theirs = reloaded(other)
                same = "tensors" if theirs is not None and theirs.model_digest == digest \
                    else None
            if same is None:
                continue
            how = ("is byte for byte" if same == "bytes" else
                   "holds the same model tensors (names, shapes, dtypes and checksums) as")
            yield Finding(
                f"{record.path} of run {run_id} {how} {other.path} of run {other.run}: two "
                "deliverable runs ship the same weights",
                where=where, code="artifacts-required.same-weights",
                expected=f"weights trained by run {run_id}", found=f"the weights of {other.path}",
                hint="ship the weights each run trained itself; a run that trained nothing "
                "of its own is not a deliverable")


def _under(path: str, folders: list[str]) -> bool:
    return any(f"{path}/".startswith(folder) for folder in folders)


def _shapes_agree(own: list[tuple[CheckpointRecord, ReloadResult]],
                  where: str) -> Iterator[Finding]:
    """Two checkpoints of one run hold each tensor they share at one shape."""
    for i, (first, a) in enumerate(own):
        for second, b in own[i + 1:]:
            differ = sorted(n for n in set(a.model_shapes) & set(b.model_shapes)
                            if a.model_shapes[n] != b.model_shapes[n])
            if not differ:
                continue
            name = differ[0]
            yield Finding(
                f"{first.path} and {second.path} of run {first.run} hold {len(differ)} "
                f"tensor(s) at different shapes (e.g. {name}: {list(a.model_shapes[name])} "
                f"and {list(b.model_shapes[name])}): they are not checkpoints of one model",
                where=where, code="artifacts-required.shapes-differ",
                expected="the same shape for each tensor in every checkpoint of the run",
                found=", ".join(differ[:5]),
                hint="one of them belongs to another run or configuration: ship this run's "
                "own checkpoints")


def _config_sizes(ctx: Context, run_id: str, own: list[tuple[CheckpointRecord, ReloadResult]],
                  where: str) -> Iterator[Finding]:
    """Each checkpoint holds a tensor with every layer size the run's config states."""
    man = ctx.campaign.manifest
    run = man.run(run_id) if man is not None else None
    config = run.config if run is not None else None
    for record, result in own:
        # A saved model or Trainer folder states its sizes in its own config.json too.
        own_config = f"{record.path}/config.json"
        configs = [c for c in (config, own_config if ctx.entry(own_config) else None) if c]
        for source in configs:
            yield from _sizes_held(ctx, run_id, record, result, source, where)


def _sizes_held(ctx: Context, run_id: str, record: CheckpointRecord, result: ReloadResult,
                config: str, where: str) -> Iterator[Finding]:
    dims = {d for shape in result.model_shapes.values() for d in shape}
    for key, size in _stated_sizes(ctx, config).items():
        if result.model_shapes and size not in dims:
            shown = ", ".join(f"{n} {list(s)}" for n, s in list(result.model_shapes.items())[:4])
            yield Finding(
                f"{record.path} of run {run_id} holds no tensor with a dimension of {size}, "
                f"the {key} {config} states: these are the weights of another configuration",
                where=where, code="artifacts-required.config-shapes",
                expected=f"a tensor dimension of {size} ({key} in {config})", found=shown,
                hint="ship the weights this run trained with its own config")


def _stated_sizes(ctx: Context, config: str) -> dict[str, int]:
    """The layer sizes a run's JSON config states at its top level (none when it cannot be
    read: config-identity judges the file itself)."""
    inside = ctx.inside(config)
    if isinstance(inside, str):
        return {}
    try:
        if os.path.getsize(inside) > CONFIG_CAP:
            return {}
        with open(inside, encoding="utf-8") as fh:
            data = parse_json(fh.read())
    except (OSError, ValueError, RecursionError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k in STATED_SIZES if isinstance(v := data.get(k), int)
            and not isinstance(v, bool) and v > 1}
