"""SB3 adapters whose update silently differs from what their fidelity report declares (tests only).

Each subclasses the built-in SB3 adapter, declares the same (exact) fidelity, and changes one thing
in the model it builds: ``sb3-vclip`` clips value predictions (``clip_range_vf = clip_range``),
``sb3-eps`` gives Adam an epsilon of 1e-8. The parity probe must catch each, naming the variant.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rlcompare_sb3 import StableBaselines3Adapter

from rlcompare import hookimpl
from rlcompare.adapter import Capabilities, WorkloadLike

if TYPE_CHECKING:
    from rlcompare.plugins.register import Register


class ValueClippingSB3(StableBaselines3Adapter):
    id = "sb3-vclip"
    summary = "SB3 PPO with value clipping switched on behind an exact fidelity report"

    def capabilities(self) -> Capabilities:
        return Capabilities(algorithms=frozenset({"PPO"}))

    def build_model(self, workload: WorkloadLike, env: Any, seed: int) -> tuple[Any, dict[str, Any], dict[str, Any]]:
        model, kwargs, policy_kwargs = super().build_model(workload, env, seed)
        from stable_baselines3.common.utils import FloatSchedule

        model.clip_range_vf = FloatSchedule(float(workload.hyperparameters.clip_range))
        return model, kwargs, policy_kwargs


class SmallEpsilonSB3(StableBaselines3Adapter):
    id = "sb3-eps"
    summary = "SB3 PPO with Adam's epsilon at 1e-8 behind an exact fidelity report"

    def capabilities(self) -> Capabilities:
        return Capabilities(algorithms=frozenset({"PPO"}))

    def build_model(self, workload: WorkloadLike, env: Any, seed: int) -> tuple[Any, dict[str, Any], dict[str, Any]]:
        model, kwargs, policy_kwargs = super().build_model(workload, env, seed)
        for group in model.policy.optimizer.param_groups:
            group["eps"] = 1e-8
        return model, kwargs, policy_kwargs


@hookimpl
def rlcompare_register_adapters(register: Register) -> None:
    register.add_adapter(ValueClippingSB3)
    register.add_adapter(SmallEpsilonSB3)
