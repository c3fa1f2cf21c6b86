"""Ray RLlib adapter (new API stack): PPO (sync) / APPO (async), DQN and SAC.

Parallelism maps to RLlib's own mechanism: ``workers == 1`` samples in the training process
(``num_env_runners=0``); ``workers > 1`` starts that many remote env runners (Ray actors), each
stepping ``envs_per_worker`` environments as a gymnasium vector env. ``mode = "async"`` with PPO
runs APPO, RLlib's asynchronous PPO (V-trace corrected), and is reported as approximate.

Ray is started inside the run's own process on 127.0.0.1 without dashboard, with as many CPUs as
the run asks for (one per env runner plus one for the learner), and shut down after training.
RLlib has no A2C on its new API stack: the capabilities say so and such a pair is refused.

Parity probes (:mod:`rlcompare_rllib.parity`, ``parity_dqn``, ``parity_sac``) build a local
Learner from :meth:`RLlibAdapter.build_config` without starting Ray. The schedule is traced from
the training process (:func:`trace_schedule`): the Learner is local (``num_learners=0``), so its
optimizer steps, updates and target syncs are wrapped where they happen; DQN's epsilon is wrapped in
the local env runner, or read from the first remote one after every ``train()`` call.
"""

from __future__ import annotations

import itertools
import os
from typing import TYPE_CHECKING, Any

from rlcompare import hookimpl
from rlcompare.adapter import (
    Adapter,
    Capabilities,
    Fidelity,
    FidelityEntry,
    IncompatibleError,
    NativeSetting,
    ParityOutcome,
    ParityProbe,
    Recommendation,
    Setting,
    TrainingResult,
    WorkloadLike,
    entry,
    map_settings,
    only_if,
    start_private_ray,
)
from rlcompare.adapter import apply_native_settings as apply_native

if TYPE_CHECKING:
    from rlcompare.adapter import TrainingContext
    from rlcompare.plugins.register import Register

#: Env steps sampled per ``Algorithm.train()`` call, at least (off-policy algorithms).
ITERATION_ENV_STEPS = 500

#: Env slots per env runner in the harness's counter (worker index x this + local index).
SLOTS_PER_RUNNER = 32


def _total_envs(workload: WorkloadLike) -> int:
    return workload.parallelism.total_envs


