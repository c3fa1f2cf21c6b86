"""RSL-RL adapter: the workload's PPO run by RSL-RL's own ``OnPolicyRunner`` and ``PPO``.

RSL-RL (``rsl-rl-lib``, ETH Zurich's Robotic Systems Lab; the learner of Isaac Lab's legged-robot
tasks) trains on a batched, auto-resetting :class:`rsl_rl.env.VecEnv` of torch tensors. The adapter
builds one over the harness's counted environments (:class:`rlcompare_rsl_rl.run.HarnessVecEnv`): every
environment the runner steps comes from ``context.env_factories()``, stepped in turn in the training
process, so the harness counts every step.

What RSL-RL offers, read from its source (``rsl_rl/algorithms/ppo.py``, ``rsl_rl/modules/
distribution.py``, ``rsl_rl/runners/on_policy_runner.py``):

- **Continuous actions only.** Its action distributions are a Gaussian with a state-independent
  standard deviation, a heteroscedastic Gaussian and a Beta distribution; there is no categorical
  one, so a discrete action space is refused (``capabilities``). The adapter's actor is
  ``MLPModel`` with ``GaussianDistribution(std_type="log", init_std=1.0)``: the canonical head, a
  state-independent log-std starting at 0.
- **Training loop.** ``OnPolicyRunner.learn(num_learning_iterations=1)`` is one iteration: a rollout
  of ``num_steps_per_env`` steps of every env, GAE (``PPO.compute_returns``) and the epochs of
  minibatch steps (``PPO.update``). The adapter calls it once per update and checkpoints in
  between, so evaluations land on the grid's update boundaries.
- **Settings with no canonical counterpart, fixed to the canonical behaviour**: ``schedule="fixed"``
  (RSL-RL's default ``"adaptive"`` rescales the learning rate from the policy's KL divergence),
  ``use_clipped_value_loss=False`` (its default clips the value loss, CleanRL-style),
  ``normalize_advantage_per_mini_batch=True`` (its default normalizes once over the whole rollout),
  ``obs_normalization=False`` for actor and critic (the runner-wide ``empirical_normalization`` of
  earlier releases; 5.5 updates the normalizers in ``PPO.update``), ``use_mixed_precision=False`` (its
  default), no RND, no symmetry augmentation, no log directory (so no TensorBoard writer, no saved
  models, no git state).
- **Environment and dependencies.** rsl-rl-lib 5.5.1 needs ``tensordict>=0.7``: the main
  environment's 0.14.3 (TorchRL's pin) serves it, so the adapter shares the main environment. Of its
  other requirements, GitPython is imported with the runner (``rsl_rl/utils/logger.py``; the adapter
  sets ``GIT_PYTHON_REFRESH=quiet``); onnx, onnxscript and tensorboard only by exports and writers
  the adapter does not use.

How the update departs from the canonical one where the configuration cannot reach it is declared
in :data:`PPO_DEPARTURES` and checked by the parity probe (:mod:`rlcompare_rsl_rl.parity`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rlcompare import hookimpl
from rlcompare.adapter import (
    Adapter,
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
)

if TYPE_CHECKING:
    from rlcompare.adapter import TrainingContext
    from rlcompare.plugins.register import Register

ALGORITHM = "PPO"
#: The canonical activations, by RSL-RL's names (``rsl_rl.utils.resolve_nn_activation``).
ACTIVATIONS = {"tanh": "tanh", "relu": "relu"}
#: The observation group the adapter's env reports, fed to both actor and critic.
OBS_GROUP = "policy"
#: RSL-RL's default network (``MLPModel.hidden_dims``), which runs where the workload asks for none.
DEFAULT_HIDDEN = [256, 256, 256]
#: Whether the adapter's VecEnv reports ``extras["time_outs"]``; see :data:`TRUNCATION`.
REPORT_TIME_OUTS = False

#: Why truncations are reported as plain dones (``REPORT_TIME_OUTS = False``).
TRUNCATION = (
    "the adapter's VecEnv reports a truncated episode as done without extras['time_outs'], so RSL-RL cuts it "
    "like a terminated one; with time_outs, PPO.process_env_step would add gamma * V(s_t) (the value of the "
    "observation the last action was taken in, stored by act()) to the last reward, not gamma * V(final "
    "observation), a bootstrap no canonical variant describes")


# -------------------------------------------------------------------------------------------------
# the mapping table
# -------------------------------------------------------------------------------------------------


def _rollout_size(workload: WorkloadLike) -> int:
    return workload.hyperparameters.rollout_steps * workload.parallelism.total_envs


def _mini_batches(value: int, workload: WorkloadLike) -> int:
    """RSL-RL takes a number of minibatches (``num_mini_batches``); the nearest to the canonical size."""
    return max(1, min(_rollout_size(workload), round(_rollout_size(workload) / value)))


def _judge_mini_batches(value: int, workload: WorkloadLike) -> tuple[Fidelity, str]:
    size = _rollout_size(workload)
    count = _mini_batches(value, workload)
    if size % value == 0:
        return Fidelity.EXACT, f"num_mini_batches={count}: RSL-RL takes a number of minibatches, {size} / {value}"
    native = size // count
    return Fidelity.APPROXIMATE, (
        f"RSL-RL takes a number of minibatches: {size} / {value} rounded to {count} of {native}; "
        f"RolloutStorage.mini_batch_generator permutes only the first {count * native} transitions of the "
        f"rollout, so the last {size - count * native} never enter an update")


def _judge_epochs(value: int, workload: WorkloadLike) -> tuple[Fidelity, str]:
    count = _mini_batches(workload.hyperparameters.minibatch_size, workload)
    if value == 1 or count == 1:
        return Fidelity.EXACT, "num_learning_epochs passes over the rollout"
    return Fidelity.APPROXIMATE, (
        "num_learning_epochs passes over the rollout, but RolloutStorage.mini_batch_generator draws one "
        "permutation per rollout and reuses it: every epoch steps through the same minibatches in the same "
        "order (SB3 reshuffles each epoch)")


def _judge_advantages(value: bool, _workload: WorkloadLike) -> tuple[Fidelity, str]:
    if value:
        return Fidelity.EXACT, ("normalize_advantage_per_mini_batch=True: (A - mean) / (std + 1e-8) per minibatch, "
                                "torch's unbiased std (PPO.update)")
    return Fidelity.UNSUPPORTED, ("RSL-RL always normalizes advantages, per minibatch or over the whole rollout "
                                  "(PPO.compute_returns); the adapter keeps per-minibatch normalization")


def _judge_grad_clip(_value: float, _workload: WorkloadLike) -> tuple[Fidelity, str]:
    return Fidelity.APPROXIMATE, ("clip_grad_norm_ on the actor's parameters and on the critic's separately "
                                  "(PPO.update), not on their global norm")


SETTINGS: list[Setting] = [
    Setting("learning_rate", "learning_rate",
            note="schedule='fixed' keeps it constant (RSL-RL's default 'adaptive' rescales it from the KL "
                 "divergence); one torch Adam over actor and critic with torch's default eps 1e-8"),
    Setting("gamma", "gamma"),
    Setting("gae_lambda", "lam"),
    Setting("clip_range", "clip_param", note="use_clipped_value_loss=False: clip_param clips only the ratio"),
    Setting("rollout_steps", "num_steps_per_env", note="per environment, as canonical"),
    Setting("minibatch_size", "num_mini_batches", convert=_mini_batches, judge=_judge_mini_batches),
    Setting("epochs", "num_learning_epochs", judge=_judge_epochs),
    Setting("entropy_coef", "entropy_coef", note="times the Gaussian's entropy summed over action dimensions"),
    Setting("value_coef", "value_loss_coef",
            note="times mean((R - V)^2), no factor 1/2, no value clipping (use_clipped_value_loss=False)"),
    Setting("max_grad_norm", "max_grad_norm", judge=_judge_grad_clip),
    Setting("normalize_advantage", None, judge=_judge_advantages),
]

#: RSL-RL settings fixed by the adapter: its defaults differ from canonical PPO (module docstring).
FIXED_ALGORITHM: dict[str, Any] = {
    "class_name": "PPO",
    "optimizer": "adam",
    "schedule": "fixed",
    "desired_kl": None,  # read only by the adaptive schedule
    "use_clipped_value_loss": False,
    "normalize_advantage_per_mini_batch": True,
    "rnd_cfg": None,
    "symmetry_cfg": None,
}

#: How RSL-RL's PPO update departs from the canonical one, as its parity probe measured it
#: (``rlcompare parity --adapters rsl-rl``; rsl_rl/algorithms/ppo.py).
PPO_DEPARTURES: tuple[FidelityEntry, ...] = (
    entry("defaults.adam_eps", 1e-5, Fidelity.APPROXIMATE, "resolve_optimizer('adam')", 1e-8,
          "torch.optim.Adam built with torch's default epsilon (RSL-RL passes only the learning rate)"),
    entry("defaults.grad_clip_scope", "joint", Fidelity.APPROXIMATE, "PPO.update", "per network",
          "nn.utils.clip_grad_norm_ is called on the actor's and on the critic's parameters separately"),
    entry("defaults.truncation_bootstrap", True, Fidelity.APPROXIMATE, "extras['time_outs']", REPORT_TIME_OUTS,
          TRUNCATION),
)


def network_config(workload: WorkloadLike) -> tuple[dict[str, Any], dict[str, Any]]:
    """RSL-RL's actor and critic configurations (``MLPModel`` keyword arguments and class names)."""
    net = workload.network
    hidden = list(net.hidden_sizes) or list(DEFAULT_HIDDEN)
    common = {"class_name": "MLPModel", "hidden_dims": hidden, "activation": ACTIVATIONS[net.activation],
              "obs_normalization": False}
    actor = {**common, "distribution_cfg": {"class_name": "GaussianDistribution", "init_std": 1.0,
                                            "std_type": "log"}}
    return actor, dict(common)


