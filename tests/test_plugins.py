"""The plugin core: built-ins and third-party plugins register through the same hooks."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from rlcompare import hookspecs
from rlcompare.plugins.manager import BUILTIN_PLUGINS, build_plugin_manager
from tests.conftest import BROKEN_PLUGINS, GOOD_PLUGINS, _with_path, run_cli


def test_builtins_register_sb3_and_quick_suite() -> None:
    plugins = build_plugin_manager(autoload=False)
    assert "sb3" in plugins.adapters
    assert plugins.adapters["sb3"].framework == "stable-baselines3"
    assert [w.id for w in plugins.suite("quick")] == ["cartpole-ppo-quick"]
    assert plugins.errors == []


def test_every_hook_is_documented_and_prefixed() -> None:
    hooks = [name for name in dir(hookspecs) if name.startswith("rlcompare_")]
    assert hooks, "no hooks found"
    for name in hooks:
        assert getattr(hookspecs, name).__doc__, f"hook {name} has no docstring"


def test_third_party_adapter_appears_in_list_through_its_entry_point() -> None:
    result = run_cli(["list", "adapters", "--json"], env={"PYTHONPATH": _with_path(GOOD_PLUGINS)})
    assert result.returncode == 0, result.stderr
    by_id = {row["id"]: row for row in json.loads(result.stdout)}
    assert {"sb3", "fake", "raising", "sleepy"} <= set(by_id)
    assert by_id["fake"]["plugin"] == "fakefw"
    assert by_id["fake"]["framework"] == "fakefw"


def test_autoload_can_be_disabled() -> None:
    result = run_cli(
        ["list", "adapters", "--json"],
        env={"PYTHONPATH": _with_path(GOOD_PLUGINS), "RLCOMPARE_DISABLE_PLUGIN_AUTOLOAD": "1"},
    )
    assert result.returncode == 0, result.stderr
    assert [row["id"] for row in json.loads(result.stdout)] == [
        "d3rlpy", "evotorch", "mushroom-rl", "rejax", "rl-games", "rllib", "rsl-rl", "sample-factory", "sb3", "sbx",
        "skrl", "tianshou", "torchrl", "trl", "tunix"]  # the built-ins only: the outside plugin on PYTHONPATH is not loaded


def test_plugin_that_fails_to_import_is_reported_and_skipped() -> None:
    env = {"PYTHONPATH": _with_path(BROKEN_PLUGINS, GOOD_PLUGINS)}
    listing = run_cli(["list", "adapters", "--json"], env=env)
    assert listing.returncode == 0
    assert {"sb3", "fake"} <= {row["id"] for row in json.loads(listing.stdout)}
    assert "plugin 'brokenfw' failed: ModuleNotFoundError" in listing.stderr
    doctor = run_cli(["doctor", "--json"], env=env)
    assert doctor.returncode == 0, doctor.stderr
    report = json.loads(doctor.stdout)
    assert any("brokenfw" in error for error in report["plugin_errors"])
    assert {a["id"] for a in report["adapters"]} >= {"sb3", "fake"}
    # an adapter that never runs in this environment is reported as such, not as a failed import
    by_id = {a["id"]: a for a in report["adapters"]}
    assert by_id["sample-factory"]["importable"] is None and by_id["sample-factory"]["own_environment"]
    assert by_id["sb3"]["importable"] is True and by_id["sb3"]["own_environment"] is None


def test_misspelled_hook_fails_its_own_plugin_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "typo_plugin.py").write_text(
        "from rlcompare import hookimpl\n\n@hookimpl\ndef rlcompare_register_adaptors(register):\n    pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    plugins = build_plugin_manager(builtins=(*BUILTIN_PLUGINS, "typo_plugin"), autoload=False)
    assert "sb3" in plugins.adapters
    assert [error.plugin for error in plugins.errors] == ["typo_plugin"]
    assert "rlcompare_register_adaptors" in str(plugins.errors[0])


def test_plugin_raising_during_registration_spoils_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "raising_plugin.py").write_text(
        "from rlcompare import hookimpl\n\n@hookimpl\ndef rlcompare_register_adapters(register):\n"
        "    raise RuntimeError('cannot register')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    plugins = build_plugin_manager(builtins=("raising_plugin", *BUILTIN_PLUGINS), autoload=False)
    assert "sb3" in plugins.adapters
    assert "cannot register" in str(plugins.errors[0])


def test_duplicate_adapter_id_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "dup_plugin.py").write_text(
        "from rlcompare import hookimpl\nfrom rlcompare_sb3 import StableBaselines3Adapter\n\n"
        "@hookimpl\ndef rlcompare_register_adapters(register):\n    register.add_adapter(StableBaselines3Adapter)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    plugins = build_plugin_manager(builtins=(*BUILTIN_PLUGINS, "dup_plugin"), autoload=False)
    [error] = [e for e in plugins.errors if "sb3" in str(e)]
    # neither contender keeps the id, whichever loaded first; one line names both and their distributions
    assert "'sb3' is registered by both 'rlcompare_sb3' (rlcompare-sb3 0.1.0) and 'dup_plugin'" in str(error)
    assert "both are disabled" in str(error)
    assert "sb3" not in plugins.adapters and "tianshou" in plugins.adapters


@pytest.mark.parametrize("kind", ["adapters", "algorithms", "workloads", "suites", "criteria"])
def test_listing_imports_no_rl_library(kind: str) -> None:
    code = (
        "import sys\nfrom rlcompare.cli.main import main\n"
        f"status = main(['list', {kind!r}, '--json'])\n"
        "heavy = sorted(m for m in ('torch', 'ray', 'stable_baselines3', 'tianshou', 'torchrl', 'tensordict', 'skrl',"
        " 'gymnasium', 'jax', 'tensorflow') if m in sys.modules)\n"
        "print('HEAVY', heavy)\nsys.exit(status)\n"
    )
    import subprocess

    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": _with_path(GOOD_PLUGINS)}, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "HEAVY []" in result.stdout


def test_python_dash_m_and_script_agree() -> None:
    result = run_cli(["list", "suites", "--json"])
    assert result.returncode == 0
    assert "quick" in [suite["name"] for suite in json.loads(result.stdout)]
