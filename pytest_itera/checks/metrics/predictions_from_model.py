"""predictions-from-model: a run's predictions are what its delivered weights predict.

Only where the judge supplies the model: the ``pytest_itera_model`` hook of their own
conftest.py or plugin (a campaign folder's files are never loaded) gives a
:class:`~pytest_itera.checks.model.ModelRecipe` for a run. The sandboxed loader then loads
the run's checkpoint into the model the recipe builds and predicts a seeded sample of the
frozen corpus; every sampled example's prediction must agree with the predictions file. It
is the proof that the predictions came from the delivered model: a checkpoint swapped for
another run's (noise added so that no digest matches) predicts otherwise and is caught, which
no hash, total or journal record can show. Runs the hook answers None for get no item.
"""

from __future__ import annotations

import inspect
import math
import random
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from pytest_itera.checks.common import scoring
from pytest_itera.checks.common.measured import run_corpus_ids
from pytest_itera.checks.context import Check, Context
from pytest_itera.checks.model import Kind, ModelRecipe
from pytest_itera.core.campaign import RunRecord
from pytest_itera.core.findings import Finding
from pytest_itera.files.predictions import UnreadableIds, read_ids
from pytest_itera.files.tree import os_reason

KINDS: dict[str, Kind] = {
    "predictions-from-model.disagrees": Kind(
        rule="on sampled examples of the frozen corpus, the run's delivered weights predict "
        "otherwise than its predictions file says (the predictions did not come from that "
        "model)",
        fix="ship the checkpoint the predictions were made with, or the predictions its "
        "checkpoint makes"),
    "predictions-from-model.weights-unfit": Kind(
        rule="the run's checkpoint does not load into the model the judge's recipe builds, or "
        "the recipe's predict fails on it",
        fix="ship the run's own checkpoint (its model state complete), or correct the "
        "pytest_itera_model recipe"),
    "predictions-from-model.no-checkpoint": Kind(
        rule="the run the judge's recipe names has no checkpoint the re-prediction can load "
        "(none recorded, outside the folder, missing, or left in the store)",
        fix="record the run's final weights in the manifest's checkpoints, inside the folder"),
    "predictions-from-model.unprovable": Kind(
        rule="the sample cannot be re-predicted: the plan names no prediction field "
        "(itera-plan/3), or the corpus or the predictions file cannot be read",
        fix="declare the decision metric's computation in an itera-plan/3 plan and ship a "
        "readable corpus and predictions file"),
    "predictions-from-model.recipe": Kind(
        rule="the judge's pytest_itera_model hook raised, or gave a recipe the loader cannot "
        "use (build and predict not module-level functions of one module file, no inputs)",
        fix="put build(config) and predict(model, row) at the top level of one module file "
        "of your own, and name the corpus fields predict reads in inputs"),
}
_CODE = "predictions-from-model"


def _recipe(ctx: Context, run: RunRecord) -> ModelRecipe | str | None:
    """The hook's recipe for ``run`` (asked once), why it raised, or None."""
    hook = ctx.options.model_hook

    def ask() -> ModelRecipe | str | None:
        if hook is None:
            return None
        try:
            answer = hook(run, ctx.campaign)
        except Exception as exc:  # the judge's code: said, never a crash of the session
            return f"the pytest_itera_model hook raised {type(exc).__name__}: {exc}"
        if answer is not None and not isinstance(answer, ModelRecipe):
            return (f"the pytest_itera_model hook returned a {type(answer).__name__}, "
                    "not a ModelRecipe")
        return answer

    return ctx.memo(f"model-recipe:{run.id}", ask)


def model_targets(ctx: Context) -> Iterable[str]:
    """Accepted runs with predictions that the judge's hook gives a recipe for."""
    if ctx.options.model_hook is None or ctx.campaign.manifest is None:
        return []
    return [run.id for run in ctx.campaign.manifest.runs
            if run.outcome == "accepted" and run.predictions is not None
            and _recipe(ctx, run) is not None]


