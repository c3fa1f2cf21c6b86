"""The built-in families' reference updates, by family name."""

from __future__ import annotations

from rlcompare.parity.dqn import DQNReference
from rlcompare.parity.ppo import PPOReference
from rlcompare.parity.reference import ReferenceUpdate

REFERENCES: dict[str, type[ReferenceUpdate]] = {"PPO": PPOReference, "DQN": DQNReference}
