"""RLlib's SAC on the parity probe: built as for the other families (a local Learner from the
adapter's config, no Ray cluster), but its Q-networks cannot hold the probe's critics.

RLlib 2.60's SAC encodes a Box action space's Q-function with a ``TorchMultiStreamEncoder``
(``SACCatalog._build_qf_encoder_continuous``, ``ray/rllib/algorithms/sac/sac_catalog.py``;
``ray/rllib/core/models/torch/encoder.py``): the observation and the action each go through their
own MLP (``fcnet_hiddens``), the two embeddings are concatenated and fused by a network of
``fusionnet_hiddens`` (default ``[256, 256]``, ``tanh``, skip connections from the embeddings into
every fusion layer) and an output layer, then the Q head. The canonical critic is one MLP over the
concatenated observation and action: its first layer mixes both, which RLlib's streams never do
before their own nonlinearities, so no choice of RLlib's weights computes the probe's critic and
the targets, gradients and updates cannot be compared. The outcome says so and carries what the
built Learner uses, read back from it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rlcompare.adapter import ParityOutcome, ParityProbe
from rlcompare_rllib.parity import build_learner, common_defaults, optimizers_of

if TYPE_CHECKING:
    from rlcompare_rllib import RLlibAdapter


def sac_update(adapter: RLlibAdapter, probe: ParityProbe) -> ParityOutcome:
    """Unverifiable, with the reason read from the built module (see the module docstring)."""
    config, learner, module = build_learner(adapter, probe)
    encoder = module.qf_encoder
    kind = type(encoder).__name__
    defaults = _sac_defaults(config, learner, module)
    if hasattr(encoder, "base_encoders"):
        streams = ", ".join(sorted(encoder.base_encoders))
        fusion = [int(layer.out_features) for layer in encoder.fusion_layers]
        return ParityOutcome.unverifiable(
            f"RLlib's SAC Q-networks are {kind}s: {streams} each through their own MLP "
            f"{list(config.model_config.get('fcnet_hiddens', []))}, concatenated, then a fusion network "
            f"{fusion} ({config.model_config.get('fusionnet_activation')}, skip connections) and an output layer "
            "before the Q head (SACCatalog._build_qf_encoder_continuous); the probe's critics are one MLP over "
            "(observation, action), which that architecture cannot hold", **defaults)
    return ParityOutcome.unverifiable(f"RLlib's SAC Q-encoder is a {kind}, not the one this probe knows how to load",
                                      **defaults)


def _sac_defaults(config: Any, learner: Any, module: Any) -> dict[str, Any]:
    """What RLlib's SAC Learner uses, read back from it (and, where the choice is fixed in RLlib's
    code rather than held by an object, named with the code it comes from)."""
    from ray.rllib.core import DEFAULT_MODULE_ID
    from ray.rllib.utils.numpy import MAX_LOG_NN_OUTPUT, MIN_LOG_NN_OUTPUT

    optimizers = optimizers_of(learner)
    model = config.model_config
    return {
        **common_defaults(config, learner, optimizers, "tanh (squashed Gaussian)"),
        "adam_eps": {name: optimizer.defaults.get("eps") for name, optimizer in optimizers.items()},
        "target_update": (f"polyak tau {config.tau} every update" if not config.target_network_update_freq
                          else f"polyak tau {config.tau} every {config.target_network_update_freq} env steps"),
        "twin_q": bool(config.twin_q),
        "initial_alpha": float(config.initial_alpha),
        "target_entropy": float(learner.target_entropy[DEFAULT_MODULE_ID]),
        "critic_encoder": type(module.qf_encoder).__name__,
        "fusionnet_hiddens": list(model.get("fusionnet_hiddens", [])),
        "fusionnet_activation": model.get("fusionnet_activation"),
        "action_distribution": module.get_train_action_dist_cls().__name__,
        # fixed in RLlib's code (SACTorchLearner._compute_loss_for_module_continuous,
        # DefaultSACTorchRLModule._forward_train_continuous, TorchSquashedGaussian)
        "td_loss": "huber (delta 1) per critic, each its own Adam",
        "actor_critic_order": "one forward pass: the actor's loss uses the critics before their step",
        "alpha_loss": "-mean(log_alpha * (log pi + target_entropy)), alpha from before its step",
        "squash_correction": "exact: 2 (log 2 - u - softplus(-2u))",
        "log_std_clamp": [MIN_LOG_NN_OUTPUT, MAX_LOG_NN_OUTPUT],
    }
