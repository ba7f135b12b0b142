"""The frozen corpora: reading one, splitting it by example ID, as tensors."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from example_campaign.make_corpus import LABELS, ring

if TYPE_CHECKING:
    import torch

ID_FIELD = "id"
SPLITS = ("train", "validation", "test")


def split_of(example_id: str) -> str:
    """A split fixed by the ID alone: 70 % train, 10 % validation, 20 % test."""
    bucket = hashlib.sha256(example_id.encode("utf-8")).digest()[0] % 10
    return "train" if bucket < 7 else "validation" if bucket == 7 else "test"


@dataclass(frozen=True)
class Example:
    id: str
    x: tuple[float, float]
    label: str
    split: str

    @property
    def radius(self) -> float:
        return math.hypot(*self.x)

    @property
    def rule_label(self) -> str:
        """The label the documented ring rule gives; differs from ``label`` on noise."""
        return ring(self.radius)

    @property
    def boundary_distance(self) -> float:
        """Distance to the nearest ring boundary (radius 1 or 2)."""
        return min(abs(self.radius - 1.0), abs(self.radius - 2.0))


def read_corpus(path: Path) -> list[Example]:
    examples = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            row: dict[str, Any] = json.loads(line)
            x0, x1 = row["x"]
            examples.append(Example(row[ID_FIELD], (x0, x1), row["label"], split_of(row[ID_FIELD])))
    return examples


def tensors(examples: list[Example]) -> tuple[torch.Tensor, torch.Tensor]:
    """Features and class indices of ``examples``, in their order."""
    import torch

    features = torch.tensor([e.x for e in examples], dtype=torch.float32)
    labels = torch.tensor([LABELS.index(e.label) for e in examples], dtype=torch.long)
    return features, labels
