"""Tianshou's own update on rlcompare's parity probes: the parts every family shares, PPO and A2C.

The algorithm is built by the adapter's :func:`rlcompare_tianshou.build` from the probe's workload
(the same objects ``train()`` trains), the probe's weights are loaded into Tianshou's actor and
critic modules, the probe's batch goes into the collector's ``VectorReplayBuffer`` as
``Collector.collect`` would add it, and Tianshou's ``Algorithm.update`` does the rest: it samples
the buffer, ``_preprocess_batch`` computes the targets (GAE in ``Algorithm.compute_episodic_return``,
n-step returns in ``Algorithm.compute_nstep_return``) and ``_update_with_batch`` makes the step
(``tianshou/algorithm/algorithm_base.py``, ``tianshou/algorithm/modelfree/*.py``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from rlcompare.adapter import ParityOutcome, ParityProbe, make_env
from rlcompare.harness.parity import RAN
from rlcompare.harness.parity_torch import OneStep, linear_layers, load_linear_stack, stack_names, values_of

if TYPE_CHECKING:
    import numpy as np

    from rlcompare_tianshou import TianshouAdapter, TianshouSetup

#: A note every probe carries: Tianshou's return estimators are numba functions, compiled afresh in
#: every process (seconds of CPU); without the JIT they run as the same float64 numpy code.
NUMBA_NOTE = ("Tianshou's numba-compiled return estimators (_gae, _nstep_return) run as plain Python "
              "(NUMBA_DISABLE_JIT) to keep the probe fast: the same float64 arithmetic")


def without_numba_jit() -> None:
    """Switch numba's JIT off for this (fresh probe) process, before anything imports Tianshou: numba
    reads the switch once, when it is imported. Call it first in every update function."""
    if "numba" not in sys.modules:
        os.environ.setdefault("NUMBA_DISABLE_JIT", "1")


def built_setup(adapter: TianshouAdapter, probe: ParityProbe) -> TianshouSetup:
    """The adapter's own build for the probe's workload (algorithm, vector env, collector, buffer)."""
    without_numba_jit()
    from rlcompare_tianshou import build

    workload = probe.workload_view()
    config, _ = adapter.native_config(workload)

    def env_fn() -> Any:
        return make_env(workload.env, dict(workload.env_kwargs))

    return build(workload, config, [env_fn] * workload.parallelism.total_envs, probe.seed)


def replay_in_order(buffer: Any, batch: dict[str, Any], discrete: bool = False) -> str | None:
    """The probe's transitions in the built replay buffer, one per row as the collector adds them for
    a single env, in order (actions as the collector stores them: indices, or continuous actions in
    the policy's [-1, 1] space, mapped to the env's bounds only when stepping: ``Policy.map_action``);
    or why that buffer cannot hold them so."""
    import numpy as np

    size = len(batch["rewards"])
    if buffer.buffer_num != 1 or buffer.maxsize < size:
        return (f"the built replay buffer ({buffer.buffer_num} sub-buffers of {buffer.maxsize // buffer.buffer_num}) "
                f"cannot hold the probe's {size} transitions in order")
    buffer.reset()
    actions = batch["actions"].astype(np.int64 if discrete else np.float32)
    add_steps(buffer, [{"obs": batch["obs"][i:i + 1].astype(np.float32), "act": actions[i:i + 1],
                        "rew": batch["rewards"][i:i + 1].astype(np.float32),
                        "terminated": batch["terminated"][i:i + 1], "truncated": batch["truncated"][i:i + 1],
                        "obs_next": batch["next_obs"][i:i + 1].astype(np.float32)} for i in range(size)])
    return None


@contextmanager
def keeping_td_targets(algorithm: Any, size: int) -> Iterator[dict[str, Any]]:
    """Inside the block, the algorithm's own ``_preprocess_batch`` also writes the TD targets it
    computes into ``kept["q_target"]`` (row ``i``: the buffer's transition ``i``; absent if it never
    ran); after it, the class's method again."""
    import numpy as np

    kept: dict[str, Any] = {}
    preprocess = algorithm._preprocess_batch

    def preprocess_and_keep(sampled: Any, buffer: Any, indices: np.ndarray) -> Any:
        prepared = preprocess(sampled, buffer, indices)
        kept.setdefault("q_target", np.zeros(size))[np.asarray(indices)] = \
            prepared.returns.detach().cpu().numpy().ravel()
        return prepared

    algorithm._preprocess_batch = preprocess_and_keep
    try:
        yield kept
    finally:
        del algorithm._preprocess_batch  # the class's method again