def _fragment(value: int, workload: WorkloadLike) -> int:
    # One training step samples rollout_fragment_length steps from every env, then updates.
    return max(1, value // _total_envs(workload))


def _fragment_exact(value: int, workload: WorkloadLike) -> tuple[Fidelity, str]:
    envs = _total_envs(workload)
    if value % envs == 0:
        return Fidelity.EXACT, f"rollout_fragment_length x {envs} envs"
    return Fidelity.APPROXIMATE, f"rounded to a multiple of {envs} envs"


def _train_batch(value: int, workload: WorkloadLike) -> int:
    return value * _total_envs(workload)


_ACTION_KINDS: dict[str, bool] = {}


def _continuous_actions(workload: WorkloadLike) -> bool:
    """Whether the workload's env has a continuous (Box) action space (remembered per env)."""
    import json

    key = json.dumps([workload.env, dict(workload.env_kwargs)], sort_keys=True, default=str)
    if key not in _ACTION_KINDS:
        from rlcompare.adapter import make_env

        env = make_env(workload.env, dict(workload.env_kwargs))
        try:
            _ACTION_KINDS[key] = not hasattr(env.action_space, "n")  # Discrete has n, Box has not
        finally:
            env.close()
    return _ACTION_KINDS[key]


def _epsilon_schedule(_: Any, workload: WorkloadLike) -> list[tuple[int, float]]:
    hp = workload.hyperparameters
    decay_steps = max(1, int(hp.exploration_fraction * workload.env_steps))
    return [(0, hp.exploration_initial_eps), (decay_steps, hp.exploration_final_eps)]


#: How RLlib's PPO update departs from the canonical one, as its parity probe measured them
#: (``rlcompare parity --adapters rllib``; ray/rllib/connectors/learner/general_advantage_estimation.py).
PPO_DEPARTURES = (
    entry("defaults.adam_eps", 1e-5, Fidelity.APPROXIMATE, "torch.optim.Adam(eps)", 1e-8,
          "RLlib's Learner builds Adam with torch's default epsilon"),
    entry("defaults.advantage_normalization", "per minibatch", Fidelity.APPROXIMATE, "GeneralAdvantageEstimation",
          "per batch, with bootstrap rows", "standardized over the whole train batch, one artificial bootstrap row "
          "per episode chunk among them (AddOneTsToEpisodesAndTruncate), biased std, max(std, 1e-4)"),
)


def _standardized_per_batch(value: bool, _: WorkloadLike) -> tuple[Fidelity, str]:
    if value:
        return Fidelity.APPROXIMATE, ("RLlib standardizes advantages over the whole train batch, not per minibatch, "
                                      "with one artificial bootstrap row per episode chunk among them, the biased std "
                                      "and max(std, 1e-4) (GeneralAdvantageEstimation)")
    return Fidelity.UNSUPPORTED, "RLlib always standardizes advantages"


def _minibatch_rows(_: int, __: WorkloadLike) -> tuple[Fidelity, str]:
    # AddOneTsToEpisodesAndTruncate appends one row per episode chunk to the train batch (masked
    # out of the loss); MiniBatchCyclicIterator counts those rows, so an epoch takes more steps
    return Fidelity.APPROXIMATE, ("RLlib's minibatches count one artificial bootstrap row per episode chunk (out of "
                                  "the loss): fewer transitions per minibatch, more minibatch steps per epoch")


def _epsilon_per_iteration(_: float, workload: WorkloadLike) -> tuple[Fidelity, str]:
    # SingleAgentEnvRunner._sample passes forward_exploration t = (lifetime count // runners + steps
    # of this sample() call) x runners, and the lifetime count is synced to the env runners once
    # per train() call (Algorithm.step -> sync_env_runner_states): within an iteration epsilon only
    # sees the current fragment's steps
    iteration = min(ITERATION_ENV_STEPS, workload.evaluation.interval_steps)
    return Fidelity.APPROXIMATE, ("linear schedule [(0, initial), (fraction x budget, final)]; RLlib's env runners "
                                  "advance its timestep once per train() iteration (at least "
                                  f"{iteration} env steps) plus the current fragment's steps")


_PPO = [
    Setting("learning_rate", "lr"),
    Setting("gamma", "gamma"),
    Setting("gae_lambda", "lambda_"),
    Setting("clip_range", "clip_param"),
    Setting("rollout_steps", "rollout_fragment_length", note="per environment, as canonical"),
    Setting("minibatch_size", "minibatch_size", judge=_minibatch_rows),
    Setting("epochs", "num_epochs"),
    Setting("entropy_coef", "entropy_coeff"),
    Setting("value_coef", "vf_loss_coeff"),
    Setting("max_grad_norm", "grad_clip", note="grad_clip_by='global_norm'"),
    Setting("normalize_advantage", None, judge=_standardized_per_batch),
]

SETTINGS: dict[str, list[Setting]] = {
    "PPO": _PPO,
    "DQN": [
        Setting("learning_rate", "lr"),
        Setting("gamma", "gamma"),
        Setting("buffer_size", "replay_buffer_config.capacity", note="EpisodeReplayBuffer, uniform sampling"),
        Setting("learning_starts", "num_steps_sampled_before_learning_starts"),
        Setting("minibatch_size", "train_batch_size_per_learner"),
        Setting("train_every", "rollout_fragment_length", convert=_fragment, judge=_fragment_exact),
        Setting("gradient_steps", "training_intensity",
                convert=lambda value, w: value * w.hyperparameters.minibatch_size / w.hyperparameters.train_every,
                note="updates per sampling step = training_intensity x sampled / batch size"),
        Setting("target_update_interval", "target_network_update_freq", note="sampled env steps, as canonical"),
        Setting("exploration_initial_eps", "epsilon", convert=_epsilon_schedule),
        Setting("exploration_final_eps", "epsilon", convert=_epsilon_schedule),
        Setting("exploration_fraction", "epsilon", convert=_epsilon_schedule, judge=_epsilon_per_iteration),
        Setting("max_grad_norm", "grad_clip", note="grad_clip_by='global_norm'"),
        Setting("double_q", "double_q"),
    ],
    "SAC": [
        Setting("learning_rate", "actor_lr/critic_lr/alpha_lr", note="the same rate for actor, critics and alpha"),
        Setting("gamma", "gamma"),
        Setting("buffer_size", "replay_buffer_config.capacity", note="EpisodeReplayBuffer, uniform sampling"),
        Setting("learning_starts", "num_steps_sampled_before_learning_starts"),
        Setting("minibatch_size", "train_batch_size_per_learner"),
        Setting("tau", "tau"),
        Setting("train_every", "rollout_fragment_length", convert=_fragment, judge=_fragment_exact),
        Setting("gradient_steps", "training_intensity",
                convert=lambda value, w: value * w.hyperparameters.minibatch_size / w.hyperparameters.train_every),
        Setting("entropy_coef", "target_entropy", judge=only_if("auto", "RLlib's SAC always tunes alpha"),
                convert=lambda value, _: "auto", note="automatic alpha, target entropy -dim(A)"),
    ],
}


#: Parity probe per family: ``module:function`` taking (adapter, probe).
PARITY_UPDATES = {"PPO": "rlcompare_rllib.parity:ppo_update", "DQN": "rlcompare_rllib.parity_dqn:dqn_update",
                  "SAC": "rlcompare_rllib.parity_sac:sac_update"}


class EnvCreator:
    """RLlib env creator handing out the harness's counted environments, one slot per instance."""

    def __init__(self, env_id: str, env_kwargs: dict[str, Any], counter_path: str) -> None:
        self.env_id, self.env_kwargs, self.counter_path = env_id, env_kwargs, counter_path
        self._local_index = itertools.count()

    def __getstate__(self) -> dict[str, Any]:
        return {"env_id": self.env_id, "env_kwargs": self.env_kwargs, "counter_path": self.counter_path}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state)  # type: ignore[misc]

    def __call__(self, env_config: Any) -> Any:
        from rlcompare.adapter import EnvFactory

        worker_index = int(getattr(env_config, "worker_index", 0))
        local = next(self._local_index)
        if local >= SLOTS_PER_RUNNER:
            raise RuntimeError(f"more than {SLOTS_PER_RUNNER} environments in one env runner")
        return EnvFactory(self.env_id, self.env_kwargs, self.counter_path,
                          worker_index * SLOTS_PER_RUNNER + local)()


