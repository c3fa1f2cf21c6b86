"""The harness's language model and tokenizer as Tunix objects (imported by the run and the probe).

The weights are the harness's (:func:`rlcompare.harness.language.initial_weights`, named as Hugging
Face's ``Qwen2ForCausalLM`` names them); they are laid out for Tunix's ``Qwen2`` the way Tunix's own
checkpoint loader does it (``tunix/models/qwen2/params.py``: linear weights transposed, attention
projections split into heads) and set with ``nnx.State.replace_by_pure_dict``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rlcompare.harness.language import (
    BOS_ID,
    EOS_ID,
    PAD_ID,
    VOCABULARY,
    LanguageModelConfig,
    encode,
    initial_weights,
    sequence_lengths,
)


class HarnessTokenizer:
    """The harness's vocabulary as the plain tokenizer Tunix's ``TokenizerAdapter`` accepts.

    ``encode`` gives the ids of a text without ``<bos>`` (Tunix's sampler prepends ``bos_id()``, which
    must not be 0: it is 1 here). ``decode`` spells every id out, ``<pad>`` and ``<eos>`` included, so
    that :func:`rlcompare.harness.language.encode` gives back exactly the ids generated: the reward
    function recovers the completion's tokens from its text."""

    def encode(self, text: str, **_: Any) -> list[int]:
        return encode(text)

    def decode(self, ids: Sequence[int], **_: Any) -> str:
        return "".join(VOCABULARY[int(token)] for token in ids)

    def bos_id(self) -> int:
        return BOS_ID

    def eos_id(self) -> int:
        return EOS_ID

    def pad_id(self) -> int:
        return PAD_ID


def make_mesh() -> Any:
    """A (1, 1) ``("fsdp", "tp")`` mesh on the one CPU device. Its axes are ``Auto``: with jax 0.10's
    default (``Explicit``) the Qwen2 embedding lookup fails with a ``ShardingTypeError``."""
    import jax

    return jax.make_mesh((1, 1), ("fsdp", "tp"), axis_types=(jax.sharding.AxisType.Auto,) * 2)


def qwen2_config(model: Mapping[str, Any]) -> Any:
    """Tunix's ``ModelConfig`` for the harness's model shape (tied embeddings, float32)."""
    from tunix.models.qwen2 import model as qwen2_lib

    shape = LanguageModelConfig.from_mapping(model)
    return qwen2_lib.ModelConfig(
        num_layers=shape.layers, vocab_size=shape.vocab_size, embed_dim=shape.hidden_size,
        hidden_dim=shape.intermediate_size, num_heads=shape.heads, head_dim=shape.head_dim,
        num_kv_heads=shape.kv_heads, rope_theta=shape.rope_theta, norm_eps=shape.rms_norm_eps,
        use_tied_embedding=True,
    )


def tunix_params(weights: Mapping[str, np.ndarray], shape: LanguageModelConfig) -> dict[str, Any]:
    """The harness's Hugging Face-named arrays as the nested dict of Tunix's ``Qwen2`` parameters."""
    d, heads, kv_heads, head_dim = shape.hidden_size, shape.heads, shape.kv_heads, shape.head_dim
    params: dict[str, Any] = {
        "embedder": {"input_embedding": weights["model.embed_tokens.weight"]},
        "final_norm": {"w": weights["model.norm.weight"]},
        "layers": {},
    }
    for layer in range(shape.layers):
        prefix = f"model.layers.{layer}."

        def w(name: str, prefix: str = prefix) -> np.ndarray:
            return weights[prefix + name]

        params["layers"][layer] = {
            "input_layernorm": {"w": w("input_layernorm.weight")},
            "post_attention_layernorm": {"w": w("post_attention_layernorm.weight")},
            "attn": {
                "q_proj": {"w": w("self_attn.q_proj.weight").T.reshape(d, heads, head_dim)},
                "k_proj": {"w": w("self_attn.k_proj.weight").T.reshape(d, kv_heads, head_dim)},
                "v_proj": {"w": w("self_attn.v_proj.weight").T.reshape(d, kv_heads, head_dim)},
                "o_proj": {"w": w("self_attn.o_proj.weight").T.reshape(heads, head_dim, d)},
                "q_bias": w("self_attn.q_proj.bias"),
                "k_bias": w("self_attn.k_proj.bias"),
                "v_bias": w("self_attn.v_proj.bias"),
            },
            "mlp": {
                "gate_proj": {"kernel": w("mlp.gate_proj.weight").T},
                "up_proj": {"kernel": w("mlp.up_proj.weight").T},
                "down_proj": {"kernel": w("mlp.down_proj.weight").T},
            },
        }
    return params


