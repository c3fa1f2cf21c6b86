"""RLlib's own DQN update on the parity probe: the probe's transitions in the replay buffer the
config describes (``EpisodeReplayBuffer``), sampled in order by the buffer's own ``sample()`` as
``DQN._training_step_new_api_stack`` calls it, and one ``Learner.update`` on the sampled episodes
(``DQNTorchLearner.compute_loss_for_module``, ``ray/rllib/algorithms/dqn/torch/dqn_torch_learner.py``)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from rlcompare.adapter import ParityOutcome, ParityProbe
from rlcompare.harness.parity import RAN
from rlcompare.harness.parity_torch import OneStep, linear_layers, load_linear_stack, stack_names, values_of
from rlcompare_rllib.parity import UNSEEDED, build_learner, common_defaults, module_results, optimizers_of

if TYPE_CHECKING:
    import numpy as np

    from rlcompare_rllib import RLlibAdapter


class InOrder:
    """Stands in for the replay buffer's ``numpy`` generator: ``integers(n)`` counts 0, 1, 2, ...
    so that ``EpisodeReplayBuffer._sample_episodes`` draws the stored transitions in order."""

    def __init__(self) -> None:
        self.drawn = 0

    def integers(self, high: int, *_: Any, **__: Any) -> int:
        index = self.drawn % int(high)
        self.drawn += 1
        return index


def _transitions(probe: ParityProbe, module: Any) -> list[Any]:
    """Each probe transition as a one-step ``SingleAgentEpisode`` (observation, next observation,
    action, reward, its terminated/truncated flag), as an env runner hands finished and cut episode
    chunks to the replay buffer. Actions are the module's own (SAC's in ``[-1, 1]``)."""
    import numpy as np
    from ray.rllib.env.single_agent_episode import SingleAgentEpisode

    batch = probe.batch
    actions = ([int(action) for action in batch["actions"]] if probe.discrete
               else [np.asarray(action, dtype=np.float32) for action in batch["actions"]])
    return [SingleAgentEpisode(
        observations=[batch["obs"][i].astype(np.float32), batch["next_obs"][i].astype(np.float32)],
        actions=[actions[i]], rewards=[float(batch["rewards"][i])],
        terminated=bool(batch["terminated"][i]), truncated=bool(batch["truncated"][i]),
        len_lookback_buffer=0, observation_space=module.observation_space, action_space=module.action_space,
    ).to_numpy() for i in range(len(batch["rewards"]))]


def replay_sample(config: Any, probe: ParityProbe, module: Any) -> list[Any] | str:
    """The probe's transitions stored in the replay buffer the config describes (built as
    ``Algorithm._create_local_replay_buffer_if_necessary`` builds it) and sampled back by its own
    ``sample()`` with the arguments ``DQN._training_step_new_api_stack`` passes (SAC's too), its
    random generator replaced by :class:`InOrder`; a string says why that failed."""
    import numpy as np
    from ray.rllib.utils.from_config import from_config
    from ray.rllib.utils.replay_buffers import ReplayBuffer

    buffer = from_config(ReplayBuffer, dict(config.replay_buffer_config))
    buffer.add(_transitions(probe, module))
    buffer.rng = InOrder()
    episodes = buffer.sample(num_items=config.total_train_batch_size, n_step=config.n_step, batch_length_T=0,
                             lookback=0, min_batch_length_T=0, gamma=config.gamma,
                             beta=config.replay_buffer_config.get("beta"), sample_episodes=True)
    sampled = np.stack([episode.get_observations(0) for episode in episodes])
    if sampled.shape != probe.batch["obs"].shape or not np.array_equal(sampled, probe.batch["obs"].astype(np.float32)):
        return "the replay buffer did not hand back the probe's transitions in order"
    return episodes


def _q_parameters(module: Any, probe: ParityProbe) -> tuple[dict[str, Any], dict[str, Any]]:
    """(online, target) parameters of RLlib's DefaultDQNTorchRLModule with the probe's weights:
    ``encoder`` + ``af`` (the advantage head, the only one without dueling) and their targets
    ``_target_encoder`` + ``_target_af``."""
    layers = len(probe.network["hidden_sizes"]) + 1
    online = load_linear_stack([*linear_layers(module.encoder), *linear_layers(module.af)], stack_names("q", layers),
                               probe.weights)
    target = load_linear_stack([*linear_layers(module._target_encoder), *linear_layers(module._target_af)],
                               stack_names("q_target", layers), probe.weights)
    return online, target


@contextlib.contextmanager
def td_targets() -> Iterator[list[np.ndarray]]:
    """Inside, the TD targets RLlib's loss compares its Q-values with are recorded: the second
    argument of the ``nn.HuberLoss`` / ``nn.MSELoss`` call in ``DQNTorchLearner.compute_loss_for_module``
    (its ``q_selected_target``: ``r + gamma^n * (1 - terminated) * max_a Q_target(s', a)``)."""
    import torch

    recorded: list[np.ndarray] = []
    originals = {loss: loss.forward for loss in (torch.nn.HuberLoss, torch.nn.MSELoss)}

    def recording(original: Any) -> Any:
        def forward(self: Any, input: Any, target: Any) -> Any:  # noqa: A002 - torch's own names
            recorded.append(target.detach().double().numpy().copy())
            return original(self, input, target)
        return forward

    for loss, original in originals.items():
        loss.forward = recording(original)
    try:
        yield recorded
    finally:
        for loss, original in originals.items():
            loss.forward = original


def dqn_update(adapter: RLlibAdapter, probe: ParityProbe) -> ParityOutcome:
    """One DQN step: replay-buffer sample (in order), RLlib's learner connectors and its Learner."""
    import numpy as np
    from ray.rllib.utils.metrics import NUM_ENV_STEPS_SAMPLED_LIFETIME

    config, learner, module = build_learner(adapter, probe)
    if config.num_atoms > 1 or config.dueling:
        return ParityOutcome.unverifiable("the config asks for distributional or dueling Q-networks, which the "
                                          "probe's plain Q-network does not have")
    online, target = _q_parameters(module, probe)
    episodes = replay_sample(config, probe, module)
    if isinstance(episodes, str):
        return ParityOutcome.unverifiable(episodes)
    optimizers = optimizers_of(learner)
    with OneStep(*optimizers.values()) as step, td_targets() as targets:
        # NUM_ENV_STEPS_SAMPLED_LIFETIME 0: after_gradient_based_update then leaves the target
        # network alone (the probe's step does not move it; its sync is a matter of the schedule)
        results = learner.update(episodes=episodes, timesteps={NUM_ENV_STEPS_SAMPLED_LIFETIME: 0})
    if step.steps != 1 or len(targets) != 1:
        return ParityOutcome.unverifiable(f"RLlib made {step.steps} optimizer steps and {len(targets)} TD loss "
                                          "calls on one minibatch")
    target_after = values_of(target)
    moved = max(float(np.abs(target_after[name] - probe.weights[name]).max()) for name in target_after)
    scalars = module_results(results)
    return ParityOutcome(
        RAN, targets={"q_target": targets[0]},
        gradients=step.gradients_of(online), updated=values_of(online),
        losses={"q": scalars.get("qf_loss", float("nan"))},
        notes=(UNSEEDED, "the probe's transitions were stored in RLlib's EpisodeReplayBuffer as one-step episodes and "
               "sampled in order (the buffer's random generator replaced by a counter)",
               f"the target network moved by {moved:.3g} in the update (RLlib syncs it in "
               "after_gradient_based_update when target_network_update_freq env steps have passed)"),
        defaults=_dqn_defaults(config, learner, optimizers),
    )


def _dqn_defaults(config: Any, learner: Any, optimizers: dict[str, Any]) -> dict[str, Any]:
    """What RLlib built for DQN, read back from the config and the Learner's optimizer."""
    return {
        **common_defaults(config, learner, optimizers),
        "td_loss": config.td_error_loss_fn, "double_q": bool(config.double_q), "dueling": bool(config.dueling),
        "n_step": config.n_step, "num_atoms": config.num_atoms,
        "target_update": (f"hard every {config.target_network_update_freq} sampled env steps" if config.tau == 1.0
                          else f"polyak tau {config.tau} every {config.target_network_update_freq} env steps"),
        "config_adam_epsilon": config.adam_epsilon,
        "replay_buffer": dict(config.replay_buffer_config).get("type"),
        "epsilon": config.epsilon,
    }
