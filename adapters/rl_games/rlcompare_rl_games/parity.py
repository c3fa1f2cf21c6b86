"""rl_games' own PPO epoch on rlcompare's PPO parity probe.

The agent is built exactly as ``train()`` builds it (:func:`rlcompare_rl_games.run.build_on`, the
adapter's own mapping of the probe's workload: one epoch of one minibatch), on an ``IVecEnv`` that
replays the probe's batch (:class:`ReplayVecEnv`). Then rl_games' own ``train_epoch``
(``rl_games/common/a2c_common.py``) runs once:

1. ``play_steps`` steps the replay env for ``horizon_length`` steps; the acting (``get_action_values``)
   hands it the probe's stored actions, values and log-probabilities (the collecting policy's), and
   the value of the last observation (``get_values``) is the probe's ``last_values``: in rl_games that
   value is computed before the update by the network that collected, which the probe's behaviour
   policy stands for. ``play_steps`` itself applies the reward shaper, the truncation handling
   (``value_bootstrap``) and rl_games' GAE (``discount_values``);
2. ``prepare_dataset`` forms and normalizes the advantages; the mini-epoch loop calls
   ``train_actor_critic`` on the one minibatch: the losses (``common_losses``, ``calc_gradients`` /
   ``calc_losses``), ``clip_grad_norm_`` and the optimizer step, which :class:`OneStep` records.

The probe's weights are loaded into the model's ``a2c_network`` (``network_builder.A2CBuilder``):
``actor_mlp`` + ``logits`` / ``mu`` (+ ``sigma``, the state-independent log-std) and ``critic_mlp`` +
``value`` (``separate=True``).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rlcompare.adapter import ParityOutcome, ParityProbe
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
    from rlcompare_rl_games import RlGamesAdapter


class ReplayVecEnv:
    """rl_games' ``IVecEnv`` that replays the probe's batch: ``reset`` gives the first observations,
    step ``t`` the rewards, ``done = terminated or truncated`` and ``info['time_outs']`` (truncated,
    not terminated) of step ``t`` and the next observations (``last_obs`` after the last step)."""

    def __init__(self, probe: ParityProbe, observation_space: Any, action_space: Any) -> None:
        self.batch = probe.batch
        self.observation_space = observation_space
        self.action_space = action_space
        self.t = 0
        self.actions_seen: list[np.ndarray] = []

    def reset(self) -> np.ndarray:
        self.t = 0
        return np.asarray(self.batch["obs"][0], dtype=np.float32)

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        batch, t = self.batch, self.t
        self.actions_seen.append(np.asarray(actions))
        steps = batch["rewards"].shape[0]
        following = batch["last_obs"] if t == steps - 1 else batch["obs"][t + 1]
        terminated, truncated = batch["terminated"][t] > 0.5, batch["truncated"][t] > 0.5
        self.t += 1
        return (np.asarray(following, dtype=np.float32), batch["rewards"][t].astype(np.float32),
                (terminated | truncated).astype(np.uint8), {"time_outs": (truncated & ~terminated).astype(np.float32)})

    def get_number_of_agents(self) -> int:
        return 1

    def has_action_masks(self) -> bool:
        return False

    def get_env_info(self) -> dict[str, Any]:
        return {"observation_space": self.observation_space, "action_space": self.action_space, "agents": 1,
                "value_size": 1}

    def set_train_info(self, env_frames: int, *args: Any, **kwargs: Any) -> None:
        pass

    def seed(self, seed: int) -> None:
        pass

    def get_env_state(self) -> None:
        return None

    def set_env_state(self, env_state: Any) -> None:
        pass

    def close(self) -> None:
        pass


def _refusal(agent: Any) -> str | None:
    """Why the built agent cannot stand for the canonical update on the probe, if it cannot."""
    if agent.is_rnn:
        return "an RNN model"
    if agent.has_central_value:
        return "a central value network"
    if agent.mini_epochs_num != 1 or len(agent.dataset) != 1:
        return f"{agent.mini_epochs_num} mini-epoch(s) of {len(agent.dataset)} minibatch(es): one step needs one of each"
    if not agent.model.a2c_network.separate:
        return "a shared actor-critic trunk (separate=False)"
    return None


def _parameters(agent: Any, probe: ParityProbe) -> dict[str, Any]:
    """The probe's weights in rl_games' A2CBuilder.Network (module docstring)."""
    net = agent.model.a2c_network
    layers = len(probe.network["hidden_sizes"]) + 1
    head = net.logits if probe.discrete else net.mu
    parameters = {
        **load_linear_stack([*linear_layers(net.actor_mlp), head], stack_names("policy", layers), probe.weights),
        **load_linear_stack([*linear_layers(net.critic_mlp), net.value], stack_names("value", layers), probe.weights),
    }
    if not probe.discrete:
        load_tensor(net.sigma, probe.weights["policy.log_std"])  # the log-std (continuous_a2c_logstd exponentiates it)
        parameters["policy.log_std"] = net.sigma
    return parameters


def ppo_update(adapter: RlGamesAdapter, probe: ParityProbe) -> ParityOutcome:
    """One rl_games PPO epoch (``train_epoch``) on the probe's batch."""
    import gymnasium
    import torch

    from rlcompare.adapter import make_env
    from rlcompare_rl_games.run import build_on

    workload = probe.workload_view()
    native, _ = adapter.native_config(workload)
    env = make_env(workload.env, dict(workload.env_kwargs))
    observation_space, action_space = env.observation_space, env.action_space
    env.close()
    replay: list[ReplayVecEnv] = []

    def make_vec_env(_num_actors: int) -> ReplayVecEnv:
        replay.append(ReplayVecEnv(probe, observation_space, action_space))
        return replay[-1]

    with tempfile.TemporaryDirectory(prefix="rlcompare-rl-games-parity-") as scratch:
        setup = build_on(workload, native, make_vec_env, probe.seed, Path(scratch) / "rl_games")
        agent = setup.agent
        try:
            refusal = _refusal(agent)
            if refusal is not None:
                return ParityOutcome.unverifiable(f"the adapter's configuration for the probe builds {refusal}",
                                                  defaults=_defaults(agent, probe, None))
            log_std_init = (None if probe.discrete else
                            float(agent.model.a2c_network.sigma.detach().mean()))
            parameters = _parameters(agent, probe)
            unmapped = [name for name, parameter in agent.model.named_parameters()
                        if not any(parameter is mapped for mapped in parameters.values())]
            if unmapped:
                return ParityOutcome.unverifiable(f"rl_games' model has parameters the canonical networks do not: "
                                                  f"{', '.join(unmapped)}")
            batch = probe.batch
            steps, envs = batch["rewards"].shape
            discrete = isinstance(action_space, gymnasium.spaces.Discrete)
            step_index = {"t": 0}

            def stored_action_values(obs: dict[str, Any]) -> dict[str, Any]:
                """The collecting policy's outputs at the current step, as ``get_action_values`` returns them."""
                t = step_index["t"]
                step_index["t"] += 1
                actions = torch.as_tensor(batch["actions"][t])
                result = {
                    "actions": actions.long() if discrete else actions.float(),
                    "values": torch.as_tensor(batch["old_values"][t], dtype=torch.float32).reshape(envs, 1),
                    "neglogpacs": -torch.as_tensor(batch["old_log_prob"][t], dtype=torch.float32),
                    "rnn_states": None,
                }
                if not discrete:
                    # the behaviour policy's mean and std only feed rl_games' KL statistics
                    shape = tuple(result["actions"].shape)
                    result.update(mus=torch.zeros(shape), sigmas=torch.ones(shape))
                return result

            def stored_last_values(obs: dict[str, Any]) -> Any:
                return torch.as_tensor(batch["last_values"], dtype=torch.float32).reshape(envs, 1)

            agent.get_action_values = stored_action_values
            agent.get_values = stored_last_values
            prepared: dict[str, Any] = {}
            prepare = agent.prepare_dataset

            def prepare_and_keep(batch_dict: dict[str, Any]) -> Any:
                prepared.update(returns=batch_dict["returns"].detach().clone(),
                                values=batch_dict["values"].detach().clone())
                return prepare(batch_dict)

            agent.prepare_dataset = prepare_and_keep
            # what the agent's train() does before its first epoch
            agent.init_tensors()
            agent.obs = agent.env_reset()
            with OneStep(agent.optimizer) as step:
                result = agent.train_epoch()
            if step.steps != 1:
                return ParityOutcome.unverifiable(f"rl_games made {step.steps} optimizer steps on one minibatch")

            def per_step(flat: Any) -> np.ndarray:  # env-major [N * T, 1] (swap_and_flatten01) -> [T, N]
                return flat.reshape(envs, steps).T.double().numpy()

            returns, values = per_step(prepared["returns"]), per_step(prepared["values"])
            a_losses, c_losses, entropies = result[4], result[5], result[-4]  # (..., kls, last_lr, lr_mul)
            policy_loss, value_loss = float(a_losses[0]), float(c_losses[0])
            entropy = float(entropies[0])
            hp = probe.hyperparameters
            losses = {"policy": policy_loss, "value": value_loss, "entropy": -entropy,
                      "total": policy_loss + hp["value_coef"] * value_loss - hp["entropy_coef"] * entropy}
            replayed = np.concatenate([np.asarray(a).reshape(-1) for a in replay[-1].actions_seen])
            if not np.allclose(replayed, np.asarray(batch["actions"], dtype=np.float64).reshape(-1), atol=1e-6):
                return ParityOutcome.unverifiable("rl_games stepped the replay env with other actions than the probe's")
            return ParityOutcome(
                RAN, targets={"advantages": returns - values, "returns": returns},
                gradients=step.gradients_of(parameters), updated=values_of(parameters), losses=losses,
                defaults=_defaults(agent, probe, log_std_init),
                notes=(
                    "policy = a2c_network.actor_mlp + logits (continuous: mu, and sigma as the log-std); value = "
                    "critic_mlp + value (separate=True): every parameter of the model mapped",
                    "rl_games' own play_steps ran over an IVecEnv replaying the batch, acting with the probe's stored "
                    "actions, values and log-probabilities; the last observation's value is the probe's last_values "
                    "(rl_games computes it before the update with the collecting network)",
                    "value_bootstrap=False: a truncated episode is cut like a terminated one",
                    "advantages normalized over the whole rollout (prepare_dataset): on the probe's single minibatch "
                    "the same as per minibatch",
                ),
            )
        finally:
            setup.close()


