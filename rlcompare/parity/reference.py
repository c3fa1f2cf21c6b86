"""What every reference update shares: the probe cases a family is checked on, the named variants
it can be re-run under, and how a probe is made from a workload.

A reference update is a small, readable implementation of one update of an algorithm family,
written from its papers' equations in float64 torch, with the *canonical* semantics rlcompare's
workloads mean (the choices papers leave open are fixed as Stable-Baselines3 and CleanRL fix them;
each module's docstring lists them with their sources). A *variant* is one named departure from
those semantics that frameworks are known to make (value clipping, Adam's epsilon, Huber or MSE,
...): when a framework's update differs from the canonical one, the reference is re-run under the
variants until one matches, and the variant names what the framework does.
"""

from __future__ import annotations

import itertools
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from rlcompare.harness.parity import ParityOutcome, ParityProbe
from rlcompare.spec.builtin_families import builtin_families
from rlcompare.spec.families import Families
from rlcompare.spec.workload import Workload, workload_from_dict


@dataclass(frozen=True)
class Variant:
    """One named departure from the canonical update, and the setting it concerns."""

    name: str
    description: str
    #: The setting the variant is a different value of (``defaults.adam_eps``, ``hyperparameters.x``).
    setting: str
    canonical: Any
    framework: Any


@dataclass(frozen=True)
class ProbeCase:
    """One probe of a family: a name (``discrete``) and the workload it stands for."""

    name: str
    workload: dict[str, Any]
    #: Variants that cannot show on this case (e.g. log-std handling on a discrete case).
    excluded: frozenset[str] = field(default_factory=frozenset)


class ReferenceUpdate(ABC):
    """The reference update of one algorithm family (subclass per family)."""

    family: ClassVar[str]
    #: Every variant the reference can be re-run under, by name.
    variants: ClassVar[Mapping[str, Variant]]
    #: Pairs of variants that cannot hold together (the search skips them).
    exclusive: ClassVar[tuple[frozenset[str], ...]] = ()

    @abstractmethod
    def cases(self) -> list[ProbeCase]:
        """The probes this family is checked on."""

    @abstractmethod
    def build_probe(self, workload: Workload, seed: int = 0) -> ParityProbe:
        """The deterministic probe for ``workload``: initial weights, a fixed batch, hyperparameters."""

    @abstractmethod
    def expected(self, probe: ParityProbe, variants: frozenset[str] = frozenset()) -> ParityOutcome:
        """What the update does on ``probe`` with the canonical semantics, or under ``variants``."""

    def case_workload(self, case: ProbeCase, families: Families | None = None) -> Workload:
        """The validated workload of ``case``."""
        return workload_from_dict(case.workload, f"parity probe {self.family}/{case.name}",
                                  families if families is not None else builtin_families())

    def variant_sets(self, case: ProbeCase, largest: int = 3) -> Iterator[frozenset[str]]:
        """Every combination of up to ``largest`` variants that can hold together, smallest first."""
        names = [name for name in self.variants if name not in case.excluded]
        for size in range(1, largest + 1):
            for combination in itertools.combinations(names, size):
                chosen = frozenset(combination)
                if not any(pair <= chosen for pair in self.exclusive):
                    yield chosen


def declared_variants(reference: ReferenceUpdate, entries: Iterable[Any]) -> frozenset[str]:
    """The variants an adapter's fidelity report declares: for each entry that is not ``exact``, the
    variant of the same setting (where the setting has several: the one whose framework value is the
    entry's native value, else the one whose canonical value is the entry's value). The judge tries
    them together before it searches."""
    by_setting: dict[str, list[Variant]] = {}
    for variant in reference.variants.values():
        by_setting.setdefault(variant.setting, []).append(variant)
    chosen: set[str] = set()
    for item in entries:
        data = item.to_dict() if hasattr(item, "to_dict") else dict(item)
        if str(data.get("status")) == "exact":
            continue
        candidates = by_setting.get(str(data.get("setting")), [])
        if len(candidates) > 1:  # the one the native value names, else the one departing from the entry's value
            named = [v for v in candidates if _same_value(v.framework, data.get("native_value"))]
            candidates = named or [v for v in candidates if _same_value(v.canonical, data.get("value"))]
        if len(candidates) == 1:
            chosen.add(candidates[0].name)
    return frozenset(chosen)


def _same_value(left: Any, right: Any) -> bool:
    if isinstance(left, (int, float)) and isinstance(right, (int, float)) and not isinstance(left, bool):
        return bool(np.isclose(float(left), float(right), rtol=1e-6, atol=0.0))
    return bool(left == right)


def space_of(env_id: str, env_kwargs: Mapping[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
    """(observation size, action space as the probe describes it) of a Gymnasium environment."""
    import gymnasium

    from rlcompare.harness.counted_envs import make_env

    env = make_env(env_id, dict(env_kwargs or {}))
    try:
        observation_dim = int(np.prod(env.observation_space.shape))
        space = env.action_space
        if isinstance(space, gymnasium.spaces.Discrete):
            return observation_dim, {"kind": "discrete", "n": int(space.n)}
        return observation_dim, {"kind": "continuous", "shape": list(space.shape),
                                 "low": np.asarray(space.low, dtype=float).tolist(),
                                 "high": np.asarray(space.high, dtype=float).tolist()}
    finally:
        env.close()