class RLlibAdapter(Adapter):
    id = "rllib"
    framework = "rllib"
    summary = "Ray RLlib (new API stack): PPO/APPO, DQN, SAC; env runners as Ray actors"
    import_name = "ray.rllib"
    distributions = ("ray", "torch")
    install_requires = ("ray[rllib]", "torch")

    def capabilities(self) -> Capabilities:
        return Capabilities(
            algorithms=frozenset(SETTINGS),
            action_spaces=frozenset({"discrete", "continuous"}),
            vectorized_envs=True,
            rollout_workers=True,
            modes=frozenset({"sync", "async"}),
            max_workers=512 // SLOTS_PER_RUNNER - 1,
            algorithm_action_spaces={"DQN": frozenset({"discrete"})},
        )

    def check_compatible(self, workload: WorkloadLike, action_space: str | None) -> None:
        super().check_compatible(workload, action_space)
        if workload.parallelism.mode == "async" and workload.algorithm != "PPO":
            raise IncompatibleError(f"adapter {self.id!r} cannot run workload {workload.id!r}: "
                                    "asynchronous sampling is offered for PPO (as APPO) only")

    # -- translation -------------------------------------------------------------------------------

    def algorithm_name(self, workload: WorkloadLike) -> str:
        return "APPO" if workload.algorithm == "PPO" and workload.parallelism.mode == "async" else workload.algorithm

    def native_config(self, workload: WorkloadLike) -> tuple[dict[str, Any], list[FidelityEntry]]:
        kwargs, entries = map_settings(workload, SETTINGS[workload.algorithm])
        net = workload.network
        model = {"fcnet_hiddens": list(net.hidden_sizes), "fcnet_activation": net.activation,
                 "vf_share_layers": False, "head_fcnet_hiddens": []}
        note = "separate value network"
        if workload.algorithm == "PPO" and _continuous_actions(workload):
            # canonical PPO's Gaussian has one free log-std per action dimension (initially 0);
            # RLlib's default head computes it from the observation (free_log_std=False)
            model["free_log_std"] = True
            note += "; state-independent log-std (free_log_std)"
        kwargs["model_config"] = model
        status = Fidelity.EXACT
        if not net.hidden_sizes:
            # a linear policy: RLlib's MLP encoder takes its output size from the last hidden layer
            # (Catalog: fcnet_hiddens[-1]) and always has one; its default layers run instead
            del model["fcnet_hiddens"]
            status = Fidelity.UNSUPPORTED
            note = "RLlib's MLP encoder needs at least one hidden layer: no linear policy (its default layers run)"
        elif workload.algorithm == "SAC" and _continuous_actions(workload):
            # SACCatalog._build_qf_encoder_continuous: a TorchMultiStreamEncoder, not one MLP
            status = Fidelity.APPROXIMATE
            note = ("critics: observation and action through separate MLPs of these sizes, fused by RLlib's "
                    "fusion network (fusionnet_hiddens [256, 256], tanh) before the Q head")
        entries.append(entry("network.hidden_sizes", list(net.hidden_sizes), status,
                             "model_config.fcnet_hiddens", model.get("fcnet_hiddens"), note))
        entries.append(entry("network.activation", net.activation, Fidelity.EXACT,
                             "model_config.fcnet_activation", net.activation))
        par = workload.parallelism
        runners = 0 if par.workers == 1 else par.workers
        kwargs["num_env_runners"] = runners
        kwargs["num_envs_per_env_runner"] = par.envs_per_worker
        entries.append(entry("parallelism.workers", par.workers, Fidelity.EXACT, "num_env_runners", runners,
                             "0: the training process samples" if runners == 0 else "remote Ray actors"))
        entries.append(entry("parallelism.envs_per_worker", par.envs_per_worker, Fidelity.EXACT,
                             "num_envs_per_env_runner", par.envs_per_worker, "gymnasium sync vector env"))
        algorithm = self.algorithm_name(workload)
        entries.append(entry("parallelism.mode", par.mode,
                             Fidelity.EXACT if algorithm == workload.algorithm else Fidelity.APPROXIMATE,
                             "algorithm", algorithm,
                             "APPO: asynchronous PPO with V-trace" if algorithm == "APPO" else ""))
        if workload.algorithm == "PPO":
            kwargs["train_batch_size_per_learner"] = _train_batch(workload.hyperparameters.rollout_steps, workload)
        return kwargs, apply_native_settings(workload, kwargs, entries)

    def recommended_settings(self, env: str, algorithm: str) -> Recommendation | None:
        """RLlib's own tuned example for the family and environment (:mod:`rlcompare_rllib.examples`)."""
        from rlcompare_rllib.examples import recommendation

        return recommendation(env, algorithm)

    def fidelity(self, workload: WorkloadLike) -> list[FidelityEntry]:
        entries = self.native_config(workload)[1]
        return [*entries, *PPO_DEPARTURES] if workload.algorithm == "PPO" else entries

    # budget_tolerance: the family's (the default). The budget is checked between train() calls; a
    # PPO call is one training step (one rollout of every env), and an off-policy call of several
    # training steps shrinks to one (one update interval of every env) once the budget is near
    # (iteration_env_steps, last_iterations).

    def build_config(self, workload: WorkloadLike, seed: int, env: str) -> Any:
        """The RLlib AlgorithmConfig for ``workload`` (imports RLlib)."""
        from ray.rllib.algorithms.appo import APPOConfig
        from ray.rllib.algorithms.dqn import DQNConfig
        from ray.rllib.algorithms.ppo import PPOConfig
        from ray.rllib.algorithms.sac import SACConfig
        from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

        configs = {"PPO": PPOConfig, "APPO": APPOConfig, "DQN": DQNConfig, "SAC": SACConfig}

        kwargs, _ = self.native_config(workload)
        hp = workload.hyperparameters
        fragment = kwargs.get("rollout_fragment_length", "auto")
        n_step = kwargs.get("native_training", {}).get("n_step")
        if isinstance(n_step, list) and fragment != "auto":
            # a range of n (the native arm): DQNConfig.validate compares the fragment with n_step, which
            # fails on a tuple; "auto" is n_step's upper end (DQNConfig.get_rollout_fragment_length)
            if fragment != n_step[1]:
                raise IncompatibleError(f"adapter {self.id!r} cannot run workload {workload.id!r}: RLlib takes a "
                                        f"range n_step={tuple(n_step)} only with rollout_fragment_length 'auto' "
                                        f"({n_step[1]} steps of each env), not {fragment}")
            fragment = "auto"
        config = configs[self.algorithm_name(workload)]()
        config = (
            config.environment(env=env)
            .framework("torch")
            .env_runners(
                num_env_runners=kwargs["num_env_runners"],
                num_envs_per_env_runner=kwargs["num_envs_per_env_runner"],
                num_cpus_per_env_runner=1,
                rollout_fragment_length=fragment,
            )
            .learners(num_learners=0)
            .rl_module(model_config=DefaultModelConfig(**kwargs["model_config"]))
            .debugging(seed=seed, log_level="ERROR")
            # One train() call runs training steps until this many env steps were sampled: RLlib's
            # per-iteration bookkeeping is heavy, so off-policy steps of one env step each would be
            # dominated by it; the harness still evaluates at most this many steps late.
            .reporting(min_time_s_per_iteration=0, min_train_timesteps_per_iteration=0,
                       min_sample_timesteps_per_iteration=iteration_env_steps(workload))
        )
        common = {"gamma": hp.gamma, "grad_clip": getattr(hp, "max_grad_norm", None), "grad_clip_by": "global_norm"}
        if workload.algorithm == "PPO":
            training = {
                "lr": hp.learning_rate, "lambda_": hp.gae_lambda, "clip_param": hp.clip_range,
                "train_batch_size_per_learner": kwargs["train_batch_size_per_learner"],
                "minibatch_size": hp.minibatch_size, "num_epochs": hp.epochs,
                "entropy_coeff": hp.entropy_coef, "vf_loss_coeff": hp.value_coef,
                "use_kl_loss": False,  # canonical PPO: clipped objective only
            }
            if self.algorithm_name(workload) == "PPO":
                training["vf_clip_param"] = float("inf")  # canonical PPO has no value clipping
        elif workload.algorithm == "DQN":
            training = {
                "lr": hp.learning_rate,
                "replay_buffer_config": {"type": "EpisodeReplayBuffer", "capacity": hp.buffer_size},
                "num_steps_sampled_before_learning_starts": hp.learning_starts,
                "train_batch_size_per_learner": hp.minibatch_size,
                "target_network_update_freq": hp.target_update_interval,
                "epsilon": kwargs["epsilon"], "double_q": hp.double_q, "dueling": False, "n_step": 1,
                "training_intensity": kwargs["training_intensity"] if hp.gradient_steps != 1 else None,
            }
        else:
            common.pop("grad_clip")
            training = {
                "actor_lr": hp.learning_rate, "critic_lr": hp.learning_rate, "alpha_lr": hp.learning_rate,
                "replay_buffer_config": {"type": "EpisodeReplayBuffer", "capacity": hp.buffer_size},
                "num_steps_sampled_before_learning_starts": hp.learning_starts,
                "train_batch_size_per_learner": hp.minibatch_size, "tau": hp.tau, "twin_q": True,
                "target_entropy": "auto", "n_step": 1,
                "training_intensity": kwargs["training_intensity"] if hp.gradient_steps != 1 else None,
            }
        native = kwargs.get("native_training", {})
        if "replay_buffer_config" in native:  # prioritized replay: RLlib's prioritized episode buffer
            training["replay_buffer_config"] = {"type": "PrioritizedEpisodeReplayBuffer", "capacity": hp.buffer_size,
                                                **native["replay_buffer_config"]}
        if "grad_clip" in native:  # a common setting, not a training one
            common["grad_clip"] = native["grad_clip"]
        # the rest over the canonical ones (SAC's actor_lr and alpha_lr: the canonical learning_rate stays the
        # critics'); a range n_step must be a tuple, RLlib's sign that n is drawn per row
        training.update({key: tuple(value) if key == "n_step" else value for key, value in native.items()
                         if key not in ("replay_buffer_config", "grad_clip")})
        return config.training(**common, **training)

    # -- training ----------------------------------------------------------------------------------

    def train(self, workload: WorkloadLike, context: TrainingContext) -> TrainingResult:
        import ray
        from ray.tune.registry import register_env

        start_ray(workload)
        try:
            env_name = f"rlcompare-{os.getpid()}"
            creator = EnvCreator(workload.env, dict(workload.env_kwargs), str(context.counter.path))
            register_env(env_name, creator)
            config = self.build_config(workload, context.seed, env_name)
            algorithm = config.build_algo()
            policy = _module_policy(algorithm.get_module(), context.deterministic, config.normalize_actions)
            remote_epsilon = trace_schedule(algorithm, context)
            framework_steps = 0
            context.start_training()
            with context.until_solved():  # a stop_when_solved workload ends at its solving evaluation
                context.checkpoint(policy, 0)  # the untrained policy: grid point 0, before any update, as for all
                while framework_steps < workload.env_steps:
                    last_iterations(algorithm, workload, framework_steps)
                    result = algorithm.train()
                    framework_steps = int(result["env_runners"]["num_env_steps_sampled_lifetime"])
                    epsilon = remote_epsilon() if remote_epsilon is not None else None
                    if epsilon is not None:
                        context.trace("exploration", epsilon)
                    context.checkpoint(policy, framework_steps)
            context.stop_training()
            full = {key: value for key, value in config.to_dict().items() if _is_plain(value)}
            native = {"algorithm": self.algorithm_name(workload), **self.native_config(workload)[0],
                      "rllib_config": full}
            algorithm.stop()
        finally:
            ray.shutdown()
        return TrainingResult(policy=policy, framework_env_steps=framework_steps, native_config=native)

    def parity_update(self, probe: ParityProbe) -> ParityOutcome:
        """RLlib's own learner connectors and ``Learner.update`` on the probe, on a local Learner
        built from :meth:`build_config` without a Ray cluster (one module per family,
        :mod:`rlcompare_rllib.parity`)."""
        import importlib

        module, _, function = PARITY_UPDATES.get(probe.family, ":").partition(":")
        try:
            update = getattr(importlib.import_module(module), function) if module else None
        except ModuleNotFoundError as error:
            if error.name != module:
                raise  # a missing dependency of the probe, not a missing probe
            update = None
        if update is None:
            return ParityOutcome.unverifiable(f"no {probe.family} probe is implemented for RLlib")
        return update(self, probe)


