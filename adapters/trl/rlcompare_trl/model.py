"""The harness's language model and tokenizer as transformers objects (imported by the run and the probe)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from rlcompare.harness.language import BOS_ID, EOS_ID, PAD_ID, VOCABULARY, LanguageModelConfig, initial_weights

#: Nothing is fetched: the model, tokenizer and data are built in code.
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false", "TRL_EXPERIMENTAL_SILENCE": "1"}


def go_offline() -> None:
    for key, value in OFFLINE.items():
        os.environ.setdefault(key, value)


def build_tokenizer() -> Any:
    """A character-level tokenizer over the harness's vocabulary that prepends ``<bos>`` (left padding)."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocabulary = {token: index for index, token in enumerate(VOCABULARY)}
    core = Tokenizer(models.WordLevel(vocab=vocabulary, unk_token="<pad>"))
    core.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    core.post_processor = processors.TemplateProcessing(single="<bos> $A", special_tokens=[("<bos>", BOS_ID)])
    core.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(tokenizer_object=core, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>",
                                   padding_side="left", truncation_side="left")


def qwen2_config(model: Mapping[str, Any], max_positions: int) -> Any:
    from transformers import Qwen2Config

    shape = LanguageModelConfig.from_mapping(model)
    config = Qwen2Config(
        vocab_size=shape.vocab_size, hidden_size=shape.hidden_size, intermediate_size=shape.intermediate_size,
        num_hidden_layers=shape.layers, num_attention_heads=shape.heads, num_key_value_heads=shape.kv_heads,
        hidden_act="silu", max_position_embeddings=max(64, max_positions), rms_norm_eps=shape.rms_norm_eps,
        rope_parameters={"rope_type": "default", "rope_theta": shape.rope_theta}, tie_word_embeddings=True,
        attention_dropout=0.0, initializer_range=shape.init_std, use_sliding_window=False,
        bos_token_id=BOS_ID, eos_token_id=EOS_ID, pad_token_id=None,  # no padding row: every row is trained
    )
    config._attn_implementation = "eager"
    return config


def build_model(model: Mapping[str, Any], seed: int, max_positions: int) -> Any:
    """``Qwen2ForCausalLM`` with the harness's initial weights for ``seed``."""
    import torch
    from transformers import Qwen2ForCausalLM

    config = qwen2_config(model, max_positions)
    built = Qwen2ForCausalLM(config)
    load_weights(built, initial_weights(LanguageModelConfig.from_mapping(model), seed))
    built.generation_config.bos_token_id = BOS_ID
    built.generation_config.eos_token_id = EOS_ID
    built.generation_config.pad_token_id = PAD_ID
    torch.manual_seed(seed)
    return built


def load_weights(model: Any, weights: Mapping[str, np.ndarray]) -> None:
    """The harness's arrays into ``model`` by name; every parameter must be given (``lm_head`` is tied)."""
    import torch

    state = {name: torch.from_numpy(np.asarray(value, dtype=np.float32)) for name, value in weights.items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [name for name in missing if name != "lm_head.weight"]
    if missing or unexpected:
        raise RuntimeError(f"the harness's weights do not fit the model: missing {missing}, unexpected {unexpected}")
    if model.lm_head.weight.data_ptr() != model.model.embed_tokens.weight.data_ptr():
        raise RuntimeError("the output embedding is not tied to the input embedding")


def greedy_policy(model: Any, deterministic: bool, seed: int, temperature: float) -> Any:
    """The harness's policy: the next token of each row of a batch of observations (sequences so far,
    padded on the right), greedy or sampled at ``temperature``."""
    import torch

    from rlcompare.harness.language import sequence_lengths

    generator = torch.Generator().manual_seed(seed)

    def policy(observations: np.ndarray) -> np.ndarray:
        tokens = torch.as_tensor(np.asarray(observations, dtype=np.int64))
        lengths = torch.as_tensor(sequence_lengths(observations))
        mask = (tokens != PAD_ID).long()
        was_training = model.training
        model.eval()
        try:
            with torch.no_grad():
                logits = model(input_ids=tokens, attention_mask=mask).logits
        finally:
            model.train(was_training)
        last = logits[torch.arange(len(tokens)), lengths - 1].float()
        if deterministic:
            return last.argmax(dim=-1).numpy()
        probabilities = torch.softmax(last / temperature, dim=-1)
        return torch.multinomial(probabilities, 1, generator=generator).squeeze(-1).numpy()

    return policy