class RslRlAdapter(Adapter):
    id = "rsl-rl"
    framework = "rsl-rl"
    summary = "RSL-RL: PPO (continuous actions, Gaussian policy) with its OnPolicyRunner on an in-process VecEnv"
    import_name = "rsl_rl"
    distributions = ("rsl-rl-lib", "torch", "tensordict")
    install_requires = ("rsl-rl-lib==5.5.1", "torch==2.13.0")

    def capabilities(self) -> Capabilities:
        return Capabilities(
            algorithms=frozenset({ALGORITHM}),
            action_spaces=frozenset({"continuous"}),
            vectorized_envs=True,
            rollout_workers=False,
            modes=frozenset({"sync"}),
        )

    # -- translation -------------------------------------------------------------------------------

    def native_config(self, workload: WorkloadLike) -> tuple[dict[str, Any], list[FidelityEntry]]:
        """RSL-RL's ``train_cfg`` (as ``OnPolicyRunner`` takes it) and the fidelity entries."""
        flat, entries = map_settings(workload, SETTINGS)
        steps = flat.pop("num_steps_per_env")
        algorithm = {**flat, **FIXED_ALGORITHM}
        actor, critic = network_config(workload)
        train_cfg = {
            "num_steps_per_env": steps,
            "save_interval": 10**9,  # no checkpoints: there is no log directory either
            "check_for_nan": True,
            "obs_groups": {"actor": [OBS_GROUP], "critic": [OBS_GROUP]},
            "algorithm": algorithm,
            "actor": actor,
            "critic": critic,
        }
        net, par = workload.network, workload.parallelism
        layers = {"actor": actor["hidden_dims"], "critic": critic["hidden_dims"]}
        if net.hidden_sizes:
            entries.append(entry(
                "network.hidden_sizes", list(net.hidden_sizes), Fidelity.EXACT, "actor/critic.hidden_dims", layers,
                "separate actor and critic MLPModel; PyTorch's default Linear initialization (RSL-RL's MLP leaves "
                "it); the actor's GaussianDistribution has a state-independent log-std starting at 0"))
        else:
            entries.append(entry(
                "network.hidden_sizes", [], Fidelity.UNSUPPORTED, "actor/critic.hidden_dims", layers,
                f"RSL-RL's MLP needs a hidden layer (rsl_rl/modules/mlp.py): its default {DEFAULT_HIDDEN} runs"))
        entries.append(entry("network.activation", net.activation, Fidelity.EXACT, "actor/critic.activation",
                             ACTIVATIONS[net.activation]))
        entries.append(entry("parallelism.envs_per_worker", par.envs_per_worker, Fidelity.EXACT, "VecEnv.num_envs",
                             par.total_envs, "one batched VecEnv over the harness's envs, stepped in turn in the "
                                             "training process, each reset as its episode ends"))
        entries.append(entry("parallelism.workers", par.workers, Fidelity.EXACT, "OnPolicyRunner", 1,
                             "in the training process"))
        entries.append(entry("parallelism.mode", par.mode, Fidelity.EXACT, "OnPolicyRunner.learn", "sync",
                             "collection and update alternate"))
        return train_cfg, entries

    def fidelity(self, workload: WorkloadLike) -> list[FidelityEntry]:
        return [*self.native_config(workload)[1], *PPO_DEPARTURES]

    # -- training ----------------------------------------------------------------------------------

    def train(self, workload: WorkloadLike, context: TrainingContext) -> TrainingResult:
        from rlcompare_rsl_rl.run import RslRlRun

        train_cfg, _ = self.native_config(workload)
        run = RslRlRun(workload, train_cfg, context.env_factories(), context.seed)
        try:
            run.trace_into(context)
            policy = run.policy_fn(context.deterministic)
            context.start_training()
            with context.until_solved():
                context.checkpoint(policy, 0)
                while not context.budget_reached and run.env_steps < workload.env_steps:
                    run.iterate()
                    context.checkpoint(policy, run.env_steps)
        finally:
            context.stop_training()
            run.close()
        return TrainingResult(policy=policy, framework_env_steps=run.env_steps, native_config=run.native)

    # -- parity ------------------------------------------------------------------------------------

    def parity_update(self, probe: ParityProbe) -> ParityOutcome:
        """RSL-RL's own ``PPO`` on the probe (:mod:`rlcompare_rsl_rl.parity`)."""
        if probe.family != ALGORITHM:
            return ParityOutcome.unverifiable(f"RSL-RL has no {probe.family} update (PPO only)")
        from rlcompare_rsl_rl.parity import ppo_update

        return ppo_update(self, probe)


