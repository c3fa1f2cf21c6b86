from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import psutil
import pytest

from rlcompare.plan.matrix import Plan, build_plan
from rlcompare.plugins.manager import build_plugin_manager
from rlcompare.pyenvs.manager import BYTECODE_MODE_ENV
from rlcompare.pyenvs.warm import WARM_POOL_ENV, WARM_START_ENV, open_pool
from rlcompare.spec.workload import load_workload_file

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
    """Install the test plugin (adapters fake, batched, hungry, raising, sleepy) through its entry point,
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


def plan_of(workload_file: Path, adapters: list[str], seeds: int | None = None) -> Plan:
    """The plan of ``workload_file`` for ``adapters`` (``seeds`` in place of the workload's), with the
    plugins installed here (the test plugin too, where ``fake_plugin`` put it on the path)."""
    return build_plan(build_plugin_manager().plan_catalogue(), [load_workload_file(workload_file)], adapters, seeds)


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` exists and has not ended (psutil's view: the tests' own, independent of
    the harness's /proc reading)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


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


#: The most pytest-xdist workers ``-n auto`` starts: each holds the frameworks it imported (torch and
#: the RL libraries, about a GiB) and many of the tests it runs start process trees of their own
#: (runs, Ray clusters, builds), so more workers than this only crowd the machine.
MAX_WORKERS = 4


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one worker per CPU this process may use (its affinity, which a container's CPU
    set limits; psutil counts the host's), at most :data:`MAX_WORKERS`;
    ``PYTEST_XDIST_AUTO_NUM_WORKERS`` overrides it, as it does for pytest-xdist itself."""
    override = os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS", "")
    if override.isdigit():
        return int(override)
    from rlcompare.harness.host import usable_cpus

    return min(usable_cpus(), MAX_WORKERS)


def shared_temp_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The temporary folder every process of this test run shares: pytest's base folder, or, under
    pytest-xdist, the folder above each worker's own (one per run, so runs never share it)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(autouse=True, scope="session")
def measurement_cache_in_tmp(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Development measurements and built adapter environments go to a cache of this test run, not
    the user's. Every worker process of the run shares it: a measurement (a cold import timed three
    times) or an environment (uv's build) is made once per run, as one serial session makes it, and
    the environment manager's lock keeps two workers from building the same environment at once."""
    cache = shared_temp_root(tmp_path_factory) / "rlcompare-cache"
    cache.mkdir(exist_ok=True)
    os.environ["RLCOMPARE_CACHE_DIR"] = str(cache)
    # Tianshou compiles its numba helpers in every process (8-12 s of a CPU each): once for the run here
    # (rlcompare_tianshou.cache_compiled_helpers; test_tianshou checks both ways)
    os.environ["RLCOMPARE_NUMBA_CACHE"] = str(cache / "numba")
    # The adapter environments of this cache live for this test run only: where Python writes bytecode
    # (under make), their first runs' imports write what the later runs read, instead of each build
    # compiling every module it installs (about 2.5 ms of CPU a file: 26 s for SBX's 10,411, about a
    # minute for the test run's environments, for the few modules a run imports). test_environments
    # checks both ways.
    if not sys.flags.dont_write_bytecode:
        os.environ[BYTECODE_MODE_ENV] = "on-import"
    # Each run's process forked from a parent that imported its framework once (rlcompare.pyenvs.warm):
    # the framework's import (2-7 CPU seconds) is paid once per test process and environment instead of
    # once per run. Cold starts stay the default for users; tests/test_warm_start.py runs both ways and
    # tests that measure a cold start's own figures set RLCOMPARE_WARM_START=0.
    os.environ.setdefault(WARM_START_ENV, "1")


def pytest_configure(config: pytest.Config) -> None:
    """One pool of warm starts' parents for the whole test run (rlcompare.pyenvs.warm.open_pool): the
    test processes and every driver they start share each framework's parent, instead of each
    importing the framework for itself. This process owns it (pytest-xdist's workers inherit the
    variable); its parents stop when it ends or after five minutes unused (the modules that use a
    framework, its kit run and its own tests, may be minutes apart). tests/test_warm_start.py checks a
    driver's own parents and the pool's."""
    if hasattr(config, "workerinput") or os.environ.get(WARM_POOL_ENV):
        return
    folder = Path(tempfile.mkdtemp(prefix="rlcompare-warm-pool-"))
    open_pool(folder, owner=os.getpid(), idle_seconds=300)
    os.environ[WARM_POOL_ENV] = str(folder)
    config.stash[_POOL] = folder


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = config.stash.get(_POOL, None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)  # its parents stop (their sockets are gone)
        os.environ.pop(WARM_POOL_ENV, None)


_POOL = pytest.StashKey[Path]()


def _restoring_environment() -> Iterator[None]:
    before = dict(os.environ)
    yield
    if dict(os.environ) != before:
        os.environ.clear()
        os.environ.update(before)


@pytest.fixture(autouse=True, scope="module")
def environment_kept_per_module() -> Iterator[None]:
    """What a module's fixtures and tests leave in ``os.environ`` goes with the module. Frameworks
    imported in a test process set variables as they load (Ray RAY_CLIENT_MODE, tensordict
    TORCHINDUCTOR_CACHE_DIR, TorchRL LAZY_LEGACY_OP, OpenCV LD_LIBRARY_PATH and Qt's, Tianshou
    SDL_AUDIODRIVER, a seeding helper PYTHONHASHSEED); runs inherit the driver's environment, so without
    this a run's environment would depend on the modules that ran before it in the same process (and
    warm starts' parents, keyed by it, would split)."""
    yield from _restoring_environment()


@pytest.fixture(autouse=True)
def environment_kept_per_test() -> Iterator[None]:
    """As :func:`environment_kept_per_module`, for each test (after its module's fixtures)."""
    yield from _restoring_environment()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Modules that train with a real framework first, the quick ones after them, each module's tests
    in their own order: the order of a serial run. Under ``--dist loadfile`` pytest-xdist hands the
    modules out by their number of tests instead (most first; ``--no-loadscope-reorder`` keeps this
    order): measured in one hour on 2 CPUs, 584 s of tests with its order against 598 s with this one."""
    slow = {item.path for item in items if item.get_closest_marker("framework") is not None}
    items.sort(key=lambda item: item.path not in slow)  # stable: collection order within each group