def apply_native_settings(workload: WorkloadLike, kwargs: dict[str, Any],
                          entries: list[FidelityEntry]) -> list[FidelityEntry]:
    """The native arm's settings (``workload.native``, from :meth:`RLlibAdapter.recommended_settings`) into
    the adapter's config: ``training.<key>`` into ``kwargs["native_training"]`` (given to
    ``AlgorithmConfig.training`` over the canonical ones), ``model_config.<key>`` into the model config;
    each with a fidelity entry (:func:`rlcompare.harness.fidelity.apply_native_settings`)."""
    from rlcompare_rllib.examples import NATIVE_SETTINGS

    def put(setting: NativeSetting, key: str, value: Any) -> None:
        part, name = setting.target.split(".", 1)
        if part == "model_config":
            model = kwargs["model_config"]
            if key == "head_kernel_initializer":  # [function name, its keyword arguments]
                model[name], model[f"{name}_kwargs"] = value[0], dict(value[1])
                return
            model[name] = value
            if key == "bias_initializer":
                model["head_fcnet_bias_initializer"] = value
        else:
            kwargs.setdefault("native_training", {})[name] = value

    return apply_native(workload, entries, lambda key, _value: NATIVE_SETTINGS.get(key), put, "RLlib")


def iteration_env_steps(workload: WorkloadLike) -> int:
    """Env steps one ``train()`` call samples at least: one training step for PPO (its rollout of every
    env; 0 lets RLlib run exactly one), else :data:`ITERATION_ENV_STEPS` (at most one evaluation
    interval), since RLlib's per-iteration bookkeeping would dominate off-policy steps of a few env
    steps each (:func:`last_iterations` shrinks them near the budget)."""
    if workload.algorithm == "PPO" and workload.parallelism.mode == "sync":
        return 0
    return min(ITERATION_ENV_STEPS, workload.evaluation.interval_steps)


