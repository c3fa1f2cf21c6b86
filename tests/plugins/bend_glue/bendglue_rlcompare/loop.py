"""The bendglue adapter's training loop: the framework's own ``learn``, checked at every rollout."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlcompare.adapter import TrainingResult, WorkloadLike

if TYPE_CHECKING:
    from rlcompare.adapter import TrainingContext


def train_random_agent(workload: WorkloadLike, context: TrainingContext) -> TrainingResult:
    """Build the agent on the harness's environments, hand over its policy, step to the budget."""
    import bendglue_fw

    if bendglue_fw.WHERE != "installed":
        raise RuntimeError(f"bendglue_fw was imported from {bendglue_fw.PATH}, not the installed package")
    envs = [context.env_factory(slot)() for slot in range(workload.parallelism.total_envs)]
    agent = bendglue_fw.RandomAgent(envs, context.seed)
    context.start_training()
    context.checkpoint(agent.predict, 0)
    agent.learn(workload.hyperparameters.rollout_steps, lambda: context.budget_reached,
                lambda steps: context.checkpoint(agent.predict, steps))
    for env in envs:
        env.close()
    return TrainingResult(policy=agent.predict, framework_env_steps=agent.num_timesteps,
                          native_config={"framework": bendglue_fw.PATH})
