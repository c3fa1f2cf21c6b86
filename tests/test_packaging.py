"""The built-in plugins are distributions of their own, packaged exactly like an outside adapter:
no generic top-level import names (``adapters``, ``criteria``), each with its own requirements and
its ``rlcompare`` entry point, so an environment can install exactly one of them."""

from __future__ import annotations

import email.parser
import importlib.metadata
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from rlcompare.plugins.manager import BUILTIN_PLUGINS, build_plugin_manager

ROOT = Path(__file__).resolve().parents[1]
ADAPTER_DISTS = sorted(path.parent for path in (ROOT / "adapters").glob("*/pyproject.toml"))


def _project(folder: Path) -> dict:
    return tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def test_no_generic_top_level_import_names_are_installed() -> None:
    owners = importlib.metadata.packages_distributions()
    for generic in ("adapters", "criteria"):
        assert not any(name.startswith("rlcompare") for name in owners.get(generic, ())), generic
    main = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert main["tool"]["setuptools"]["packages"]["find"]["include"] == ["rlcompare*"]
    assert not (ROOT / "adapters" / "__init__.py").exists()
    assert not (ROOT / "criteria" / "__init__.py").exists()


def test_every_builtin_adapter_is_a_distribution_with_its_entry_point_and_framework() -> None:
    assert {folder.name for folder in ADAPTER_DISTS} >= {"sb3", "tianshou", "rllib", "torchrl", "skrl"}
    plugins = build_plugin_manager(autoload=False)
    for folder in ADAPTER_DISTS:
        project = _project(folder)
        module = f"rlcompare_{folder.name}"
        assert project["name"] == f"rlcompare-{folder.name.replace('_', '-')}"
        assert list(project["entry-points"]["rlcompare"].values()) == [module]
        assert module in BUILTIN_PLUGINS, f"{module} is not listed as a built-in plugin"
        registered = [cls for cls in plugins.adapters.values() if cls.__module__ == module]
        assert len(registered) == 1, module
        adapter = registered[0]
        # the framework the adapter records as its own is required by its distribution, or, for an
        # adapter that always runs in an environment of its own, by that environment
        needed = adapter.environment_requirements() if adapter.requires_isolation else tuple(project["dependencies"])
        assert adapter.distributions[0].lower() in " ".join(needed).lower(), (folder.name, adapter.distributions[0])
        # torch, wherever the adapter's framework uses it, is pinned to the CPU build; a framework without
        # torch (rejax: JAX only) names no torch at all, so none is installed into its environment
        torch_pins = [requirement for requirement in needed if requirement.lower().split("=")[0].strip() == "torch"]
        if "torch" in adapter.distributions:
            assert torch_pins == ["torch==2.13.0"], f"{folder.name}: torch must be pinned to the CPU build"
        else:
            assert not torch_pins and not any("torch" in requirement.lower() for requirement in needed), folder.name


def test_builtin_plugins_record_their_own_distribution_as_origin() -> None:
    plugins = build_plugin_manager(autoload=False)
    installed = {dist.metadata["Name"] for dist in importlib.metadata.distributions()}
    if "rlcompare-sb3" not in installed:
        pytest.fail("rlcompare-sb3 is not installed: run `make install` (it installs every built-in distribution)")
    origin = plugins.origin("adapter", "sb3")
    assert (origin.plugin, origin.distribution) == ("rlcompare_sb3", "rlcompare-sb3")
    # with autoload on, the built-in distribution's own entry point does not register it a second time
    with_autoload = build_plugin_manager()
    assert not [error for error in with_autoload.errors if "rlcompare_sb3" in str(error) or "'sb3'" in str(error)]
    assert with_autoload.origin("adapter", "sb3").distribution == "rlcompare-sb3"


def test_one_adapter_builds_as_a_wheel_of_its_own(tmp_path: Path) -> None:
    folder = tmp_path / "rlcompare-sb3"  # a copy: building leaves build/ and *.egg-info beside the sources
    shutil.copytree(ROOT / "adapters" / "sb3", folder, ignore=shutil.ignore_patterns("*.egg-info", "build"))
    wheels = tmp_path / "wheels"
    # uv (a test dependency) builds it with the setuptools `make install` puts in the environment
    subprocess.run([str(Path(sys.executable).parent / "uv"), "build", "--wheel", "--no-build-isolation", "--quiet",
                    "--python", sys.executable, "--out-dir", str(wheels), str(folder)],
                   check=True, capture_output=True, timeout=300)
    (wheel,) = wheels.glob("rlcompare_sb3-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        assert "rlcompare_sb3/__init__.py" in names and "rlcompare_sb3/parity.py" in names  # the whole package
        assert not any(name.startswith(("adapters/", "criteria/", "rlcompare/")) for name in names)
        info = next(name for name in names if name.endswith(".dist-info/entry_points.txt"))
        assert "sb3 = rlcompare_sb3" in archive.read(info).decode()
        metadata = email.parser.Parser().parsestr(
            archive.read(next(name for name in names if name.endswith(".dist-info/METADATA"))).decode())
    requires = metadata.get_all("Requires-Dist")
    assert any(req.startswith("stable-baselines3") for req in requires)
    assert "torch==2.13.0" in requires