def last_iterations(algorithm: Any, workload: WorkloadLike, framework_steps: int) -> None:
    """Once fewer than one iteration's env steps are left of the budget, ``train()`` calls of one
    update interval (or rollout) of every env, so the run ends within the family's budget grain.
    RLlib freezes the built config; the iteration size is read from it at each call."""
    config = algorithm.config
    grain = workload.rollout_env_steps
    if config.min_sample_timesteps_per_iteration > grain and workload.env_steps - framework_steps < \
            config.min_sample_timesteps_per_iteration:
        config._is_frozen = False  # the one setting RLlib reads afresh at every train()
        config.min_sample_timesteps_per_iteration = grain
        config.freeze()


def start_ray(workload: WorkloadLike) -> None:
    """Start the run's private Ray cluster on loopback (:func:`rlcompare.harness.private_ray.start_private_ray`)
    with one CPU per remote env runner plus one for the learner."""
    workers = workload.parallelism.workers
    start_private_ray((workers if workers > 1 else 0) + 1)


#: Smallest change of DQN's epsilon traced from the local env runner (a linear decay changes it every step).
EPSILON_RESOLUTION = 1e-3


def trace_schedule(algorithm: Any, context: TrainingContext) -> Any:
    """Trace the run's schedule from inside RLlib (:mod:`rlcompare.harness.schedule`) by wrapping
    the objects of the training process; returns, where DQN's exploration runs in remote env
    runners, a function reading their epsilon (traced once per ``train()`` call), else None.

    - ``gradient_step``: the ``step`` of the Learner's main optimizer (PPO's and DQN's only one,
      SAC's critic ``qf``). The Learner is local (``num_learners=0``), in this process.
    - ``update``: each ``Learner.update`` call (PPO: one train batch's epochs; DQN and SAC: one
      replay minibatch), as ``LearnerGroup.update`` makes it.
    - ``target_sync``: each ``get_target_network_pairs()`` call of the Learner's module, which
      ``DQNLearner.after_gradient_based_update`` (SAC's too) makes once per target update, hard
      (``tau=1``) or Polyak.
    - ``exploration``: DQN's epsilon, from the env runner module's ``epsilon_schedule.update(t)``
      (``DefaultDQNTorchRLModule._forward_exploration``) when the training process samples
      (``num_env_runners=0``) and it moved by ``EPSILON_RESOLUTION``; with remote env runners the
      first one's value is read after every ``train()`` call."""
    from ray.rllib.core import DEFAULT_MODULE_ID

    learner = algorithm.learner_group._learner  # the local Learner (None with remote learners)
    if learner is None:
        return None
    optimizers = dict(learner.get_optimizers_for_module(DEFAULT_MODULE_ID))
    main = optimizers.get("qf") or next(iter(optimizers.values()))
    step = main.step

    def traced_step(*args: Any, **kwargs: Any) -> Any:
        result = step(*args, **kwargs)
        context.trace("gradient_step")
        return result

    main.step = traced_step
    update = learner.update

    def traced_update(*args: Any, **kwargs: Any) -> Any:
        result = update(*args, **kwargs)
        context.trace("update")
        return result

    learner.update = traced_update
    module = learner.module[DEFAULT_MODULE_ID].unwrapped()
    if hasattr(module, "get_target_network_pairs"):
        pairs = module.get_target_network_pairs

        def traced_pairs() -> Any:
            context.trace("target_sync")
            return pairs()

        module.get_target_network_pairs = traced_pairs
    runners = algorithm.env_runner_group
    if runners is not None and runners.num_remote_env_runners() > 0:
        def remote_epsilon() -> float | None:
            values = runners.foreach_env_runner(
                lambda runner: float(runner.module.epsilon_schedule.get_current_value())
                if hasattr(runner.module, "epsilon_schedule") else None,
                local_env_runner=False, remote_worker_ids=[1])
            return values[0] if values else None

        return remote_epsilon if remote_epsilon() is not None else None
    explorer = getattr(getattr(algorithm.env_runner, "module", None), "epsilon_schedule", None)
    if explorer is not None:
        schedule_update = explorer.update
        last: list[float] = []

        def traced_epsilon(timestep: int) -> float:
            value = float(schedule_update(timestep))
            if not last or abs(value - last[0]) >= EPSILON_RESOLUTION:
                last[:] = [value]
                context.trace("exploration", value)
            return value

        explorer.update = traced_epsilon
    return None


