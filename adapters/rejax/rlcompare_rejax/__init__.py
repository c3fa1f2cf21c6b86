"""rejax 0.1.3 adapter: PPO in pure JAX, environment and learner in one jitted program.

rejax (``rejax/algos/ppo.py``) collects rollouts from gymnax environments vmapped inside the same
compiled program that updates the networks, so three harness rules are kept differently here than
for adapters that step Gymnasium environments:

- **Identical environment.** The workload names a Gymnasium environment; rejax steps its gymnax twin
  (:mod:`rlcompare_rejax.envs`: CartPole-v1, CartPole-v0, Pendulum-v1, Acrobot-v1; anything else is
  refused, naming it). Before training, :func:`rlcompare_rejax.equivalence.check_equivalence` runs
  both side by side from the same states under the same actions; a run whose check fails stops with
  the differences, and the verdict is recorded in the run's native configuration.
- **Counting.** The gymnax environment is wrapped in :class:`~rlcompare_rejax.envs.CountedEnv`,
  whose state carries per-environment step and episode counts incremented inside the jitted
  ``step`` (no host callback). After each segment the counts are read back
  (``ts.env_state.steps``), checked against rejax's own ``ts.global_step`` and against the steps
  the segment's iterations imply, and added to the harness's counter slot by slot
  (``context.counter.add``), one iteration's worth at a time with the ``update`` trace of each,
  so the schedule and the evaluation grid see every update at the env-step count it came at.
- **Evaluation and timing.** Training runs in segments of whole iterations up to the first iteration
  boundary at or after each point of the evaluation grid; between segments the actor's parameters
  are handed to the harness as a numpy policy and evaluated on its own Gymnasium environments and
  seeds. rejax's own evaluation (``eval_callback``: 128 stochastic episodes per ``eval_freq``) never
  runs. The programs are compiled ahead of time before ``context.start_training()``: compile time is
  start-up (recorded as ``compile_seconds``), training time is the compiled program's.

XLA's CPU threads are pinned to ``parallelism.threads_per_worker`` through ``PJRT_NPROC`` before JAX
starts (:func:`rlcompare.harness.jax_threads.configure_xla_threads`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rlcompare import hookimpl
from rlcompare.adapter import (
    Adapter,
    Capabilities,
    Fidelity,
    FidelityEntry,
    IncompatibleError,
    ParityOutcome,
    ParityProbe,
    Setting,
    TrainingResult,
    WorkloadLike,
    entry,
    map_settings,
    only_if,
)
from rlcompare_rejax.envs import twin_refusal

if TYPE_CHECKING:
    from rlcompare.adapter import TrainingContext
    from rlcompare.plugins.register import Register

#: Episodes of the equivalence check run before each training run (random actions, each from a
#: Gymnasium reset seeded with the run's seed and the episode's index).
EQUIVALENCE_EPISODES = 3
#: Steps per episode of that check at most (Acrobot's random episodes run to the 500-step limit).
EQUIVALENCE_MAX_STEPS = 200


def _samples_per_update(workload: WorkloadLike) -> int:
    return workload.hyperparameters.rollout_steps * workload.parallelism.total_envs


def _minibatches(workload: WorkloadLike) -> int:
    """rejax splits one rollout of every env into ``num_minibatches`` equal minibatches and asserts
    that they divide it (``OnPolicyMixin.minibatch_size``): the divisor whose minibatch is closest to
    the canonical size (ties: fewer, larger minibatches)."""
    total = _samples_per_update(workload)
    wanted = workload.hyperparameters.minibatch_size
    counts = [n for n in range(1, total + 1) if total % n == 0]
    return min(counts, key=lambda n: (abs(total // n - wanted), n))


def _num_minibatches(_value: int, workload: WorkloadLike) -> int:
    return _minibatches(workload)


def _judge_minibatch(value: int, workload: WorkloadLike) -> tuple[Fidelity, str]:
    count = _minibatches(workload)
    size = _samples_per_update(workload) // count
    if size == value:
        return Fidelity.EXACT, f"num_minibatches={count} minibatches of {size} per pass over one rollout"
    return (Fidelity.APPROXIMATE, f"rejax needs equal minibatches that split one rollout of "
            f"{_samples_per_update(workload)} samples: num_minibatches={count} of {size}")


def _judge_value_coef(_value: float, _workload: WorkloadLike) -> tuple[Fidelity, str]:
    return (Fidelity.APPROXIMATE,
            "vf_coef scales the critic's own loss, 0.5 x vf_coef x max(clipped, unclipped squared error), which "
            "has its own Adam optimizer (PPO.update_critic): the coefficient only scales the critic's gradients, "
            "which Adam's normalization nearly cancels (except through eps and the element-wise clip)")


def _judge_grad_clip(_value: float, _workload: WorkloadLike) -> tuple[Fidelity, str]:
    return (Fidelity.APPROXIMATE,
            "optax.clip(max_grad_norm) before Adam (PPO.initialize_network_params): every gradient element is "
            "clipped to +-max_grad_norm, separately for actor and critic, not the global norm")


PPO_SETTINGS: list[Setting] = [
    Setting("learning_rate", "learning_rate", note="optax.adam, constant"),
    Setting("gamma", "gamma"),
    Setting("gae_lambda", "gae_lambda",
            note="PPO.calculate_gae; gymnax's done ends the recursion for truncated episodes too "
                 "(defaults.truncation_bootstrap)"),
    Setting("clip_range", "clip_eps",
            note="ratio clipped to [1 - clip_eps, 1 + clip_eps]; the same clip_eps also clips the value "
                 "prediction (defaults.value_clipping)"),
    Setting("rollout_steps", "num_steps", note="per environment, as canonical"),
    Setting("minibatch_size", "num_minibatches", convert=_num_minibatches, judge=_judge_minibatch),
    Setting("epochs", "num_epochs"),
    Setting("entropy_coef", "ent_coef", note="subtracted from the actor's loss times the mean entropy"),
    Setting("value_coef", "vf_coef", judge=_judge_value_coef),
    Setting("max_grad_norm", "max_grad_norm", judge=_judge_grad_clip),
    Setting("normalize_advantage", None,
            judge=only_if(True, "rejax's PPO always normalizes advantages per minibatch, (A - mean) / (std + 1e-8)"),
            note="always on in rejax, per minibatch"),
]

#: rejax settings fixed by the adapter (its defaults differ from canonical PPO, or would add work
#: outside the harness's view).
PPO_FIXED: dict[str, Any] = {
    "normalize_observations": False,
    "normalize_rewards": False,
    "skip_initial_evaluation": True,
}

#: How rejax's PPO update departs from the canonical one (rejax/algos/ppo.py at 0.1.3).
PPO_DEPARTURES = (
    entry("defaults.value_clipping", "off", Fidelity.APPROXIMATE, "clip_eps", "max(clipped, unclipped)",
          "PPO.update_critic: the value loss is the max of the squared errors of the prediction and of the "
          "prediction clipped to the stored value +- clip_eps"),
    entry("defaults.value_loss_scale", 1.0, Fidelity.APPROXIMATE, "vf_coef", 0.5,
          "PPO.update_critic: 0.5 * max(...).mean(), times vf_coef"),
    entry("defaults.advantage_std", "unbiased", Fidelity.APPROXIMATE, "PPO.update_actor", "biased",
          "advantages normalized with jnp.std (ddof 0)"),
    entry("defaults.adam_eps", 1e-5, Fidelity.APPROXIMATE, "optax.adam", 1e-8, "optax's default eps"),
    entry("defaults.truncation_bootstrap", True, Fidelity.APPROXIMATE, "gymnax done", False,
          "gymnax reports a time-limit truncation as done, and rejax's GAE cuts the return there without "
          "bootstrapping"),
    entry("defaults.grad_clip_scope", "joint", Fidelity.APPROXIMATE, "optax.clip", "per element",
          "optax.clip(max_grad_norm): each gradient element clipped to +-max_grad_norm (actor and critic in their "
          "own optimizers), not the global norm"),
)


class RejaxAdapter(Adapter):
    id = "rejax"
    framework = "rejax"
    summary = "rejax: PPO in pure JAX, gymnax environments and learner in one jitted program (CPU)"
    import_name = "rejax"
    distributions = ("rejax", "jax", "jaxlib", "flax", "optax", "distrax", "gymnax", "gymnasium", "numpy")
    install_requires = ("rejax==0.1.3", "gymnax==0.0.9", "jax[cpu]==0.5.3")
    #: rejax 0.1.3 needs gymnax 0.0.9 (gymnax 1.0's step returns six values, rejax unpacks five; 0.0.8
    #: breaks on jax>=0.6) and jax<0.7 (distrax 0.1.5 stops importing); the CPU build of jax only.
    environment_requires = (
        "rejax==0.1.3", "gymnax==0.0.9", "jax==0.5.3", "jaxlib==0.5.3", "flax==0.10.6", "distrax==0.1.5",
        "optax==0.2.4", "chex==0.1.89", "gymnasium==1.2.2", "numpy==2.4.6",
    )
    requires_isolation = True

    def capabilities(self) -> Capabilities:
        return Capabilities(
            algorithms=frozenset({"PPO"}),
            action_spaces=frozenset({"discrete", "continuous"}),
            vectorized_envs=True,
            rollout_workers=False,
            modes=frozenset({"sync"}),
            seeds_in_one_program=True,
        )

    def check_compatible(self, workload: WorkloadLike, action_space: str | None) -> None:
        """Also refuse an environment gymnax does not implement (rejax can step nothing else)."""
        super().check_compatible(workload, action_space)
        refusal = twin_refusal(workload.env, dict(workload.env_kwargs))
        if refusal is not None:
            raise IncompatibleError(f"adapter {self.id!r} cannot run workload {workload.id!r}: {refusal}")

    # -- translation -------------------------------------------------------------------------------

    def native_config(self, workload: WorkloadLike) -> tuple[dict[str, Any], list[FidelityEntry]]:
        kwargs, entries = map_settings(workload, PPO_SETTINGS)
        net, par = workload.network, workload.parallelism
        kwargs["agent_kwargs"] = {"hidden_layer_sizes": list(net.hidden_sizes), "activation": net.activation}
        kwargs["num_envs"] = par.total_envs
        kwargs["total_timesteps"] = workload.env_steps
        kwargs["eval_freq"] = _samples_per_update(workload)
        kwargs.update(PPO_FIXED)
        entries += [
            entry("network.hidden_sizes", list(net.hidden_sizes), Fidelity.EXACT, "agent_kwargs.hidden_layer_sizes",
                  list(net.hidden_sizes),
                  "separate actor (DiscretePolicy, or GaussianPolicy with a state-independent log-std from 0) and "
                  "critic (VNetwork) MLPs; flax's default initialisation (LeCun normal weights, zero biases), not "
                  "orthogonal"),
            entry("network.activation", net.activation, Fidelity.EXACT, "agent_kwargs.activation",
                  f"flax.linen.{net.activation}"),
            entry("parallelism.envs_per_worker", par.envs_per_worker, Fidelity.EXACT, "num_envs", par.total_envs,
                  "gymnax environments vmapped inside the jitted program (VectorizedEnvMixin.vmap_step)"),
            entry("parallelism.workers", par.workers, Fidelity.EXACT, "num_envs", 1,
                  "one jitted program in the training process"),
        ]
        if par.seeds_per_program > 1:
            entries.append(entry(
                "parallelism.seeds_per_program", par.seeds_per_program, Fidelity.EXACT, "jax.vmap",
                par.seeds_per_program, "the train state vmapped over the seeds' keys (init_state and "
                "train_iteration under jax.vmap, as rejax trains many seeds at once): one compiled program"))
        entries.extend(PPO_DEPARTURES)
        return kwargs, entries

    def fidelity(self, workload: WorkloadLike) -> list[FidelityEntry]:
        return self.native_config(workload)[1]

    # -- training ----------------------------------------------------------------------------------

    def train(self, workload: WorkloadLike, context: TrainingContext) -> TrainingResult:
        return self._train_program(workload, [context], batched=False)[0]

    def train_seeds(self, workload: WorkloadLike, contexts: Sequence[TrainingContext]) -> list[TrainingResult]:
        """Every context's seed in one program: the train state vmapped over the seeds, one compiled
        program stepping all of them segment by segment; each seed's counts, curve and policy its own."""
        return self._train_program(workload, list(contexts), batched=True)

    def _train_program(self, workload: WorkloadLike, contexts: list[TrainingContext],
                       batched: bool) -> list[TrainingResult]:
        refusal = twin_refusal(workload.env, dict(workload.env_kwargs))
        if refusal is not None:
            raise IncompatibleError(f"adapter {self.id!r} cannot run workload {workload.id!r}: {refusal}")
        from rlcompare.harness.jax_threads import configure_xla_threads, jax_backend_started

        threads = workload.parallelism.threads_per_worker
        started_before = jax_backend_started()
        xla_flags = None if started_before else configure_xla_threads(threads)

        from rlcompare_rejax.equivalence import check_equivalence
        from rlcompare_rejax.run import RejaxRun, SeedView

        checked = time.perf_counter()
        verdict = check_equivalence(workload.env, episodes=EQUIVALENCE_EPISODES, seed=contexts[0].seed,
                                    max_steps=EQUIVALENCE_MAX_STEPS)
        checked = time.perf_counter() - checked
        if not verdict.passed:
            raise RuntimeError(f"the gymnax environment is not the workload's: {verdict.summary()}")
        config, _ = self.native_config(workload)
        seeds = [context.seed for context in contexts]
        run = RejaxRun(workload.algorithm, workload.env, config, seeds if batched else seeds[0],
                       pad_batch=workload.evaluation.episodes)
        native = {**config, "equivalence": verdict.to_dict(), "compile_seconds": round(run.compile_seconds, 3),
                  "equivalence_seconds": round(checked, 3),
                  "xla_flags": xla_flags, "xla_threads_pinned": not started_before,
                  "steps_per_iteration": run.steps_per_iteration, "seeds_in_program": len(seeds)}
        if batched:
            native["program_seeds"] = seeds
        views = [SeedView(run, index) for index in range(len(seeds))] if batched else [run]
        trainings = [SegmentedTraining(view, context, workload) for view, context in zip(views, contexts, strict=True)]
        for context in contexts:
            context.start_training()
        try:
            if batched:
                SegmentedTraining.run_together(run, trainings)
            else:
                with contexts[0].until_solved():
                    trainings[0].run()
        finally:
            for context in contexts:
                context.stop_training()
        return [TrainingResult(policy=view.policy_fn(context.deterministic, context.seed),
                               framework_env_steps=view.framework_steps, native_config={**native, **training.record()})
                for view, context, training in zip(views, contexts, trainings, strict=True)]

    # -- parity ------------------------------------------------------------------------------------

    def parity_update(self, probe: ParityProbe) -> ParityOutcome:
        """rejax's own PPO target computation and update on the probe (:mod:`rlcompare_rejax.parity`)."""
        if probe.family != "PPO":
            return ParityOutcome.unverifiable(f"the rejax adapter offers no {probe.family}")
        from rlcompare_rejax.parity import ppo_update

        return ppo_update(self, probe)


