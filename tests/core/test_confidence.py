"""core/confidence.py on tables: known cases, reproducibility, scipy's draws, the metrics'
definitions, speed, and too few examples."""

from __future__ import annotations

import time

import numpy as np
import pytest
from sklearn import metrics

from pytest_itera.core.confidence import (
    COUNTED_FROM,
    Bootstrap,
    class_statistic,
    paired_bootstrap,
    value_statistic,
)

N = 400


def binary(right: int, n: int = N) -> tuple[np.ndarray, np.ndarray]:
    """(truth, guess) codes: right on the first ``right`` examples."""
    truth = np.arange(n) % 2
    return truth, np.where(np.arange(n) < right, truth, 1 - truth)


def accuracy_boot(mine: int, theirs: int, n: int = N, seed: int = 0) -> Bootstrap:
    (t, g), (_, h) = binary(mine, n), binary(theirs, n)
    found = paired_bootstrap(n, class_statistic("accuracy", (t, t), (g, h)), seed=seed)
    assert isinstance(found, Bootstrap), found
    return found


def test_identical_runs_give_zero_zero() -> None:
    found = accuracy_boot(300, 300)
    assert (found.gain.point, found.gain.low, found.gain.high) == (0.0, 0.0, 0.0)
    assert found.constant
    assert found.method == "paired bootstrap, 2000 resamples, seed 0"


def test_a_clear_gain_excludes_zero() -> None:
    found = accuracy_boot(380, 300)
    assert found.gain.low > 0.15
    assert found.gain.point == pytest.approx(0.2)


def test_a_0_054_gain_on_400_examples_is_inside_its_noise_and_reproducible() -> None:
    # 0.054 is not a multiple of 1/400: 22 more right answers, 0.055
    found = accuracy_boot(322, 300)
    assert found.gain.point == pytest.approx(0.055)
    assert found.gain.low > 0  # the discordant examples all favour the variant...
    assert found.gain.low < 0.05 < found.gain.high  # ... but 0.05 is inside the interval
    assert accuracy_boot(322, 300) == found
    assert accuracy_boot(322, 300, seed=1) != found


def test_the_draws_are_scipys_paired_percentile_bootstrap() -> None:
    from scipy import stats  # type: ignore[import-untyped]

    rng = np.random.default_rng(7)
    truth = rng.integers(0, 2, N)
    mine = np.where(rng.random(N) < 0.85, truth, 1 - truth)
    theirs = np.where(rng.random(N) < 0.8, truth, 1 - truth)
    found = paired_bootstrap(N, class_statistic("accuracy", (truth, truth), (mine, theirs)))
    assert isinstance(found, Bootstrap)
    expected = stats.bootstrap(
        ((truth == mine).astype(float), (truth == theirs).astype(float)),
        lambda a, b, axis=-1: a.mean(axis) - b.mean(axis), paired=True, vectorized=True,
        n_resamples=2000, method="percentile", rng=np.random.default_rng(0))
    assert (found.gain.low, found.gain.high) == pytest.approx(
        (expected.confidence_interval.low, expected.confidence_interval.high), abs=1e-12)


@pytest.mark.parametrize("kind", ["accuracy", "f1_macro", "f1_micro", "precision_macro",
                                  "recall_macro"])
def test_each_class_kind_is_scikit_learns_on_the_whole_sample(kind: str) -> None:
    rng = np.random.default_rng(3)
    truth = rng.integers(0, 4, 200)
    mine, theirs = rng.integers(0, 5, 200), truth.copy()
    theirs[:50] = 0
    whole = np.arange(200)[None, :]
    v, c = class_statistic(kind, (truth, truth), (mine, theirs))(whole)
    name, average = {"accuracy": ("accuracy_score", None), "f1_macro": ("f1_score", "macro"),
                     "f1_micro": ("f1_score", "micro"),
                     "precision_macro": ("precision_score", "macro"),
                     "recall_macro": ("recall_score", "macro")}[kind]
    score = getattr(metrics, name)
    extra = {} if average is None else {"average": average, "zero_division": 0.0}
    assert v[0] == pytest.approx(score(truth, mine, **extra), abs=1e-12)
    assert c[0] == pytest.approx(score(truth, theirs, **extra), abs=1e-12)


@pytest.mark.parametrize("kind", ["mae", "mse", "rmse"])
def test_each_value_kind_is_scikit_learns_on_the_whole_sample(kind: str) -> None:
    rng = np.random.default_rng(4)
    truth, mine, theirs = rng.random(100), rng.random(100), rng.random(100)
    v, c = value_statistic(kind, (truth, truth), (mine, theirs))(np.arange(100)[None, :])
    score = {"mae": metrics.mean_absolute_error, "mse": metrics.mean_squared_error,
             "rmse": metrics.root_mean_squared_error}[kind]
    assert v[0] == pytest.approx(score(truth, mine), abs=1e-12)
    assert c[0] == pytest.approx(score(truth, theirs), abs=1e-12)


def test_accuracy_on_400_examples_is_fast() -> None:
    start = time.perf_counter()
    accuracy_boot(322, 300)
    assert time.perf_counter() - start < 0.5


def test_too_few_examples_are_said() -> None:
    (t, g) = binary(10, 19)
    assert paired_bootstrap(19, class_statistic("accuracy", (t, t), (g, g))) == (
        "too few examples for an interval (19 paired, at least 20)")


@pytest.mark.parametrize("kind", ["accuracy", "f1_macro"])
def test_a_large_corpus_is_resampled_as_counts_and_agrees(kind: str) -> None:
    """Over COUNTED_FROM examples the draws are multinomial counts of the distinct examples:
    the same distribution (the interval agrees with the index draws'), in a fraction of the
    time."""
    n = COUNTED_FROM + 1
    truth = np.arange(n) % 2
    mine = np.where(np.arange(n) < int(0.8 * n), truth, 1 - truth)
    theirs = np.where(np.arange(n) % 7 == 0, 1 - truth, truth)
    statistic = class_statistic(kind, (truth, truth), (mine, theirs))
    start = time.perf_counter()
    counted = paired_bootstrap(n, statistic)
    assert time.perf_counter() - start < 0.5
    rng = np.random.default_rng(0)
    v, c = statistic(rng.integers(0, n, (500, n)))
    assert isinstance(counted, Bootstrap)
    low, high = np.percentile(v - c, [2.5, 97.5])
    assert counted.gain.low == pytest.approx(low, abs=0.003)
    assert counted.gain.high == pytest.approx(high, abs=0.003)
