"""Built-in plugin registering the PPO, A2C, DQN, SAC and ES families
(:mod:`rlcompare.spec.builtin_families`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlcompare import hookimpl
from rlcompare.spec.builtin_families import BUILTIN_FAMILIES

if TYPE_CHECKING:
    from rlcompare.plugins.register import Register


@hookimpl
def rlcompare_register_algorithms(register: Register) -> None:
    for family in BUILTIN_FAMILIES:
        register.add_algorithm(family)
