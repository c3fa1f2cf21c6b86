"""The probe's networks, in float64 torch, built from canonically named weights: the fully connected
networks every family uses (the workload's ``network``: hidden sizes and activation), their
deterministic initial weights, and their forward pass. torch is imported when a function runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np


def layer_names(prefix: str, hidden: Sequence[int], out: str = "out") -> list[str]:
    """Canonical names of an MLP's Linear layers: ``prefix.0`` ... ``prefix.{len(hidden)-1}``, then ``prefix.out``."""
    return [f"{prefix}.{i}" for i in range(len(hidden))] + [f"{prefix}.{out}"]


def init_mlp(rng: np.random.Generator, prefix: str, inputs: int, hidden: Sequence[int], outputs: int,
             out: str = "out", out_scale: float = 1.0) -> dict[str, np.ndarray]:
    """Weights of an MLP (``torch.nn.Linear`` layout), uniform in +-1/sqrt(fan_in) as torch draws
    them, the output layer scaled by ``out_scale``. Every value is representable in float32, so a
    framework in float32 starts from exactly the probe's weights."""
    weights: dict[str, np.ndarray] = {}
    sizes = [inputs, *hidden, outputs]
    for name, (fan_in, fan_out) in zip(layer_names(prefix, hidden, out), zip(sizes[:-1], sizes[1:], strict=True),
                                       strict=True):
        bound = 1.0 / np.sqrt(fan_in)
        scale = out_scale if name.endswith(f".{out}") else 1.0
        weights[f"{name}.weight"] = as_float32(rng.uniform(-bound, bound, (fan_out, fan_in)) * scale)
        weights[f"{name}.bias"] = as_float32(rng.uniform(-bound, bound, (fan_out,)) * scale)
    return weights


def as_float32(values: Any) -> np.ndarray:
    """``values`` rounded to float32, held as float64 (what a float32 framework loads exactly)."""
    return np.asarray(values, dtype=np.float32).astype(np.float64)


def tensors(weights: Mapping[str, np.ndarray], requires_grad: bool = True) -> dict[str, Any]:
    """float64 leaf tensors of ``weights``, by name."""
    import torch

    return {name: torch.tensor(np.asarray(value, dtype=np.float64), dtype=torch.float64, requires_grad=requires_grad)
            for name, value in weights.items()}


def activation(name: str) -> Any:
    import torch

    return {"tanh": torch.tanh, "relu": torch.relu}[name]


def mlp(params: Mapping[str, Any], prefix: str, hidden: Sequence[int], act: str, x: Any, out: str = "out") -> Any:
    """Forward pass of the MLP ``prefix`` on ``x`` (the output layer is linear)."""
    import torch

    function = activation(act)
    names = layer_names(prefix, hidden, out)
    for name in names[:-1]:
        x = function(torch.nn.functional.linear(x, params[f"{name}.weight"], params[f"{name}.bias"]))
    last = names[-1]
    return torch.nn.functional.linear(x, params[f"{last}.weight"], params[f"{last}.bias"])


def trunk(params: Mapping[str, Any], prefix: str, hidden: Sequence[int], act: str, x: Any) -> Any:
    """The hidden layers of ``prefix`` only (SAC's actor puts two heads on them)."""
    import torch

    function = activation(act)
    for name in layer_names(prefix, hidden)[:-1]:
        x = function(torch.nn.functional.linear(x, params[f"{name}.weight"], params[f"{name}.bias"]))
    return x


def adam_step(params: Mapping[str, Any], grads: Mapping[str, Any], lr: float, eps: float,
              betas: tuple[float, float] = (0.9, 0.999)) -> dict[str, Any]:
    """One Adam step from fresh state (torch.optim.Adam's first step, in float64)."""
    beta1, beta2 = betas
    updated = {}
    for name, value in params.items():
        grad = grads[name]
        m_hat = (1 - beta1) * grad / (1 - beta1)
        v_hat = (1 - beta2) * grad * grad / (1 - beta2)
        updated[name] = value.detach() - lr * m_hat / (v_hat.sqrt() + eps)
    return updated


def rmsprop_step(params: Mapping[str, Any], grads: Mapping[str, Any], lr: float, eps: float,
                 alpha: float = 0.99) -> dict[str, Any]:
    """One RMSprop step from fresh state (torch.optim.RMSprop's first step, in float64)."""
    return {name: value.detach() - lr * grads[name] / (((1 - alpha) * grads[name] ** 2).sqrt() + eps)
            for name, value in params.items()}


def clip_by_global_norm(grads: Mapping[str, Any], max_norm: float) -> dict[str, Any]:
    """``torch.nn.utils.clip_grad_norm_`` on ``grads`` together (the norm over all of them)."""
    import torch

    total = torch.sqrt(sum((grad ** 2).sum() for grad in grads.values()))
    coefficient = torch.clamp(max_norm / (total + 1e-6), max=1.0)
    return {name: grad * coefficient for name, grad in grads.items()}
