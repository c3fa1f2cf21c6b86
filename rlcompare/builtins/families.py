"""Built-in plugin registering the PPO, A2C, DQN, SAC, TD3, DDPG and ES families
(:mod:`rlcompare.spec.builtin_families`), each gradient family with its reference update
(:mod:`rlcompare.parity.references`)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from rlcompare import hookimpl
from rlcompare.parity.references import REFERENCES
from rlcompare.spec.builtin_families import BUILTIN_FAMILIES

if TYPE_CHECKING:
    from rlcompare.plugins.register import Register


@hookimpl
def rlcompare_register_algorithms(register: Register) -> None:
    for family in BUILTIN_FAMILIES:
        reference = REFERENCES.get(family.name)
        register.add_algorithm(family if reference is None else dataclasses.replace(family, parity=reference()))
