"""The schedule a family's canonical settings define, and how a traced schedule departs from it.

One update on a fixed batch cannot show *when* updates happen; the schedule can. Canonically (the
semantics of rlcompare's hyperparameters, as Stable-Baselines3 counts them, in env steps across
every environment of the run):

- **PPO, A2C, PG**: one update per rollout of ``rollout_steps`` in every env; an update is ``epochs``
  passes of ``ceil(rollout / minibatch_size)`` gradient steps (PPO), or one gradient step (A2C, PG).
- **DQN**: no update before ``learning_starts`` env steps; then one update every ``train_every`` env
  steps, each of ``gradient_steps`` gradient steps in a row; the target network is copied every
  ``target_update_interval`` env steps, between env steps, so never inside an update's run of
  gradient steps. Of several copies between two updates only the last matters, so the *effective*
  copies (those with a gradient step since the previous one; :mod:`rlcompare.harness.schedule`)
  come every ``ceil(target_update_interval / train_every)`` updates: every
  ``train_every * ceil(target_update_interval / train_every)`` env steps and
  ``gradient_steps * ceil(target_update_interval / train_every)`` gradient steps (the rl-zoo's
  CartPole settings, 128 gradient steps every 256 env steps and a copy every 10 env steps, keep one
  target network for a whole update: 128 gradient steps between effective copies); epsilon falls
  linearly from ``exploration_initial_eps`` to ``exploration_final_eps`` over the first
  ``exploration_fraction`` of the budget, then stays.
- **SAC**: as DQN for updates; the targets move by one Polyak step after every gradient step.
- **TD3**: as SAC for updates; the actor steps, and the targets move by one Polyak step, after every
  ``policy_delay``-th critic gradient step (counted over the whole run, as TD3's authors and SB3
  count it): the first after critic step ``policy_delay``, which the phase check compares exactly (a
  framework that steps the actor after critic steps 1, d + 1, ... keeps the interval but not the
  phase). **DDPG**: TD3 with a delay of 1.

A difference is reported with its size when it exceeds :data:`RELATIVE_TOLERANCE` (counts and
intervals) or :data:`EPSILON_TOLERANCE` (exploration, from 1% of the budget on: SB3 picks its very
first action greedily, before its schedule sets epsilon).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

#: Counts and intervals within this share of the canonical value agree (rounding to whole updates).
RELATIVE_TOLERANCE = 0.10
#: Largest difference of epsilon at a traced point that agrees.
EPSILON_TOLERANCE = 0.02


@dataclass(frozen=True)
class ScheduleDifference:
    """One way the traced schedule departs from the canonical one."""

    aspect: str
    measured: float
    canonical: float
    text: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def canonical_schedule(workload: Mapping[str, Any]) -> dict[str, float | None]:
    """What the canonical settings of ``workload`` (a workload's plain data) define: expected counts,
    intervals and the first gradient step, by aspect (None where the family defines none)."""
    algorithm = workload["algorithm"]
    hp = workload["hyperparameters"]
    parallelism = workload.get("parallelism") or {}
    envs = int(parallelism.get("envs_per_worker", 1)) * int(parallelism.get("workers", 1))
    budget = int(workload["env_steps"])
    if algorithm in ("PPO", "A2C", "PG"):
        rollout = int(hp["rollout_steps"]) * envs
        updates = math.ceil(budget / rollout)
        per_update = int(hp["epochs"]) * math.ceil(rollout / int(hp["minibatch_size"])) if algorithm == "PPO" else 1
        return {"updates": updates, "gradient_steps": updates * per_update, "update_interval_env_steps": rollout,
                "first_gradient_step": rollout}
    if algorithm in ("DQN", "SAC", "TD3", "DDPG"):
        starts, every, steps = int(hp["learning_starts"]), int(hp["train_every"]), int(hp["gradient_steps"])
        updates = max(0, budget - starts) // every
        schedule: dict[str, float | None] = {
            "updates": updates, "gradient_steps": updates * steps, "update_interval_env_steps": every,
            "first_gradient_step": starts + every}
        if algorithm == "DQN":
            # syncs happen between env steps; of several between two updates only the last counts
            updates_per_sync = math.ceil(int(hp["target_update_interval"]) / every)
            schedule["target_sync_interval_env_steps"] = every * updates_per_sync
            schedule["target_sync_interval_gradient_steps"] = steps * updates_per_sync
            schedule["target_sync_max_gradient_steps"] = steps * updates_per_sync
        else:
            delay = float(hp["policy_delay"]) if algorithm == "TD3" else 1.0
            schedule["target_sync_interval_gradient_steps"] = delay
            schedule["target_sync_max_gradient_steps"] = delay
            if algorithm == "TD3":  # the phase: the first actor step (and target sync) after the delay-th critic step
                schedule["target_sync_first_gradient_step"] = delay
        return schedule
    return {}


def epsilon_at(workload: Mapping[str, Any], env_steps: float) -> float:
    """The canonical epsilon of a DQN workload after ``env_steps``."""
    hp = workload["hyperparameters"]
    start, end = float(hp["exploration_initial_eps"]), float(hp["exploration_final_eps"])
    span = float(hp["exploration_fraction"]) * int(workload["env_steps"])
    return end if span <= 0 else start + (end - start) * min(1.0, env_steps / span)


def schedule_differences(workload: Mapping[str, Any], traced: Mapping[str, Any] | None) -> list[ScheduleDifference]:
    """How the traced schedule (a run's ``schedule_json``) departs from the canonical one."""
    if not traced:
        return []
    canonical = canonical_schedule(workload)
    found: list[ScheduleDifference] = []

    def compare(aspect: str, measured: float | None, expected: float | None, what: str) -> None:
        if measured is None or expected is None or expected == 0:
            return
        if abs(measured - expected) > RELATIVE_TOLERANCE * abs(expected):
            found.append(ScheduleDifference(aspect, float(measured), float(expected),
                                            f"{what} {_number(measured)}, canonical {_number(expected)} "
                                            f"({measured / expected:.2f}x)"))

    gradient = traced.get("gradient_step") or {}
    updates = traced.get("update") or {}
    syncs = traced.get("target_sync") or {}
    compare("gradient_steps", gradient.get("count"), canonical.get("gradient_steps"), "gradient steps")
    compare("updates", updates.get("count"), canonical.get("updates"), "updates")
    compare("update_interval_env_steps", updates.get("mean_interval_env_steps"),
            canonical.get("update_interval_env_steps"), "an update every")
    first = gradient.get("first_env_step")
    expected_first = canonical.get("first_gradient_step")
    if first is not None and expected_first is not None and abs(first - expected_first) > max(
            RELATIVE_TOLERANCE * expected_first, canonical.get("update_interval_env_steps") or 0):
        found.append(ScheduleDifference("first_gradient_step", float(first), float(expected_first),
                                        f"first gradient step at env step {_number(first)}, canonical "
                                        f"{_number(expected_first)}"))
    compare("target_sync_interval_env_steps", syncs.get("mean_effective_interval_env_steps"),
            canonical.get("target_sync_interval_env_steps"), "target synced every (env steps)")
    compare("target_sync_interval_gradient_steps", syncs.get("mean_effective_interval_gradient_steps"),
            canonical.get("target_sync_interval_gradient_steps"), "target synced every (gradient steps, mean)")
    compare("target_sync_max_gradient_steps", syncs.get("max_interval_gradient_steps"),
            canonical.get("target_sync_max_gradient_steps"), "at most this many gradient steps between target syncs:")
    first_sync, expected_sync = syncs.get("first_effective_gradient_step"), canonical.get("target_sync_first_gradient_step")
    if first_sync is not None and expected_sync is not None and first_sync != expected_sync:
        found.append(ScheduleDifference("target_sync_first_gradient_step", float(first_sync), float(expected_sync),
                                        f"first target sync (and actor step) after gradient step {_number(first_sync)}, "
                                        f"canonical {_number(expected_sync)}"))
    if workload["algorithm"] == "DQN" and traced.get("exploration"):
        worst, at = 0.0, 0.0
        settle = 0.01 * int(workload["env_steps"])  # a framework may set epsilon after its first steps
        for env_steps, value in traced["exploration"].get("samples") or ():
            if env_steps < settle:
                continue
            gap = abs(value - epsilon_at(workload, env_steps))
            if gap > worst:
                worst, at = gap, env_steps
        if worst > EPSILON_TOLERANCE:
            found.append(ScheduleDifference("exploration", worst, 0.0,
                                            f"epsilon {worst:.2f} away from the canonical line at env step "
                                            f"{_number(at)} (canonical {epsilon_at(workload, at):.2f})"))
    return found


def _number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"
