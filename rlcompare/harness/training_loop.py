"""The training template adapters share when their framework can be driven step by step: build a
setup, hand the harness its policy at step 0 and after every update, close it, report the
framework's own step count. An adapter whose framework runs its own loop (RLlib, Sample Factory)
calls the context directly instead."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from rlcompare.harness.contract import TrainingResult

if TYPE_CHECKING:  # numpy and gymnasium: adapter modules import this template when they are listed
    from rlcompare.harness.context import TrainingContext
    from rlcompare.harness.evaluation import Policy


class TrainingSetup(Protocol):
    """A framework's algorithm, built for one run and ready to train."""

    #: The framework's own count of the env steps it took so far.
    env_steps: int
    #: The framework's native configuration, as built (recorded with the run).
    native: dict[str, Any]

    def policy_fn(self, deterministic: bool) -> Policy:
        """The current policy as a batch-of-observations -> batch-of-actions function."""

    def run(self, after_update: Callable[[int], None]) -> None:
        """Train for the workload's budget, calling ``after_update(framework_steps)`` after each
        update (or before each collection)."""

    def close(self) -> None:
        """Release the setup's environments, processes and threads."""


def train_with_setup(setup: TrainingSetup, context: TrainingContext) -> TrainingResult:
    """Train ``setup`` under ``context``: start-up ends here, the harness evaluates at step 0 and
    whenever an evaluation is due after an update, and the setup is closed whatever happens."""
    policy = setup.policy_fn(context.deterministic)
    context.start_training()
    try:
        with context.until_solved():  # a stop_when_solved workload ends at its solving evaluation
            context.checkpoint(policy, 0)
            setup.run(lambda framework_steps: context.checkpoint(policy, framework_steps))
    finally:
        context.stop_training()
        setup.close()
    return TrainingResult(policy=policy, framework_env_steps=setup.env_steps, native_config=setup.native)
