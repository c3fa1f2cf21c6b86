"""The reference PPO update: clipped surrogate, GAE, one optimizer step on one minibatch.

Equations (Schulman et al. 2017, "Proximal Policy Optimization Algorithms", arXiv:1707.06347;
GAE: Schulman et al. 2016, "High-Dimensional Continuous Control Using Generalized Advantage
Estimation", arXiv:1506.02438), with the choices the papers leave open fixed as Stable-Baselines3
2.x fixes them (``stable_baselines3/ppo/ppo.py``, ``common/buffers.py``, ``common/policies.py``),
which CleanRL's ``ppo.py`` shares except where noted:

- **GAE** (eq. 11-12 of the GAE paper): ``delta_t = r_t + gamma V(s_{t+1}) (1 - done_t) - V(s_t)``,
  ``A_t = delta_t + gamma lambda (1 - done_t) A_{t+1}``, over the rollout's stored values (those of
  the policy that collected it); ``done_t`` is termination *or* truncation, and a truncated episode
  is bootstrapped by adding ``gamma V(s_final)`` to its last reward (SB3's ``collect_rollouts``).
  Returns are ``A_t + V(s_t)``.
- **Advantage normalization** over the minibatch, when ``normalize_advantage``:
  ``(A - mean) / (std + 1e-8)``, the unbiased standard deviation (torch's default).
- **Policy loss** (eq. 7 of the PPO paper): ``-mean(min(r A, clip(r, 1-eps, 1+eps) A))`` with
  ``r = exp(log pi(a|s) - log pi_old(a|s))``.
- **Value loss**: ``mean((R - V(s))^2)``, no clipping, no factor 1/2 (CleanRL halves it).
- **Entropy**: ``-mean(H(pi(.|s)))`` weighted by ``entropy_coef``; the loss is
  ``policy + entropy_coef * entropy + value_coef * value``.
- **Optimizer**: one Adam over every parameter (policy, value, log-std), ``eps = 1e-5`` (SB3's
  ``ActorCriticPolicy`` and CleanRL both set it), betas (0.9, 0.999), after clipping the gradient's
  global norm to ``max_grad_norm``.
- **Policy head**: categorical logits for discrete actions; for continuous ones a diagonal Gaussian
  whose mean is the network's output and whose log-std is one state-independent parameter per
  action dimension (initial value 0), actions unsquashed (clipped only when stepping the env).
- Policy and value networks are separate (the workload's ``network``, one each).

The probe's stored values and log-probabilities come from a *behaviour* policy whose weights differ
from the probe's, as after an epoch of updates, so that the clip range and value clipping act.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from rlcompare.harness.parity import RAN, ParityOutcome, ParityProbe
from rlcompare.parity.networks import adam_step, as_float32, clip_by_global_norm, init_mlp, mlp, tensors
from rlcompare.parity.reference import ProbeCase, ReferenceUpdate, Variant, space_of
from rlcompare.spec.workload import Workload

#: Rollout length and envs of the probe: one minibatch of 16 transitions.
STEPS, ENVS = 8, 2
ADAM_EPS = 1e-5
HIDDEN = [16, 16]

PPO_HYPERPARAMETERS = {
    "learning_rate": 3e-4, "gamma": 0.99, "gae_lambda": 0.95, "clip_range": 0.2, "rollout_steps": STEPS,
    "minibatch_size": STEPS * ENVS, "epochs": 1, "entropy_coef": 0.05, "value_coef": 0.5, "max_grad_norm": 0.5,
    "normalize_advantage": True,
}


def _variant(name: str, description: str, setting: str, canonical: Any, framework: Any) -> Variant:
    return Variant(name, description, setting, canonical, framework)


class PPOReference(ReferenceUpdate):
    family = "PPO"
    variants: ClassVar[dict[str, Variant]] = {variant.name: variant for variant in (
        _variant("value_clipping", "value predictions clipped to the old value +- clip_range (SB3's clip_range_vf)",
                 "defaults.value_clipping", "off", "clip_range"),
        _variant("value_clipping_max", "value loss is the max of the clipped and unclipped errors (CleanRL's clip_vloss)",
                 "defaults.value_clipping", "off", "max(clipped, unclipped)"),
        _variant("half_value_loss", "value loss halved: 0.5 * mean((R - V)^2) (CleanRL)",
                 "defaults.value_loss_scale", 1.0, 0.5),
        _variant("huber_value_loss", "Huber (smooth L1) value loss instead of the squared error",
                 "defaults.value_loss", "mse", "huber"),
        _variant("no_advantage_normalization", "advantages not normalized although normalize_advantage is on",
                 "hyperparameters.normalize_advantage", True, False),
        _variant("advantage_std_biased", "advantages normalized with the biased standard deviation (ddof 0)",
                 "defaults.advantage_std", "unbiased", "biased"),
        _variant("adam_eps_1e-8", "Adam epsilon 1e-8 (torch's default) instead of 1e-5", "defaults.adam_eps",
                 ADAM_EPS, 1e-8),
        _variant("adam_eps_1e-7", "Adam epsilon 1e-7 instead of 1e-5", "defaults.adam_eps", ADAM_EPS, 1e-7),
        _variant("no_grad_clip", "no gradient-norm clipping although max_grad_norm is set",
                 "hyperparameters.max_grad_norm", "clipped", "not clipped"),
        _variant("grad_clip_per_network", "gradient norm clipped per network (policy, value) instead of jointly",
                 "defaults.grad_clip_scope", "joint", "per network"),
        _variant("grad_clip_per_element", "each gradient element clipped to +-max_grad_norm (optax.clip) instead of "
                 "the global norm (rejax)", "defaults.grad_clip_scope", "joint", "per element"),
        _variant("no_truncation_bootstrap", "truncated episodes are not bootstrapped (treated as terminated)",
                 "defaults.truncation_bootstrap", True, False),
        _variant("no_entropy_bonus", "the entropy bonus is left out although entropy_coef is set",
                 "hyperparameters.entropy_coef", "applied", "ignored"),
        _variant("last_value_recomputed", "the rollout's last bootstrap value comes from the network being updated, "
                 "not the collecting policy's stored value (Sample Factory)", "defaults.last_value",
                 "stored by the collecting policy", "recomputed by the updated network"),
        _variant("advantage_norm_with_bootstrap_rows", "advantages normalized over the batch together with one "
                 "artificial bootstrap row per episode chunk, with the biased std and max(std, 1e-4) (RLlib's "
                 "AddOneTsToEpisodesAndTruncate and GeneralAdvantageEstimation)", "defaults.advantage_normalization",
                 "per minibatch", "per batch, with bootstrap rows"),
        _variant("ratio_clip_reciprocal_low", "the ratio's lower clip bound is 1/(1+clip_range), not 1-clip_range "
                 "(Sample Factory)", "defaults.ratio_clip_low", "1 - clip_range", "1 / (1 + clip_range)"),
    )}
    exclusive: ClassVar[tuple[frozenset[str], ...]] = (
        frozenset({"value_clipping", "value_clipping_max"}), frozenset({"adam_eps_1e-8", "adam_eps_1e-7"}),
        frozenset({"no_grad_clip", "grad_clip_per_network"}), frozenset({"no_grad_clip", "grad_clip_per_element"}),
        frozenset({"grad_clip_per_network", "grad_clip_per_element"}),
        frozenset({"no_advantage_normalization", "advantage_std_biased"}),
        frozenset({"no_advantage_normalization", "advantage_norm_with_bootstrap_rows"}),
        frozenset({"advantage_std_biased", "advantage_norm_with_bootstrap_rows"}),
    )

    def cases(self) -> list[ProbeCase]:
        base = {"algorithm": "PPO", "env_steps": STEPS * ENVS, "seeds": 1,
                "parallelism": {"envs_per_worker": ENVS, "workers": 1},
                "hyperparameters": PPO_HYPERPARAMETERS, "evaluation": {"interval_steps": STEPS * ENVS}}
        return [
            ProbeCase("discrete", {**base, "id": "parity-ppo-discrete", "env": "CartPole-v1",
                                   "network": {"hidden_sizes": HIDDEN, "activation": "tanh"}}),
            ProbeCase("continuous", {**base, "id": "parity-ppo-continuous", "env": "Pendulum-v1",
                                     "network": {"hidden_sizes": HIDDEN, "activation": "tanh"}}),
        ]

    # -- the probe -----------------------------------------------------------------------------------

    def build_probe(self, workload: Workload, seed: int = 0) -> ParityProbe:
        import torch

        rng = np.random.default_rng(1_000 + seed)
        observation_dim, space = space_of(workload.env, workload.env_kwargs)
        hidden = list(workload.network.hidden_sizes)
        discrete = space["kind"] == "discrete"
        actions_out = space["n"] if discrete else int(np.prod(space["shape"]))
        weights = {**init_mlp(rng, "policy", observation_dim, hidden, actions_out, out_scale=0.5),
                   **init_mlp(rng, "value", observation_dim, hidden, 1)}
        if not discrete:
            weights["policy.log_std"] = np.zeros(actions_out)
        # the behaviour policy that collected the batch: the probe's weights, moved as by an epoch
        behaviour = {name: as_float32(value + rng.normal(0.0, 0.15, value.shape)) for name, value in weights.items()}
        steps, envs = workload.hyperparameters.rollout_steps, workload.parallelism.total_envs
        # one episode ends, another is cut off by its time limit
        rollout = random_rollout(rng, steps, envs, observation_dim, (2, 0), (5, 1))
        obs, last_obs, terminal_obs = rollout["obs"], rollout["last_obs"], rollout["terminal_obs"]
        rewards, terminated, truncated = rollout["rewards"], rollout["terminated"], rollout["truncated"]
        params = tensors(behaviour, requires_grad=False)
        flat = torch.tensor(obs.reshape(steps * envs, observation_dim))
        with torch.no_grad():
            dist = _distribution(params, hidden, workload.network.activation, flat, discrete)
            actions = sample_actions(dist, discrete, rng)
            old_log_prob = _log_prob(dist, torch.tensor(actions), discrete).numpy()
            old_values = mlp(params, "value", hidden, workload.network.activation, flat).squeeze(-1).numpy()
            terminal_values = mlp(params, "value", hidden, workload.network.activation,
                                  torch.tensor(terminal_obs.reshape(steps * envs, observation_dim))).squeeze(-1).numpy()
            last_values = mlp(params, "value", hidden, workload.network.activation,
                              torch.tensor(last_obs)).squeeze(-1).numpy()
        shape = (steps, envs)
        batch = {
            "obs": obs, "actions": actions.reshape(shape if discrete else (*shape, actions_out)),
            "rewards": rewards, "terminated": terminated, "truncated": truncated, "terminal_obs": terminal_obs,
            "old_values": as_float32(old_values.reshape(shape)), "old_log_prob": as_float32(old_log_prob.reshape(shape)),
            "terminal_values": as_float32(terminal_values.reshape(shape) * truncated),
            "last_obs": last_obs, "last_values": as_float32(last_values),
        }
        return ParityProbe(family=self.family, action_space=space, observation_dim=observation_dim,
                           network={"hidden_sizes": hidden, "activation": workload.network.activation},
                           hyperparameters=workload.hyperparameters.model_dump(mode="json"), weights=weights,
                           batch=batch, workload=workload.to_dict(), derived=workload.derived(), seed=seed)

    # -- the update ----------------------------------------------------------------------------------

    def expected(self, probe: ParityProbe, variants: frozenset[str] = frozenset()) -> ParityOutcome:
        import torch

        hp = probe.hyperparameters
        batch = probe.batch
        hidden, act = probe.network["hidden_sizes"], probe.network["activation"]
        if "last_value_recomputed" in variants:
            with torch.no_grad():
                current = mlp(tensors(probe.weights, requires_grad=False), "value", hidden, act,
                              torch.tensor(batch["last_obs"])).squeeze(-1).numpy()
            batch = {**batch, "last_values": current}
        advantages, returns = gae(batch, hp["gamma"], hp["gae_lambda"],
                                  bootstrap_truncated="no_truncation_bootstrap" not in variants)
        steps, envs = batch["rewards"].shape
        flat = lambda array: torch.tensor(array.reshape(steps * envs, *array.shape[2:]))  # noqa: E731
        obs, actions = flat(batch["obs"]), flat(batch["actions"])
        old_log_prob, old_values = flat(batch["old_log_prob"]), flat(batch["old_values"])
        adv, ret = flat(advantages), flat(returns)

        params = tensors(probe.weights)
        dist = _distribution(params, hidden, act, obs, probe.discrete)
        log_prob = _log_prob(dist, actions, probe.discrete)
        entropy = _entropy(dist, probe.discrete)
        values = mlp(params, "value", hidden, act, obs).squeeze(-1)

        normalize = hp["normalize_advantage"] and "no_advantage_normalization" not in variants
        if normalize and "advantage_norm_with_bootstrap_rows" in variants:
            together = torch.cat([adv, torch.tensor(bootstrap_row_advantages(batch, hp["gamma"], hp["gae_lambda"]))])
            adv = (adv - together.mean()) / torch.clamp(together.std(unbiased=False), min=1e-4)
        elif normalize and len(adv) > 1:
            std = adv.std(unbiased="advantage_std_biased" not in variants)
            adv = (adv - adv.mean()) / (std + 1e-8)
        ratio = torch.exp(log_prob - old_log_prob)
        clip = hp["clip_range"]
        low = 1 / (1 + clip) if "ratio_clip_reciprocal_low" in variants else 1 - clip
        policy_loss = -torch.min(adv * ratio, adv * torch.clamp(ratio, low, 1 + clip)).mean()

        predicted = values
        if "value_clipping" in variants:
            predicted = old_values + torch.clamp(values - old_values, -clip, clip)
        if "value_clipping_max" in variants:
            clipped = old_values + torch.clamp(values - old_values, -clip, clip)
            value_loss = torch.max((ret - values) ** 2, (ret - clipped) ** 2).mean()
        elif "huber_value_loss" in variants:
            value_loss = torch.nn.functional.smooth_l1_loss(predicted, ret)
        else:
            value_loss = ((ret - predicted) ** 2).mean()
        if "half_value_loss" in variants:
            value_loss = 0.5 * value_loss
        entropy_loss = -entropy.mean()
        entropy_coef = 0.0 if "no_entropy_bonus" in variants else hp["entropy_coef"]
        loss = policy_loss + entropy_coef * entropy_loss + hp["value_coef"] * value_loss

        names = sorted(params)
        grads = dict(zip(names, torch.autograd.grad(loss, [params[name] for name in names]), strict=True))
        if "grad_clip_per_network" in variants:
            grads = {**clip_by_global_norm({k: v for k, v in grads.items() if not k.startswith("value.")},
                                           hp["max_grad_norm"]),
                     **clip_by_global_norm({k: v for k, v in grads.items() if k.startswith("value.")},
                                           hp["max_grad_norm"])}
        elif "grad_clip_per_element" in variants:
            grads = {name: grad.clamp(-hp["max_grad_norm"], hp["max_grad_norm"]) for name, grad in grads.items()}
        elif "no_grad_clip" not in variants:
            grads = clip_by_global_norm(grads, hp["max_grad_norm"])
        eps = 1e-8 if "adam_eps_1e-8" in variants else 1e-7 if "adam_eps_1e-7" in variants else ADAM_EPS
        updated = adam_step(params, grads, hp["learning_rate"], eps)
        numpy = lambda tensor: tensor.detach().numpy().astype(np.float64)  # noqa: E731
        return ParityOutcome(
            RAN, targets={"advantages": advantages, "returns": returns},
            gradients={name: numpy(grad) for name, grad in grads.items()},
            updated={name: numpy(value) for name, value in updated.items()},
            losses={"policy": float(policy_loss.detach()), "value": float(value_loss.detach()),
                    "entropy": float(entropy_loss.detach()), "total": float(loss.detach())},
        )


def gae(batch: dict[str, np.ndarray], gamma: float, lam: float, bootstrap_truncated: bool = True,
        values_key: str = "old_values") -> tuple[np.ndarray, np.ndarray]:
    """(advantages, returns) over the stored values, as SB3's rollout buffer computes them."""
    rewards = batch["rewards"].astype(np.float64).copy()
    if bootstrap_truncated:
        rewards += gamma * batch["terminal_values"] * batch["truncated"]
    dones = np.maximum(batch["terminated"], batch["truncated"])
    values = batch[values_key]
    steps = rewards.shape[0]
    advantages = np.zeros_like(rewards)
    last = np.zeros(rewards.shape[1])
    for t in reversed(range(steps)):
        next_values = batch["last_values"] if t == steps - 1 else values[t + 1]
        non_terminal = 1.0 - dones[t]
        delta = rewards[t] + gamma * next_values * non_terminal - values[t]
        last = delta + gamma * lam * non_terminal * last
        advantages[t] = last
    return advantages, advantages + values


