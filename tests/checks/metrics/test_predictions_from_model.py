"""predictions-from-model: the judge's recipe re-predicts a seeded sample with a run's
delivered weights, in the sandboxed loader, and the predictions file must agree.

Judged in-process on a copy of the example campaign (its runs' real checkpoints, saved by
torch.save, and their real predictions), the judge's model written as a module file of its
own, as the hook's documentation asks."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch

from pytest_itera.checks.context import Context
from pytest_itera.checks.metrics.predictions_from_model import model_targets
from pytest_itera.checks.model import ModelRecipe, Options
from pytest_itera.core.campaign import Campaign, RunRecord, load_campaign
from pytest_itera.files.source import S3Location, S3Source, stage
from pytest_itera.report.verify import builtin_checks
from tests.checks.judging import expect_finding, expect_no_finding, judge
from tests.files.test_s3 import s3 as s3  # the fixtures of the local S3 server
from tests.files.test_s3 import server as server
from tests.files.test_s3 import upload

CHECK = "predictions-from-model"
# The judge's own code for the example's MLP (example_campaign/model.py), in a file of its own.
MODELS = '''
import itertools
import torch
from torch import nn

LABELS = ("inner", "middle", "outer")


class MLP(nn.Module):
    def __init__(self, width, depth):
        super().__init__()
        sizes = [2] + [width] * depth
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in itertools.pairwise(sizes))
        self.drop = nn.Dropout(0.0)
        self.head = nn.Linear(width, 3)

    def forward(self, x):
        for layer in self.layers:
            x = self.drop(torch.relu(layer(x)))
        return self.head(x)


def build(config):
    return MLP(config["width"], config["depth"])


def predict(model, row):
    return LABELS[int(model(torch.tensor([row["x"]], dtype=torch.float32)).argmax())]


def shapeless(config):
    return nn.Linear(2, 3)
'''


@pytest.fixture
def campaign(example_campaign: Path, tmp_path: Path) -> Path:
    root = tmp_path / "campaign"
    shutil.copytree(example_campaign, root)
    return root


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    """The judge's model module, imported here as the conftest would import it."""
    path = tmp_path_factory.mktemp("judge") / "models.py"
    path.write_text(MODELS, encoding="utf-8")
    import importlib.util

    spec = importlib.util.spec_from_file_location("judge_models", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def recipes(models: ModuleType, **changes: Any) -> Options:
    """The judge's hook in force: every run whose config is an MLP's, from that config."""

    def hook(run: RunRecord, campaign: Campaign) -> ModelRecipe | None:
        if run.config is None:
            return None
        config = json.loads((campaign.root / run.config).read_text(encoding="utf-8"))
        if "width" not in config:
            return None
        fields: dict[str, Any] = {"build": models.build, "predict": models.predict,
                                  "inputs": ("x",), "config": config, **changes}
        return ModelRecipe(**fields)

    return Options(model_hook=hook)


def targets(root: Path, options: Options) -> set[str]:
    """The runs the check has an item for."""
    context = Context(load_campaign(root), options, builtin_checks(), close_reloader=False)
    try:
        return {str(t) for t in model_targets(context)}
    finally:
        context.close()


def test_the_delivered_weights_predict_what_every_run_delivered(
        campaign: Path, models: ModuleType) -> None:
    options = recipes(models, sample=10_000)  # the whole corpus
    assert targets(campaign, options) == {"pilot", "control", "variant-wide", "control-noisy",
                                          "variant-wide-noisy"}
    expect_no_finding(judge(campaign, CHECK, options=options))


def test_no_hook_no_item(campaign: Path) -> None:
    assert targets(campaign, Options()) == set()


def _swap(root: Path, into: str, source: str, noise: float) -> str:
    """``into``'s last checkpoint replaced by ``source``'s weights plus ``noise``."""
    relpath = f"runs/{into}/last.pt"
    state = torch.load(root / f"runs/{source}/last.pt", weights_only=True)
    with torch.no_grad():
        for tensor in state["model"].values():
            tensor.add_(torch.full_like(tensor, noise))
    torch.save(state, root / relpath)
    return relpath


def _predictions(root: Path, run: str) -> dict[str, str]:
    lines = (root / f"runs/{run}/predictions.jsonl").read_text(encoding="utf-8").splitlines()
    return {row["id"]: row["prediction"] for row in map(json.loads, lines)}


def test_a_model_swapped_for_another_runs_with_noise_is_caught(
        campaign: Path, models: ModuleType) -> None:
    assert _predictions(campaign, "pilot") != _predictions(campaign, "control")
    relpath = _swap(campaign, "pilot", "control", 1e-6)
    options = recipes(models)  # the default sample
    expect_finding(judge(campaign, CHECK, target="pilot", options=options),
                   "predictions-from-model.disagrees", where="runs/pilot/predictions.jsonl",
                   says=[relpath, "did not come from this model"])
    expect_no_finding(judge(campaign, CHECK, target="control", options=options),
                      "predictions-from-model.disagrees")


def test_weights_that_do_not_fit_the_recipe(campaign: Path, models: ModuleType) -> None:
    options = recipes(models, build=models.shapeless)
    found = judge(campaign, CHECK, target="control", options=options)
    expect_finding(found, "predictions-from-model.weights-unfit", says="do not fit the model")


def test_weights_that_fit_the_recipe(campaign: Path, models: ModuleType) -> None:
    found = judge(campaign, CHECK, target="control", options=recipes(models))
    expect_no_finding(found, "predictions-from-model.weights-unfit")


@pytest.mark.parametrize(("change", "says"), [
    ({"checkpoint": "runs/control/absent.pt"}, "is missing"),
    ({"checkpoint": "../elsewhere.pt"}, "checkpoint path"),
], ids=["missing", "outside"])
def test_no_checkpoint_to_load(campaign: Path, models: ModuleType, change: dict[str, Any],
                               says: str) -> None:
    found = judge(campaign, CHECK, target="control", options=recipes(models, **change))
    expect_finding(found, "predictions-from-model.no-checkpoint", where="manifest.json",
                   says=says)


def test_the_checkpoint_the_recipe_names(campaign: Path, models: ModuleType) -> None:
    found = judge(campaign, CHECK, target="control",
                  options=recipes(models, checkpoint="runs/control/last.pt"))
    expect_no_finding(found, "predictions-from-model.no-checkpoint")


def _raises(run: RunRecord, campaign: Campaign) -> ModelRecipe | None:
    raise RuntimeError("no GPU here")


def _local_functions(models: ModuleType) -> Options:
    def hook(run: RunRecord, campaign: Campaign) -> ModelRecipe | None:
        return ModelRecipe(build=lambda c: models.build(c), predict=models.predict,
                           inputs=("x",)) if run.id == "control" else None

    return Options(model_hook=hook)


@pytest.mark.parametrize(("options", "says"), [
    (lambda models: Options(model_hook=_raises), "hook raised RuntimeError: no GPU here"),
    (_local_functions, "not a module-level function"),
    (lambda models: recipes(models, inputs=()), "names no inputs"),
], ids=["hook-raises", "lambda", "no-inputs"])
def test_a_recipe_the_loader_cannot_use(campaign: Path, models: ModuleType,
                                        options: Callable[[ModuleType], Options],
                                        says: str) -> None:
    found = judge(campaign, CHECK, target="control", options=options(models))
    expect_finding(found, "predictions-from-model.recipe", says=says)


def test_a_recipe_the_loader_can_use(campaign: Path, models: ModuleType) -> None:
    expect_no_finding(judge(campaign, CHECK, target="control", options=recipes(models)),
                      "predictions-from-model.recipe")


def test_a_sample_that_cannot_be_read(campaign: Path, models: ModuleType) -> None:
    (campaign / "runs/control/predictions.jsonl").write_text("[1, 2]\n", encoding="utf-8")
    found = judge(campaign, CHECK, target="control", options=recipes(models))
    expect_finding(found, "predictions-from-model.unprovable", says="cannot re-predict a sample")


def test_a_sample_that_can_be_read(campaign: Path, models: ModuleType) -> None:
    found = judge(campaign, CHECK, target="control", options=recipes(models))
    expect_no_finding(found, "predictions-from-model.unprovable")


def test_weights_left_in_the_store_are_spooled_for_the_re_prediction(
        campaign: Path, models: ModuleType, s3: Any, tmp_path: Path) -> None:
    """An s3:// campaign whose copy holds no checkpoint (cache cap 0): each run's weights are
    spooled alone for its re-prediction, as for its reload, and removed after."""
    staged = stage(S3Source(S3Location.parse(upload(s3, campaign)), timeout=5),
                   tmp_path / "copy", 0)
    assert staged.left_out()  # no checkpoint in the copy
    expect_no_finding(judge(staged.root, CHECK, options=recipes(models), stored=staged))
    assert not any((staged.root / key).exists() for key in staged.left_out())