def add_steps(buffer: Any, steps: list[dict[str, Any]]) -> None:
    """Add one vector step per entry of ``steps`` to ``buffer`` as ``Collector.collect`` adds it
    (``tianshou/data/collector.py``, step 6): one transition per env, ``done = terminated or truncated``."""
    import numpy as np
    from tianshou.data import Batch

    for step in steps:
        envs = len(step["rew"])
        terminated = np.asarray(step["terminated"], dtype=bool)
        truncated = np.asarray(step["truncated"], dtype=bool)
        buffer.add(Batch(obs=step["obs"], act=step["act"], rew=step["rew"], terminated=terminated,
                         truncated=truncated, done=np.logical_or(terminated, truncated), obs_next=step["obs_next"],
                         info=Batch(), policy=Batch()), buffer_ids=np.arange(envs))


def optimizer_defaults(optimizer: Any) -> dict[str, Any]:
    """Class and epsilon of a torch optimizer, or of the one inside Tianshou's ``Algorithm.Optimizer``."""
    torch_optimizer = getattr(optimizer, "_optim", optimizer)
    name = type(torch_optimizer).__name__
    settings = torch_optimizer.defaults
    if name == "RMSprop":
        return {"optimizer": name, "rmsprop_eps": settings.get("eps"), "rmsprop_alpha": settings.get("alpha"),
                "rmsprop_centered": settings.get("centered"), "rmsprop_momentum": settings.get("momentum")}
    return {"optimizer": name, "adam_eps": settings.get("eps"), "adam_betas": list(settings.get("betas", ()))}


def network_defaults(*modules: Any) -> dict[str, Any]:
    """What the networks were built with: Tianshou's ``MLP`` (``tianshou/utils/net/common.py``) applies
    no initialisation of its own, so each layer keeps ``torch.nn.Linear``'s; read back as the layer
    classes found."""
    classes = sorted({type(layer).__name__ for module in modules for layer in linear_layers(module)})
    return {"initialization": f"torch default ({', '.join(classes)}: kaiming_uniform(a=sqrt 5))",
            "observation_normalization": False}


class _Recorded:
    """Looks up what the collecting policy computed for observations (one row each), as tensors."""

    def __init__(self, observations: np.ndarray, values: np.ndarray) -> None:
        import numpy as np

        rows = np.asarray(observations, dtype=np.float32).reshape(len(values), -1)
        self.table = {row.tobytes(): float(value) for row, value in zip(rows, np.asarray(values).ravel(), strict=True)}

    def __call__(self, observations: Any) -> Any:
        import numpy as np
        import torch

        rows = np.asarray(observations.detach().cpu() if hasattr(observations, "detach") else observations,
                          dtype=np.float32)
        rows = rows.reshape(len(rows), -1)
        return torch.tensor([self.table[row.tobytes()] for row in rows], dtype=torch.float32)


def _collecting_critic(table: _Recorded) -> Any:
    import torch

    class CollectingCritic(torch.nn.Module):
        """Stands in for the critic that collected the rollout: its values of these observations."""

        def forward(self, obs: Any, *_: Any, **__: Any) -> Any:
            return table(obs).unsqueeze(-1)

    return CollectingCritic()


def _collecting_policy(table: _Recorded) -> Any:
    import torch
    from tianshou.data import Batch

    class RecordedLogProb:
        def __init__(self, log_prob: Any) -> None:
            self._log_prob = log_prob

        def log_prob(self, _actions: Any) -> Any:
            return self._log_prob

    class CollectingPolicy(torch.nn.Module):
        """Stands in for the policy that collected the rollout: its log-probability of the actions taken."""

        def forward(self, batch: Any, *_: Any, **__: Any) -> Any:
            return Batch(dist=RecordedLogProb(table(batch.obs)))

    return CollectingPolicy()