def predictions_from_model(ctx: Context, target: str | None) -> Iterator[Finding]:
    """The delivered weights re-predict the sample as the predictions file says."""
    assert target is not None
    _, run = ctx.recorded(target)
    recipe = _recipe(ctx, run)
    if recipe is None:
        return
    if isinstance(recipe, str):
        yield Finding(recipe, where="conftest.py", code=f"{_CODE}.recipe")
        return
    module = _module_of(recipe)
    if isinstance(module, str):
        yield Finding(f"run {run.id}: {module}", where="conftest.py", code=f"{_CODE}.recipe",
                      hint=KINDS[f"{_CODE}.recipe"].fix)
        return
    candidates = _checkpoints(ctx, run, recipe)
    if isinstance(candidates, Finding):
        yield candidates
        return
    sample = _sample(ctx, run, recipe)
    if isinstance(sample, Finding):
        yield sample
        return
    field, ids, rows, stated = sample
    causes = []
    for relpath in candidates:  # the newest whose model state fits the recipe's model
        with ctx.on_disk(relpath) as path:  # spooled alone if the cache cap left it out
            if isinstance(path, str):
                causes.append(path)
                continue
            answer = ctx.reloader().repredict(path, relpath, {
                "module": module[0], "build": module[1], "predict": module[2],
                "config": recipe.config, "key": recipe.key, "rows": rows})
        if answer.ok:
            break
        causes.append(str(answer.cause))
    else:
        yield Finding(f"run {run.id}: cannot re-predict with "
                      + ("its checkpoint" if len(causes) == 1 else
                         f"any of its {len(causes)} checkpoints")
                      + f": {'; '.join(causes)}",
                      where=candidates[0], code=f"{_CODE}.weights-unfit",
                      hint=KINDS[f"{_CODE}.weights-unfit"].fix)
        return
    yield from _compared(run, relpath, field, ids, stated, answer.predictions, recipe)


def _module_of(recipe: ModelRecipe) -> tuple[str, str, str] | str:
    """(module file, build's name, predict's name), or why the loader cannot import them."""
    if not recipe.inputs:
        return "the recipe names no inputs (the corpus fields predict reads)"
    found = []
    for role, function in (("build", recipe.build), ("predict", recipe.predict)):
        name = getattr(function, "__qualname__", "")
        try:
            source = inspect.getsourcefile(function)
        except TypeError:
            source = None
        if not callable(function) or source is None or "<" in name:
            return (f"the recipe's {role} ({name or function!r}) is not a module-level "
                    "function of a module file")
        found.append((str(Path(source).resolve()), name))
    (build_file, build), (predict_file, predict) = found
    if build_file != predict_file:
        return f"the recipe's build ({build_file}) and predict ({predict_file}) are in two files"
    if Path(build_file).name == "conftest.py":
        return ("the recipe's build and predict are in a conftest.py: the loader imports "
                "their module in a fresh interpreter; move them to a module of their own")
    return build_file, build, predict


def _checkpoints(ctx: Context, run: RunRecord, recipe: ModelRecipe) -> list[str] | Finding:
    """The checkpoints to load, newest first (their manifest paths): the recipe's, else every
    checkpoint the manifest records for the run; or why there is none."""
    man = ctx.campaign.manifest
    listed = [c.path for c in man.checkpoints if c.run == run.id] if man is not None else []
    wanted = [recipe.checkpoint] if recipe.checkpoint is not None else listed[::-1]

    def missing(why: str) -> Finding:
        return Finding(f"run {run.id}: cannot prove its predictions came from its model: {why}",
                       where="manifest.json", code=f"{_CODE}.no-checkpoint",
                       hint=KINDS[f"{_CODE}.no-checkpoint"].fix)

    if not wanted:
        return missing("the manifest records no checkpoint of the run")
    found: list[str] = []
    why: list[str] = []
    for relpath in wanted:
        inside = ctx.inside(relpath)
        left = ctx.stored is not None and ctx.stored.over_cap(relpath)
        if isinstance(inside, str):
            why.append(f"its checkpoint path {relpath!r} {inside}")
        elif not left and not inside.exists():
            why.append(f"its checkpoint {relpath} is missing")
        else:  # here, or left in the store by the cache cap: spooled for the re-prediction
            found.append(relpath)
    return found or missing("; ".join(why))


