"""Sample Factory 2.1 adapter: the workload's PPO run as Sample Factory's APPO, with V-trace off.

Sample Factory has one algorithm, APPO (``--algo APPO``): PPO's clipped surrogate on batches of
trajectories collected by rollout workers. With ``async_rl=False`` collection and training
alternate, so every sample comes from the current policy and APPO is PPO; with ``async_rl=True``
the rollout workers keep sampling while the learner trains, so samples lag the policy by up to
``max_policy_lag`` updates. V-trace (``with_vtrace``) would correct that lag, but it replaces GAE
and so ignores ``gae_lambda``: it stays off and the async run is marked approximate instead.

Parallelism: ``workers == 1`` in sync mode runs Sample Factory's serial mode (``serial_mode=True``:
sampler, inference and learner share the training process); otherwise its multiprocess mode, with
``workers`` rollout worker processes plus one inference-worker and one learner process.

Every environment comes from the harness: a Sample Factory env registered for the run calls
``context.env_factory(slot)`` with ``slot = worker_index * envs_per_worker + vector_index`` (Sample
Factory's own global env index), in whichever process creates it. The harness sees the weights as
the learner updates them: in serial mode the learner's model itself, in multiprocess mode a local
copy loaded from the shared-memory weights the learner publishes to its inference workers.
Checkpoints and the budget check run on each learner step report in the runner's process, and so
does the schedule trace (:class:`LearnerSchedule`: an ``update`` per trained batch, a
``gradient_step`` per optimizer step of the learner).

The parity probe (:mod:`rlcompare_sample_factory.parity`) runs Sample Factory's own ``Learner`` on
the probe's batch, built from the same configuration, without a runner.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlcompare import hookimpl
from rlcompare.adapter import (
    Adapter,
    BudgetTolerance,
    Capabilities,
    Fidelity,
    FidelityEntry,
    ParityOutcome,
    ParityProbe,
    Setting,
    TrainingResult,
    WorkloadLike,
    entry,
    map_settings,
    only_if,
)

if TYPE_CHECKING:
    import numpy as np

    from rlcompare.adapter import TrainingContext
    from rlcompare.plugins.register import Register

#: Sample Factory's value loss is clipped around the old value by ``ppo_clip_value``; a bound no
#: value difference reaches turns the clipping off, as canonical PPO has none.
NO_VALUE_CLIP = 1e9
#: Rewards are clipped to +-``reward_clip`` by default (1000); canonical PPO clips nothing.
NO_REWARD_CLIP = 1e9
#: Adam epsilon of the reference implementations the canonical defaults come from (SB3, CleanRL);
#: Sample Factory's default is 1e-6.
ADAM_EPS = 1e-5
#: Seconds between Sample Factory's own checkpoints: only the final one is wanted.
SAVE_EVERY_SEC = 10**9


def _samples_per_update(workload: WorkloadLike) -> int:
    return workload.hyperparameters.rollout_steps * workload.parallelism.total_envs


def _minibatches(workload: WorkloadLike) -> int:
    """Minibatches per pass over one rollout of every env.

    Sample Factory builds its minibatches from whole trajectories of ``rollout`` steps (its batcher
    takes ``batch_size // rollout`` trajectories per minibatch, so a smaller ``batch_size`` gives
    empty batches), and its sync mode needs them to split one rollout of every env exactly: a
    minibatch is ``k`` trajectories with ``k`` dividing the number of envs. The count whose
    minibatch is closest to the canonical one wins (ties: fewer, larger minibatches).
    """
    envs = workload.parallelism.total_envs
    rollout = workload.hyperparameters.rollout_steps
    wanted = workload.hyperparameters.minibatch_size
    counts = [n for n in range(1, envs + 1) if envs % n == 0]
    return min(counts, key=lambda n: (abs(envs // n * rollout - wanted), n))


def _batch_size(_value: int, workload: WorkloadLike) -> int:
    return _samples_per_update(workload) // _minibatches(workload)


def _judge_batch_size(value: int, workload: WorkloadLike) -> tuple[Fidelity, str]:
    count = _minibatches(workload)
    native = _samples_per_update(workload) // count
    if native == value:
        return Fidelity.EXACT, f"num_batches_per_epoch={count} minibatches of whole trajectories cover one rollout"
    return (Fidelity.APPROXIMATE,
            f"minibatches hold whole trajectories of rollout={workload.hyperparameters.rollout_steps} steps and "
            f"must split one rollout of every env: {count} of {native} samples")


def _judge_clip(_value: float, _workload: WorkloadLike) -> tuple[Fidelity, str]:
    return (Fidelity.APPROXIMATE,
            "the ratio is clipped to [1/(1+eps), 1+eps], not [1-eps, 1+eps]: the same upper bound, a "
            "slightly narrower lower one")


def _judge_gae(_value: float, workload: WorkloadLike) -> tuple[Fidelity, str]:
    if workload.parallelism.mode == "async":
        return (Fidelity.APPROXIMATE,
                "GAE (with_vtrace=False) on trajectories that may lag the policy by up to max_policy_lag updates")
    return Fidelity.EXACT, "GAE on the learner (with_vtrace=False)"


SETTINGS: list[Setting] = [
    Setting("learning_rate", "learning_rate", note="lr_schedule='constant'"),
    Setting("gamma", "gamma"),
    Setting("gae_lambda", "gae_lambda", judge=_judge_gae),
    Setting("clip_range", "ppo_clip_ratio", judge=_judge_clip),
    Setting("rollout_steps", "rollout", note="per environment, as canonical"),
    Setting("minibatch_size", "batch_size", convert=_batch_size, judge=_judge_batch_size),
    Setting("epochs", "num_epochs"),
    Setting("entropy_coef", "exploration_loss_coeff", note="exploration_loss='entropy'"),
    Setting("value_coef", "value_loss_coeff",
            note=f"times the mean squared error, as SB3; value clipping off (ppo_clip_value={NO_VALUE_CLIP:g})"),
    Setting("max_grad_norm", "max_grad_norm"),
    Setting("normalize_advantage", None,
            judge=only_if(True, "Sample Factory always normalizes advantages per minibatch"),
            note="always on in Sample Factory, per minibatch"),
]

#: Sample Factory settings fixed by the adapter (its defaults differ from canonical PPO).
FIXED: dict[str, Any] = {
    "algo": "APPO",
    "with_vtrace": False,
    "normalize_input": False,
    "normalize_returns": False,
    "value_bootstrap": False,
    "ppo_clip_value": NO_VALUE_CLIP,
    "reward_scale": 1.0,
    "reward_clip": NO_REWARD_CLIP,
    "exploration_loss": "entropy",
    "kl_loss_coeff": 0.0,
    "lr_schedule": "constant",
    "optimizer": "adam",
    "adam_eps": ADAM_EPS,
    "shuffle_minibatches": True,
    "use_rnn": False,
    "actor_critic_share_weights": False,
    "decoder_mlp_layers": [],
    "adaptive_stddev": False,
    "initial_stddev": 1.0,
    "batched_sampling": False,
    "decorrelate_envs_on_one_worker": False,
    "set_workers_cpu_affinity": False,
    "device": "cpu",
    "num_policies": 1,
    "with_pbt": False,
    "with_wandb": False,
    "save_every_sec": SAVE_EVERY_SEC,
    "keep_checkpoints": 1,
    "restart_behavior": "overwrite",
    "log_to_file": False,
}


def _serial(workload: WorkloadLike) -> bool:
    return workload.parallelism.workers == 1 and workload.parallelism.mode == "sync"


#: How Sample Factory's PPO update departs from the canonical one, as its parity probe measured them
#: (``rlcompare parity --adapters sample-factory``; sample_factory/algo/learning/learner.py).
PPO_DEPARTURES = (
    entry("defaults.truncation_bootstrap", True, Fidelity.APPROXIMATE, "value_bootstrap", False,
          "a truncated episode is cut like a terminated one; value_bootstrap=True would add gamma * V(s_t) of the "
          "observation before the last step, not of the final one"),
    entry("defaults.last_value", "stored by the collecting policy", Fidelity.APPROXIMATE, "Learner._prepare_batch",
          "recomputed by the updated network", "the same network in sync mode; differs under policy lag"),
    entry("defaults.ratio_clip_low", "1 - clip_range", Fidelity.APPROXIMATE, "ppo_clip_ratio", "1 / (1 + clip_range)",
          "the ratio is clipped to [1/(1+eps), 1+eps] (and clamped to [0.05, 20])"),
)


class SampleFactoryAdapter(Adapter):
    id = "sample-factory"
    framework = "sample-factory"
    summary = "Sample Factory: APPO (sync or async sampling), serial or multiprocess rollout workers"
    import_name = "sample_factory"
    distributions = ("sample-factory", "torch", "gymnasium", "numpy")
    install_requires = ("sample-factory==2.1.1", "gymnasium==0.29.1", "numpy<2", "torch==2.13.0")
    #: Sample Factory 2.1 pins numpy<2 and gymnasium<1.0: it always runs in an environment of its own
    #: (built with uv by :mod:`rlcompare.pyenvs`, torch pinned to the CPU build).
    requires_isolation = True

    def capabilities(self) -> Capabilities:
        return Capabilities(
            algorithms=frozenset({"PPO"}),
            action_spaces=frozenset({"discrete", "continuous"}),
            vectorized_envs=True,
            rollout_workers=True,
            modes=frozenset({"sync", "async"}),
        )

    def budget_tolerance(self, workload: WorkloadLike) -> BudgetTolerance:
        """The budget is checked after each learner step. In async mode every rollout worker may
        hold up to two rollouts of each env in flight (double-buffered splits) besides the batch
        being trained on, so the run may end up to three rollouts of every env past the budget."""
        default = BudgetTolerance.for_workload(workload)
        if workload.parallelism.mode == "sync":
            return default
        steps = 3 * workload.rollout_env_steps
        return BudgetTolerance("rollout", max(default.overshoot_steps, steps), max(default.count_gap_steps, steps))

    # -- translation -------------------------------------------------------------------------------

    def native_config(self, workload: WorkloadLike) -> tuple[dict[str, Any], list[FidelityEntry]]:
        kwargs, entries = map_settings(workload, SETTINGS)
        kwargs["num_batches_per_epoch"] = _minibatches(workload)
        net = workload.network
        if net.hidden_sizes:
            kwargs["encoder_mlp_layers"] = list(net.hidden_sizes)
        kwargs["nonlinearity"] = net.activation
        kwargs.update(FIXED)
        kwargs.update(self._parallelism_config(workload))
        entries.append(entry(
            "network.hidden_sizes", list(net.hidden_sizes), Fidelity.EXACT if net.hidden_sizes else Fidelity.UNSUPPORTED,
            "encoder_mlp_layers", list(net.hidden_sizes) or None,
            "separate actor and critic encoders (actor_critic_share_weights=False), no RNN core, linear heads; "
            "orthogonal init with gain 1 (SB3: sqrt 2, 0.01 on the policy head)" if net.hidden_sizes else
            "no linear policy: the adapter passes no empty encoder to Sample Factory, whose default layers run"))
        entries.append(entry("network.activation", net.activation, Fidelity.EXACT, "nonlinearity", net.activation))
        entries.extend(self._parallelism_fidelity(workload))
        entries.extend(PPO_DEPARTURES)
        return kwargs, entries

    def _parallelism_config(self, workload: WorkloadLike) -> dict[str, Any]:
        par = workload.parallelism
        return {
            "serial_mode": _serial(workload),
            "async_rl": par.mode == "async",
            "num_workers": par.workers,
            "num_envs_per_worker": par.envs_per_worker,
            # double-buffered sampling needs an even number of envs per worker
            "worker_num_splits": 2 if par.envs_per_worker % 2 == 0 else 1,
            "policy_workers_per_policy": 1,
        }

    def _parallelism_fidelity(self, workload: WorkloadLike) -> list[FidelityEntry]:
        par = workload.parallelism
        splits = 2 if par.envs_per_worker % 2 == 0 else 1
        entries = [
            entry("parallelism.envs_per_worker", par.envs_per_worker, Fidelity.EXACT, "num_envs_per_worker",
                  par.envs_per_worker, f"stepped in worker_num_splits={splits} alternating group(s)"),
        ]
        if _serial(workload):
            entries.append(entry("parallelism.workers", 1, Fidelity.EXACT, "serial_mode", True,
                                 "sampler, inference and learner in the training process"))
        elif par.workers == 1:
            entries.append(entry("parallelism.workers", 1, Fidelity.APPROXIMATE, "num_workers", 1,
                                 "async sampling needs the multiprocess mode: one rollout worker process, "
                                 "not in-process"))
        else:
            entries.append(entry("parallelism.workers", par.workers, Fidelity.EXACT, "num_workers", par.workers,
                                 "rollout worker processes (serial_mode=False), plus one inference worker and "
                                 "one learner process"))
        entries.append(entry("parallelism.mode", par.mode, Fidelity.EXACT, "async_rl", par.mode == "async",
                             "sync: collection and training alternate (APPO with async_rl=False: PPO); async: "
                             "workers sample while the learner trains on samples up to max_policy_lag updates "
                             "old, without V-trace (with_vtrace=False keeps GAE)"))
        entries.append(entry("parallelism.threads_per_worker", par.threads_per_worker,
                             Fidelity.EXACT if par.threads_per_worker == 1 else Fidelity.APPROXIMATE,
                             "torch.set_num_threads", par.threads_per_worker,
                             "the training process is pinned by the harness; Sample Factory's worker "
                             "processes run one torch thread each"))
        return entries

    def fidelity(self, workload: WorkloadLike) -> list[FidelityEntry]:
        return self.native_config(workload)[1]

    # -- training ----------------------------------------------------------------------------------

    def train(self, workload: WorkloadLike, context: TrainingContext) -> TrainingResult:
        factories = context.env_factories()
        run = SampleFactoryRun(workload, context.seed, context.run_dir / "sample_factory", factories)
        try:
            run.build()
            context.start_training()

            schedule = LearnerSchedule(context)

            def on_learner_steps(framework_steps: int) -> bool:
                schedule.observe(framework_steps, run.learner_train_steps())
                run.remember_model()
                if run.policy_ready:
                    # stop_when_solved: the solving evaluation ends the run (asynchronously, like the budget)
                    with context.until_solved():
                        context.checkpoint(run.policy_fn(context.deterministic), framework_steps)
                return context.budget_reached or context.solved

            run.train(on_learner_steps)
            # optimizer steps the learner made after its last report (async: while the run stopped)
            schedule.observe(run.env_steps, run.learner_train_steps())
        finally:
            context.stop_training()
            run.close()
        return TrainingResult(policy=run.policy_fn(context.deterministic), framework_env_steps=run.env_steps,
                              native_config=run.native)

    # -- parity ------------------------------------------------------------------------------------

    def parity_update(self, probe: ParityProbe) -> ParityOutcome:
        """Sample Factory's own ``Learner`` on the probe (:mod:`rlcompare_sample_factory.parity`)."""
        if probe.family != "PPO":
            return ParityOutcome.unverifiable(f"Sample Factory has no {probe.family} update (APPO only)")
        from rlcompare_sample_factory.parity import ppo_update

        return ppo_update(self, probe)