def _defaults(agent: Any, probe: ParityProbe, log_std_init: float | None) -> dict[str, Any]:
    """What rl_games built, read back from the agent (not from the adapter's mapping)."""
    optimizer = agent.optimizer
    defaults: dict[str, Any] = {
        "optimizer": type(optimizer).__name__, "adam_eps": optimizer.defaults.get("eps"),
        "adam_betas": list(optimizer.defaults.get("betas", ())), "learning_rate": optimizer.param_groups[0]["lr"],
        "learning_rate_schedule": type(agent.scheduler).__name__,
        "initialization": "PyTorch default weights, zero biases (initializer 'default')",
        "observation_normalization": bool(agent.normalize_input), "normalize_input": bool(agent.normalize_input),
        "reward_normalization": bool(agent.normalize_value), "normalize_value": bool(agent.normalize_value),
        "value_clipping": "max(clipped, unclipped)" if agent.clip_value else "off", "clip_value": bool(agent.clip_value),
        "value_loss": "mse", "critic_coef": float(agent.critic_coef),
        "advantage_normalization": "per rollout" if agent.normalize_advantage else "off",
        "advantage_std": "unbiased (torch.std) + 1e-8",
        "grad_clip_scope": "joint" if agent.truncate_grads else "none", "grad_norm": float(agent.grad_norm),
        "truncate_grads": bool(agent.truncate_grads), "value_bootstrap": bool(agent.value_bootstrap),
        "truncation_bootstrap": "gamma * V(s_t)" if agent.value_bootstrap else False,
        "e_clip": float(agent.e_clip), "ppo": bool(agent.ppo), "mini_epochs": int(agent.mini_epochs_num),
        "minibatch_size": int(agent.minibatch_size), "minibatch_shuffle": bool(agent.dataset.permute),
        "entropy_coef": float(agent.entropy_coef),
    }
    if not probe.discrete:
        defaults.update(action_squashing="none" if not agent.clip_actions else "clamp to [-1, 1], rescaled to bounds",
                        action_bounds="clipped by the env (HarnessVecEnv)" if not agent.clip_actions else "rescaled",
                        bounds_loss_coef=agent.bounds_loss_coef, log_std_init=log_std_init)
    return defaults