def build_model(model: Mapping[str, Any], seed: int, mesh: Any) -> Any:
    """Tunix's ``Qwen2`` with the harness's initial weights for ``seed`` (every parameter replaced)."""
    import jax
    import jax.numpy as jnp
    from flax import nnx
    from tunix.models.qwen2 import model as qwen2_lib

    shape = LanguageModelConfig.from_mapping(model)
    with mesh:
        built = qwen2_lib.Qwen2(qwen2_config(model), rngs=nnx.Rngs(params=seed))
    state = nnx.state(built, nnx.Param)
    expected = state.to_pure_dict()
    given = tunix_params(initial_weights(shape, seed), shape)
    if jax.tree.structure(expected) != jax.tree.structure(given):
        raise RuntimeError(f"the harness's weights do not fit Tunix's Qwen2: {jax.tree.structure(given)} "
                           f"against {jax.tree.structure(expected)}")
    mismatched = [(a.shape, np.shape(b)) for a, b in zip(jax.tree.leaves(expected), jax.tree.leaves(given),
                                                         strict=True) if a.shape != np.shape(b)]
    if mismatched:
        raise RuntimeError(f"the harness's weights do not fit Tunix's Qwen2: shapes {mismatched}")
    state.replace_by_pure_dict(jax.tree.map(lambda value: jnp.asarray(value, dtype=jnp.float32), given))
    nnx.update(built, state)
    return built


@functools.cache
def _last_logits() -> Any:
    """The jitted forward pass of the policy (one for the process: every policy shares its compilations)."""
    import jax.numpy as jnp
    from flax import nnx
    from tunix.sft import utils as sft_utils

    @nnx.jit
    def last_logits(model: Any, tokens: Any, lengths: Any) -> Any:
        mask = tokens != PAD_ID
        logits, _ = model(tokens, positions=sft_utils.build_positions_from_mask(mask), cache=None,
                          attention_mask=sft_utils.make_causal_attn_mask(mask))
        return logits[jnp.arange(tokens.shape[0]), lengths - 1]

    return last_logits


def next_token_policy(model: Any, deterministic: bool, seed: int, temperature: float, rows: int) -> Any:
    """The harness's policy: the next token of each row of a batch of observations (sequences so far,
    padded on the right with ``<pad>``), greedy or sampled at ``temperature``. Batches are padded to
    ``rows`` rows (the evaluation's episodes) so that one compilation serves every call."""
    import jax.numpy as jnp

    rng = np.random.default_rng(seed)
    forward = _last_logits()

    def policy(observations: np.ndarray) -> np.ndarray:
        observations = np.asarray(observations, dtype=np.int32)
        count = len(observations)
        size = max(rows, count)
        tokens = np.full((size, observations.shape[1]), PAD_ID, dtype=np.int32)
        tokens[:count] = observations
        tokens[count:, 0] = BOS_ID
        lengths = np.maximum(sequence_lengths(tokens), 1).astype(np.int32)
        last = np.asarray(forward(model, jnp.asarray(tokens), jnp.asarray(lengths)), dtype=np.float64)[:count]
        if deterministic:
            return last.argmax(axis=-1)
        scaled = last / temperature
        probabilities = np.exp(scaled - scaled.max(axis=-1, keepdims=True))
        probabilities /= probabilities.sum(axis=-1, keepdims=True)
        return np.array([rng.choice(len(row), p=row) for row in probabilities])

    return policy