class LearnerSchedule:
    """Traces the learner's schedule from the runner's process (``context.trace``).

    Every report of the learner's env-step count (``LEARNER_ENV_STEPS``, which ``LearnerWorker``
    sends after each ``Learner.train`` call on one batch) that shows more env steps is one
    ``update``. Before it, one ``gradient_step`` per optimizer step the learner made since the last
    report: ``Learner.train_step`` as the learner publishes it after every optimizer step in the
    policy-version tensor (``buffer_mgr.policy_versions``, shared memory in multiprocess mode; the
    inference workers read it to reload weights). In serial mode both are read right after the
    learner's step; in multiprocess mode when the runner's process handles the report, so a few
    steps of the next batch may already be counted, and the steps are traced against the
    harness's env-step count at that moment.
    """

    def __init__(self, context: TrainingContext) -> None:
        self.context = context
        self.env_steps = 0
        self.train_steps = 0

    def observe(self, env_steps: int, train_steps: int) -> None:
        for _ in range(train_steps - self.train_steps):
            self.context.trace("gradient_step")
        self.train_steps = max(self.train_steps, train_steps)
        if env_steps > self.env_steps:
            self.context.trace("update")
            self.env_steps = env_steps


@hookimpl
def rlcompare_register_adapters(register: Register) -> None:
    register.add_adapter(SampleFactoryAdapter)


