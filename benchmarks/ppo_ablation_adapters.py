"""SB3's PPO with one hidden default changed at a time, as adapters for an ablation (benchmarks only:
their fidelity reports are SB3's, so they are never evidence about another framework).

    python benchmarks/steps_to_threshold.py cartpole-ppo-quick --plugin ppo_ablation_adapters \
        --adapters sb3,sb3-torch-init,sb3-adam-eps-1e-8 --seeds 5 --interval 2000 --episodes 5

- ``sb3-torch-init``: PyTorch's default initialization of every layer (``ortho_init=False``), as
  TorchRL's, Tianshou's and skrl's adapters build their networks, instead of SB3's orthogonal
  initialization (gain sqrt 2, 0.01 on the policy head, 1 on the value head);
- ``sb3-adam-eps-1e-8``: torch's Adam epsilon (skrl's and RLlib's) instead of SB3's 1e-5.
"""

from __future__ import annotations

from typing import Any

from rlcompare_sb3 import StableBaselines3Adapter

from rlcompare import hookimpl


class _Changed(StableBaselines3Adapter):
    #: policy_kwargs added to SB3's.
    policy_changes: dict[str, Any] = {}

    def native_config(self, workload: Any) -> tuple[dict[str, Any], list[Any]]:
        kwargs, entries = super().native_config(workload)
        kwargs["policy_kwargs"] = {**kwargs["policy_kwargs"], **self.policy_changes}
        return kwargs, entries


class TorchInit(_Changed):
    id = "sb3-torch-init"
    summary = "SB3 PPO with PyTorch's default initialization (ablation)"
    policy_changes = {"ortho_init": False}


class AdamEps8(_Changed):
    id = "sb3-adam-eps-1e-8"
    summary = "SB3 PPO with Adam epsilon 1e-8 (ablation)"
    policy_changes = {"optimizer_kwargs": {"eps": 1e-8}}


@hookimpl
def rlcompare_register_adapters(register: Any) -> None:
    register.add_adapter(TorchInit)
    register.add_adapter(AdamEps8)
