"""The harness's step counter: shared between processes, lock-free, and durable when a writer dies."""

from __future__ import annotations

import pickle
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from rlcompare.harness.counted_envs import DEFAULT_SLOTS, CountingWrapper, EnvFactory, StepCounter

ROOT = Path(__file__).resolve().parents[1]


def test_counter_api_and_fresh_file(tmp_path: Path) -> None:
    path = tmp_path / "steps.bin"
    counter = StepCounter(path, create=True)
    assert counter.path == path and counter.slots == DEFAULT_SLOTS
    counter.add(0, 5, 1)
    counter.add(DEFAULT_SLOTS - 1, 2, 0)
    assert counter.totals() == (7, 1) and counter.steps() == 7
    assert StepCounter(path).totals() == (7, 1)  # a second mapping of the same file sees them
    assert StepCounter(path, create=True).totals() == (0, 0)  # creating again starts from zero
    with pytest.raises(IndexError, match="slot 512"):
        counter.add(DEFAULT_SLOTS, 1, 0)


def test_wrapper_counts_steps_and_episodes(tmp_path: Path) -> None:
    counter = StepCounter(tmp_path / "steps.bin", slots=4, create=True)
    env = EnvFactory("CartPole-v1", {}, str(counter.path), 3)()
    assert isinstance(env, CountingWrapper)
    env.reset(seed=0)
    steps = episodes = 0
    while episodes < 3:
        *_, terminated, truncated, _ = env.step(0)
        steps += 1
        if terminated or truncated:
            episodes += 1
            env.reset()
    assert counter.totals() == (steps, 3)
    assert counter._steps.tolist() == [0, 0, 0, steps]


def test_wrapper_out_of_range_slot_fails_on_first_step(tmp_path: Path) -> None:
    counter = StepCounter(tmp_path / "steps.bin", slots=2, create=True)
    env = EnvFactory("CartPole-v1", {}, str(counter.path), 2)()
    env.reset(seed=0)
    with pytest.raises(IndexError, match="env slot 2 outside the 2 slots"):
        env.step(0)


def test_pickled_wrapper_attaches_again(tmp_path: Path) -> None:
    counter = StepCounter(tmp_path / "steps.bin", create=True)
    env = EnvFactory("CartPole-v1", {}, str(counter.path), 1)()
    env.reset(seed=0)
    env.step(0)  # attached here
    copy = pickle.loads(pickle.dumps(env))
    copy.step(1)
    assert counter.totals()[0] == 2


def test_killed_writer_leaves_its_counts(tmp_path: Path) -> None:
    """A worker killed with SIGKILL mid-run (no exit handlers, no flush) keeps every counted step."""
    counter = StepCounter(tmp_path / "steps.bin", create=True)
    script = (
        "import os, signal, sys\n"
        "from rlcompare.harness.counted_envs import EnvFactory\n"
        "env = EnvFactory('CartPole-v1', {}, sys.argv[1], 5)()\n"
        "env.reset(seed=0)\n"
        "for _ in range(1234):\n"
        "    *_, terminated, truncated, _ = env.step(0)\n"
        "    if terminated or truncated:\n"
        "        env.reset()\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(counter.path)], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == -signal.SIGKILL, done.stderr
    steps, episodes = counter.totals()
    assert steps == 1234 and episodes > 0
