"""EvoTorch's GymNE on the harness's counted environments (imported only while training: it
imports evotorch and torch).

GymNE makes its environments from one callable, the same in the main process and in every Ray
actor it creates; the harness needs each environment instance in its own counter slot. This
subclass picks the slot from where the problem object lives: the main process takes slot 0, actor
``i`` takes slot ``i + 1``. It is a module-level class so that Ray ships it by reference.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium
from evotorch.neuroevolution import GymNE

from rlcompare.adapter import EnvFactory


class CountedGymNE(GymNE):
    """GymNE whose environments come from ``factories[slot]``, each seeded once when made."""

    def __init__(self, *, factories: Sequence[EnvFactory], env_seed: int, **kwargs: Any) -> None:
        self._factories = list(factories)
        self._env_seed = int(env_seed)
        super().__init__(env=self._factories[0], **kwargs)

    @property
    def env_slot(self) -> int:
        return 0 if self.actor_index is None else 1 + int(self.actor_index)

    def _instantiate_new_env(self, **_: Any) -> gymnasium.Env:
        slot = self.env_slot
        env = self._factories[slot]()
        env.reset(seed=self._env_seed + slot)  # later resets continue this environment's own stream
        return env
