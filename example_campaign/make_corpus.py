"""Generate the frozen corpora once: ``python -m example_campaign.make_corpus``.

The corpora are committed (example_campaign/data/*.jsonl) and never regenerated
by a build: the campaign compares runs on *frozen* data. The task: 2-D points
labelled by the ring they fall in (radius < 1 inner, < 2 middle, else outer),
radii uniform in [0, 3) so the classes are balanced, and a share of the labels
flipped to another ring (label noise no model should fit).

Two distinct corpora, two deliverables: ``rings-600-v1`` (600 points, 8 % noisy
labels) and ``rings-noisy-400-v1`` (400 other points, 20 % noisy labels), which
asks whether what width does on clean labels survives heavier label noise.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass
from pathlib import Path

LABELS = ("inner", "middle", "outer")
DATA = Path(__file__).parent / "data"


@dataclass(frozen=True)
class CorpusSpec:
    id: str
    file: str  # under example_campaign/data/
    seed: int
    examples: int
    noise: float
    prefix: str  # example IDs are f"{prefix}-{index:04d}"

    @property
    def path(self) -> Path:
        return DATA / self.file


RINGS = CorpusSpec("rings-600-v1", "corpus.jsonl", 20260105, 600, 0.08, "pt")
NOISY = CorpusSpec("rings-noisy-400-v1", "corpus-noisy.jsonl", 20260112, 400, 0.20, "nz")
CORPORA = (RINGS, NOISY)


def ring(radius: float) -> str:
    """The documented label rule the data check verifies."""
    return LABELS[min(int(radius), 2)]


def example(rng: random.Random, index: int, spec: CorpusSpec = RINGS) -> dict[str, object]:
    radius, angle = rng.uniform(0.0, 3.0), rng.uniform(0.0, 2 * math.pi)
    x, y = round(radius * math.cos(angle), 4), round(radius * math.sin(angle), 4)
    label = ring(math.hypot(x, y))
    if rng.random() < spec.noise:
        label = rng.choice([other for other in LABELS if other != label])
    return {"id": f"{spec.prefix}-{index:04d}", "x": [x, y], "label": label}


def corpus_text(spec: CorpusSpec) -> str:
    rng = random.Random(spec.seed)
    return "".join(json.dumps(example(rng, i, spec), sort_keys=True) + "\n"
                   for i in range(1, spec.examples + 1))


def main() -> None:
    for spec in CORPORA:
        spec.path.write_text(corpus_text(spec), encoding="utf-8")


if __name__ == "__main__":
    main()
