"""The harness's language task, tokenizer and model weights, and the language workload's spec (no
framework: numpy, gymnasium and the spec layer only)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlcompare.errors import InvalidWorkloadError
from rlcompare.harness.counted_envs import EnvFactory, StepCounter, make_env
from rlcompare.harness.evaluation import Evaluator
from rlcompare.harness.language import (
    DIGIT_ADDITION_ID,
    EOS_ID,
    PAD_ID,
    AdditionTask,
    LanguageModelConfig,
    decode,
    encode,
    initial_weights,
    score_completion,
    sequence_lengths,
    training_problem_seeds,
    weight_shapes,
)
from rlcompare.harness.workload_view import workload_view
from rlcompare.spec.builtin_workloads import LLM_TINY
from rlcompare.spec.workload import workload_from_dict

GRPO = {"id": "grpo-test", "env": DIGIT_ADDITION_ID, "algorithm": "GRPO", "env_steps": 1_920}


def test_the_tokenizer_round_trips_and_names_a_character_it_does_not_know() -> None:
    ids = encode("<bos>12+34=46<eos>")
    assert ids[0] == 1 and ids[-1] == EOS_ID and len(ids) == 10
    assert decode(ids) == "12+34=46"
    assert decode([*encode("7"), EOS_ID, *encode("9")]) == "7"  # nothing after <eos>
    with pytest.raises(ValueError, match="'x' is not in the vocabulary"):
        encode("1x")


def test_a_reset_seed_picks_the_same_problem_and_the_splits_are_disjoint() -> None:
    task = AdditionTask(digits=2, max_new_tokens=4)
    train, held_out = set(task.problems("train")), set(task.problems("held_out"))
    assert not train & held_out and len(train) + len(held_out) == 10_000
    assert 0.15 < len(held_out) / 10_000 < 0.25
    env = make_env(DIGIT_ADDITION_ID, {"digits": 2, "max_new_tokens": 4})
    first, info = env.reset(seed=5)
    again, info_again = env.reset(seed=5)
    assert np.array_equal(first, again) and info == info_again and tuple(info["problem"]) in train
    a, b = info["problem"]
    assert decode(first) == f"{a:02d}+{b:02d}=" and first[0] == 1 and (first[7:] == PAD_ID).all()
    evaluation = make_env(DIGIT_ADDITION_ID, {"digits": 2, "max_new_tokens": 4, "split": "held_out"})
    drawn = {tuple(evaluation.reset(seed=seed)[1]["problem"]) for seed in range(200)}
    assert drawn <= held_out


def test_the_reward_is_the_share_of_the_answer_right_from_its_start() -> None:
    task = AdditionTask(digits=1, max_new_tokens=3)
    assert task.score(7, 8, encode("15<eos>")) == 1.0
    assert task.score(7, 8, encode("14<eos>")) == pytest.approx(1 / 3)
    assert task.score(7, 8, encode("51<eos>")) == 0.0
    assert task.score(7, 8, encode("15")) == pytest.approx(2 / 3)  # cut off before <eos>
    assert task.score(2, 3, encode("5<eos>")) == 1.0
    assert task.score(2, 3, encode("55")) == 0.5


def test_an_episode_ends_at_eos_or_the_task_length_and_every_token_is_a_counted_step(tmp_path) -> None:
    counter = StepCounter(tmp_path / "steps", 4, create=True)
    env = EnvFactory(DIGIT_ADDITION_ID, {"max_new_tokens": 3}, str(counter.path), 0)()
    _, info = env.reset(seed=11)
    a, b = info["problem"]
    right = encode(f"{a + b}<eos>")
    reward, stepped = score_completion(env, 11, right)
    assert (reward, stepped) == (1.0, len(right))
    reward, stepped = score_completion(env, 11, [3, 3, 3, 3])  # past the task's length: the episode ends at 3
    assert stepped == 3 and reward < 1.0
    assert counter.totals() == (len(right) + 3, 2)
    with pytest.raises(ValueError, match="ends before <eos>"):
        score_completion(env, 11, [3])
    env.step(EOS_ID)  # that episode ends here
    with pytest.raises(RuntimeError, match="reset first"):
        env.step(EOS_ID)


def test_the_harness_evaluates_on_held_out_problems_only() -> None:
    evaluator = Evaluator(DIGIT_ADDITION_ID, {"max_new_tokens": 3}, list(range(1_000_000, 1_000_040)))
    held_out = set(AdditionTask().problems("held_out"))
    seen = []

    def answer(observations: np.ndarray) -> np.ndarray:
        lengths = sequence_lengths(observations)
        for row, length in zip(observations, lengths, strict=True):
            if length == 5:
                seen.append((int(row[1]) - 3, int(row[3]) - 3))
        return np.array([EOS_ID] * len(observations))

    result = evaluator.evaluate(answer)
    assert set(seen) <= held_out and len(seen) == 40
    assert result.lengths == [1] * 40 and result.mean == 0.0


def test_training_prompts_depend_on_the_seed_only() -> None:
    assert training_problem_seeds(3, 4) == training_problem_seeds(3, 6)[:4]
    assert set(training_problem_seeds(0, 100)).isdisjoint(training_problem_seeds(1, 100))
    assert max(training_problem_seeds(999, 10_000)) < 1_000_000_000  # below any evaluation seed of those runs


def test_initial_weights_are_the_seeds_own_and_named_as_qwen2_names_them() -> None:
    config = LanguageModelConfig()
    first, again, other = initial_weights(config, 0), initial_weights(config, 0), initial_weights(config, 1)
    assert list(first) == list(weight_shapes(config))
    assert {name: array.shape for name, array in first.items()} == weight_shapes(config)
    assert all(np.array_equal(first[name], again[name]) for name in first)
    assert not np.array_equal(first["model.embed_tokens.weight"], other["model.embed_tokens.weight"])
    assert first["model.layers.1.self_attn.k_proj.weight"].shape == (32, 64)  # 2 kv heads of 16
    assert (first["model.norm.weight"] == 1).all() and (first["model.layers.0.self_attn.q_proj.bias"] == 0).all()
    assert sum(array.size for array in first.values()) == 75_264
    assert 0.015 < float(np.std(first["model.embed_tokens.weight"])) < 0.025


def test_a_grpo_workload_gets_the_default_model_and_a_control_workload_reads_as_before() -> None:
    workload = workload_from_dict(GRPO, "test")
    assert workload.language_model is not None and workload.language_model.hidden_size == 64
    assert workload.rollout_env_steps == 8 * 8 * 3
    view = workload_view(workload.to_dict(), workload.derived())
    assert view.language_model.to_dict() == workload.language_model.to_dict()
    assert view.family.task == "language"
    assert workload_view(workload.to_dict()).rollout_env_steps == workload.rollout_env_steps
    control = workload_from_dict({"id": "c", "env": "CartPole-v1", "algorithm": "PPO", "env_steps": 1_000}, "t")
    assert "language_model" not in json.loads(control.json_text) and "task" not in control.derived()["family"]
    assert workload_from_dict(LLM_TINY, "built-in").rollout_env_steps == 192


@pytest.mark.parametrize(("change", "field"), [
    ({"env": "CartPole-v1"}, "field 'env': GRPO trains a language model"),
    ({"language_model": {"hidden_size": 62}}, "hidden_size 62 is not a multiple of heads 4"),
    ({"language_model": {"heads": 4, "kv_heads": 3}}, "heads 4 is not a multiple of kv_heads 3"),
    ({"language_model": {"layers": 0}}, "field 'language_model.layers'"),
    ({"hyperparameters": {"group_size": 1}}, "field 'hyperparameters.group_size'"),
    ({"hyperparameters": {"loss_aggregation": "sum"}}, "field 'hyperparameters.loss_aggregation'"),
    ({"hyperparameters": {"clip_hi": 0.3}}, "did you mean 'clip_high'"),
    ({"env_kwargs": {"split": "held_out"}}, "field 'env_kwargs.split': the harness chooses the split"),
])
def test_a_bad_language_workload_is_one_line_naming_the_field(change: dict, field: str) -> None:
    with pytest.raises(InvalidWorkloadError, match=field.replace("(", r"\(")) as raised:
        workload_from_dict({**GRPO, **change}, "test")
    assert "\n" not in str(raised.value)


def test_a_control_workload_with_a_language_model_is_refused() -> None:
    with pytest.raises(InvalidWorkloadError, match="field 'language_model': PPO does not train a language model"):
        workload_from_dict({"id": "c", "env": "CartPole-v1", "algorithm": "PPO", "env_steps": 1_000,
                            "language_model": {}}, "test")


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.sampled_from(["group_size", "prompts_per_step", "clip_low", "clip_high", "kl_coef",
                                        "loss_aggregation", "advantage_scaling", "temperature", "iterations"]),
                       st.one_of(st.integers(-3, 2_000), st.floats(allow_nan=True, allow_infinity=True),
                                 st.text(max_size=8), st.booleans(), st.none()), max_size=3))
def test_any_grpo_hyperparameters_validate_or_fail_on_one_line_naming_a_setting(values: dict) -> None:
    try:
        workload = workload_from_dict({**GRPO, "hyperparameters": values}, "fuzz")
    except InvalidWorkloadError as exc:
        message = str(exc)
        assert "\n" not in message and "hyperparameters." in message
    else:
        assert workload.rollout_env_steps == (workload.hyperparameters.prompts_per_step
                                               * workload.hyperparameters.group_size * 3)
