"""One GRPO run with TRL's ``GRPOTrainer`` (see the package docstring for what comes from the harness)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from rlcompare.adapter import TrainingResult, WorkloadLike
from rlcompare.harness.language import score_completion, task_of, training_prompts
from rlcompare_trl.model import build_model, build_tokenizer, go_offline, greedy_policy

if TYPE_CHECKING:
    from rlcompare.adapter import TrainingContext


def train_grpo(workload: WorkloadLike, context: TrainingContext, config: dict[str, Any]) -> TrainingResult:
    go_offline()
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    task = task_of(workload.env, workload.env_kwargs)
    hp = workload.hyperparameters
    per_step = int(hp.prompts_per_step) * int(hp.group_size)
    # every completion is at least one token: the budget ends within this many steps
    steps_at_most = math.ceil(workload.env_steps / per_step) + 1
    prompts, seeds = training_prompts(workload.env, workload.env_kwargs, context.seed, steps_at_most * int(hp.prompts_per_step))
    tokenizer = build_tokenizer()
    first = tokenizer(prompts[0])["input_ids"]
    from rlcompare.harness.counted_envs import make_env

    probe_env = make_env(workload.env, dict(workload.env_kwargs))
    observation, _ = probe_env.reset(seed=seeds[0])
    probe_env.close()
    if list(first) != [int(token) for token in observation[:task.prompt_length]]:
        raise RuntimeError(f"TRL's tokenization of {prompts[0]!r} is {list(first)}, the harness's prompt is "
                           f"{observation[:task.prompt_length].tolist()}")
    model = build_model(workload.language_model.to_dict(), context.seed, task.sequence_length)
    run_dir = context.run_dir
    if hp.kl_coef:
        # TRL builds its reference model from the policy's name or path: the initial weights, saved
        initial = run_dir / "initial-model"
        model.save_pretrained(initial)
        model.config._name_or_path = str(initial)

    env = context.env_factory(0)()
    scored = {"completions": 0, "tokens": 0}

    def harness_reward(prompts: list[str], completions: list[str], completion_ids: list[list[int]],
                       problem_seed: list[int], **_: Any) -> list[float]:
        rewards = []
        for ids, seed in zip(completion_ids, problem_seed, strict=True):
            reward, stepped = score_completion(env, int(seed), ids)
            rewards.append(reward)
            scored["completions"] += 1
            scored["tokens"] += stepped
        return rewards

    trl_config = GRPOConfig(
        output_dir=str(run_dir / "trl"), max_steps=steps_at_most, seed=context.seed, use_cpu=True, bf16=False,
        fp16=False, gradient_checkpointing=False, report_to="none", logging_strategy="no", save_strategy="no",
        disable_tqdm=True, dataloader_num_workers=0, **config)

    def framework_tokens(state: Any) -> int:
        # TRL counts the prompt and completion tokens of each generation batch (one per optimizer step);
        # the prompts' share is its steps' completions times the prompt's length
        prompts_seen = int(state.global_step) * per_step * task.prompt_length
        return int(state.num_input_tokens_seen) - prompts_seen

    policy_of = lambda: greedy_policy(model, context.deterministic, context.seed, float(hp.temperature))  # noqa: E731

    class HarnessCallback(TrainerCallback):
        """Each optimizer step: an update for the harness, an evaluation when one is due, the budget."""

        def on_step_end(self, args: Any, state: Any, control: Any, **_: Any) -> Any:
            context.trace("update")
            context.checkpoint(policy_of(), framework_tokens(state))
            if context.budget_reached:
                control.should_training_stop = True
            return control

    trainer = GRPOTrainer(model=model, reward_funcs=harness_reward, args=trl_config,
                          train_dataset=Dataset.from_dict({"prompt": prompts, "problem_seed": seeds}),
                          processing_class=tokenizer, callbacks=[HarnessCallback()])
    context.start_training()
    context.checkpoint(policy_of(), 0)
    try:
        with context.until_solved():
            trainer.train()
    finally:
        context.stop_training()
        env.close()
    state = trainer.state
    native = {**config, "max_steps": steps_at_most,
              "optimizer_steps": int(state.global_step), "num_input_tokens_seen": int(state.num_input_tokens_seen),
              "completions_scored": scored["completions"], "tokens_scored": scored["tokens"]}
    return TrainingResult(policy=policy_of(), framework_env_steps=framework_tokens(state), native_config=native)
