"""Language tasks: a tokenizer, a verifiable task as a Gymnasium environment, and a tiny causal
language model's initial weights, all made by the harness so that every adapter of a language
workload (GRPO) trains the same model on the same prompts and is judged by the same ruler.

**The task is a token-level episode.** ``rlcompare/DigitAddition-v0`` resets to a prompt (``<bos>12+34=``,
operands of ``digits`` digits, drawn by the reset's seed from the environment's split of the
problems) and takes one token per step; the episode ends at ``<eos>`` or after ``max_new_tokens``
tokens, with the reward then: the share of the answer (its digits, then ``<eos>``) the completion gets
right from its start, so 1.0 exactly when it is the sum. An env step is one generated token, so a
budget of env steps is a budget of generated tokens, counted by the harness's counting wrapper when
an adapter scores a completion through :func:`score_completion`. The observation is the sequence so
far, left-aligned and padded with ``<pad>`` (id 0; a prompt holds no ``<pad>``).

**Held-out problems.** A fifth of the problems (by a fixed rule on the operands) are held out: the
training split never draws them, and the harness's evaluation makes its environments with
``split = "held_out"`` (:func:`evaluation_env_kwargs`), so its greedy accuracy is on prompts no run
trained on.

**The model** is a Qwen2-style decoder (RMSNorm, rotary positions, grouped-query attention with biased
q/k/v projections, a gated SiLU MLP, tied input and output embeddings); :func:`initial_weights` draws
its parameters from the run's seed with numpy (normal, std 0.02; biases zero; norms one), named as
Hugging Face's ``Qwen2ForCausalLM`` names them, so an adapter loads the same arrays into its
framework's own model. Standard library, numpy and gymnasium only (the worker imports it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import gymnasium
import numpy as np

from rlcompare.harness.language_ids import (
    BOS_ID,
    DEFAULT_MAX_NEW_TOKENS,
    DIGIT_ADDITION_ID,
    EOS_ID,
    LANGUAGE_TASK_IDS,
    PAD_ID,
    VOCABULARY,
    is_language_task,
)

_IDS = {token: index for index, token in enumerate(VOCABULARY)}

SPLITS = ("train", "held_out")
#: Seeds of a run's training prompts are ``run seed * TRAINING_SEED_STRIDE + i`` (below the evaluation's
#: default offset's range for any run seed up to 999: evaluation seeds are ``1_000_000 + ...``).
TRAINING_SEED_STRIDE = 1_000_003


def encode(text: str) -> list[int]:
    """Token ids of ``text`` (characters of the vocabulary; ``<bos>``/``<eos>``/``<pad>`` spelt out)."""
    ids: list[int] = []
    position = 0
    while position < len(text):
        if text[position] == "<":
            end = text.find(">", position)
            token = text[position:end + 1] if end >= 0 else text[position]
        else:
            token = text[position]
        if token not in _IDS:
            raise ValueError(f"{token!r} is not in the vocabulary ({' '.join(VOCABULARY)})")
        ids.append(_IDS[token])
        position += len(token)
    return ids


def decode(ids: Sequence[int]) -> str:
    """The text of ``ids`` up to the first ``<eos>``, without ``<pad>`` and ``<bos>``."""
    characters = []
    for token in ids:
        token = int(token)
        if token == EOS_ID:
            break
        if token in (PAD_ID, BOS_ID):
            continue
        characters.append(VOCABULARY[token])
    return "".join(characters)


# -------------------------------------------------------------------------------------------------
# the task
# -------------------------------------------------------------------------------------------------


def _held_out(a: int, b: int) -> bool:
    # a fixed fifth of the problems, spread over every operand value
    return (3 * a + b) % 5 == 2


@dataclass(frozen=True)
class AdditionTask:
    """Addition of two ``digits``-digit numbers (zero-padded in the prompt), answered in at most
    ``max_new_tokens`` tokens; with a ``modulus``, the sum's remainder by it (``modulus = 10``: the sum's
    last digit, every answer one digit and each digit as often)."""

    digits: int = 1
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS
    modulus: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.digits, bool) or not isinstance(self.digits, int) or not 1 <= self.digits <= 4:
            raise ValueError(f"digits must be a whole number from 1 to 4, got {self.digits!r}")
        if self.modulus is not None and (isinstance(self.modulus, bool) or not isinstance(self.modulus, int)
                                         or not 2 <= self.modulus <= 10 ** self.digits):
            raise ValueError(f"modulus must be a whole number from 2 to {10 ** self.digits}, got {self.modulus!r}")
        longest = 2 * 10 ** self.digits - 2 if self.modulus is None else self.modulus - 1
        shortest = len(str(longest)) + 1  # the longest answer's digits and <eos>
        if (isinstance(self.max_new_tokens, bool) or not isinstance(self.max_new_tokens, int)
                or not shortest <= self.max_new_tokens <= 64):
            raise ValueError(f"max_new_tokens must be a whole number from {shortest} (the longest answer and "
                             f"<eos>) to 64, got {self.max_new_tokens!r}")

    @property
    def prompt_length(self) -> int:
        return 2 * self.digits + 3  # <bos> a + b =

    @property
    def sequence_length(self) -> int:
        return self.prompt_length + self.max_new_tokens

    def problems(self, split: str) -> list[tuple[int, int]]:
        if split not in SPLITS:
            raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
        size = 10 ** self.digits
        held_out = split == "held_out"
        return [(a, b) for a in range(size) for b in range(size) if _held_out(a, b) == held_out]

    def prompt(self, a: int, b: int) -> list[int]:
        return encode(f"<bos>{a:0{self.digits}d}+{b:0{self.digits}d}=")

    def answer(self, a: int, b: int) -> list[int]:
        total = a + b if self.modulus is None else (a + b) % self.modulus
        return encode(f"{total}<eos>")

    def score(self, a: int, b: int, completion: Sequence[int]) -> float:
        """The share of the answer (with its ``<eos>``) the completion gets right from its start."""
        target = self.answer(a, b)
        right = 0
        for wanted, got in zip(target, completion, strict=False):
            if int(got) != wanted:
                break
            right += 1
        return right / len(target)


class DigitAdditionEnv(gymnasium.Env):
    """The addition task as a token-level episode (see the module docstring)."""

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, digits: int = 1, max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS, split: str = "train",
                 modulus: int | None = None) -> None:
        self.task = AdditionTask(digits, max_new_tokens, modulus)
        self.split = split
        self._problems = self.task.problems(split)
        self.observation_space = gymnasium.spaces.Box(0, len(VOCABULARY) - 1, (self.task.sequence_length,), np.int64)
        self.action_space = gymnasium.spaces.Discrete(len(VOCABULARY))
        self._sequence = np.zeros(self.task.sequence_length, dtype=np.int64)
        self._problem = self._problems[0]
        self._generated: list[int] = []
        self._ended = True  # until the first reset

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self._problem = self._problems[int(self.np_random.integers(len(self._problems)))]
        self._generated = []
        self._ended = False
        self._sequence[:] = PAD_ID
        prompt = self.task.prompt(*self._problem)
        self._sequence[:len(prompt)] = prompt
        return self._sequence.copy(), {"problem": self._problem}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        token = int(np.asarray(action).reshape(-1)[0]) if np.ndim(action) else int(action)
        if not 0 <= token < len(VOCABULARY):
            raise ValueError(f"token {token} outside the vocabulary's {len(VOCABULARY)} ids")
        if self._ended:
            raise RuntimeError("step after the episode ended; reset first")
        self._sequence[self.task.prompt_length + len(self._generated)] = token
        self._generated.append(token)
        ended = token == EOS_ID or len(self._generated) == self.task.max_new_tokens
        self._ended = ended
        reward = self.task.score(*self._problem, self._generated) if ended else 0.0
        info = {"is_success": reward == 1.0} if ended else {}
        return self._sequence.copy(), reward, ended, False, info


def register_language_envs() -> None:
    if DIGIT_ADDITION_ID not in gymnasium.envs.registry:
        gymnasium.register(id=DIGIT_ADDITION_ID, entry_point="rlcompare.harness.language:DigitAdditionEnv")


def task_of(env_id: str, env_kwargs: Mapping[str, Any]) -> AdditionTask:
    """The task a language environment id and its kwargs stand for."""
    if not is_language_task(env_id):
        raise ValueError(f"{env_id} is not a language task ({', '.join(sorted(LANGUAGE_TASK_IDS))})")
    kwargs = {key: value for key, value in env_kwargs.items() if key in ("digits", "max_new_tokens", "modulus")}
    return AdditionTask(**kwargs)


def evaluation_env_kwargs(env_id: str, env_kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The kwargs the harness evaluates ``env_id`` with: a language task's held-out problems."""
    kwargs = dict(env_kwargs)
    if is_language_task(env_id):
        kwargs["split"] = "held_out"
    return kwargs