class SegmentedTraining:
    """Training in segments that end at the evaluation grid, with the counts handed to the harness.

    Each segment runs whole iterations (one rollout of every env and its update) up to the first
    iteration boundary at or after the next grid point, or the budget. After it, the counts carried in
    the jitted state are read back and checked: per env, exactly ``num_steps`` per iteration run; in
    total, rejax's ``ts.global_step``. They are then added to the harness's counter one iteration at a
    time, each followed by the iteration's traces (``gradient_step`` per minibatch update, then
    ``update``), so the harness places evaluations and schedules as it would for a loop it watched.
    """

    def __init__(self, run: Any, context: TrainingContext, workload: WorkloadLike) -> None:
        import numpy as np

        self.run_ = run
        self.context = context
        self.workload = workload
        self.segments = 0
        self.steps_reported = np.zeros(run.algo.num_envs, dtype=np.int64)
        self.episodes_reported = np.zeros(run.algo.num_envs, dtype=np.int64)

    def run(self) -> None:
        self.run_together(self.run_, [self])

    @staticmethod
    def run_together(program: Any, trainings: list[SegmentedTraining]) -> None:
        """Run ``program`` (one run, or the seeds of one vmapped program) segment by segment; after each
        segment every seed's counts go to its own context, which evaluates its own policy. The seeds share
        the workload, so their segments end at the same grid points."""
        from rlcompare_rejax.run import iterations_to

        for training in trainings:
            context, run = training.context, training.run_
            context.checkpoint(run.policy_fn(context.deterministic, context.seed), 0)
        workload = trainings[0].workload
        interval = workload.evaluation.interval_steps
        while not all(training.context.budget_reached for training in trainings):
            done = program.iterations * program.steps_per_iteration
            target = min((done // interval + 1) * interval, workload.env_steps)
            iterations = iterations_to(target, done, program.steps_per_iteration)
            program.run_iterations(iterations)
            for training in trainings:
                context, run = training.context, training.run_
                training.segments += 1
                training._report(iterations)
                context.checkpoint(run.policy_fn(context.deterministic, context.seed), run.framework_steps)

    def _report(self, iterations: int) -> None:
        import numpy as np

        run, context = self.run_, self.context
        steps, episodes = run.counts()
        new_steps = steps - self.steps_reported
        expected = iterations * run.algo.num_steps
        if not np.all(new_steps == expected) or int(steps.sum()) != run.framework_steps:
            raise RuntimeError(f"step counts disagree after {iterations} iterations: the counted envs stepped "
                               f"{new_steps.tolist()} (expected {expected} each), {int(steps.sum())} in all, rejax's "
                               f"global_step is {run.framework_steps}")
        per_iteration = run.algo.num_steps
        for _ in range(iterations):
            for slot in range(len(steps)):
                context.counter.add(slot, per_iteration, 0)
            for _ in range(run.gradient_steps_per_iteration):
                context.trace("gradient_step")
            context.trace("update")
        for slot, count in enumerate(episodes - self.episodes_reported):
            context.counter.add(slot, 0, int(count))
        self.steps_reported, self.episodes_reported = steps, episodes

    def record(self) -> dict[str, Any]:
        """What the native configuration records about the counting."""
        return {"segments": self.segments, "iterations": self.run_.iterations,
                "counted_steps": int(self.steps_reported.sum()), "counted_episodes": int(self.episodes_reported.sum()),
                "global_step": self.run_.framework_steps}


@hookimpl
def rlcompare_register_adapters(register: Register) -> None:
    register.add_adapter(RejaxAdapter)
