"""The harness's language tasks by id, and their defaults (standard library only: the workload spec
checks a language family's environment without importing gymnasium; the tasks themselves are in
:mod:`rlcompare.harness.language`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: The harness's vocabulary: ids are positions. ``<pad>`` is 0, ``<bos>`` 1, ``<eos>`` 2.
VOCABULARY: tuple[str, ...] = ("<pad>", "<bos>", "<eos>", *"0123456789", "+", "=")
PAD_ID, BOS_ID, EOS_ID = 0, 1, 2

#: Gymnasium id of :class:`rlcompare.harness.language.DigitAdditionEnv`.
DIGIT_ADDITION_ID = "rlcompare/DigitAddition-v0"
LANGUAGE_TASK_IDS = frozenset({DIGIT_ADDITION_ID})
#: The task's completion length when its ``env_kwargs`` do not set ``max_new_tokens``.
DEFAULT_MAX_NEW_TOKENS = 3


def is_language_task(env_id: str) -> bool:
    return env_id in LANGUAGE_TASK_IDS


def completion_tokens(env_kwargs: Mapping[str, Any]) -> int:
    """The most tokens one completion of the task may have (its ``max_new_tokens``)."""
    value = env_kwargs.get("max_new_tokens", DEFAULT_MAX_NEW_TOKENS)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else DEFAULT_MAX_NEW_TOKENS