def episode_chunks(batch: dict[str, np.ndarray]) -> list[tuple[int, int, int, bool]]:
    """The rollout cut into episode chunks ``(env, first step, last step, ended)`` in the order
    RLlib's ``SingleAgentEnvRunner._sample`` returns them: the episodes that ended (terminated or
    truncated) in the order they ended, then every env's ongoing chunk, cut at the rollout's end."""
    dones = np.maximum(batch["terminated"], batch["truncated"])
    steps, envs = dones.shape
    ended: list[tuple[int, int, int, bool]] = []
    ongoing: list[tuple[int, int, int, bool]] = []
    for env in range(envs):
        first = 0
        for t in range(steps):
            if dones[t, env]:
                ended.append((env, first, t, True))
                first = t + 1
        if first < steps:
            ongoing.append((env, first, steps - 1, False))
    return sorted(ended, key=lambda chunk: (chunk[2], chunk[0])) + ongoing


def bootstrap_row_advantages(batch: dict[str, np.ndarray], gamma: float, lam: float) -> np.ndarray:
    """The advantages of the artificial bootstrap rows RLlib appends to each episode chunk (one row
    with the final observation's value, reward 0, neither terminated nor truncated), as its GAE
    recursion over the chunks laid end to end computes them (``compute_value_targets``): a bootstrap
    row's next value is the next chunk's first value, and its advantage runs on into that chunk. The
    loss masks these rows out; the advantage normalization does not."""
    values, rewards, terminated, cut, bootstrap = [], [], [], [], []
    for env, first, last, done in episode_chunks(batch):
        for t in range(first, last + 1):
            ends_here = t == last
            values.append(batch["old_values"][t, env])
            rewards.append(batch["rewards"][t, env])
            terminated.append(float(ends_here and done and bool(batch["terminated"][t, env])))
            cut.append(float(ends_here and not terminated[-1]))
            bootstrap.append(False)
        values.append(batch["terminal_values"][last, env] if done else batch["last_values"][env])
        rewards.append(0.0)
        terminated.append(0.0)
        cut.append(0.0)
        bootstrap.append(True)
    value, reward, term, trunc = (np.asarray(column, dtype=np.float64) for column in (values, rewards, terminated, cut))
    delta = reward + gamma * (1 - term) * np.append(value[1:], 0.0) - value
    advantages, running = np.zeros_like(value), 0.0
    for i in reversed(range(len(value))):
        running = delta[i] + gamma * lam * (1 - term[i]) * (1 - trunc[i]) * running
        advantages[i] = running
    return advantages[np.asarray(bootstrap)]