@contextmanager
def _replaced(owner: Any, **modules: Any) -> Iterator[None]:
    originals = {name: getattr(owner, name) for name in modules}
    for name, module in modules.items():
        setattr(owner, name, module)
    try:
        yield
    finally:
        for name, module in originals.items():
            setattr(owner, name, module)


def on_policy_parameters(algorithm: Any, probe: ParityProbe) -> dict[str, Any]:
    """The probe's weights in Tianshou's ``DiscreteActor`` (``preprocess`` Net + ``last``) and
    ``DiscreteCritic``: canonical name -> parameter."""
    layers = len(probe.network["hidden_sizes"]) + 1
    return {**load_linear_stack(linear_layers(algorithm.policy.actor), stack_names("policy", layers), probe.weights),
            **load_linear_stack(linear_layers(algorithm.critic), stack_names("value", layers), probe.weights)}


def run_on_policy_update(setup: TianshouSetup, probe: ParityProbe, collected_by_other: bool) -> dict[str, Any]:
    """Fill the collector's buffer with the rollout, then Tianshou's ``OnPolicyAlgorithm.update`` on it
    as ``OnPolicyTrainer._update_step`` calls it. Tianshou evaluates the rollout's old values (and PPO's
    old log-probabilities) at the start of the update, with the networks that collected it. Where the
    probe's collecting networks differ from its updated ones (``collected_by_other``: PPO's probe),
    Tianshou's critic and policy answer with the values and log-probabilities the probe's collecting
    policy gave while its ``_preprocess_batch`` runs; otherwise (A2C's) Tianshou's own networks do."""
    import numpy as np
    from tianshou.utils.torch_utils import policy_within_training_step

    algorithm, buffer, batch = setup.algorithm, setup.collector.buffer, probe.batch
    steps, envs = batch["rewards"].shape
    if buffer.buffer_num != envs or buffer.maxsize != steps * envs:
        raise RuntimeError(f"the built buffer holds {buffer.buffer_num} x {buffer.maxsize // buffer.buffer_num} "
                           f"transitions, the probe's rollout is {envs} x {steps}")
    float32 = lambda array: np.asarray(array, dtype=np.float32)  # noqa: E731
    ended = np.maximum(batch["terminated"], batch["truncated"]).astype(bool)
    buffer.reset()
    rows = []
    for t in range(steps):
        # the observation after step t: the episode's final one where it ended, else the next step's
        following = batch["last_obs"] if t == steps - 1 else batch["obs"][t + 1]
        obs_next = np.where(ended[t][:, None], batch["terminal_obs"][t], following)
        rows.append({"obs": float32(batch["obs"][t]), "act": batch["actions"][t].astype(np.int64),
                     "rew": float32(batch["rewards"][t]), "terminated": batch["terminated"][t],
                     "truncated": batch["truncated"][t], "obs_next": float32(obs_next)})
    add_steps(buffer, rows)
    replaced = {}
    if collected_by_other:
        # the collecting critic's values: of every observation, of the final observations of truncated
        # episodes (terminated ones are masked by Tianshou's value_mask) and of the observations after the rollout
        observed = np.concatenate([batch["obs"].reshape(steps * envs, -1),
                                   batch["terminal_obs"].reshape(steps * envs, -1), batch["last_obs"]])
        values = np.concatenate([batch["old_values"].ravel(),
                                 (batch["terminal_values"] * batch["truncated"]).ravel(), batch["last_values"]])
        replaced = {"critic": _collecting_critic(_Recorded(observed, values)),
                    "policy": _collecting_policy(_Recorded(batch["obs"].reshape(steps * envs, -1),
                                                           batch["old_log_prob"].ravel()))}
    captured: dict[str, Any] = {}
    preprocess = algorithm._preprocess_batch

    def preprocess_with_collecting_networks(sampled: Any, buffer: Any, indices: np.ndarray) -> Any:
        with _replaced(algorithm, **replaced):
            prepared = preprocess(sampled, buffer, indices)
        captured.update(indices=np.asarray(indices), returns=np.asarray(prepared.returns, dtype=np.float64).copy())
        if hasattr(prepared, "adv"):  # PG's batch has returns only
            captured["adv"] = prepared.adv.detach().cpu().numpy().copy()
        return prepared

    algorithm._preprocess_batch = preprocess_with_collecting_networks
    try:
        with OneStep(algorithm.optim._optim) as step, policy_within_training_step(algorithm.policy):
            stats = algorithm.update(buffer=buffer, batch_size=setup.trainer_params.get("batch_size"),
                                     repeat=setup.trainer_params.get("update_step_num_repetitions", 1))
    finally:
        del algorithm._preprocess_batch  # the class's method again
    # buffer index -> (time step, env): env e's rollout is sub-buffer e, in order
    index = captured["indices"]
    position = (index % steps, index // steps)
    targets = {}
    for key, name in (("adv", "advantages"), ("returns", "returns")):
        if key in captured:
            targets[name] = np.zeros((steps, envs))
            targets[name][position] = captured[key]
    return {"step": step, "stats": stats, "targets": targets}


def ppo_update(adapter: TianshouAdapter, probe: ParityProbe) -> ParityOutcome:
    """One PPO minibatch step: Tianshou's GAE (``A2C._add_returns_and_advantages``) and
    ``PPO._update_with_batch`` (``tianshou/algorithm/modelfree/ppo.py``)."""
    if not probe.discrete:
        return ParityOutcome.unverifiable("the Tianshou adapter runs PPO on discrete actions only")
    setup = built_setup(adapter, probe)
    try:
        algorithm = setup.algorithm
        parameters = on_policy_parameters(algorithm, probe)
        result = run_on_policy_update(setup, probe, collected_by_other=True)
        step, stats = result["step"], result["stats"]
        if step.steps != 1:
            return ParityOutcome.unverifiable(f"Tianshou made {step.steps} optimizer steps on one minibatch")
        return ParityOutcome(
            RAN, targets=result["targets"], gradients=step.gradients_of(parameters), updated=values_of(parameters),
            losses={"policy": stats.actor_loss.mean, "value": stats.vf_loss.mean,
                    "entropy": -stats.ent_loss.mean, "total": stats.loss.mean},
            notes=(ON_POLICY_NOTE, NUMBA_NOTE), defaults=on_policy_defaults(setup),
        )
    finally:
        setup.close()


def a2c_update(adapter: TianshouAdapter, probe: ParityProbe) -> ParityOutcome:
    """One full-batch A2C step: Tianshou's GAE (``A2C._add_returns_and_advantages``, over the values of
    the critic being updated, as A2C collects with it) and ``A2C._update_with_batch``
    (``tianshou/algorithm/modelfree/a2c.py``)."""
    if not probe.discrete:
        return ParityOutcome.unverifiable("the Tianshou adapter runs A2C on discrete actions only")
    setup = built_setup(adapter, probe)
    try:
        algorithm = setup.algorithm
        parameters = on_policy_parameters(algorithm, probe)
        result = run_on_policy_update(setup, probe, collected_by_other=False)
        step, stats = result["step"], result["stats"]
        if step.steps != 1:
            return ParityOutcome.unverifiable(f"Tianshou made {step.steps} optimizer steps on one rollout")
        return ParityOutcome(
            RAN, targets=result["targets"], gradients=step.gradients_of(parameters), updated=values_of(parameters),
            losses={"policy": stats.actor_loss.mean, "value": stats.vf_loss.mean,
                    "entropy": -stats.ent_loss.mean, "total": stats.loss.mean},
            notes=("Tianshou's _preprocess_batch evaluated the rollout's values with its own critic (the "
                   "probe's network, which collected it)", NUMBA_NOTE),
            defaults=on_policy_defaults(setup),
        )
    finally:
        setup.close()


def pg_update(adapter: TianshouAdapter, probe: ParityProbe) -> ParityOutcome:
    """One full-batch REINFORCE step: Tianshou's Monte Carlo returns
    (``DiscountedReturnComputation.add_discounted_returns``, ``compute_episodic_return`` with
    ``gae_lambda`` 1 and no bootstrap, optionally standardized by running statistics) and
    ``Reinforce._update_with_batch`` (``tianshou/algorithm/modelfree/reinforce.py``)."""
    if not probe.discrete:
        return ParityOutcome.unverifiable("the Tianshou adapter runs PG on discrete actions only")
    setup = built_setup(adapter, probe)
    try:
        algorithm = setup.algorithm
        layers = len(probe.network["hidden_sizes"]) + 1
        parameters = load_linear_stack(linear_layers(algorithm.policy.actor), stack_names("policy", layers),
                                       probe.weights)
        result = run_on_policy_update(setup, probe, collected_by_other=False)
        step, stats = result["step"], result["stats"]
        if step.steps != 1:
            return ParityOutcome.unverifiable(f"Tianshou made {step.steps} optimizer steps on one rollout")
        computation = algorithm.discounted_return_computation
        return ParityOutcome(
            RAN, targets=result["targets"], gradients=step.gradients_of(parameters), updated=values_of(parameters),
            losses={"policy": stats.loss.mean, "total": stats.loss.mean},
            notes=(NUMBA_NOTE,),
            defaults={**optimizer_defaults(algorithm.optim), **network_defaults(algorithm.policy.actor),
                      "reward_normalization": False,
                      "learning_rate_schedule": "constant" if not getattr(algorithm, "lr_schedulers", None) else
                      ", ".join(type(s).__name__ for s in algorithm.lr_schedulers),
                      "return_standardization": "running" if computation.return_standardization else "none",
                      "return_standardization_eps": computation.eps, "gamma": computation.gamma,
                      "max_grad_norm": algorithm.optim._max_grad_norm,
                      "action_distribution": _distribution_name(algorithm.policy)},
        )
    finally:
        setup.close()


ON_POLICY_NOTE = ("Tianshou stores no values or log-probabilities when collecting: its _preprocess_batch evaluates "
                  "them at the start of the update with the networks that collected (the same ones on-policy); "
                  "the probe's collecting networks differ from its updated ones, so during that preprocessing "
                  "Tianshou's critic and policy answer with the probe's stored values and log-probabilities")


def on_policy_defaults(setup: TianshouSetup) -> dict[str, Any]:
    """What Tianshou's A2C/PPO really use, read back from the built objects."""
    from tianshou.utils.net.common import ActorCritic

    algorithm = setup.algorithm
    optim = algorithm.optim
    defaults: dict[str, Any] = {**optimizer_defaults(optim),
                                **network_defaults(algorithm.policy.actor, algorithm.critic),
                                "reward_normalization": bool(algorithm.return_scaling),
                                "learning_rate_schedule": "constant" if not algorithm.lr_schedulers else
                                ", ".join(type(s).__name__ for s in algorithm.lr_schedulers),
                                "max_grad_norm": optim._max_grad_norm,
                                # the clipping wrapper holds ActorCritic(actor, critic): one norm over both
                                "grad_clip_scope": "joint" if isinstance(optim._module, ActorCritic) else
                                type(optim._module).__name__,
                                "gae_lambda": algorithm.gae_lambda, "gamma": algorithm.gamma,
                                "value_loss": "mse", "action_distribution": _distribution_name(algorithm.policy)}
    if hasattr(algorithm, "eps_clip"):  # PPO
        defaults.update(value_clipping="clip_range (max of clipped and unclipped)" if algorithm.value_clip else "off",
                        advantage_normalization="per minibatch, unbiased std + 1e-8"
                        if algorithm.advantage_normalization else "off",
                        dual_clip=algorithm.dual_clip, recompute_advantage=bool(algorithm.recompute_adv),
                        clip_range=algorithm.eps_clip)
    else:  # A2C: _update_with_batch has no normalization
        defaults["advantage_normalization"] = "off"
    defaults.update(vf_coef=algorithm.vf_coef, ent_coef=algorithm.ent_coef)
    return defaults


def _distribution_name(policy: Any) -> str:
    dist_fn = getattr(policy, "dist_fn", None)
    return getattr(dist_fn, "__qualname__", repr(dist_fn))
