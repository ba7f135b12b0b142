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
  A class metric on more than :data:`COUNTED_FROM` examples draws each resample as counts
  of its distinct examples (a multinomial, the same distribution) to stay fast.

Too few examples (fewer than :data:`MIN_EXAMPLES` paired) give no interval, said so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import numpy.typing as npt

__all__ = ["COUNTED_FROM", "MIN_EXAMPLES", "RESAMPLES", "SEED", "Bootstrap", "Bounds",
           "ClassStatistic", "Statistic", "class_statistic", "paired_bootstrap",
           "value_statistic"]

RESAMPLES = 2000
SEED = 0
MIN_EXAMPLES = 20
# From this many examples a class metric's resamples are drawn as counts of its distinct
# examples (ClassStatistic.multinomial): ~0.4 s per 10,000 examples by indices, a million
# would take ~40 s; counted, any size takes the time of 400.
COUNTED_FROM = 10_000
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
    counted = examples > COUNTED_FROM and isinstance(statistic, ClassStatistic)
    width = len(statistic.distinct[1]) if isinstance(statistic, ClassStatistic) and counted \
        else examples
    batch = max(1, _BATCH_CELLS // width)
    gains, variants = [], []
    for start in range(0, resamples, batch):
        rows = min(batch, resamples - start)
        if counted:
            assert isinstance(statistic, ClassStatistic)
            v, c = statistic.multinomial(rng, rows)
        else:
            v, c = statistic(rng.integers(0, examples, (rows, examples)))
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


_HITS = ("accuracy", "exact_match", "f1_micro")  # single-label: micro F1 is accuracy


@dataclass(frozen=True)
class ClassStatistic:
    """A class metric (accuracy, f1/precision/recall macro, f1 micro) of both runs, as
    scikit-learn defines it (macro: over the classes present or predicted in the resample,
    zero_division=0), from each resample's confusion matrices."""

    kind: str
    codes: npt.NDArray[np.intp]  # (examples, 4): truth and guess codes of variant, control
    classes: int

    def __call__(self, idx: Indices) -> tuple[Values, Values]:
        rows, k = idx.shape[0], self.classes
        out = []
        for t, g in ((0, 1), (2, 3)):
            if self.kind in _HITS:  # the share of hits: no confusion matrix needed
                hits = self.codes[:, t] == self.codes[:, g]
                out.append(np.asarray(hits[idx].mean(axis=1), dtype=np.float64))
                continue
            flat = (np.arange(rows)[:, None] * k + self.codes[idx, t]) * k + self.codes[idx, g]
            out.append(self._score(np.bincount(flat.ravel(), minlength=rows * k * k)
                                   .reshape(rows, k, k).astype(np.float64)))
        return out[0], out[1]

    def multinomial(self, rng: np.random.Generator, rows: int) -> tuple[Values, Values]:
        """The same resamples drawn as counts of each distinct example (a multinomial: the
        same distribution as drawing indices), O(rows x distinct) instead of O(rows x n)."""
        kinds, counts = self.distinct
        drawn = rng.multinomial(len(self.codes), counts / counts.sum(), size=rows)
        k = self.classes
        out = []
        for t, g in ((0, 1), (2, 3)):
            cells = np.zeros((len(kinds), k * k))
            cells[np.arange(len(kinds)), kinds[:, t] * k + kinds[:, g]] = 1.0
            out.append(self._score((drawn @ cells).reshape(rows, k, k)))
        return out[0], out[1]

    @cached_property
    def distinct(self) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
        """The distinct examples (their four codes) and how many of each."""
        kinds, counts = np.unique(self.codes, axis=0, return_counts=True)
        return kinds, counts

    def _score(self, cm: npt.NDArray[np.float64]) -> Values:
        tp = np.diagonal(cm, axis1=1, axis2=2)
        if self.kind in _HITS:
            return np.asarray(tp.sum(axis=1) / cm.sum(axis=(1, 2)), dtype=np.float64)
        actual, predicted = cm.sum(axis=2), cm.sum(axis=1)
        present = (actual + predicted) > 0
        denominator = {"precision_macro": predicted, "recall_macro": actual,
                       "f1_macro": actual + predicted}[self.kind]
        numerator = 2 * tp if self.kind == "f1_macro" else tp
        per_class = np.divide(numerator, denominator, out=np.zeros_like(tp),
                              where=denominator > 0)
        return np.asarray((per_class * present).sum(axis=1) / present.sum(axis=1),
                          dtype=np.float64)


def class_statistic(kind: str, truth: tuple[npt.ArrayLike, npt.ArrayLike],
                    guess: tuple[npt.ArrayLike, npt.ArrayLike]) -> ClassStatistic:
    """:class:`ClassStatistic` of each paired example's class codes (per run)."""
    codes = np.stack([np.asarray(a, dtype=np.intp)
                      for a in (truth[0], guess[0], truth[1], guess[1])], axis=1)
    return ClassStatistic(kind, codes, int(codes.max(initial=0)) + 1)


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
