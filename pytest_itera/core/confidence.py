"""How sure a decision is: a paired percentile bootstrap of a variant's gain over its control.

Pure (numpy only, no campaign reading). Why this method:

- **Paired**: both runs predict the same frozen examples, so their errors correlate (an
  example hard for one is hard for the other). Resampling example ids once and scoring both
  runs on the same resample keeps that correlation; two independent intervals would be far
  too wide.
- **Bootstrap**: it works for every metric kind the checks compute (accuracy, macro F1,
  precision, recall, MAE, MSE, RMSE): each resample's metric is the metric's own definition
  on the resampled examples. An exact paired method exists only for accuracy (McNemar's
  test on the discordant pairs), and one method for every kind says the same thing.
- **Percentile** interval, B = 2000 resamples, a fixed seed (0): the common practice of
  scikit-learn-era evaluation, reproducible bit for bit. The draws are those of
  ``scipy.stats.bootstrap(..., paired=True, method="percentile", rng=default_rng(seed))``
  (tests/core/test_confidence.py compares them); it is not called because importing
  scipy.stats costs ~0.8 s of CPU per process, over the whole bootstrap of 400 examples.

Too few examples (fewer than :data:`MIN_EXAMPLES` paired) give no interval, said so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["MIN_EXAMPLES", "RESAMPLES", "SEED", "Bootstrap", "Bounds", "Statistic",
           "class_statistic", "paired_bootstrap", "value_statistic"]

RESAMPLES = 2000
SEED = 0
MIN_EXAMPLES = 20
# Index draws per batch (rows x examples): bounds the memory of a large corpus (~64 MiB).
_BATCH_CELLS = 8_000_000

Indices = npt.NDArray[np.intp]
Values = npt.NDArray[np.float64]
# A statistic: resampled example indices (k, n) -> each row's metric, for (variant, control).
Statistic = Callable[[Indices], tuple[Values, Values]]


@dataclass(frozen=True)
class Bounds:
    """A point estimate and its percentile interval."""

    point: float
    low: float
    high: float


@dataclass(frozen=True)
class Bootstrap:
    """The gain (variant - control) and the variant's own metric, on the same resamples."""

    gain: Bounds
    variant: Bounds
    level: float
    examples: int  # paired examples resampled
    resamples: int
    seed: int
    constant: bool  # every resample gives the same gain (no example tells the runs apart)

    @property
    def method(self) -> str:
        return f"paired bootstrap, {self.resamples} resamples, seed {self.seed}"


def paired_bootstrap(examples: int, statistic: Statistic, level: float = 0.95,
                     resamples: int = RESAMPLES, seed: int = SEED) -> Bootstrap | str:
    """The percentile interval at ``level`` of ``statistic`` over ``examples`` paired
    examples, or why there is none (a sentence)."""
    if examples < MIN_EXAMPLES:
        return (f"too few examples for an interval ({examples} paired, at least "
                f"{MIN_EXAMPLES})")
    whole = np.arange(examples, dtype=np.intp)[None, :]
    mine, theirs = statistic(whole)
    rng = np.random.default_rng(seed)
    batch = max(1, _BATCH_CELLS // examples)
    gains, variants = [], []
    for start in range(0, resamples, batch):
        idx = rng.integers(0, examples, (min(batch, resamples - start), examples))
        v, c = statistic(idx)
        gains.append(v - c)
        variants.append(v)
    gain, variant = np.concatenate(gains), np.concatenate(variants)
    tail = (1 - level) / 2 * 100
    return Bootstrap(_bounds(float(mine[0] - theirs[0]), gain, tail),
                     _bounds(float(mine[0]), variant, tail), level, examples, resamples, seed,
                     bool(np.all(gain == gain[0])))


def _bounds(point: float, draws: Values, tail: float) -> Bounds:
    low, high = np.percentile(draws, [tail, 100 - tail])
    return Bounds(point, float(low), float(high))


# ------------------------------------------------------------------ the metrics, vectorised


def class_statistic(kind: str, truth: tuple[npt.ArrayLike, npt.ArrayLike],
                    guess: tuple[npt.ArrayLike, npt.ArrayLike]) -> Statistic:
    """A class metric (accuracy, f1/precision/recall macro, f1 micro) of both runs, as
    scikit-learn defines it (macro: over the classes present or predicted in the resample,
    zero_division=0), from each paired example's class codes."""
    t = [np.asarray(a, dtype=np.intp) for a in truth]
    g = [np.asarray(a, dtype=np.intp) for a in guess]
    classes = int(max(int(a.max(initial=0)) for a in (*t, *g))) + 1

    def score(idx: Indices, truth_: npt.NDArray[np.intp], guess_: npt.NDArray[np.intp]) -> Values:
        if kind in ("accuracy", "exact_match", "f1_micro"):
            return np.asarray((truth_[idx] == guess_[idx]).mean(axis=1), dtype=np.float64)
        rows = idx.shape[0]
        flat = (np.arange(rows)[:, None] * classes + truth_[idx]) * classes + guess_[idx]
        cm = np.bincount(flat.ravel(), minlength=rows * classes * classes).reshape(
            rows, classes, classes).astype(np.float64)
        tp = np.diagonal(cm, axis1=1, axis2=2)
        actual, predicted = cm.sum(axis=2), cm.sum(axis=1)
        present = (actual + predicted) > 0
        denominator = {"precision_macro": predicted, "recall_macro": actual,
                       "f1_macro": actual + predicted}[kind]
        numerator = 2 * tp if kind == "f1_macro" else tp
        per_class = np.divide(numerator, denominator, out=np.zeros_like(tp),
                              where=denominator > 0)
        return np.asarray((per_class * present).sum(axis=1) / present.sum(axis=1),
                          dtype=np.float64)

    return lambda idx: (score(idx, t[0], g[0]), score(idx, t[1], g[1]))


def value_statistic(kind: str, truth: tuple[npt.ArrayLike, npt.ArrayLike],
                    guess: tuple[npt.ArrayLike, npt.ArrayLike]) -> Statistic:
    """A regression metric (mae, mse, rmse) of both runs from each paired example's values."""
    errors = [np.asarray(p, dtype=np.float64) - np.asarray(y, dtype=np.float64)
              for y, p in zip(truth, guess, strict=True)]

    def score(idx: Indices, error: Values) -> Values:
        picked = error[idx]
        if kind == "mae":
            return np.asarray(np.abs(picked).mean(axis=1), dtype=np.float64)
        mse = np.asarray((picked * picked).mean(axis=1), dtype=np.float64)
        return np.sqrt(mse) if kind == "rmse" else mse

    return lambda idx: (score(idx, errors[0]), score(idx, errors[1]))
