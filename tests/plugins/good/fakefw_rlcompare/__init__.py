"""A third-party plugin used by the tests: adapters that exercise the harness itself.

None of these is evidence that any framework works: ``fake`` acts at random with the harness's own
environments, ``raising`` fails mid-training, ``sleepy`` never finishes and starts a child process
(for timeout and process-tree tests).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any

import numpy as np

from rlcompare import hookimpl
from rlcompare.adapter import Adapter, Capabilities, Fidelity, FidelityEntry, TrainingResult

ALL = frozenset({"PPO", "A2C", "DQN", "SAC"})


class FakeAdapter(Adapter):
    id = "fake"
    framework = "fakefw"
    summary = "random actions on the harness's environments (tests only)"
    distributions = ("numpy",)

    def capabilities(self) -> Capabilities:
        return Capabilities(algorithms=ALL, rollout_workers=False)

    def fidelity(self, workload: Any) -> list[FidelityEntry]:
        # It trains nothing: the settings only shape how long it steps at random. Marked approximate so
        # that the harness tests can plan it; the scoring tests use tests/plugins/cheats instead.
        return [
            FidelityEntry(f"hyperparameters.{name}", value, Fidelity.APPROXIMATE, note="random actions")
            for name, value in workload.hyperparameters.model_dump().items()
        ]

    def train(self, workload: Any, context: Any) -> TrainingResult:
        env = context.env_factory(0)()
        rng = np.random.default_rng(context.seed)
        space = env.action_space

        def policy(observations: np.ndarray) -> np.ndarray:
            return np.array([space.sample() for _ in range(len(observations))])

        space.seed(context.seed)
        env.reset(seed=context.seed)
        context.start_training()
        steps = 0
        while not context.budget_reached:
            _, _, terminated, truncated, _ = env.step(space.sample())
            steps += 1
            if terminated or truncated:
                env.reset(seed=int(rng.integers(1 << 30)))
            context.checkpoint(policy, steps)
        env.close()
        return TrainingResult(policy=policy, framework_env_steps=steps, native_config={"random": True})


class RaisingAdapter(FakeAdapter):
    id = "raising"
    summary = "raises after a few hundred steps (tests only)"

    def capabilities(self) -> Capabilities:
        return Capabilities(algorithms=frozenset({"PPO"}))

    def train(self, workload: Any, context: Any) -> TrainingResult:
        env = context.env_factory(0)()
        env.reset(seed=context.seed)
        context.start_training()
        for _ in range(300):
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            if terminated or truncated:
                env.reset()
        raise RuntimeError("boom from the raising adapter")


class SleepyAdapter(FakeAdapter):
    id = "sleepy"
    summary = "never finishes; starts a child process (tests only)"

    def capabilities(self) -> Capabilities:
        return Capabilities(algorithms=frozenset({"PPO"}))

    def train(self, workload: Any, context: Any) -> TrainingResult:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        pid_file = os.environ.get("FAKEFW_PID_FILE")
        if pid_file:
            with open(pid_file, "w", encoding="utf-8") as handle:
                handle.write(f"{os.getpid()} {child.pid}\n")
        env = context.env_factory(0)()
        env.reset(seed=context.seed)
        space = env.action_space

        def policy(observations: np.ndarray) -> np.ndarray:
            return np.array([space.sample() for _ in range(len(observations))])

        context.start_training()
        while True:  # ignores its budget on purpose
            _, _, terminated, truncated, _ = env.step(space.sample())
            if terminated or truncated:
                env.reset()
            context.checkpoint(policy)
            time.sleep(0.002)


class HungryAdapter(FakeAdapter):
    id = "hungry"
    summary = "holds FAKEFW_HUNGRY_MIB MiB of memory while it steps at random (tests only)"

    def capabilities(self) -> Capabilities:
        return Capabilities(algorithms=frozenset({"PPO"}))

    def train(self, workload: Any, context: Any) -> TrainingResult:
        ballast = np.ones(int(os.environ.get("FAKEFW_HUNGRY_MIB", "300")) * 2**20 // 8)  # touched: resident
        time.sleep(2.0)  # long enough for the runner to see it
        result = super().train(workload, context)
        del ballast
        return result


class BatchedAdapter(FakeAdapter):
    """``fake``'s random actions for several seeds in one program (``parallelism.seeds_per_program``): one
    process steps every seed's environment in turn, each counted and evaluated in its own context.
    ``BATCHED_FAIL_AT`` (env steps): raise once the first seed has stepped that far."""

    id = "batched"
    summary = "random actions, several seeds in one process (tests only)"

    def capabilities(self) -> Capabilities:
        return Capabilities(algorithms=ALL, rollout_workers=False, seeds_in_one_program=True)

    def train_seeds(self, workload: Any, contexts: Any) -> list[TrainingResult]:
        fail_at = int(os.environ.get("BATCHED_FAIL_AT", "0"))
        envs = [context.env_factory(0)() for context in contexts]
        policies = []
        for context, env in zip(contexts, envs, strict=True):
            space = env.action_space
            space.seed(context.seed)
            env.reset(seed=context.seed)
            policies.append(lambda observations, space=space: np.array([space.sample() for _ in observations]))
        for context in contexts:
            context.start_training()
        steps = [0] * len(contexts)
        while not all(context.budget_reached for context in contexts):
            for index, (context, env) in enumerate(zip(contexts, envs, strict=True)):
                if context.budget_reached:
                    continue
                _, _, terminated, truncated, _ = env.step(env.action_space.sample())
                steps[index] += 1
                if terminated or truncated:
                    env.reset()
                context.checkpoint(policies[index], steps[index])
            if fail_at and steps[0] >= fail_at:
                raise RuntimeError(f"batched failed at {steps[0]} env steps")
        seeds = [context.seed for context in contexts]
        return [TrainingResult(policy=policy, framework_env_steps=count,
                               native_config={"pid": os.getpid(), "program_seeds": seeds})
                for policy, count in zip(policies, steps, strict=True)]


@hookimpl
def rlcompare_register_adapters(register: Any) -> None:
    register.add_adapter(FakeAdapter)
    register.add_adapter(BatchedAdapter)
    register.add_adapter(HungryAdapter)
    register.add_adapter(RaisingAdapter)
    register.add_adapter(SleepyAdapter)
