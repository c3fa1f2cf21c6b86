from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GOOD_PLUGINS = ROOT / "tests" / "plugins" / "good"
BROKEN_PLUGINS = ROOT / "tests" / "plugins" / "broken"


def _with_path(*dirs: Path) -> str:
    parts = [str(d) for d in dirs]
    if os.environ.get("PYTHONPATH"):
        parts.append(os.environ["PYTHONPATH"])
    return os.pathsep.join(parts)


@pytest.fixture
def fake_plugin(monkeypatch: pytest.MonkeyPatch) -> Path:
    """Install the test plugin (adapters fake, raising, sleepy) through its entry point,
    for this process and for every worker process it starts."""
    monkeypatch.setenv("PYTHONPATH", _with_path(GOOD_PLUGINS))
    monkeypatch.syspath_prepend(str(GOOD_PLUGINS))
    monkeypatch.delenv("RLCOMPARE_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    return GOOD_PLUGINS


def run_cli(args: Sequence[str], env: dict[str, str] | None = None, cwd: Path | None = None,
            timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``python -m rlcompare ARGS`` in a fresh interpreter."""
    return subprocess.run(
        [sys.executable, "-m", "rlcompare", *args], capture_output=True, text=True,
        env={**os.environ, **(env or {})}, cwd=cwd, timeout=timeout,
    )


TINY_WORKLOAD = """
id = "tiny"
env = "CartPole-v1"
algorithm = "PPO"
env_steps = 600
seeds = 2
[hyperparameters]
rollout_steps = 64
minibatch_size = 32
epochs = 2
[evaluation]
interval_steps = 200
episodes = 2
"""


@pytest.fixture
def tiny_workload(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.toml"
    path.write_text(TINY_WORKLOAD, encoding="utf-8")
    return path


@pytest.fixture(autouse=True, scope="session")
def measurement_cache_in_tmp(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Development measurements go to a cache of this test session, not the user's."""
    os.environ["RLCOMPARE_CACHE_DIR"] = str(tmp_path_factory.mktemp("measurements"))
