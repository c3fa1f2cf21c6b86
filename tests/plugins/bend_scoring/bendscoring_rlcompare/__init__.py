"""Adapters that try to bend the scoring (tests only), each the situation a rule of
docs/criteria.md must withstand:

- ``hidden`` drives ``hiddenfw``, a framework with no public repository: its registry entry leaves
  the licence, the latest release, the algorithms and the taxonomy unknown, and its package names no
  licence. ``open`` drives ``openfw``, the same code with every one of those facts public. Leaving
  facts unknown must not take those criteria out of ``open``'s overall score (unknown never helps).
- ``twin_a`` and ``twin_b`` are one class under two ids: in one store they must be reported tied.
- ``sprinter`` acts at random (it never learns), starts fast and installs little; ``solver`` and
  ``plodder`` learn (hill climbing on a linear policy), ``plodder`` slowly and with a large install.
  Speed and footprint must not lift ``sprinter`` above an adapter that learned (learning first).

Every adapter trains for real (``openfw``/``hiddenfw``); the scoring tests store synthetic runs of
them (tests/test_scoring_bend.py), so that what they measure is the scoring, not the machine.
"""

from __future__ import annotations

import datetime
import importlib
from typing import TYPE_CHECKING, Any, ClassVar

from rlcompare import hookimpl
from rlcompare.adapter import Adapter, Capabilities, Fidelity, FidelityEntry, TrainingResult, WorkloadLike

if TYPE_CHECKING:
    from rlcompare.adapter import TrainingContext
    from rlcompare.plugins.register import Register

AS_OF = datetime.date(2026, 12, 1)
EVIDENCE = [{"url": "https://example.org/openfw", "accessed": AS_OF, "excerpt": "openfw 0.1, MIT, PPO and DQN"}]


class _Linear(Adapter):
    """The shared glue: hill climbing on a linear policy (or random actions) in the framework."""

    framework = "openfw"
    import_name = "openfw"
    distributions = ("openfw",)
    #: False: act at random, never learn.
    learns: ClassVar[bool] = True

    def capabilities(self) -> Capabilities:
        return Capabilities(algorithms=frozenset({"PPO", "DQN"}), action_spaces=frozenset({"discrete"}))

    def fidelity(self, workload: WorkloadLike) -> list[FidelityEntry]:
        return [FidelityEntry(f"hyperparameters.{name}", value, Fidelity.APPROXIMATE,
                              note="a linear policy by hill climbing, not the canonical update")
                for name, value in workload.hyperparameters.model_dump().items()]

    def train(self, workload: WorkloadLike, context: TrainingContext) -> TrainingResult:
        import numpy as np

        framework = importlib.import_module(self.import_name or "openfw")
        env = context.env_factory(0)()
        rng = np.random.default_rng(context.seed)
        policies: list[Any] = []

        def report(policy: Any, steps: int) -> None:
            policies[:] = [policy]
            context.checkpoint(policy, steps)

        context.start_training()
        if self.learns:
            framework.hill_climb(env, rng, lambda: context.budget_reached, report)
        else:
            framework.random_actions(env, rng, lambda: context.budget_reached, report)
        env.close()
        return TrainingResult(policy=policies[0], framework_env_steps=context.env_steps)


class OpenAdapter(_Linear):
    id = "open"
    summary = "hill climbing in openfw, whose facts are public (tests only)"


class HiddenAdapter(_Linear):
    id = "hidden"
    framework = "hiddenfw"
    import_name = "hiddenfw"
    distributions = ("hiddenfw",)
    summary = "hill climbing in hiddenfw, whose facts are unknown (tests only)"


class TwinA(_Linear):
    id = "twin_a"
    summary = "one of two identical adapters (tests only)"


class TwinB(TwinA):
    id = "twin_b"


class Sprinter(_Linear):
    id = "sprinter"
    summary = "acts at random: fast, small, never learns (tests only)"
    learns = False


class Solver(_Linear):
    id = "solver"
    summary = "hill climbing that solves the workload (tests only)"
    install_requires = ("openfw", "gymnasium")


class Plodder(_Linear):
    id = "plodder"
    summary = "hill climbing that learns part of the way, slowly, with a large install (tests only)"
    install_requires = ("openfw", "gymnasium", "pandas")


@hookimpl
def rlcompare_register_frameworks(register: Register) -> None:
    from rlcompare.registry.entries import unpublished_entry

    register.add_framework(unpublished_entry(
        "hiddenfw", "hiddenfw", "control", where="In-house only; nothing about it is public (tests only).",
        as_of=AS_OF, source="bendscoring_rlcompare"))
    public = {
        "licence": {"value": "MIT", "evidence": EVIDENCE},
        "latest_release": {"value": {"version": "0.1", "date": datetime.date(2026, 11, 1)}, "evidence": EVIDENCE},
        "algorithms": {"value": ["DQN", "PPO"], "complete": True, "evidence": EVIDENCE},
        "architecture": {"value": ["non-distributed"], "complete": True, "evidence": EVIDENCE},
        "simulation_parallelism": {"value": ["vectorized-cpu"], "complete": True, "evidence": EVIDENCE},
        "computing_parallelism": {"value": ["multi-process"], "complete": True, "evidence": EVIDENCE},
        "synchronization": {"value": ["synchronous"], "complete": True, "evidence": EVIDENCE},
    }
    register.add_framework(unpublished_entry(
        "openfw", "openfw", "control", where="Code on request; its facts are published on its page (tests only).",
        as_of=AS_OF, source="bendscoring_rlcompare", facts=public))


@hookimpl
def rlcompare_register_adapters(register: Register) -> None:
    for adapter in (OpenAdapter, HiddenAdapter, TwinA, TwinB, Sprinter, Solver, Plodder):
        register.add_adapter(adapter)
