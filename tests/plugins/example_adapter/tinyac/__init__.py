"""tinyac: synchronous advantage actor-critic (A2C) in numpy alone, for discrete actions.

A small learner that stands for "your framework" in docs/writing-an-adapter.md: separate policy
and value MLPs of the same shape, n-step rollouts over several Gymnasium environments stepped in
turn, GAE advantages, one gradient step per rollout on the summed loss (policy gradient, value
regression, entropy bonus) with a global gradient-norm clip, Adam or RMSprop.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__version__ = "0.1"

Params = list[tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class A2CConfig:
    """Every setting tinyac's A2C reads; the names are tinyac's own."""

    lr: float = 7e-4
    optimizer: str = "adam"
    gamma: float = 0.99
    gae_lambda: float = 1.0
    n_steps: int = 5
    ent_coef: float = 0.0
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    normalize_advantage: bool = False
    hidden_sizes: tuple[int, ...] = (64, 64)
    activation: str = "tanh"


def _init(sizes: Sequence[int], rng: np.random.Generator, out_scale: float) -> Params:
    params = []
    for index, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
        scale = out_scale if index == len(sizes) - 2 else np.sqrt(2.0)
        weights = rng.standard_normal((fan_in, fan_out)) * scale / np.sqrt(fan_in)
        params.append((weights, np.zeros(fan_out)))
    return params


def _forward(params: Params, x: np.ndarray, activation: str) -> tuple[np.ndarray, list[np.ndarray]]:
    inputs = []
    for index, (weights, bias) in enumerate(params):
        inputs.append(x)
        x = x @ weights + bias
        if index < len(params) - 1:
            x = np.tanh(x) if activation == "tanh" else np.maximum(x, 0.0)
    return x, inputs


def _backward(params: Params, inputs: list[np.ndarray], grad: np.ndarray, activation: str) -> Params:
    grads: Params = []
    for index in range(len(params) - 1, -1, -1):
        weights, _ = params[index]
        grads.append((inputs[index].T @ grad, grad.sum(axis=0)))
        if index > 0:
            grad = grad @ weights.T
            hidden = inputs[index]  # the activation's output
            grad = grad * (1.0 - hidden**2) if activation == "tanh" else grad * (hidden > 0)
    return grads[::-1]


class _Optimizer:
    def __init__(self, kind: str, lr: float, arrays: list[np.ndarray]) -> None:
        if kind not in ("adam", "rmsprop"):
            raise ValueError(f"optimizer must be 'adam' or 'rmsprop', got {kind!r}")
        self.kind, self.lr, self.t = kind, lr, 0
        self.first = [np.zeros_like(a) for a in arrays]
        self.second = [np.zeros_like(a) for a in arrays]

    def step(self, arrays: list[np.ndarray], grads: list[np.ndarray]) -> None:
        self.t += 1
        for array, grad, first, second in zip(arrays, grads, self.first, self.second, strict=True):
            if self.kind == "adam":
                first *= 0.9
                first += 0.1 * grad
                second *= 0.999
                second += 0.001 * grad**2
                corrected = first / (1 - 0.9**self.t)
                array -= self.lr * corrected / (np.sqrt(second / (1 - 0.999**self.t)) + 1e-8)
            else:
                second *= 0.99
                second += 0.01 * grad**2
                array -= self.lr * grad / (np.sqrt(second) + 1e-5)


class A2C:
    """A2C over ``envs`` (Gymnasium environments with a Box observation and Discrete actions)."""

    def __init__(self, envs: Sequence[Any], config: A2CConfig, seed: int = 0) -> None:
        self.envs, self.config = list(envs), config
        self.rng = np.random.default_rng(seed)
        obs_dim = int(np.prod(self.envs[0].observation_space.shape))
        n_actions = int(self.envs[0].action_space.n)
        hidden = list(config.hidden_sizes)
        self.pi = _init([obs_dim, *hidden, n_actions], self.rng, 0.01)
        self.vf = _init([obs_dim, *hidden, 1], self.rng, 1.0)
        self.optimizer = _Optimizer(config.optimizer, config.lr, self._arrays())
        self.num_timesteps = 0
        self._obs = np.stack([env.reset(seed=seed + i)[0] for i, env in enumerate(self.envs)]).astype(np.float64)

    def _arrays(self) -> list[np.ndarray]:
        return [array for layer in (*self.pi, *self.vf) for array in layer]

    def _probs(self, obs: np.ndarray) -> tuple[np.ndarray, list[np.ndarray], np.ndarray]:
        logits, inputs = _forward(self.pi, obs, self.config.activation)
        logits = logits - logits.max(axis=1, keepdims=True)
        probs = np.exp(logits)
        return probs / probs.sum(axis=1, keepdims=True), inputs, logits

    def _value(self, obs: np.ndarray) -> np.ndarray:
        return _forward(self.vf, obs, self.config.activation)[0][:, 0]

    def predict(self, obs: np.ndarray, deterministic: bool = True) -> np.ndarray:
        """One action per row of ``obs``."""
        probs, _, _ = self._probs(np.asarray(obs, dtype=np.float64).reshape(len(obs), -1))
        if deterministic:
            return probs.argmax(axis=1)
        cumulative = probs.cumsum(axis=1)
        draws = self.rng.random((len(probs), 1))
        return np.minimum((draws > cumulative).sum(axis=1), probs.shape[1] - 1)

    def learn(self, should_stop: Callable[[], bool], after_update: Callable[[A2C], None]) -> None:
        """Collect a rollout of ``n_steps`` per env and update, until ``should_stop()``."""
        while not should_stop():
            self._update(*self._rollout())
            after_update(self)

    def _rollout(self) -> tuple[np.ndarray, ...]:
        cfg, n_envs = self.config, len(self.envs)
        obs = np.zeros((cfg.n_steps, n_envs, self._obs.shape[1]))
        actions = np.zeros((cfg.n_steps, n_envs), dtype=np.int64)
        rewards = np.zeros((cfg.n_steps, n_envs))
        ends = np.zeros((cfg.n_steps, n_envs))
        for t in range(cfg.n_steps):
            obs[t] = self._obs
            actions[t] = self.predict(self._obs, deterministic=False)
            for i, env in enumerate(self.envs):
                next_obs, reward, terminated, truncated, _ = env.step(int(actions[t, i]))
                if truncated and not terminated:  # bootstrap a time limit from the state it cut off
                    reward += cfg.gamma * float(self._value(np.asarray(next_obs, dtype=np.float64)[None])[0])
                rewards[t, i] = reward
                ends[t, i] = float(terminated or truncated)
                if terminated or truncated:
                    next_obs, _ = env.reset()
                self._obs[i] = next_obs
            self.num_timesteps += n_envs
        return obs, actions, rewards, ends

    def _update(self, obs: np.ndarray, actions: np.ndarray, rewards: np.ndarray, ends: np.ndarray) -> None:
        cfg = self.config
        steps, n_envs = actions.shape
        values = self._value(obs.reshape(steps * n_envs, -1)).reshape(steps, n_envs)
        next_value = self._value(self._obs)
        advantages = np.zeros((steps, n_envs))
        running = np.zeros(n_envs)
        for t in range(steps - 1, -1, -1):
            following = next_value if t == steps - 1 else values[t + 1]
            alive = 1.0 - ends[t]
            delta = rewards[t] + cfg.gamma * following * alive - values[t]
            running = delta + cfg.gamma * cfg.gae_lambda * alive * running
            advantages[t] = running
        returns = (advantages + values).reshape(-1)
        flat_obs, flat_actions = obs.reshape(steps * n_envs, -1), actions.reshape(-1)
        adv = advantages.reshape(-1)
        if cfg.normalize_advantage and len(adv) > 1:
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        batch = len(flat_actions)
        probs, pi_inputs, logits = self._probs(flat_obs)
        log_probs = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
        entropy = -(probs * log_probs).sum(axis=1)
        onehot = np.eye(probs.shape[1])[flat_actions]
        # d/dlogits of: -mean(A log pi(a)) - ent_coef * mean(H)
        grad_logits = (-(onehot - probs) * adv[:, None]
                       + cfg.ent_coef * probs * (log_probs + entropy[:, None])) / batch
        value_out, vf_inputs = _forward(self.vf, flat_obs, cfg.activation)
        grad_value = (cfg.vf_coef * 2.0 * (value_out[:, 0] - returns) / batch)[:, None]
        grads = [g for layer in (*_backward(self.pi, pi_inputs, grad_logits, cfg.activation),
                                 *_backward(self.vf, vf_inputs, grad_value, cfg.activation)) for g in layer]
        norm = float(np.sqrt(sum(float((g**2).sum()) for g in grads)))
        if norm > cfg.max_grad_norm:
            grads = [g * (cfg.max_grad_norm / (norm + 1e-6)) for g in grads]
        self.optimizer.step(self._arrays(), grads)