def training_problem_seeds(run_seed: int, count: int, start: int = 0) -> list[int]:
    """The reset seeds of a run's training prompts, in order: the same for every adapter of a seed."""
    return [run_seed * TRAINING_SEED_STRIDE + index for index in range(start, start + count)]


def training_prompts(env_id: str, env_kwargs: Mapping[str, Any], run_seed: int,
                     count: int) -> tuple[list[str], list[int]]:
    """A run's first ``count`` training prompts as text (``<bos>`` left to the tokenizer: ``12+34=``), with
    the reset seed of each (:func:`training_problem_seeds`): what an adapter's data loader serves, in order."""
    task = task_of(env_id, env_kwargs)
    env = DigitAdditionEnv(task.digits, task.max_new_tokens, "train", task.modulus)
    seeds = training_problem_seeds(run_seed, count)
    prompts = []
    for problem_seed in seeds:
        _, info = env.reset(seed=problem_seed)
        a, b = info["problem"]
        prompts.append(f"{a:0{task.digits}d}+{b:0{task.digits}d}=")
    return prompts, seeds


def score_completion(env: gymnasium.Env, problem_seed: int, completion: Sequence[int]) -> tuple[float, int]:
    """Reset ``env`` (a counted training environment of the task) to ``problem_seed``'s prompt and step
    ``completion``'s tokens through it, up to the episode's end: the reward and the tokens stepped.
    A completion that stops before the episode ends (neither ``<eos>`` nor the task's length) is an error."""
    env.reset(seed=problem_seed)
    for stepped, token in enumerate(completion, start=1):
        _, reward, terminated, truncated, _ = env.step(int(token))
        if terminated or truncated:
            return float(reward), stepped
    raise ValueError(f"the completion {list(map(int, completion))} ends before <eos> or the task's "
                     "max_new_tokens: generate up to the task's length")


