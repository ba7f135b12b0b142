"""The tiny models: an MLP classifier and a LoRA-style low-rank delta on it."""

from __future__ import annotations

import itertools
from typing import Any

import torch
from torch import nn


class MLP(nn.Module):
    """``depth`` hidden ReLU layers of ``width`` units with dropout, then a 3-way head."""

    def __init__(self, width: int, depth: int, dropout: float) -> None:
        super().__init__()
        sizes = [2] + [width] * depth
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in itertools.pairwise(sizes))
        self.drop = nn.Dropout(dropout)
        self.head = nn.Linear(width, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = self.drop(torch.relu(layer(x)))
        out: torch.Tensor = self.head(x)
        return out


def build_model(config: dict[str, Any]) -> MLP:
    return MLP(config["width"], config["depth"], config["dropout"])


class LoRALinear(nn.Module):
    """``base(x) + (alpha / r) * B(A(x))`` with ``base`` frozen, as PEFT's LoRA computes it."""

    def __init__(self, base: nn.Linear, r: int, alpha: int) -> None:
        super().__init__()
        self.base = base
        self.lora_A = nn.Linear(base.in_features, r, bias=False)
        self.lora_B = nn.Linear(r, base.out_features, bias=False)
        self.scaling = alpha / r
        nn.init.kaiming_uniform_(self.lora_A.weight, a=5**0.5)
        nn.init.zeros_(self.lora_B.weight)  # the adapter starts as the identity delta
        for parameter in base.parameters():
            parameter.requires_grad_(False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        delta: torch.Tensor = self.lora_B(self.lora_A(x)) * self.scaling
        out: torch.Tensor = self.base(x) + delta
        return out


def attach_lora(model: MLP, targets: list[str], r: int, alpha: int) -> dict[str, LoRALinear]:
    """Wrap the named Linear modules of ``model`` in place; returns the wrappers by name."""
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    wrapped = {}
    for name in targets:
        base = model.get_submodule(name)
        if not isinstance(base, nn.Linear):
            raise TypeError(f"{name} is a {type(base).__name__}, LoRA wraps Linear layers")
        wrapped[name] = LoRALinear(base, r, alpha)
        model.set_submodule(name, wrapped[name])
    return wrapped


def peft_state_dict(wrapped: dict[str, LoRALinear]) -> dict[str, torch.Tensor]:
    """The adapter weights under PEFT's saved key names."""
    state = {}
    for name, module in wrapped.items():
        for part in ("lora_A", "lora_B"):
            weight = getattr(module, part).weight.detach().clone().contiguous()
            state[f"base_model.model.{name}.{part}.weight"] = weight
    return state
