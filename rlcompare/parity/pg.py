"""The reference PG update: REINFORCE with Monte Carlo returns over one rollout, one full-batch step.

Equations (Williams 1992, "Simple statistical gradient-following algorithms for connectionist
reinforcement learning"), with the choices the 2020 platform comparisons' libraries made
(Tianshou 0.2's ``PGPolicy``: ``tianshou/policy/modelfree/pg.py``, ``process_fn`` and ``learn``):

- **Returns**: ``G_t = r_t + gamma G_{t+1}`` within an episode, ``G_t = r_t`` at its last step
  (``done = terminated or truncated``: a Monte Carlo return has no bootstrap), and at the last step
  of the rollout for an episode the rollout cuts off (no reward after the cut).
- **Baseline** (``return_standardization = "batch"``): ``(G - mean(G)) / (std(G) + eps)`` over the
  whole rollout, the population standard deviation and ``eps`` float32's machine epsilon
  (``np.finfo(np.float32).eps``), as Tianshou 0.2 standardized with ``rew_norm``; ``"none"`` uses
  the returns as they are.
- **Loss**: ``-mean(G log pi(a|s))`` over the rollout; **optimizer**: one Adam step (``eps`` 1e-8,
  torch's default) over the policy's parameters, no gradient clipping.
- **Policy head** as for PPO and A2C: categorical logits, or a Gaussian with a state-independent
  log-std (initially 0) and unsquashed actions. There is no value network.

The probe is one rollout of 6 steps in 2 envs with a termination, a truncation and two episodes cut
off by the rollout's end, and rewards with spread (so that standardizing moves every weight).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from rlcompare.harness.parity import RAN, ParityOutcome, ParityProbe
from rlcompare.parity.networks import adam_step, init_mlp, tensors
from rlcompare.parity.ppo import _distribution, _log_prob, random_rollout, sample_actions
from rlcompare.parity.reference import ProbeCase, ReferenceUpdate, Variant, space_of
from rlcompare.spec.workload import Workload

#: Rollout length and envs of the probe: one update on 12 transitions.
STEPS, ENVS = 6, 2
ADAM_EPS = 1e-8
#: Added to the standard deviation when standardizing returns (Tianshou 0.2's ``self._eps``).
STANDARDIZATION_EPS = float(np.finfo(np.float32).eps)
#: Added to the running variance by Tianshou 2.0's running standardization (``DiscountedReturnComputation.eps``).
RUNNING_EPS = 1e-8
HIDDEN = [16, 16]

PG_HYPERPARAMETERS = {"learning_rate": 1e-3, "gamma": 0.99, "rollout_steps": STEPS, "return_standardization": "batch"}


#: Variants about standardizing, which cannot show where the returns are used as they are.
_STANDARDIZATION = frozenset({"no_return_standardization", "running_return_standardization", "unbiased_std"})


class PGReference(ReferenceUpdate):
    family = "PG"
    variants: ClassVar[dict[str, Variant]] = {variant.name: variant for variant in (
        Variant("no_return_standardization", "the returns are used as they are although return_standardization "
                "is 'batch'", "hyperparameters.return_standardization", "batch", "none"),
        Variant("running_return_standardization", "returns standardized by the running mean and variance of "
                "earlier rollouts' returns, (G - mean) / sqrt(var + 1e-8), updated after use (Tianshou 2.0's "
                "return_standardization): the first update divides by sqrt(1 + 1e-8)",
                "hyperparameters.return_standardization", "batch", "running"),
        Variant("unbiased_std", "returns standardized with the unbiased (n - 1) standard deviation",
                "defaults.return_standardization_std", "population", "unbiased"),
        Variant("returns_cross_episodes", "returns run on across episode ends (done flags ignored)",
                "defaults.episode_boundaries", "respected", "ignored"),
        Variant("loss_summed", "the loss summed over the rollout instead of averaged",
                "defaults.loss_reduction", "mean", "sum"),
        Variant("adam_eps_1e-5", "Adam epsilon 1e-5 instead of 1e-8", "defaults.adam_eps", ADAM_EPS, 1e-5),
    )}
    exclusive: ClassVar[tuple[frozenset[str], ...]] = (
        frozenset({"no_return_standardization", "running_return_standardization"}),
        frozenset({"no_return_standardization", "unbiased_std"}),
        frozenset({"running_return_standardization", "unbiased_std"}),
    )

    def cases(self) -> list[ProbeCase]:
        base = {"algorithm": "PG", "env_steps": STEPS * ENVS, "seeds": 1,
                "parallelism": {"envs_per_worker": ENVS, "workers": 1},
                "network": {"hidden_sizes": HIDDEN, "activation": "tanh"},
                "evaluation": {"interval_steps": STEPS * ENVS}}
        return [
            ProbeCase("discrete", {**base, "id": "parity-pg-discrete", "env": "CartPole-v1",
                                   "hyperparameters": PG_HYPERPARAMETERS}),
            ProbeCase("continuous", {**base, "id": "parity-pg-continuous", "env": "Pendulum-v1",
                                     "hyperparameters": PG_HYPERPARAMETERS}),
            # the returns as they are: the Monte Carlo returns themselves are compared, unscaled
            ProbeCase("discrete-raw", {**base, "id": "parity-pg-discrete-raw", "env": "CartPole-v1",
                                       "hyperparameters": {**PG_HYPERPARAMETERS, "return_standardization": "none"}},
                      excluded=_STANDARDIZATION),
        ]

    # -- the probe -----------------------------------------------------------------------------------

    def build_probe(self, workload: Workload, seed: int = 0) -> ParityProbe:
        import torch

        rng = np.random.default_rng(7_000 + seed)
        observation_dim, space = space_of(workload.env, workload.env_kwargs)
        hidden = list(workload.network.hidden_sizes)
        act = workload.network.activation
        discrete = space["kind"] == "discrete"
        actions_out = space["n"] if discrete else int(np.prod(space["shape"]))
        weights = init_mlp(rng, "policy", observation_dim, hidden, actions_out, out_scale=0.5)
        if not discrete:
            weights["policy.log_std"] = np.zeros(actions_out)
        steps, envs = workload.hyperparameters.rollout_steps, workload.parallelism.total_envs
        # one episode ends, another is cut off by its time limit, two are cut off by the rollout's end
        batch = random_rollout(rng, steps, envs, observation_dim, (1, 0), (3, 1))
        params = tensors(weights, requires_grad=False)
        flat = torch.tensor(batch["obs"].reshape(steps * envs, observation_dim))
        with torch.no_grad():
            actions = sample_actions(_distribution(params, hidden, act, flat, discrete), discrete, rng)
        batch["actions"] = actions.reshape((steps, envs) if discrete else (steps, envs, actions_out))
        return ParityProbe(family=self.family, action_space=space, observation_dim=observation_dim,
                           network={"hidden_sizes": hidden, "activation": act},
                           hyperparameters=workload.hyperparameters.model_dump(mode="json"), weights=weights,
                           batch=batch, workload=workload.to_dict(), derived=workload.derived(), seed=seed)

    # -- the update ----------------------------------------------------------------------------------

    def expected(self, probe: ParityProbe, variants: frozenset[str] = frozenset()) -> ParityOutcome:
        import torch

        hp = probe.hyperparameters
        batch = probe.batch
        hidden, act = probe.network["hidden_sizes"], probe.network["activation"]
        returns = standardized(monte_carlo_returns(batch, hp["gamma"], "returns_cross_episodes" not in variants),
                               hp["return_standardization"], variants)
        steps, envs = batch["rewards"].shape
        flat = lambda array: torch.tensor(array.reshape(steps * envs, *array.shape[2:]))  # noqa: E731
        obs, actions, weights = flat(batch["obs"]), flat(batch["actions"]), flat(returns)

        params = tensors(probe.weights)
        dist = _distribution(params, hidden, act, obs, probe.discrete)
        log_prob = _log_prob(dist, actions, probe.discrete)
        terms = weights * log_prob
        loss = -(terms.sum() if "loss_summed" in variants else terms.mean())
        names = sorted(params)
        grads = dict(zip(names, torch.autograd.grad(loss, [params[name] for name in names]), strict=True))
        updated = adam_step(params, grads, hp["learning_rate"], 1e-5 if "adam_eps_1e-5" in variants else ADAM_EPS)
        numpy = lambda tensor: tensor.detach().numpy().astype(np.float64)  # noqa: E731
        return ParityOutcome(
            RAN, targets={"returns": returns},
            gradients={name: numpy(grad) for name, grad in grads.items()},
            updated={name: numpy(value) for name, value in updated.items()},
            losses={"policy": float(loss.detach()), "total": float(loss.detach())},
        )


def monte_carlo_returns(batch: dict[str, np.ndarray], gamma: float, respect_ends: bool = True) -> np.ndarray:
    """Discounted returns per env over the rollout (steps x envs): nothing after an episode's end
    (termination or truncation) or after the rollout's last step."""
    rewards = np.asarray(batch["rewards"], dtype=np.float64)
    ended = np.maximum(batch["terminated"], batch["truncated"]) if respect_ends else np.zeros_like(rewards)
    returns = np.zeros_like(rewards)
    following = np.zeros(rewards.shape[1])
    for t in range(rewards.shape[0] - 1, -1, -1):
        following = rewards[t] + gamma * following * (1.0 - ended[t])
        returns[t] = following
    return returns


def standardized(returns: np.ndarray, mode: str, variants: frozenset[str] = frozenset()) -> np.ndarray:
    """The returns the loss weights log-probabilities by, as ``mode`` (or a variant) standardizes them."""
    if "running_return_standardization" in variants:  # running mean 0 and variance 1 before the first update
        return returns / np.sqrt(1.0 + RUNNING_EPS)
    if mode == "none" or "no_return_standardization" in variants:
        return returns
    std = returns.std(ddof=1 if "unbiased_std" in variants else 0)
    return (returns - returns.mean()) / (std + STANDARDIZATION_EPS)