def _is_plain(value: Any) -> bool:
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, (list, tuple)):
        return all(_is_plain(item) for item in value)
    if isinstance(value, dict):
        return all(isinstance(key, str) and _is_plain(item) for key, item in value.items())
    return False


def _module_policy(module: Any, deterministic: bool, normalize_actions: bool) -> Any:
    """A batch policy over an RLlib RLModule, acting as RLlib's env runners would (un-squashed)."""
    import numpy as np
    import torch
    from ray.rllib.utils.spaces.space_utils import unsquash_action

    action_space = module.action_space
    try:
        dist_class = module.get_inference_action_dist_cls()
    except (KeyError, NotImplementedError, AttributeError):  # value-based modules have none
        dist_class = None
    continuous = hasattr(action_space, "low")

    def policy(observations: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            out = module.forward_inference({"obs": torch.as_tensor(observations, dtype=torch.float32)})
            if dist_class is not None and "action_dist_inputs" in out:
                dist = dist_class.from_logits(out["action_dist_inputs"])
                if deterministic:
                    dist = dist.to_deterministic()
                actions = dist.sample().numpy()
            else:  # value-based modules (DQN) act greedily in inference
                actions = out["actions"].numpy()
        if continuous:
            if normalize_actions:
                actions = np.stack([unsquash_action(action, action_space) for action in actions])
            actions = np.clip(actions, action_space.low, action_space.high)
        return actions

    return policy


@hookimpl
def rlcompare_register_adapters(register: Register) -> None:
    register.add_adapter(RLlibAdapter)
