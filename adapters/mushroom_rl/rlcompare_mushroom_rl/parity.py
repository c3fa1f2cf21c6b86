"""MushroomRL's own ``fit`` on rlcompare's parity probes.

The agent is built by the adapter's own :func:`rlcompare_mushroom_rl.build.build` from the probe's
workload (the networks, optimizers and agent ``train()`` runs), the probe's weights are loaded into
the adapter's torch modules inside MushroomRL's approximators, the batch goes to ``agent.fit`` as the
dataset ``Core`` would hand it (a list of ``(s, a, r, s', absorbing, last)`` samples, one env's
rollout after the other), and MushroomRL's own code does the rest, every optimizer wrapped in
:class:`OneStep`.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from rlcompare.adapter import ParityOutcome, ParityProbe, make_env
from rlcompare.harness.parity import RAN
from rlcompare.harness.parity_torch import (
    OneStep,
    linear_layers,
    load_linear_stack,
    load_tensor,
    stack_names,
    values_of,
)

if TYPE_CHECKING:
    from rlcompare_mushroom_rl import MushroomRLAdapter
    from rlcompare_mushroom_rl.build import MushroomSetup


def build_setup(adapter: MushroomRLAdapter, probe: ParityProbe) -> MushroomSetup:
    """The adapter's own build of the probe's workload, on an uncounted environment."""
    from rlcompare_mushroom_rl.build import build

    workload = probe.workload_view()
    config, _ = adapter.native_config(workload)
    return build(workload, config, functools.partial(make_env, workload.env, dict(workload.env_kwargs)), probe.seed)


def network_of(approximator: Any, index: int = 0) -> Any:
    """The torch module inside a MushroomRL ``Regressor`` (of one model, or model ``index`` of an ensemble)."""
    return approximator[index].network


def load_mlp(module: Any, prefix: str, probe: ParityProbe, out: str = "out") -> dict[str, Any]:
    layers = linear_layers(module)
    return load_linear_stack(layers, stack_names(prefix, len(layers), out), probe.weights)


def optimizer_defaults(optimizer: Any) -> dict[str, Any]:
    return {"optimizer": type(optimizer).__name__, "adam_eps": optimizer.defaults.get("eps"),
            "adam_betas": list(optimizer.defaults.get("betas", ())) or None}


# -------------------------------------------------------------------------------------------------
# PPO
# -------------------------------------------------------------------------------------------------


def rollout_dataset(probe: ParityProbe) -> tuple[list[tuple[Any, ...]], np.ndarray, np.ndarray]:
    """The probe's rollout as MushroomRL's dataset, env 0's steps then env 1's: ``absorbing`` where
    the episode terminated, ``last`` where it ended or the rollout did (MushroomRL's ``compute_gae``
    restarts there and bootstraps from ``V(s')`` unless absorbing); ``s'`` is the final observation
    of a truncated episode, the next one otherwise. Also the collecting critic's values of ``s`` and
    ``s'`` in the same order."""
    batch = probe.batch
    steps, envs = batch["rewards"].shape
    dataset, values, next_values = [], [], []
    for env in range(envs):
        for t in range(steps):
            terminated = bool(batch["terminated"][t, env] > 0.5)
            truncated = bool(batch["truncated"][t, env] > 0.5)
            if terminated or truncated:
                following, value = batch["terminal_obs"][t, env], batch["terminal_values"][t, env]
            elif t == steps - 1:
                following, value = batch["last_obs"][env], batch["last_values"][env]
            else:
                following, value = batch["obs"][t + 1, env], batch["old_values"][t + 1, env]
            action = np.atleast_1d(np.asarray(batch["actions"][t, env], dtype=np.float64))
            dataset.append((np.asarray(batch["obs"][t, env], dtype=np.float32), action,
                            float(batch["rewards"][t, env]), np.asarray(following, dtype=np.float32), terminated,
                            terminated or truncated or t == steps - 1))
            values.append(batch["old_values"][t, env])
            next_values.append(0.0 if terminated else value)
    return dataset, np.asarray(values, dtype=np.float32)[:, None], np.asarray(next_values, dtype=np.float32)[:, None]


class StoredValues:
    """Answers MushroomRL's ``compute_gae`` for the dataset's states and next states with the values
    the collecting critic gave them (the probe's stored values). In training that critic is the agent's
    ``_V`` itself (it changes only in ``fit``); the probe's batch was collected by other weights."""

    def __init__(self, states: np.ndarray, values: np.ndarray, next_states: np.ndarray, next_values: np.ndarray) -> None:
        self.known = [(states, values), (next_states, next_values)]
        self.answered = 0

    def __call__(self, states: np.ndarray, **_: Any) -> np.ndarray:
        for known, values in self.known:
            if np.array_equal(np.asarray(states, dtype=np.float32), known):
                self.answered += 1
                return values
        raise RuntimeError("compute_gae asked for values of states that are not the probe's")


@contextlib.contextmanager
def stored_gae(module: Any, stored: StoredValues, captured: dict[str, Any]) -> Iterator[None]:
    """Inside, ``module.compute_gae`` (MushroomRL's own) runs on the stored values; its targets go to
    ``captured``."""
    original = module.compute_gae

    def compute_gae(_critic: Any, *args: Any, **kwargs: Any) -> Any:
        returns, advantages = original(stored, *args, **kwargs)
        captured["returns"], captured["advantages"] = np.array(returns), np.array(advantages)
        return returns, advantages

    module.compute_gae = compute_gae
    try:
        yield
    finally:
        module.compute_gae = original


def ppo_update(adapter: MushroomRLAdapter, probe: ParityProbe) -> ParityOutcome:
    """One epoch of one minibatch of MushroomRL's ``PPO.fit`` on the probe's rollout."""
    import torch

    setup = build_setup(adapter, probe)
    try:
        agent = setup.agent
        policy = agent.policy
        if probe.discrete:
            params = load_mlp(policy._logits.model.network, "policy", probe)
        else:
            params = load_mlp(policy._mu.model.network, "policy", probe)
            load_tensor(policy._log_sigma, probe.weights["policy.log_std"])
            params["policy.log_std"] = policy._log_sigma
        params.update(load_mlp(network_of(agent._V), "value", probe))
        dataset, values, next_values = rollout_dataset(probe)
        states = np.stack([sample[0] for sample in dataset])
        next_states = np.stack([sample[3] for sample in dataset])
        stored = StoredValues(states, values, next_states, next_values)
        steps, envs = probe.batch["rewards"].shape
        old_log_prob = torch.as_tensor(probe.batch["old_log_prob"].T.reshape(-1, 1), dtype=torch.float32)
        original_update = agent._update_policy

        def update_policy(obs: Any, act: Any, adv: Any, _recomputed: Any) -> None:
            # the collecting policy's log-probabilities: in training PPO.fit's own recomputation gives them
            # (the policy changes only in fit), the probe's batch was collected by other weights
            original_update(obs, act, adv, old_log_prob)

        agent._update_policy = update_policy
        captured: dict[str, Any] = {}
        module = importlib.import_module(type(agent).__module__)
        critic_optimizer = network_owner(agent._V)._optimizer
        with stored_gae(module, stored, captured), OneStep(agent._optimizer, critic_optimizer) as step:
            agent.fit(dataset)
        if step.steps != 2 or stored.answered != 2:
            return ParityOutcome.unverifiable(f"MushroomRL's PPO.fit made {step.steps} optimizer steps (2 expected) "
                                              f"and asked for {stored.answered} value arrays (2 expected)")
        shape = lambda array: np.asarray(array, dtype=np.float64).reshape(envs, steps).T  # noqa: E731
        return ParityOutcome(
            RAN, targets={"advantages": shape(captured["advantages"]), "returns": shape(captured["returns"])},
            gradients=step.gradients_of(params), updated=values_of(params),
            defaults={**optimizer_defaults(agent._optimizer),
                      "critic_optimizer": optimizer_defaults(critic_optimizer),
                      "initialization": "PyTorch's default Linear init (the adapter's modules leave it)",
                      "advantage_normalization": "whole rollout, (A - mean) / (np.std(A) + 1e-8), biased std "
                                                 "(PPO.fit)",
                      "value_loss": "value_coef * F.mse_loss, the critic's own Adam (TorchApproximator.fit)",
                      "value_clipping": "off", "grad_clip_scope": "none",
                      "log_std_init": None if probe.discrete else float(np.log(1.0)),
                      "action_squashing": "none" if probe.discrete else "clip (in the environment wrapper)",
                      "observation_normalization": "none", "reward_normalization": "none",
                      "learning_rate_schedule": "constant"},
            notes=("the rollout is one dataset, env 0's steps then env 1's, each env's last step marked last",
                   "compute_gae and the ratio use the probe's stored values and log-probabilities (the collecting "
                   "critic's and policy's; in training PPO.fit reads them from its own networks, which only fit "
                   "changes)",
                   "the critic is fitted first with its own Adam (one epoch, one minibatch), then the policy"),
        )
    finally:
        setup.close()


def network_owner(approximator: Any, index: int = 0) -> Any:
    """The ``TorchApproximator`` (model ``index``) inside a MushroomRL ``Regressor``."""
    return approximator[index]


# -------------------------------------------------------------------------------------------------
# DQN
# -------------------------------------------------------------------------------------------------


def replay_dataset(probe: ParityProbe) -> list[tuple[Any, ...]]:
    """The probe's transitions as MushroomRL's dataset: ``absorbing`` where terminated, ``last`` where
    the episode ended (terminated or truncated)."""
    batch = probe.batch
    dataset = []
    for i in range(len(batch["rewards"])):
        terminated = bool(batch["terminated"][i] > 0.5)
        action = np.atleast_1d(np.asarray(batch["actions"][i], dtype=np.float64))
        if probe.discrete:
            action = action.astype(np.int64)
        dataset.append((np.asarray(batch["obs"][i], dtype=np.float32), action, float(batch["rewards"][i]),
                        np.asarray(batch["next_obs"][i], dtype=np.float32), terminated,
                        terminated or bool(batch["truncated"][i] > 0.5)))
    return dataset


@contextlib.contextmanager
def sampled_in_order(memory: Any) -> Iterator[None]:
    """Inside, ``ReplayMemory.get(n)`` returns its first ``n`` transitions in order (MushroomRL draws
    ``np.random.randint(size, size=n)``: uniform with replacement), built as its own ``get`` builds them."""

    def get(n_samples: int) -> tuple[np.ndarray, ...]:
        rows = range(int(n_samples))
        return (np.array([np.array(memory._states[i]) for i in rows]), np.array([memory._actions[i] for i in rows]),
                np.array([memory._rewards[i] for i in rows]),
                np.array([np.array(memory._next_states[i]) for i in rows]),
                np.array([memory._absorbing[i] for i in rows]), np.array([memory._last[i] for i in rows]))

    memory.get = get
    try:
        yield
    finally:
        del memory.get


@contextlib.contextmanager
def capturing_fit_targets(approximator: Any, captured: dict[str, Any], key: str = "q_target") -> Iterator[None]:
    """Inside, the targets MushroomRL hands ``approximator.fit`` (its last positional argument) go to
    ``captured[key]``."""
    original = approximator.fit

    def fit(*args: Any, **kwargs: Any) -> Any:
        captured[key] = np.asarray(args[-1], dtype=np.float64).reshape(-1)
        return original(*args, **kwargs)

    approximator.fit = fit
    try:
        yield
    finally:
        del approximator.fit


def dqn_update(adapter: MushroomRLAdapter, probe: ParityProbe) -> ParityOutcome:
    """One gradient step of MushroomRL's ``DQN.fit`` (or ``DoubleDQN``) on the probe's batch."""
    setup = build_setup(adapter, probe)
    try:
        agent = setup.agent
        if setup.extra_fits:
            return ParityOutcome.unverifiable(f"the probe's workload mapped to {setup.extra_fits + 1} fits per update")
        online = load_mlp(network_of(agent.approximator), "q", probe)
        target = load_mlp(network_of(agent.target_approximator), "q_target", probe)
        dataset = replay_dataset(probe)
        if agent._batch_size() != len(dataset):
            return ParityOutcome.unverifiable(f"MushroomRL's batch_size is {agent._batch_size()}, the probe's batch "
                                              f"{len(dataset)}")
        captured: dict[str, Any] = {}
        optimizer = network_owner(agent.approximator)._optimizer
        with sampled_in_order(agent._replay_memory), capturing_fit_targets(agent.approximator, captured), \
                OneStep(optimizer) as step:
            agent.fit(dataset)
        if step.steps != 1 or "q_target" not in captured:
            return ParityOutcome.unverifiable(f"MushroomRL's DQN.fit made {step.steps} optimizer steps")
        return ParityOutcome(
            RAN, targets={"q_target": captured["q_target"]}, gradients=step.gradients_of(online),
            updated={**values_of(online), **values_of(target)},
            defaults={**optimizer_defaults(optimizer),
                      "initialization": "PyTorch's default Linear init (the adapter's modules leave it)",
                      "td_loss": "huber (F.smooth_l1_loss, the adapter's loss for TorchApproximator)",
                      "max_grad_norm": "none (TorchApproximator._fit_batch does not clip)",
                      "double_q": type(agent).__name__ == "DoubleDQN", "truncation_bootstrap": True,
                      "target_update": f"hard copy every {agent._target_update_frequency} fits (AbstractDQN.fit, "
                                       "after the fit's gradient step)",
                      "replay_sampling": "uniform with replacement (ReplayMemory.get)",
                      "observation_normalization": "none", "reward_normalization": "none"},
            notes=("the minibatch is the probe's batch in order, built as ReplayMemory.get builds it, instead of "
                   "uniform draws with replacement",
                   "truncated transitions are last but not absorbing: MushroomRL bootstraps them"),
        )
    finally:
        setup.close()


# -------------------------------------------------------------------------------------------------
# TD3 and DDPG
# -------------------------------------------------------------------------------------------------


def td3_update(adapter: MushroomRLAdapter, probe: ParityProbe) -> ParityOutcome:
    """One fit of MushroomRL's ``TD3`` (or ``DDPG``): the critic step(s), the actor's (fit count 0 is
    an actor step), the Polyak steps of every target, on the probe's batch."""
    setup = build_setup(adapter, probe)
    try:
        agent = setup.agent
        td3 = probe.family == "TD3"
        if setup.extra_fits:
            return ParityOutcome.unverifiable(f"the probe's workload mapped to {setup.extra_fits + 1} fits per update")
        params = {**load_mlp(network_of(agent._actor_approximator), "actor", probe),
                  **load_mlp(network_of(agent._target_actor_approximator), "actor_target", probe)}
        critics = 2 if td3 else 1
        for index in range(critics):
            name = f"critic{index + 1}"
            params.update(load_mlp(network_of(agent._critic_approximator, index), name, probe))
            params.update(load_mlp(network_of(agent._target_critic_approximator, index), f"{name}_target", probe))
        dataset = replay_dataset(probe)
        captured: dict[str, Any] = {}
        optimizers = [agent._optimizer] + [network_owner(agent._critic_approximator, index)._optimizer
                                           for index in range(critics)]
        with sampled_in_order(agent._replay_memory), capturing_fit_targets(agent._critic_approximator, captured), \
                OneStep(*optimizers) as step:
            agent.fit(dataset)
        if step.steps != len(optimizers) or "q_target" not in captured:
            return ParityOutcome.unverifiable(f"MushroomRL's {probe.family}.fit made {step.steps} optimizer steps")
        return ParityOutcome(
            RAN, targets={"q_target": captured["q_target"]}, gradients=step.gradients_of(params),
            updated=values_of(params),
            defaults={**optimizer_defaults(agent._optimizer),
                      "initialization": "PyTorch's default Linear init (the adapter's modules leave it)",
                      "critic_loss": "F.mse_loss per critic, each its own Adam", "action_squashing": "tanh",
                      "action_bounds": "[-1, 1] (RescaleAction around the env)",
                      "target_update": f"polyak tau={agent._tau()} for every target after every fit",
                      "truncation_bootstrap": True},
            notes=("the minibatch is the probe's batch in order instead of uniform draws with replacement",
                   "MushroomRL's target policy smoothing draws np.random.normal; the probe's noise is 0"),
        )
    finally:
        setup.close()