def _sample(ctx: Context, run: RunRecord, recipe: ModelRecipe
            ) -> tuple[str, list[str], list[dict[str, Any]], dict[str, object]] | Finding:
    """The prediction field, the sampled IDs in corpus order, their corpus rows (ID and
    inputs) and what the predictions file says for each, or why they cannot be had."""
    plan, _ = ctx.documents()

    def unprovable(why: str, where: str) -> Finding:
        return Finding(f"run {run.id}: cannot re-predict a sample: {why}", where=where,
                       code=f"{_CODE}.unprovable", hint=KINDS[f"{_CODE}.unprovable"].fix)

    computation = plan.decision.computation or plan.computations().get(plan.decision.metric)
    if computation is None:
        return unprovable(f"{plan.format} does not say which field of the predictions holds "
                          "the answer (an itera-plan/3 computation's prediction_field)",
                          "plan.json")
    corpus, ids = run_corpus_ids(ctx, run)
    if ids.blocking or not ids.ids:
        return unprovable(f"the frozen corpus {corpus.path} cannot be used (see "
                          "predictions-cover-corpus)", corpus.path)
    chosen = set(random.Random(recipe.seed).sample(sorted(ids.ids, key=ids.ids.__getitem__),
                                                   min(recipe.sample, len(ids.ids))))
    try:
        rows = _read(ctx, corpus.path, corpus.id_field, recipe.inputs, chosen)
        stated = _read(ctx, str(run.predictions), corpus.id_field,
                       (computation.prediction_field,), chosen)
    except (OSError, UnreadableIds) as exc:
        why = os_reason(exc) if isinstance(exc, OSError) else str(exc)
        return unprovable(why, corpus.path)
    except _Unreadable as exc:
        return unprovable(str(exc), exc.where)
    ordered = sorted(rows, key=ids.ids.__getitem__)
    return (computation.prediction_field, ordered,
            [{corpus.id_field: i, **rows[i]} for i in ordered],
            {i: values.get(computation.prediction_field) for i, values in stated.items()})


class _Unreadable(Exception):
    def __init__(self, why: str, where: str) -> None:
        super().__init__(why)
        self.where = where


def _read(ctx: Context, relpath: str, id_field: str, fields: tuple[str, ...],
          chosen: set[str]) -> dict[str, dict[str, object]]:
    """The first record of each chosen ID in ``relpath``: its ``fields`` values."""
    path = ctx.regular_file(relpath)
    if isinstance(path, str):
        raise _Unreadable(f"{relpath} {path}", relpath)
    found: dict[str, dict[str, object]] = {}
    for rec in read_ids(path, id_field, fields=fields):
        if rec.id in chosen and rec.id not in found:
            found[rec.id] = dict(zip(fields, rec.values, strict=True))
    return found


def _compared(run: RunRecord, relpath: str, field: str, ids: list[str],
              stated: Mapping[str, object], predicted: tuple[Any, ...],
              recipe: ModelRecipe) -> Iterator[Finding]:
    """Each sampled ID's stated answer against the model's, in the order the rows went."""
    differ = [(i, stated.get(i), got) for i, got in zip(ids, predicted, strict=False)
              if not _agree(stated.get(i), got, recipe.tolerance)]
    if len(predicted) != len(ids):
        differ.append(("(count)", len(ids), len(predicted)))
    if not differ:
        return
    first = ", ".join(f"{i}: the file says {a!r}, the model {b!r}" for i, a, b in differ[:3])
    yield Finding(
        f"run {run.id}: {len(differ)} of {len(ids)} sampled examples are predicted otherwise "
        f"by its delivered weights ({relpath}) than its predictions' {field!r} says ({first}"
        f"{', ...' if len(differ) > 3 else ''}): the predictions did not come from this model",
        where=str(run.predictions), code=f"{_CODE}.disagrees",
        hint=KINDS[f"{_CODE}.disagrees"].fix)


def _agree(stated: object, predicted: object, tolerance: float) -> bool:
    """Numbers within the tolerance; anything else as labels compare (scoring.class_key)."""
    if stated is None:
        return False
    a, b = scoring.number(stated), scoring.number(predicted)
    if a is not None and b is not None and not isinstance(stated, str) \
            and not isinstance(predicted, str):
        return math.isclose(a, b, rel_tol=tolerance, abs_tol=tolerance)
    return scoring.class_key(stated) == scoring.class_key(predicted)


CHECK = Check("predictions-from-model",
              "a run's predictions are what its delivered weights predict on a seeded sample "
              "of the frozen corpus (when the judge's pytest_itera_model hook builds the model)",
              predictions_from_model, scope="run", targets=model_targets, kinds=KINDS)