#: A PPO workload on Pendulum-v1 (continuous actions) for the conformance kit and the learning check:
#: the built-in PPO workloads are all on CartPole, which RSL-RL cannot act in. The settings are the RL
#: Baselines3 Zoo's PPO for Pendulum-v1 (hyperparams/ppo.yml) without its gSDE exploration.
PENDULUM_PPO: dict[str, Any] = {
    "id": "rsl-rl-pendulum-ppo",
    "description": "Pendulum-v1 PPO, 4 in-process envs (the RL Zoo's ppo.yml settings without gSDE)",
    "env": "Pendulum-v1", "algorithm": ALGORITHM, "env_steps": 100_000, "seeds": 3,
    "parallelism": {"envs_per_worker": 4, "workers": 1, "mode": "sync", "threads_per_worker": 1},
    "network": {"hidden_sizes": [64, 64], "activation": "tanh"},
    "hyperparameters": {"learning_rate": 1e-3, "gamma": 0.9, "gae_lambda": 0.95, "clip_range": 0.2,
                        "rollout_steps": 1024, "minibatch_size": 64, "epochs": 10, "entropy_coef": 0.0,
                        "value_coef": 0.5, "max_grad_norm": 0.5, "normalize_advantage": True},
    "evaluation": {"interval_steps": 12_288, "episodes": 10, "deterministic": True},  # every 3 rollouts
}


@hookimpl
def rlcompare_register_adapters(register: Register) -> None:
    register.add_adapter(RslRlAdapter)


@hookimpl
def rlcompare_register_workloads(register: Register) -> None:
    register.add_workload(PENDULUM_PPO)