# -------------------------------------------------------------------------------------------------
# the run itself (imports Sample Factory)
# -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HarnessEnvs:
    """Sample Factory's env-making function for one run: pickled into each process that makes envs.

    ``env_config`` carries Sample Factory's global env index (``worker_index * num_envs_per_worker
    + vector_index``), used as the harness slot; the env-info probe (no ``env_config``, never
    stepped) gets slot 0's factory. Reset seeds are shifted by ``seed_offset``: Sample Factory seeds
    each env's first reset with its env index alone, the same for every run seed.
    """

    factories: tuple[Callable[[], Any], ...]
    seed_offset: int

    def __call__(self, _full_env_name: str, _cfg: Any = None, env_config: Any = None,
                 _render_mode: str | None = None) -> Any:
        slot = 0 if env_config is None else int(env_config["env_id"])
        return _reset_seed_offset(self.factories[slot](), self.seed_offset)


def _reset_seed_offset(env: Any, offset: int) -> Any:
    import gymnasium

    class ResetSeedOffset(gymnasium.Wrapper):
        def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
            return self.env.reset(seed=None if seed is None else seed + offset, options=options)

    return ResetSeedOffset(env) if offset else env


class SampleFactoryRun:
    """One Sample Factory training run with the workload's configuration, on the given env factories.

    Used by the adapter (with counted harness envs and a per-step callback) and by the overhead
    benchmark's baseline (``benchmarks/baselines.py``: plain envs, a stop at the budget), so both
    train the identical configuration.
    """

    def __init__(self, workload: WorkloadLike, seed: int, train_dir: Path, factories: list[Callable[[], Any]]) -> None:
        self.workload = workload
        self.seed = seed
        self.train_dir = Path(train_dir)
        self.factories = tuple(factories)
        self.kwargs, _ = SampleFactoryAdapter().native_config(workload)
        self.env_name = f"rlcompare-{workload.env.replace('/', '-')}"
        self.runner: Any = None
        self.cfg: Any = None
        self.env_steps = 0
        self._client: Any = None
        self._local_model: Any = None
        #: The trained model, copied out before Sample Factory's processes stop: the policy handed to
        #: the harness must keep working after training (the final evaluation may come later).
        self._final_model: Any = None
        self._last_model: Any = None

    @property
    def native(self) -> dict[str, Any]:
        return {"env": self.env_name, "train_dir": str(self.train_dir), "seed": self.seed,
                "train_for_env_steps": self.workload.env_steps - 1, **self.kwargs}

    def argv(self) -> list[str]:
        args = ["--env", self.env_name, "--experiment", "run", "--train_dir", str(self.train_dir),
                "--seed", str(self.seed), "--train_for_env_steps", str(self.workload.env_steps - 1)]
        for name, value in self.kwargs.items():
            args.append(f"--{name}")
            if isinstance(value, list):
                args.extend(str(item) for item in value)
            else:
                args.append(str(value))
        return args

    def configure(self) -> Any:
        """Register the env and parse the configuration, as Sample Factory's command line would
        (``sample_factory/cfg/arguments.py``); returns the parsed configuration. The parity probe
        builds its learner from this configuration, without a runner."""
        from sample_factory.algo.utils.context import reset_global_context
        from sample_factory.cfg.arguments import parse_full_cfg, parse_sf_args
        from sample_factory.envs.env_utils import register_env

        reset_global_context()
        register_env(self.env_name, HarnessEnvs(self.factories, self.seed * len(self.factories)))
        argv = self.argv()
        parser, _ = parse_sf_args(argv=argv, evaluation=False)
        self.cfg = parse_full_cfg(parser, argv)
        return self.cfg

    def build(self) -> None:
        """Register the env, parse the configuration and initialise the runner (no training yet)."""
        from sample_factory.algo.utils.misc import ExperimentStatus
        from sample_factory.train import make_runner

        self.cfg, self.runner = make_runner(self.configure())
        status = self.runner.init()
        if status != ExperimentStatus.SUCCESS:
            raise RuntimeError(f"Sample Factory refused the configuration (status {status}); see the run log")

    @property
    def policy_ready(self) -> bool:
        if self._final_model is not None:
            return True
        if self.cfg.serial_mode:
            learner = getattr(self.runner.learners[0], "learner", None)  # gone once the runner stopped
            return getattr(learner, "actor_critic", None) is not None
        return self._client is not None and self._client.latest_policy_version >= 0

    def train(self, on_learner_steps: Callable[[int], bool]) -> None:
        """Run until Sample Factory's budget, or until ``on_learner_steps`` returns True."""
        from sample_factory.algo.utils.misc import LEARNER_ENV_STEPS, ExperimentStatus

        if not self.cfg.serial_mode:
            self._receive_weights()

        def handler(runner: Any, msg: dict[str, Any], policy_id: int) -> None:
            self.env_steps = int(runner.env_steps.get(0, 0))
            if on_learner_steps(self.env_steps) and not runner.stopped:
                runner._stop_training()  # noqa: SLF001 - the runner's own stop, as at its budget

        # runs after the runner's own handler has recorded the learner's count
        self.runner.policy_msg_handlers[LEARNER_ENV_STEPS].append(handler)
        status = self.runner.run()
        self.env_steps = int(self.runner.env_steps.get(0, self.env_steps))
        if status != ExperimentStatus.SUCCESS:
            raise RuntimeError(f"Sample Factory training ended with status {status}; see the run log")

    def learner_train_steps(self) -> int:
        """The learner's optimizer steps so far (``Learner.train_step``), as the learner publishes
        them after each step in the policy-version tensor its inference workers read."""
        return int(self.runner.buffer_mgr.policy_versions[0])

    def _receive_weights(self) -> None:
        """Subscribe the runner's process to the learner's shared-memory weights, as an inference
        worker does."""
        from sample_factory.algo.utils.model_sharing import make_parameter_client
        from sample_factory.utils.timing import Timing
        from signal_slot.signal_slot import EventLoopObject

        learner_worker = self.runner.learners[0]
        client = make_parameter_client(False, learner_worker.param_server, self.cfg, self.runner.env_info,
                                       Timing("rlcompare"))
        run = self

        class WeightsReceiver(EventLoopObject):
            def on_model_initialized(self, init_model_data: tuple[Any, ...]) -> None:
                _policy_id, state_dict, device, version = init_model_data
                client.on_weights_initialized(state_dict, device, version)
                run._client = client

        self._receiver = WeightsReceiver(self.runner.event_loop, "rlcompare_weights")
        learner_worker.model_initialized.connect(self._receiver.on_model_initialized)

    def _model(self) -> Any:
        if self._final_model is not None:
            return self._final_model
        if self.cfg.serial_mode:
            model = self.runner.learners[0].learner.actor_critic
        else:
            self._client.ensure_weights_updated()
            model = self._client.actor_critic
        self._last_model = model  # the learner updates it in place; kept for after the runner stops
        return model

    def remember_model(self) -> None:
        """Keep a reference to the current model (cheap), so the policy outlives the runner."""
        if self.policy_ready:
            self._model()

    def policy_fn(self, deterministic: bool) -> Callable[[np.ndarray], np.ndarray]:
        import gymnasium
        import numpy as np
        import torch
        from sample_factory.algo.utils.action_distributions import argmax_actions
        from sample_factory.algo.utils.rl_utils import prepare_and_normalize_obs
        from sample_factory.model.model_utils import get_rnn_size

        discrete = isinstance(self.runner.env_info.action_space, gymnasium.spaces.Discrete)
        rnn_size = get_rnn_size(self.cfg)

        def act(observations: np.ndarray) -> np.ndarray:
            model = self._model()
            batch = np.asarray(observations, dtype=np.float32)
            with torch.no_grad():
                obs = prepare_and_normalize_obs(model, {"obs": torch.from_numpy(batch)})
                outputs = model(obs, torch.zeros((batch.shape[0], rnn_size), dtype=torch.float32))
                actions = argmax_actions(model.action_distribution()) if deterministic else outputs["actions"]
            actions = actions.cpu().numpy()
            if discrete:
                return actions.reshape(batch.shape[0]).astype(np.int64)
            return actions.reshape(batch.shape[0], -1)

        return act

    def close(self) -> None:
        """Stop every process Sample Factory started, whatever state the run ended in."""
        if self.runner is None:
            return
        if self._final_model is None:
            import copy

            try:
                if self.policy_ready:
                    self._model()  # the latest weights, while the learner can still give them
            except Exception:  # noqa: BLE001 - the runner already stopped: the last model seen stands
                pass
            if self._last_model is not None:
                # the model caches its last action distribution; after a learner step its tensors
                # are part of an autograd graph, which deepcopy refuses: copy the model without it
                cached = getattr(self._last_model, "last_action_distribution", None)
                self._last_model.last_action_distribution = None
                try:
                    self._final_model = copy.deepcopy(self._last_model)
                finally:
                    self._last_model.last_action_distribution = cached
        processes = list(getattr(self.runner, "processes", []))
        sampler = getattr(self.runner, "sampler", None)
        processes.extend(getattr(sampler, "processes", []) if sampler is not None else [])
        for process in processes:
            if process.ident is not None:
                process.join(timeout=5)
        for process in processes:
            if process.ident is not None and process.is_alive():
                process.terminate()
                process.join(timeout=5)
            if process.ident is not None and process.is_alive():
                process.kill()
                process.join()
        for writer in getattr(self.runner, "writers", {}).values():
            writer.close()
        _unlink_shared_memory_files([os.getpid(), *(process.ident for process in processes if process.ident)])


#: Where torch's "file_system" sharing strategy, which Sample Factory switches on in every process,
#: names its shared tensors (``torch_<pid>_<n>``).
SHARED_MEMORY_DIR = Path("/dev/shm")


def _unlink_shared_memory_files(pids: list[int]) -> None:
    """Remove the shared-tensor files of the run's processes once they have stopped.

    torch's shared-memory manager is meant to unlink them when the last process lets go, but the
    files of processes that exit without running their atexit handlers (the worker ends with
    ``os._exit``) stay behind, about 80 kB per process and run. Mappings already open stay valid:
    the policy handed back keeps its weights.
    """
    for pid in pids:
        for path in SHARED_MEMORY_DIR.glob(f"torch_{pid}_*"):
            try:
                path.unlink()
            except OSError:
                pass  # another process's cleanup got there first
