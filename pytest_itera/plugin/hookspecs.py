"""pytest-itera's own hooks: implement them in a conftest.py or a plugin.

The built-in check families are ordinary implementations of these hooks,
registered as plugins named ``itera.<family>`` (so ``-p no:itera.files``
switches a family off).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_itera.checks.context import Check
    from pytest_itera.checks.model import ModelRecipe
    from pytest_itera.checks.stop_rules import RuleVerdict
    from pytest_itera.core.campaign import Campaign, RunRecord, StopRule
    from pytest_itera.core.money import Catalogue
    from pytest_itera.files.measurements import Measurements, Unreadable
    from pytest_itera.reload import ReloadResult

hookspec = pytest.hookspec


@hookspec
def pytest_itera_checks(config: pytest.Config) -> Sequence[Check]:
    """Return checks to run on every campaign.

    Sample (conftest.py)::

        from pytest_itera.checks.context import Check
        from pytest_itera.core.findings import Finding

        def _seed_recorded(ctx, target):
            for run in ctx.campaign.manifest.runs:
                if "seed" not in run.metrics:
                    yield Finding(f"run {run.id} has no 'seed' metric",
                                  where="manifest.json", hint="record the seed")

        def pytest_itera_checks(config):
            return [Check(id="seed-recorded", summary="every run records its seed",
                          run=_seed_recorded)]
    """
    raise NotImplementedError  # pragma: no cover - a specification


@hookspec
def pytest_itera_temp_patterns(config: pytest.Config) -> Sequence[str]:
    """Return extra literal patterns that mark a path into a temporary folder.

    Sample::

        def pytest_itera_temp_patterns(config):
            return ["/scratch/", "/localscratch/"]
    """
    raise NotImplementedError  # pragma: no cover - a specification


@hookspec
def pytest_itera_hourly_phrases(config: pytest.Config) -> Sequence[str]:
    """Return extra literal phrases (any case) that bill by the hour.

    They are looked for with the built-in table (``pytest_itera.checks.prose.hourly.
    HOURLY_PHRASES``) in every money-bearing text of plan.json and manifest.json; like the
    built-in ones, a phrase found is an advisory (``budget-consistent.hourly-billing``),
    deciding only under ``--itera-strict-text``. Sample::

        def pytest_itera_hourly_phrases(config):
            return ["la hora", "stündlich"]
    """
    raise NotImplementedError  # pragma: no cover - a specification


@hookspec(firstresult=True)
def pytest_itera_reload(
    path: Path, display: str, claimed_format: str | None, config: pytest.Config
) -> ReloadResult | None:
    """Reload one checkpoint yourself; return None to let the next loader try.

    The built-in loader (a fresh interpreter, ``weights_only=True``) runs when
    every implementation returns None. Sample, a format of your own::

        from pytest_itera.reload import ReloadResult

        def pytest_itera_reload(path, display, claimed_format, config):
            if path.suffix != ".myfmt":
                return None
            ok = path.read_bytes().startswith(b"MYFMT1")
            return ReloadResult(path=display, ok=ok, format="myfmt",
                                cause=None if ok else f"{display}: bad magic",
                                parts=("model",) if ok else (), missing_reasons={},
                                nonfinite=(), tensors=0, seconds=0.0)
    """
    raise NotImplementedError  # pragma: no cover - a specification


@hookspec(firstresult=True)
def pytest_itera_catalogue(config: pytest.Config) -> Catalogue | None:
    """Return the price catalogue to compare lots with.

    The catalogue in force is this hook's answer, else the file named by the ini option
    ``itera_catalogue``, else the shipped IteraGPU catalogue. Sample::

        from pytest_itera.core.money import load_catalogue

        def pytest_itera_catalogue(config):
            return load_catalogue(config.rootpath / "prices.json")
    """
    raise NotImplementedError  # pragma: no cover - a specification


@hookspec(firstresult=True)
def pytest_itera_stop_rule(
    rule: StopRule,
    run: RunRecord,
    measurements: Measurements | Unreadable | None,
    campaign: Campaign,
    config: pytest.Config,
) -> RuleVerdict | None:
    """Judge one declared stop rule on one run yourself; return None to let pytest-itera do it.

    Asked before the built-in evaluation, for every rule on every accepted or stopped run:
    this is how a rule of kind ``other`` (free-form parameters, otherwise reported as not
    evaluated) gets evaluated. ``measurements`` is the run's file as read (None when the run
    records none). Sample::

        from pytest_itera.checks.stop_rules import RuleVerdict

        def pytest_itera_stop_rule(rule, run, measurements, campaign, config):
            if rule.kind != "other" or rule.parameters.get("check") != "grad_norm":
                return None
            series = measurements.series.get("grad_norm") if measurements else None
            if series is None:
                return RuleVerdict("unproven", "no 'grad_norm' series")
            limit = rule.parameters["max"]
            for step, value, line in series.points():
                if value > limit:
                    return RuleVerdict("triggered", f"grad_norm {value} at step {step}",
                                       step=step, where=f"{measurements.path}:{line}")
            return RuleVerdict("clear", f"grad_norm stays under {limit}")
    """
    raise NotImplementedError  # pragma: no cover - a specification


@hookspec(firstresult=True)
def pytest_itera_metric(
    name: str, config: pytest.Config
) -> Callable[[Sequence[tuple[Any, Any]]], float] | None:
    """Compute a metric kind of your own; return None to let the next implementation try.

    An ``itera-plan/3`` computation whose ``kind`` is not built in (accuracy, exact_match,
    f1_macro, f1_micro, precision_macro, recall_macro, mae, mse, rmse) is computed by the
    function this hook returns for ``name``, over the aligned (corpus label, prediction)
    pairs of the scored rows, in no particular order (held in memory for a custom kind).
    Sample::

        def pytest_itera_metric(name, config):
            if name != "within_one":
                return None
            return lambda pairs: sum(abs(int(a) - int(b)) <= 1 for a, b in pairs) / len(pairs)
    """
    raise NotImplementedError  # pragma: no cover - a specification


@hookspec(firstresult=True)
def pytest_itera_model(
    run: RunRecord, campaign: Campaign, config: pytest.Config
) -> ModelRecipe | None:
    """Build an accepted run's model yourself, so that its predictions can be proven to come
    from its delivered weights; return None to leave the run unjudged by this check.

    Implemented in the judge's own conftest.py or plugin (a campaign folder's files are never
    loaded). For each run it answers, the check ``predictions-from-model`` loads the run's
    checkpoint in the sandboxed loader, into the model ``build(config)`` makes, predicts a
    seeded sample of the frozen corpus with ``predict(model, row)`` and fails where the
    predictions file says otherwise. ``build`` and ``predict`` live in one module file
    (the loader imports it in a fresh interpreter). Sample (conftest.py beside models.py)::

        from pytest_itera.checks.model import ModelRecipe
        import models  # build(config) -> nn.Module, predict(model, row) -> label

        def pytest_itera_model(run, campaign, config):
            if run.id not in ("control", "variant"):
                return None
            return ModelRecipe(build=models.build, predict=models.predict,
                               inputs=("features",), config={"hidden": 8})
    """
    raise NotImplementedError  # pragma: no cover - a specification