def random_rollout(rng: np.random.Generator, steps: int, envs: int, observation_dim: int,
                   terminated_at: tuple[int, int], truncated_at: tuple[int, int]) -> dict[str, np.ndarray]:
    """An on-policy probe's rollout, drawn in this order: observations (steps x envs), the observations
    after the rollout, the final observations of ended episodes and rewards with spread; one episode
    terminates at ``terminated_at`` (step, env) and one is cut off by its time limit at ``truncated_at``."""
    obs = as_float32(rng.normal(0.0, 1.0, (steps, envs, observation_dim)))
    last_obs = as_float32(rng.normal(0.0, 1.0, (envs, observation_dim)))
    terminal_obs = as_float32(rng.normal(0.0, 1.0, (steps, envs, observation_dim)))
    rewards = as_float32(rng.normal(0.5, 1.0, (steps, envs)))
    terminated = np.zeros((steps, envs))
    truncated = np.zeros((steps, envs))
    terminated[terminated_at] = 1.0
    truncated[truncated_at] = 1.0
    return {"obs": obs, "last_obs": last_obs, "terminal_obs": terminal_obs, "rewards": rewards,
            "terminated": terminated, "truncated": truncated}


def sample_actions(dist: Any, discrete: bool, rng: np.random.Generator) -> np.ndarray:
    """One action per row of the policy's distribution, drawn with ``rng`` (indices as floats, or
    Gaussian samples in float32)."""
    if discrete:
        probs = dist.probs.numpy()
        return np.array([rng.choice(probs.shape[1], p=row / row.sum()) for row in probs], dtype=float)
    mean, std = dist.mean.numpy(), dist.stddev.numpy()
    return as_float32(mean + std * rng.normal(0.0, 1.0, mean.shape))


def _distribution(params: dict[str, Any], hidden: list[int], act: str, obs: Any, discrete: bool) -> Any:
    import torch

    out = mlp(params, "policy", hidden, act, obs)
    if discrete:
        return torch.distributions.Categorical(logits=out)
    return torch.distributions.Normal(out, torch.exp(params["policy.log_std"]).expand_as(out))


def _log_prob(dist: Any, actions: Any, discrete: bool) -> Any:
    if discrete:
        return dist.log_prob(actions.long())
    return dist.log_prob(actions).sum(-1)


def _entropy(dist: Any, discrete: bool) -> Any:
    return dist.entropy() if discrete else dist.entropy().sum(-1)
