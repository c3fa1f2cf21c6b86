"""Where an adapter's framework is installed, and which of its modules a training run needs.

An adapter that fits the main environment is measured there; one that runs in an environment of
its own (numpy<2, an old gymnasium, a pinned torch: :mod:`rlcompare.pyenvs`) is measured in
that environment, the one its recorded runs used, else the newest one built for it that is not
stale. Without this, every development criterion that reads installed packages would be missing
for exactly the frameworks isolation exists for, and a criterion missing for one competing adapter
is left out of everyone's overall score.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlcompare.scoring.criteria import ScoringData


@dataclass(frozen=True)
class Installation:
    """A Python environment the criteria read metadata from and start interpreters in."""

    python: str
    #: Where its distributions live; None: this interpreter's own ``sys.path``.
    site_packages: tuple[str, ...] | None
    python_version: str
    #: The adapter environment's key; None for the main environment.
    environment_key: str | None = None

    @property
    def label(self) -> str:
        return "the main environment" if self.environment_key is None else f"environment {self.environment_key}"

    @property
    def cache_tag(self) -> str:
        """Part of every cache key of a measurement made here."""
        return f"{self.python}|py{self.python_version}"

    def distribution(self, name: str) -> importlib.metadata.Distribution | None:
        if self.site_packages is None:
            try:
                return importlib.metadata.distribution(name)
            except importlib.metadata.PackageNotFoundError:
                return None
        return next(iter(importlib.metadata.Distribution.discover(name=name, path=list(self.site_packages))), None)

    def version(self, name: str) -> str | None:
        distribution = self.distribution(name)
        return None if distribution is None else distribution.version

    def marker_environment(self) -> dict[str, str]:
        """What requirement markers see in this environment (its Python may not be this one)."""
        major, minor = self.python_version.split(".")[:2]
        return {"python_version": f"{major}.{minor}", "python_full_version": self.python_version}

    def process_environment(self) -> dict[str, str]:
        """The environment variables of an interpreter started here: an adapter environment's gets
        nothing of this process's import path (as its workers do), and every interpreter the thread
        pins of a run with one thread per worker (the default), as a run's worker that times its own
        import has them (a BLAS or OpenMP runtime sizes its pool when it loads)."""
        from rlcompare.pyenvs.processes import THREAD_ENV_VARS

        env = {**os.environ, **dict.fromkeys(THREAD_ENV_VARS, "1")}
        if self.environment_key is not None:
            from rlcompare.pyenvs.processes import enter_environment

            enter_environment(env, self.python)
        return env


MAIN = Installation(sys.executable, None, platform.python_version())


def _environment_installation(folder: Path) -> Installation | None:
    """The installation of a complete adapter environment folder, or None when it is not one."""
    from rlcompare.pyenvs.manager import COMPLETE, read_info

    if not (folder / COMPLETE).exists():
        return None
    info = read_info(folder)
    site_packages = tuple(str(path) for path in sorted(folder.glob("lib/python*/site-packages")))
    version = str(info.get("python_version") or "")
    if not site_packages or not version:
        return None
    return Installation(str(folder / "bin" / "python"), site_packages, version, str(info.get("key") or folder.name))


def _recorded_environments(data: ScoringData, adapter_id: str) -> list[Path]:
    """The environment folders the adapter's runs recorded, newest run first."""
    runs = data.runs
    if "environment_json" not in runs.columns:
        return []
    rows = runs[(runs["adapter"] == adapter_id) & runs["environment_json"].notna()]
    if "finished_at" in rows.columns:
        rows = rows.sort_values("finished_at", ascending=False, na_position="last")
    folders: list[Path] = []
    for text in rows["environment_json"]:
        try:
            python = json.loads(text)["python"] if isinstance(text, str) else text["python"]
        except (ValueError, KeyError, TypeError):
            continue
        if not isinstance(python, str) or not python:
            continue  # a damaged record: no interpreter to find
        folder = Path(python).parent.parent
        if folder not in folders:
            folders.append(folder)
    return folders


def installation_of(data: ScoringData, adapter_class: Any) -> tuple[Installation | None, str | None]:
    """(where the adapter's framework is installed, None) or (None, why it is nowhere to measure).

    The environment its recorded runs ran in, if it is still there; else the main environment
    when the adapter fits there; else the newest environment built for it whose linked sources
    still exist."""

    subject = getattr(adapter_class, "subject", adapter_class.id)  # a release's: rlcompare.plan.releases

    def find() -> tuple[Installation | None, str | None]:
        for folder in _recorded_environments(data, subject):
            found = _environment_installation(folder)
            if found is not None:
                return found, None
        if subject != adapter_class.id:  # another environment built for the adapter holds another release
            return None, f"{subject!r}: no run recorded the environment of its release, or it was removed"
        from rlcompare.pyenvs.manager import isolation_reason, ready_environments

        reason = isolation_reason(adapter_class)
        if reason is None:
            return MAIN, None
        for folder in ready_environments(adapter_class.id):  # a stale one holds another checkout's adapter
            found = _environment_installation(folder)
            if found is not None:
                return found, None
        return None, (f"adapter {adapter_class.id!r} needs an environment of its own ({reason}) and none is built "
                      f"(`rlcompare env build {adapter_class.id}`)")

    return data.memo(f"installation|{subject}", find)


def as_modules(modules: str | Sequence[str]) -> list[str]:
    return [modules] if isinstance(modules, str) else list(modules)
