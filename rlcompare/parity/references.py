"""The built-in families' reference updates, by family name."""

from __future__ import annotations

from rlcompare.parity.a2c import A2CReference
from rlcompare.parity.dqn import DQNReference
from rlcompare.parity.grpo import GRPOReference
from rlcompare.parity.pg import PGReference
from rlcompare.parity.ppo import PPOReference
from rlcompare.parity.reference import ReferenceUpdate
from rlcompare.parity.sac import SACReference
from rlcompare.parity.td3 import DDPGReference, TD3Reference

REFERENCES: dict[str, type[ReferenceUpdate]] = {
    "PPO": PPOReference, "A2C": A2CReference, "DQN": DQNReference, "SAC": SACReference,
    "TD3": TD3Reference, "DDPG": DDPGReference, "PG": PGReference, "GRPO": GRPOReference,
}
