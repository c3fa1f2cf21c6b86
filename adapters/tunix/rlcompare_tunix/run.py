"""One GRPO run with Tunix's ``GRPOLearner`` (see the package docstring for what comes from the harness).

Tunix's own loop runs the training (``RLLearner.train``: each global step pulls one batch of prompts,
samples ``num_generations`` completions of each, scores them, computes advantages and takes
``num_iterations`` optimizer steps on them). A subclass of ``GRPOLearner`` adds what the harness needs
at the seams Tunix has for it: ``_generate_and_compute_advantage`` (a fresh sampling seed per rollout;
Tunix's sampler uses ``PRNGKey(0)`` on every call otherwise) and ``_run_global_step`` (the updates'
traces and the checkpoint after each global step).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from rlcompare.adapter import TrainingResult, WorkloadLike
from rlcompare.harness.jax_threads import configure_xla_threads, jax_backend_started
from rlcompare.harness.language import (
    BOS_ID,
    EOS_ID,
    PAD_ID,
    AdditionTask,
    encode,
    score_completion,
    task_of,
    training_prompts,
)
from rlcompare_tunix.model import HarnessTokenizer, build_model, make_mesh, next_token_policy

if TYPE_CHECKING:
    from rlcompare.adapter import TrainingContext


def completion_ids(text: str, task: AdditionTask) -> list[int]:
    """A completion Tunix generated, as the tokens the harness steps: Tunix's sampler cuts a completion
    before its first ``<eos>``, so one shorter than the task's ``max_new_tokens`` ended with ``<eos>``,
    which is put back."""
    ids = encode(text)
    return ids + [EOS_ID] if len(ids) < task.max_new_tokens else ids


@dataclass
class Tally:
    """What Tunix generated and trained on, counted from its own rollouts and training examples."""

    rollouts: int = 0
    completions: int = 0
    #: Tokens of the completions Tunix's sampler returned (``RolloutOutput.tokens``: every token before
    #: the first ``<eos>``).
    sampled_tokens: int = 0
    #: Completions Tunix's sampler stopped at ``<eos>`` (cut off before it, so outside the mask).
    eos_completions: int = 0
    #: Tokens in Tunix's completion masks (``completion_ids != pad_id``): what its loss trains.
    masked_tokens: int = 0
    #: ``<pad>`` tokens generated inside completions (Tunix treats them as padding: out of the mask).
    generated_pads: int = 0
    completions_scored: int = 0
    tokens_scored: int = 0
    optimizer_steps: int = 0
    global_steps: int = 0

    @property
    def framework_tokens(self) -> int:
        """Tunix's count of generated tokens: its sampler's completion lengths and one ``<eos>`` per
        completion that ended with one (the sampler cuts it off; the harness steps it)."""
        return self.sampled_tokens + self.eos_completions


@dataclass
class CompileWatch:
    """XLA compilations (``jax.monitoring`` duration events) while ``active``: none should happen in training."""

    active: bool = False
    seconds: float = 0.0
    #: The functions XLA compiled, in order.
    compiled: list[str] = field(default_factory=list)

    def listen(self, event: str, duration_secs: float, fun_name: str = "", **_: Any) -> None:
        if not self.active or "/compile/" not in event:
            return
        self.seconds += float(duration_secs)
        if event.endswith("backend_compile_duration"):
            self.compiled.append(str(fun_name))


def train_grpo(workload: WorkloadLike, context: TrainingContext, config: dict[str, Any]) -> TrainingResult:
    started_before = jax_backend_started()
    xla_flags = None if started_before else configure_xla_threads(workload.parallelism.threads_per_worker)
    import jax
    from tunix.rl import rl_cluster as rl_cluster_lib
    from tunix.rl.grpo import grpo_learner as grpo_lib

    watch = CompileWatch()
    jax.monitoring.register_event_duration_secs_listener(watch.listen)
    task = task_of(workload.env, workload.env_kwargs)
    hp = workload.hyperparameters
    prompts_per_step, group, iterations = int(hp.prompts_per_step), int(hp.group_size), int(hp.iterations)
    # every completion is at least one token: the budget ends within this many global steps
    steps_at_most = math.ceil(workload.env_steps / (prompts_per_step * group)) + 1
    prompts, seeds = training_prompts(workload.env, workload.env_kwargs, context.seed, steps_at_most * prompts_per_step)

    mesh = make_mesh()
    model_spec = workload.language_model.to_dict()
    reference = build_model(model_spec, context.seed, mesh) if config["beta"] else None
    cluster = build_cluster(config, build_model(model_spec, context.seed, mesh), reference, mesh, task,
                            max_steps=steps_at_most * iterations, seed=context.seed)
    algo_config = grpo_config(config)

    env = context.env_factory(0)()
    tally = Tally()
    warming = {"now": False}

    def harness_reward(prompts: list[str], completions: list[str], problem_seed: np.ndarray,
                       **_: Any) -> list[float]:
        if warming["now"]:  # compiling on the run's shapes: nothing is scored, stepped or counted
            return [0.0] * len(completions)
        rewards = []
        for text, seed in zip(completions, problem_seed, strict=True):
            reward, stepped = score_completion(env, int(seed), completion_ids(text, task))
            rewards.append(reward)
            tally.completions_scored += 1
            tally.tokens_scored += stepped
        return rewards

    # the model the actor trainer updates: RLCluster reshards the actor onto its mesh as a new module
    policy_of = lambda: next_token_policy(cluster.actor_trainer.model, context.deterministic,  # noqa: E731
                                          context.seed, float(hp.temperature), workload.evaluation.episodes)

    def checkpoint(updates: int) -> None:
        tally.global_steps += 1
        tally.optimizer_steps += updates
        for _ in range(updates):
            context.trace("update")
        watch.active = False  # the evaluation's own compilations are not training's
        try:
            context.checkpoint(policy_of(), tally.framework_tokens)
        finally:
            watch.active = True

    learner = harness_learner(grpo_lib, rl_cluster_lib)(
        rl_cluster=cluster, algo_config=algo_config, reward_fns=[harness_reward],
        rollout_keys=rollout_keys(context.seed), on_rollout=rollout_counter(tally, task, warming),
        on_global_step=checkpoint)

    def batches() -> Iterator[dict[str, np.ndarray]]:
        for index in range(steps_at_most):
            if context.budget_reached:
                return
            chunk = slice(index * prompts_per_step, (index + 1) * prompts_per_step)
            yield {"prompts": np.array(prompts[chunk]), "problem_seed": np.array(seeds[chunk], dtype=np.int64)}

    warmup = time.perf_counter()
    first = {"prompts": np.array(prompts[:prompts_per_step]),
             "problem_seed": np.array(seeds[:prompts_per_step], dtype=np.int64)}
    warm_up(learner, first, warming)
    policy_of()(np.zeros((1, task.sequence_length), dtype=np.int64))  # compiles the evaluation's forward pass
    warmup = time.perf_counter() - warmup

    context.start_training()
    context.checkpoint(policy_of(), 0)
    watch.active = True
    try:
        with context.until_solved():
            learner.train(batches())
    finally:
        watch.active = False
        context.stop_training()
        env.close()
    native = {**config, "max_steps": steps_at_most * iterations, "full_batch_size": prompts_per_step,
              "max_prompt_length": task.prompt_length, "kv_cache_size": task.sequence_length,
              "xla_flags": xla_flags, "xla_threads_pinned": not started_before,
              "warmup_seconds": round(warmup, 3), "compiles_during_training": watch.compiled,
              "compile_seconds_during_training": round(watch.seconds, 3),
              "global_steps": tally.global_steps, "optimizer_steps": tally.optimizer_steps,
              "tunix_train_steps": int(cluster.actor_trainer.train_steps), "rollouts": tally.rollouts,
              "completions": tally.completions, "sampled_tokens": tally.sampled_tokens,
              "completion_mask_tokens": tally.masked_tokens,
              "eos_completions": tally.eos_completions, "generated_pad_tokens": tally.generated_pads,
              "completions_scored": tally.completions_scored, "tokens_scored": tally.tokens_scored}
    return TrainingResult(policy=policy_of(), framework_env_steps=tally.framework_tokens, native_config=native)


def grpo_config(config: dict[str, Any]) -> Any:
    """Tunix's ``GRPOConfig`` from the adapter's native configuration (``epsilon_high`` is not a field of it in
    Tunix 0.1.7: it is set as an attribute, which ``grpo_loss_fn`` reads with ``hasattr``)."""
    from tunix.rl.grpo import grpo_learner as grpo_lib

    algo_config = grpo_lib.GRPOConfig(
        num_generations=int(config["num_generations"]), num_iterations=int(config["num_iterations"]),
        beta=float(config["beta"]), epsilon=float(config["epsilon"]), loss_agg_mode=config["loss_agg_mode"],
        advantage_estimator=config["advantage_estimator"], kl_loss_mode=config["kl_loss_mode"],
        kl_clamp_value=config["kl_clamp_value"], loss_algo=config["loss_algo"],
        policy_loss_fn=config["policy_loss_fn"], reward_manager=config["reward_manager"])
    algo_config.epsilon_high = float(config["epsilon_high"])
    return algo_config


def build_cluster(config: dict[str, Any], actor: Any, reference: Any, mesh: Any, task: AdditionTask, max_steps: int,
                  seed: int) -> Any:
    """Tunix's ``RLCluster``: actor, reference (None without a KL penalty) and vanilla rollout on one mesh (so
    the rollout shares the actor's weights), the optimizer ``optax.chain(clip_by_global_norm, adam)`` at a
    constant step size, and the task's prompt and completion lengths as the rollout's shapes."""
    import jax
    import optax
    from tunix.rl import rl_cluster as rl_cluster_lib
    from tunix.rl.rollout import base_rollout

    adam = config["adam"]
    optimizer = optax.chain(optax.clip_by_global_norm(float(config["max_grad_norm"])),
                            optax.adam(float(config["learning_rate"]), b1=adam["b1"], b2=adam["b2"], eps=adam["eps"]))
    rollout_config = base_rollout.RolloutConfig(
        max_tokens_to_generate=task.max_new_tokens, max_prompt_length=task.prompt_length,
        kv_cache_size=task.sequence_length, temperature=float(config["temperature"]), top_p=config["top_p"],
        top_k=config["top_k"], seed=jax.random.PRNGKey(seed))
    roles = (rl_cluster_lib.Role.ACTOR, rl_cluster_lib.Role.REFERENCE, rl_cluster_lib.Role.ROLLOUT)
    return rl_cluster_lib.RLCluster(
        actor=actor, reference=reference, tokenizer=HarnessTokenizer(),
        cluster_config=rl_cluster_lib.ClusterConfig(
            role_to_mesh={role: mesh for role in roles}, rollout_engine=config["rollout_engine"],
            offload_to_cpu=False,
            training_config=rl_cluster_lib.RLTrainingConfig(
                actor_optimizer=optimizer, eval_every_n_steps=10**9, max_steps=max_steps,
                mini_batch_size=config["mini_batch_size"], metrics_logging_options=None,
                checkpoint_root_directory=None),
            rollout_config={rl_cluster_lib.Mode.TRAIN: rollout_config}))


def rollout_keys(seed: int) -> Iterator[Any]:
    """The sampling key of each rollout: the run's seed folded with the rollout's index (Tunix's sampler
    would use ``PRNGKey(0)`` every time)."""
    import jax

    base = jax.random.PRNGKey(seed)
    index = 0
    while True:
        yield jax.random.fold_in(base, index)
        index += 1


def rollout_counter(tally: Tally, task: AdditionTask, warming: dict[str, bool]) -> Any:
    """What to do with each rollout (Tunix's sampler output) and the training example made of it: check
    the prompts' ids against the harness's, and count the tokens (not while warming up)."""

    def counted(prompts: list[str], output: Any, example: Any) -> None:
        prompt_ids = np.asarray(output.left_padded_prompt_tokens)
        for prompt, row in zip(prompts, prompt_ids, strict=True):
            expected = [BOS_ID, *encode(prompt)]
            if row.tolist() != [PAD_ID] * (len(row) - len(expected)) + expected:
                raise RuntimeError(f"Tunix's prompt ids {row.tolist()} for {prompt!r} are not the harness's {expected}")
        if warming["now"]:
            return
        tokens = [np.asarray(ids) for ids in output.tokens]
        tally.rollouts += 1
        tally.completions += len(tokens)
        tally.sampled_tokens += sum(len(ids) for ids in tokens)
        tally.masked_tokens += int(np.asarray(example.completion_mask).sum())
        tally.eos_completions += sum(len(ids) < task.max_new_tokens for ids in tokens)
        tally.generated_pads += sum(int((ids == PAD_ID).sum()) for ids in tokens)

    return counted


def harness_learner(grpo_lib: Any, rl_cluster_lib: Any) -> type:
    """``GRPOLearner`` with the harness's seams: a sampling key per rollout, the rollout reported with
    the training example Tunix made of it, and a call after each global step with its optimizer steps."""

    class HarnessGRPOLearner(grpo_lib.GRPOLearner):
        def __init__(self, *args: Any, rollout_keys: Iterator[Any], on_rollout: Any, on_global_step: Any,
                     **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._rollout_keys = rollout_keys
            self._on_rollout = on_rollout
            self._on_global_step = on_global_step
            generate = self.rl_cluster.generate
            self._last_rollout: list[Any] = []

            def generate_and_keep(*call_args: Any, **call_kwargs: Any) -> Any:
                output = generate(*call_args, **call_kwargs)
                self._last_rollout[:] = [output]
                return output

            self.rl_cluster.generate = generate_and_keep

        def _generate_and_compute_advantage(self, training_input: Any,
                                            mode: Any = rl_cluster_lib.Mode.TRAIN) -> Any:
            self.rl_cluster.cluster_config.rollout_config[mode].seed = next(self._rollout_keys)
            prompts = list(training_input["prompts"])
            example = super()._generate_and_compute_advantage(training_input, mode)
            self._on_rollout(prompts, self._last_rollout[0], example)
            return example

        def _run_global_step(self, *args: Any, **kwargs: Any) -> None:
            before = self.rl_cluster.actor_trainer.train_steps
            super()._run_global_step(*args, **kwargs)
            self._on_global_step(self.rl_cluster.actor_trainer.train_steps - before)

    return HarnessGRPOLearner


def warm_up(learner: Any, batch: dict[str, np.ndarray], warming: dict[str, bool]) -> None:
    """Compile one global step's programs on a batch of the run's own shapes before the training clock
    starts, and undo what the train step changed.

    The batch goes through Tunix's own path (``_process_accumulated_batches`` in the learner's data
    thread: sampling, reference and old log-probabilities where the run uses them, advantages) with
    rewards of 0 (nothing is scored, stepped or counted), then through the actor trainer's jitted train
    step, the same one its ``train`` calls. The model's parameters and the optimizer's state are copied before that step and
    restored after it (checked), so training starts from the harness's initial weights and a fresh Adam.
    """
    import jax
    from flax import nnx
    from tunix.rl import rl_cluster as rl_cluster_lib
    from tunix.sft import sharding_utils

    group = learner.algo_config.num_generations
    prompts = len(batch["prompts"])
    example = jax.tree.map(lambda values: np.repeat(values, group, axis=0), dict(batch))
    example["trajectory_ids"] = learner._compute_trajectory_ids(example, 0)
    saved_sizes = learner._rollout_micro_batch_size, learner._compute_logps_micro_batch_size
    # as RLLearner.train sets them for a full batch (mini_batch_size None)
    learner._rollout_micro_batch_size = learner._rollout_micro_batch_size or prompts
    learner._compute_logps_micro_batch_size = learner._compute_logps_micro_batch_size or prompts
    # warm-up keys from a stream of their own, made as the run's are (a fresh key per rollout: the sampler
    # donates it); the run's own stream is left untouched for the run
    keys, learner._rollout_keys = learner._rollout_keys, rollout_keys(0)
    warming["now"] = True
    cluster = learner.rl_cluster
    trainer = cluster.actor_trainer
    try:
        # in the learner's data thread, as RLLearner._prepare_data runs it; twice, because the sampler's
        # jitted prefill compares a static jax array of its state (num_input_tokens) from its second call on
        for _ in range(2):
            (train_example,) = learner.executor.submit(learner._process_accumulated_batches, [example],
                                                       [prompts * group], rl_cluster_lib.Mode.TRAIN).result()
        with cluster._get_mesh_and_logical_axis_rules_cm(rl_cluster_lib.Role.ACTOR):
            train_step, _ = trainer.jit_train_and_eval_step(False, cache_nnx_graph=True)
            inputs = sharding_utils.shard_input(trainer._prepare_inputs(train_example),
                                                trainer.config.data_sharding_axis)
            saved = [_snapshot(nnx.state(trainer.model)), _snapshot(nnx.state(trainer.optimizer))]
            loss, _, _ = train_step(inputs)
            jax.block_until_ready(loss)
            nnx.update(trainer.model, _restored(saved[0]))
            nnx.update(trainer.optimizer, _restored(saved[1]))
        after = [leaf for leaf in jax.tree.leaves(nnx.state(trainer.model)) if isinstance(leaf, jax.Array)]
        if not all(np.array_equal(np.asarray(leaf), copy) for leaf, (copy, _) in
                   zip(after, [item for item in saved[0][0] if item is not None], strict=True)):
            raise RuntimeError("the warm-up step's parameters were not restored")
    finally:
        warming["now"] = False
        learner._rollout_keys = keys
        learner._rollout_micro_batch_size, learner._compute_logps_micro_batch_size = saved_sizes


def _snapshot(state: Any) -> tuple[list[Any], Any, list[Any]]:
    """Host copies of a state's arrays (with their shardings) and its other leaves: the train step donates
    the optimizer's buffers, so the copies must not share them."""
    import jax

    leaves, treedef = jax.tree.flatten(state)
    copies = [(np.array(leaf), leaf.sharding) if isinstance(leaf, jax.Array) else None for leaf in leaves]
    return copies, treedef, leaves


def _restored(snapshot: tuple[list[Any], Any, list[Any]]) -> Any:
    import jax

    copies, treedef, leaves = snapshot
    values = [leaf if copy is None else jax.device_put(copy[0], copy[1]) for copy, leaf in zip(copies, leaves,
                                                                                                strict=True)]
    return jax.tree.unflatten(treedef, values)