def sequence_lengths(observations: np.ndarray) -> np.ndarray:
    """Tokens so far in each row of a batch of observations (every id before the padding)."""
    observations = np.asarray(observations)
    return (observations != PAD_ID).sum(axis=-1)


# -------------------------------------------------------------------------------------------------
# the model
# -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LanguageModelConfig:
    """A Qwen2-style decoder's shape (see the module docstring); the vocabulary is the harness's."""

    layers: int = 2
    hidden_size: int = 64
    heads: int = 4
    kv_heads: int = 2
    intermediate_size: int = 128
    rope_theta: float = 10_000.0
    rms_norm_eps: float = 1e-6
    init_std: float = 0.02

    @property
    def vocab_size(self) -> int:
        return len(VOCABULARY)

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.heads

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any] | None) -> LanguageModelConfig:
        known = {key: values[key] for key in cls.__dataclass_fields__ if values and key in values}
        return cls(**known)


def weight_shapes(config: LanguageModelConfig) -> dict[str, tuple[int, ...]]:
    """Every parameter's name (as ``Qwen2ForCausalLM`` names it) and shape (``(out, in)`` for a linear layer)."""
    h, kv = config.hidden_size, config.kv_heads * config.head_dim
    shapes: dict[str, tuple[int, ...]] = {"model.embed_tokens.weight": (config.vocab_size, h)}
    for layer in range(config.layers):
        prefix = f"model.layers.{layer}."
        shapes.update({
            prefix + "input_layernorm.weight": (h,),
            prefix + "self_attn.q_proj.weight": (config.heads * config.head_dim, h),
            prefix + "self_attn.q_proj.bias": (config.heads * config.head_dim,),
            prefix + "self_attn.k_proj.weight": (kv, h),
            prefix + "self_attn.k_proj.bias": (kv,),
            prefix + "self_attn.v_proj.weight": (kv, h),
            prefix + "self_attn.v_proj.bias": (kv,),
            prefix + "self_attn.o_proj.weight": (h, config.heads * config.head_dim),
            prefix + "post_attention_layernorm.weight": (h,),
            prefix + "mlp.gate_proj.weight": (config.intermediate_size, h),
            prefix + "mlp.up_proj.weight": (config.intermediate_size, h),
            prefix + "mlp.down_proj.weight": (h, config.intermediate_size),
        })
    shapes["model.norm.weight"] = (h,)
    return shapes


def initial_weights(config: LanguageModelConfig, seed: int) -> dict[str, np.ndarray]:
    """The model's initial parameters for ``seed`` (float32), drawn in :func:`weight_shapes`' order."""
    rng = np.random.default_rng([seed, 0x6C6D])  # its own stream: not the environments' or the prompts'
    weights = {}
    for name, shape in weight_shapes(config).items():
        if name.endswith("norm.weight"):
            weights[name] = np.ones(shape, dtype=np.float32)
        elif name.endswith(".bias"):
            weights[name] = np.zeros(shape, dtype=np.float32)
        else:
            weights[name] = (rng.standard_normal(shape) * config.init_std).astype(np.float32)
    return weights
