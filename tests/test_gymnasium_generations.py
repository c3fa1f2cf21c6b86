"""The harness's environment side (counting wrapper, evaluation, calibrated env) across gymnasium
generations and numpy 1/2, each in a small environment holding only numpy and gymnasium.

The environments are built with uv into the user's cache (``rlcompare.harness.host``), keyed by
Python, gymnasium and numpy versions, with a completion marker and a lock, so a second run reuses
them; from a cold cache uv downloads the wheels from PyPI. Without uv or the network this test
fails and says which: it never skips.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from rlcompare.harness.host import cache_dir

pytestmark = pytest.mark.environments

ROOT = Path(__file__).resolve().parents[1]
PROBE = ROOT / "tests" / "harness_probe.py"

#: (gymnasium, numpy) pairs the harness supports. gymnasium 0.26.3 with numpy 2 installs but does not
#: run: its own passive env checker uses ``np.bool8``, removed in numpy 2.0.
GENERATIONS = [
    ("0.26.3", "1.26.4"),
    ("0.28.1", "1.26.4"), ("0.28.1", "2.2.6"),
    ("0.29.1", "1.26.4"), ("0.29.1", "2.2.6"),
    ("1.0.0", "1.26.4"), ("1.0.0", "2.2.6"),
    ("1.2.2", "1.26.4"), ("1.2.2", "2.2.6"),
]
REFERENCE = ("1.2.2", "2.2.6")
COMPLETE = ".rlcompare-complete"


def find_uv() -> str:
    """uv next to this interpreter (installed in the project's environment), else on PATH."""
    beside = Path(sys.executable).with_name("uv")
    found = str(beside) if beside.exists() else shutil.which("uv")
    if found is None:
        pytest.fail("uv is needed to build the gymnasium test environments: install it (pip install uv)")
    return found


def _uv(uv: str, *args: str) -> None:
    done = subprocess.run([uv, *args], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        pytest.fail(f"uv {args[0]} {args[1]} failed (no network to PyPI on a cold cache?): {' | '.join(tail)}")


def generation_env(gymnasium_version: str, numpy_version: str) -> Path:
    """A venv with exactly this gymnasium and numpy, built once per cache and reused."""
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    home = cache_dir() / "gymnasium-generations" / f"py{python}-gymnasium{gymnasium_version}-numpy{numpy_version}"
    if (home / COMPLETE).exists():
        return home
    uv = find_uv()
    home.parent.mkdir(parents=True, exist_ok=True)
    with open(home.parent / f"{home.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another test process may be building the same one
        if not (home / COMPLETE).exists():
            shutil.rmtree(home, ignore_errors=True)  # a build that died half-way
            _uv(uv, "venv", "--quiet", "--python", sys.executable, str(home))
            _uv(uv, "pip", "install", "--quiet", "--python", str(home / "bin" / "python"),
                f"gymnasium=={gymnasium_version}", f"numpy=={numpy_version}")
            (home / COMPLETE).write_text(json.dumps({"gymnasium": gymnasium_version, "numpy": numpy_version}))
    return home


def probe(gymnasium_version: str, numpy_version: str, out: Path) -> dict[str, Any]:
    home = generation_env(gymnasium_version, numpy_version)
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONHOME")}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([str(home / "bin" / "python"), str(PROBE), str(out)], capture_output=True, text=True,
                          env=env, cwd=out.parent, timeout=300)
    assert done.returncode == 0, f"gymnasium {gymnasium_version} numpy {numpy_version}:\n{done.stderr[-3000:]}"
    return json.loads(out.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], dict[str, Any]]:
    scratch = tmp_path_factory.mktemp("generations")
    with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:
        found = pool.map(lambda pair: probe(*pair, scratch / f"{pair[0]}-{pair[1]}.json"), GENERATIONS)
        return dict(zip(GENERATIONS, found, strict=True))


@pytest.mark.parametrize("pair", GENERATIONS, ids=[f"gymnasium{g}-numpy{n}" for g, n in GENERATIONS])
def test_harness_runs_unchanged(reports: dict[tuple[str, str], dict[str, Any]], pair: tuple[str, str]) -> None:
    report, reference = reports[pair], reports[REFERENCE]
    assert report["versions"] == {"gymnasium": pair[0], "numpy": pair[1]}
    # the harness modules a worker needs import with only the standard library, numpy and gymnasium
    assert report["foreign_modules"] == []
    assert report["trajectories"] == reference["trajectories"]
    assert report["counted_same_as_plain"]
    assert report["counting"]["totals"] == report["counting"]["expected_totals"]
    vector = report["vector_counting"]
    assert vector["totals"] == vector["expected_totals"]
    assert report["evaluation"] == reference["evaluation"]
    assert len(set(report["evaluation"]["returns"])) > 1  # a policy that tells the seeds apart
    assert report["calibrated"] == {"registered": {"max_episode_steps": 500, "reward_threshold": 475.0},
                                    "same_as_cartpole": True, "steps": 300}


def test_vector_autoreset_generations_differ(reports: dict[tuple[str, str], dict[str, Any]]) -> None:
    """The probe's vector run sees both autoreset semantics, so the counts above cover both."""
    before = reports[("0.29.1", "2.2.6")]["vector_counting"]["totals"]
    after = reports[("1.0.0", "2.2.6")]["vector_counting"]["totals"]
    assert before[0] == 3 * 120  # every sub-env steps on every vector step
    assert after[0] < 3 * 120  # a sub-env that ended is reset by the next step instead of stepping


def test_a_failing_uv_fails_the_test_with_its_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No network (or a broken uv) is a failure that says so, never a skip."""
    import tests.test_gymnasium_generations as module

    monkeypatch.setenv("RLCOMPARE_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(module, "find_uv", lambda: shutil.which("false") or "/bin/false")
    with pytest.raises(pytest.fail.Exception, match=r"uv venv --quiet failed \(no network to PyPI on a cold cache\?\)"):
        generation_env("1.2.2", "2.2.6")
    assert not any(tmp_path.rglob(COMPLETE))
