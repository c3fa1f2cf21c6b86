"""Helpers for adapters of PyTorch frameworks to answer a parity probe: load the probe's weights
into the framework's own ``torch.nn.Linear`` layers, record the gradient the framework's optimizer
steps with (and refuse a second step), read parameters back, and switch off sampling noise where a
family's update samples actions (SAC). torch is imported when a helper runs, never with this module
(the probe runs in the adapter's own environment, which has its framework's torch)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from rlcompare.harness.parity import as_arrays


def linear_layers(module: Any) -> list[Any]:
    """The ``torch.nn.Linear`` layers of ``module`` in the order they are applied (registration
    order, which is forward order for the MLPs frameworks build from hidden sizes)."""
    import torch

    return [layer for layer in module.modules() if isinstance(layer, torch.nn.Linear)]


def stack_names(prefix: str, layers: int, out: str = "out") -> list[str]:
    """Canonical names of an MLP with ``layers`` Linear layers: ``prefix.0`` ... ``prefix.out``."""
    return [f"{prefix}.{i}" for i in range(layers - 1)] + [f"{prefix}.{out}"]


def load_linear_stack(layers: Sequence[Any], names: Sequence[str], weights: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """Copy ``weights[name.weight|bias]`` into each layer; returns ``canonical name -> parameter``."""
    import torch

    if len(layers) != len(names):
        raise ValueError(f"{len(layers)} Linear layers for {len(names)} canonical layers ({', '.join(names)})")
    parameters = {}
    with torch.no_grad():
        for layer, name in zip(layers, names, strict=True):
            for kind in ("weight", "bias"):
                target = getattr(layer, kind)
                source = torch.as_tensor(weights[f"{name}.{kind}"], dtype=target.dtype)
                if tuple(source.shape) != tuple(target.shape):
                    raise ValueError(f"{name}.{kind}: the framework's layer is {tuple(target.shape)}, "
                                     f"the probe's {tuple(source.shape)}")
                target.copy_(source)
                parameters[f"{name}.{kind}"] = target
    return parameters


def load_tensor(parameter: Any, value: np.ndarray) -> None:
    """Copy ``value`` into ``parameter`` (same number of elements; reshaped to the parameter's shape)."""
    import torch

    with torch.no_grad():
        parameter.copy_(torch.as_tensor(np.asarray(value).reshape(tuple(parameter.shape)), dtype=parameter.dtype))


class OneStep:
    """Wraps optimizers: records every parameter's gradient at its optimizer's ``step()`` and refuses
    a second step of the same optimizer (a probe is exactly one step of each). Use as a context
    manager around the update."""

    def __init__(self, *optimizers: Any) -> None:
        self.optimizers = tuple({id(optimizer): optimizer for optimizer in optimizers}.values())
        self.gradients: dict[int, np.ndarray] = {}
        self.steps = 0
        self._originals: list[tuple[Any, Any]] = []
        self._stepped: set[int] = set()

    def __enter__(self) -> OneStep:
        for optimizer in self.optimizers:
            original = optimizer.step

            def step(*args: Any, _original: Any = original, _optimizer: Any = optimizer, **kwargs: Any) -> Any:
                self.steps += 1
                if id(_optimizer) in self._stepped:
                    raise RuntimeError("the framework stepped one of its optimizers more than once on the parity "
                                       "probe (a probe is exactly one step of each)")
                self._stepped.add(id(_optimizer))
                for group in _optimizer.param_groups:
                    for parameter in group["params"]:
                        if parameter.grad is not None:
                            self.gradients[id(parameter)] = parameter.grad.detach().cpu().double().numpy().copy()
                return _original(*args, **kwargs)

            optimizer.step = step
            self._originals.append((optimizer, original))
        return self

    def __exit__(self, *exc: object) -> None:
        for optimizer, original in self._originals:
            optimizer.step = original

    def gradients_of(self, parameters: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """The recorded gradient of each named parameter (zeros where the optimizer saw none)."""
        return {name: self.gradients.get(id(parameter), np.zeros(tuple(parameter.shape)))
                for name, parameter in parameters.items()}


def values_of(parameters: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Each named parameter's current value, float64."""
    return as_arrays({name: parameter for name, parameter in parameters.items()})


@contextlib.contextmanager
def without_sampling_noise() -> Iterator[None]:
    """Inside, ``torch.distributions.Normal`` samples its mean (``rsample`` and ``sample`` return
    ``loc``): the probe's SAC update is then deterministic and comparable across frameworks, whose
    random streams differ. The reference update samples the same way."""
    import torch

    normal = torch.distributions.Normal
    originals = normal.rsample, normal.sample

    def mean(self: Any, sample_shape: Any = torch.Size()) -> Any:  # noqa: B008 - torch's own default
        return self.loc.expand(self._extended_shape(sample_shape))

    normal.rsample = mean  # type: ignore[method-assign]
    normal.sample = lambda self, sample_shape=torch.Size(): mean(self, sample_shape).detach()  # type: ignore[method-assign]  # noqa: B008
    try:
        yield
    finally:
        normal.rsample, normal.sample = originals  # type: ignore[method-assign]
