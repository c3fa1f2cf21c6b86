"""Per-adapter Python environments, built with uv and keyed like asv keys its environments.

An adapter whose pins conflict with rlcompare's own (numpy<2, gymnasium<1.0, an old torch) runs its
workers in an environment of its own. The environment holds what the adapter declares
(:meth:`rlcompare.harness.contract.Adapter.environment_requirements`), the worker's own needs (numpy,
gymnasium) and nothing of rlcompare's heavy dependencies: the worker is minimal
(:mod:`rlcompare.harness.worker`).

Key: a digest of the resolved lock (``uv pip compile`` output), the Python version, the index
settings (:mod:`rlcompare.pyenvs.indexes`), the worker protocol version and the source
folders linked into it. Same key, same environment: a second build is a no-op. Each environment
lives in the user's cache (``<cache>/environments/<adapter>-<key>/``) with an info file, a
completion marker written last (an environment without one is an interrupted build, rebuilt), a
lock file beside it against concurrent builds, and compiled bytecode (compiled once per file for
all environments: :mod:`rlcompare.pyenvs.bytecode`).

rlcompare's code reaches the environment as links, not as an installed copy: the environment's
``site-packages`` holds a ``.pth`` file naming the environment's ``worker-src`` folder, which holds
symbolic links to the ``rlcompare`` package and to the adapter's top-level package. Installing
rlcompare itself (even with ``--no-deps``) would need a wheel build per environment and would
freeze a copy of the harness that goes stale with every edit; the links cost nothing, always run
the harness the driver runs, and work for an editable checkout and an installed wheel alike
(the package folder is linked, never the whole ``site-packages`` it may sit in). Their targets are
part of the key, so two checkouts never share an environment that points into the other.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.metadata
import importlib.util
import itertools
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import rlcompare
from rlcompare.errors import RLCompareError
from rlcompare.harness.host import cache_dir
from rlcompare.pyenvs.bytecode import link_and_compile, prune
from rlcompare.pyenvs.indexes import IndexSettings, pip_index_settings

#: Bumped when what the worker needs inside an environment changes (its requirements, the layout
#: of the links): every environment is then built again.
WORKER_PROTOCOL = 1
#: What the worker itself imports besides the standard library and the adapter.
WORKER_REQUIREMENTS = ("numpy", "gymnasium")
INFO = "rlcompare-env.json"
COMPLETE = "rlcompare-env.complete"
LOCK = "requirements.lock"
SOURCES = "worker-src"
BYTECODE = "bytecode"
#: ``on-import``: a build compiles no bytecode and leaves each module's to the first import that writes
#: it (the first run in the environment, where Python writes bytecode). For a throwaway cache whose
#: environments live for one session, such as the test suite's: compiling every module up front (torch,
#: JAX, TensorFlow Probability) costs more CPU there than the few modules its runs import. Unset or
#: anything else: compiled at the build and shared between environments (:mod:`rlcompare.pyenvs.bytecode`).
BYTECODE_MODE_ENV = "RLCOMPARE_ENV_BYTECODE"
_PTH = "_rlcompare_worker.pth"
_NAME = re.compile(r"^(?P<adapter>[a-z][a-z0-9_-]*)-(?P<key>[0-9a-f]{16})$")


class BuildError(RLCompareError):
    """An adapter environment that cannot be resolved or built (one line: the adapter and why)."""


def uv_binary() -> str:
    """The uv executable of the ``uv`` distribution rlcompare depends on."""
    try:
        import uv
    except ImportError:
        found = shutil.which("uv")
        if found:
            return found
        raise BuildError("uv is not installed: `pip install uv` (rlcompare builds adapter environments with it)") from None
    return uv.find_uv_bin()


def uv_version(uv: str) -> str:
    done = subprocess.run([uv, "--version"], capture_output=True, text=True, check=False)
    return done.stdout.strip().removeprefix("uv ")


def environments_root() -> Path:
    return cache_dir() / "environments"


# -- what an adapter's environment is made of ------------------------------------------------------


@dataclass(frozen=True)
class EnvironmentSpec:
    """An adapter's environment before resolution: requirements, Python, linked sources."""

    adapter: str
    requirements: tuple[str, ...]
    python: str | None = None
    sources: tuple[str, ...] = ()
    #: Pins kept where the requirements allow them: the resolver drops only those it must
    #: (:func:`preference_attempts`).
    preferred: tuple[str, ...] = ()

    @classmethod
    def for_adapter(cls, adapter_class: Any) -> EnvironmentSpec:
        """The adapter's declared requirements and the worker's. An adapter that fits the main
        environment (isolated on request) gets the main environment's versions of them, so that
        its runs in either environment compare like with like. A release-pinned adapter
        (:mod:`rlcompare.pyenvs.releases`) keeps the main environment's numpy and gymnasium where
        its release allows them."""
        requirements = [*adapter_class.environment_requirements(), *WORKER_REQUIREMENTS]
        preferred: tuple[str, ...] = ()
        if getattr(adapter_class, "release", None) is not None:
            framework = adapter_class.distributions[0]
            preferred = tuple(pin for pin in main_versions(WORKER_REQUIREMENTS)
                              if not pin.startswith(f"{framework}=="))
        elif isolation_reason(adapter_class) is None:
            requirements += main_versions(requirements)
        return cls(adapter_class.id, tuple(dict.fromkeys(requirements)), adapter_class.environment_python,
                   worker_sources(*(base.__module__ for base in adapter_class.__mro__)), preferred)


def preference_attempts(preferred: Sequence[str]) -> list[tuple[str, ...]]:
    """The sets of preferred pins to resolve with, in order: all of them, then every set with one
    fewer, ..., then none; the first set that resolves is kept."""
    return [combination for size in range(len(preferred), -1, -1)
            for combination in itertools.combinations(preferred, size)]


def worker_sources(*modules: str) -> tuple[str, ...]:
    """The folders (or single modules) linked into an environment: ``rlcompare`` and the top-level
    package of each of ``modules`` (the adapter's, and those of the classes it derives from: an outside
    adapter that subclasses a built-in one needs the built-in's package in its environment too)."""
    sources = [str(Path(rlcompare.__file__).resolve().parent)]
    for top in dict.fromkeys(module.split(".")[0] for module in modules):
        if top in ("rlcompare", "builtins", "abc") or top in sys.stdlib_module_names:
            continue
        found = importlib.util.find_spec(top)
        if found is None:
            raise BuildError(f"adapter module {top!r} cannot be found")
        if found.submodule_search_locations:
            sources.extend(str(Path(location).resolve()) for location in found.submodule_search_locations)
        elif found.origin:
            sources.append(str(Path(found.origin).resolve()))
    return tuple(dict.fromkeys(sources))


def unsatisfied(requirements: Sequence[str]) -> list[str]:
    """Which requirements the running interpreter does not satisfy (an empty list: it fits)."""
    from packaging.requirements import InvalidRequirement, Requirement

    problems = []
    for text in requirements:
        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            problems.append(f"{text!r} is not a requirement")
            continue
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue
        try:
            version = importlib.metadata.version(requirement.name)
        except importlib.metadata.PackageNotFoundError:
            problems.append(f"{requirement.name} is not installed")
            continue
        if requirement.specifier and not requirement.specifier.contains(version, prereleases=True):
            problems.append(f"{requirement.name} {version} does not satisfy {requirement.specifier}")
    return problems


def main_versions(requirements: Sequence[str]) -> list[str]:
    """``name==version`` of each requirement's distribution as installed here."""
    from packaging.requirements import Requirement

    pins = []
    for text in requirements:
        name = Requirement(text).name
        try:
            pins.append(f"{name}=={importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            continue
    return pins


def isolation_reason(adapter_class: Any) -> str | None:
    """Why an adapter cannot run in the main environment, or None when it fits there."""
    release = getattr(adapter_class, "release", None)
    if release is not None:  # rlcompare.plan.releases: the framework pinned to one release
        return f"release {release} pinned"
    if adapter_class.requires_isolation:
        return "it declares requires_isolation"
    python = adapter_class.environment_python
    running = platform.python_version()
    if python and not (running == python or running.startswith(python + ".")):
        return f"it needs Python {python}, this is {running}"
    problems = unsatisfied(adapter_class.environment_requirements())
    return "; ".join(problems) if problems else None


# -- one environment ---------------------------------------------------------------------------------


@dataclass
class Environment:
    """A built (or found) adapter environment."""

    adapter: str
    key: str
    path: Path
    lock_digest: str
    built: bool = False
    seconds: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"


@dataclass
class EnvironmentState:
    """One folder of the environments root, as ``rlcompare env list`` shows it."""

    adapter: str
    key: str
    path: Path
    state: str  # ready, stale (the checkout its sources link to is gone), incomplete (an interrupted build), building
    total_bytes: int
    own_bytes: int
    info: dict[str, Any]


@contextlib.contextmanager
def _exclusive(path: Path, blocking: bool = True) -> Iterator[bool]:
    """Hold an exclusive lock on ``path`` (created if needed); yields whether it was taken."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(handle)  # releases the lock


def _digest(data: Any, length: int = 16) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:length]


def _remove_tree(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink(missing_ok=True)
    elif path.exists():
        shutil.rmtree(path)


class EnvironmentManager:
    """Resolves, builds, lists and removes adapter environments under one root folder."""

    def __init__(self, root: Path | None = None, indexes: IndexSettings | None = None, uv: str | None = None,
                 log: Callable[[str], None] | None = None) -> None:
        self.root = root or environments_root()
        self.indexes = indexes if indexes is not None else pip_index_settings()
        self._uv = uv
        self.log = log or (lambda _message: None)

    @property
    def uv(self) -> str:
        if self._uv is None:
            self._uv = uv_binary()
        return self._uv

    # -- resolution and key ---------------------------------------------------------------------

    def interpreter(self, spec: EnvironmentSpec) -> tuple[str, str]:
        """The base interpreter of ``spec``'s environment and its version."""
        if spec.python is None:
            return sys.executable, platform.python_version()
        found = subprocess.run([self.uv, "python", "find", "--no-config", spec.python], capture_output=True, text=True,
                               check=False)
        if found.returncode != 0 or not found.stdout.strip():
            raise BuildError(f"adapter {spec.adapter!r}: no Python {spec.python} found by uv "
                             f"({_first_line(found.stderr)})")
        path = found.stdout.strip()
        version = subprocess.run([path, "-c", "import platform; print(platform.python_version())"],
                                 capture_output=True, text=True, check=False).stdout.strip()
        return path, version

    def resolve(self, spec: EnvironmentSpec, python: str, version: str, refresh: bool = False) -> str:
        """The lock (``uv pip compile`` output) of ``spec``'s requirements, resolved once and kept
        by its inputs (requirements, Python, index settings): the same inputs reuse it without a
        look at any index until ``refresh`` asks for a new resolution."""
        inputs: dict[str, Any] = {"requirements": sorted(spec.requirements), "python": version,
                                  "indexes": self.indexes.key_data(), "protocol": WORKER_PROTOCOL}
        if spec.preferred:
            inputs["preferred"] = sorted(spec.preferred)
        memo = self.root / "locks" / f"{spec.adapter}-{_digest(inputs)}.txt"
        if not refresh:
            try:
                return memo.read_text(encoding="utf-8")
            except OSError:
                pass
        command = [self.uv, "pip", "compile", "-", "--no-config", "--python", python, "--no-header",
                   "--no-annotate", "--quiet", *self.indexes.uv_arguments(), *self.indexes.constraint_arguments()]
        for pins in preference_attempts(spec.preferred):
            done = subprocess.run(command, input="\n".join([*spec.requirements, *pins]) + "\n", capture_output=True,
                                  text=True, check=False)
            if done.returncode == 0:
                break
        if done.returncode != 0:
            raise BuildError(f"adapter {spec.adapter!r}: its requirements do not resolve "
                             f"({_first_line(done.stderr)})")
        lock = done.stdout
        memo.parent.mkdir(parents=True, exist_ok=True)
        partial = memo.with_name(memo.name + f".{os.getpid()}.tmp")
        partial.write_text(lock, encoding="utf-8")
        os.replace(partial, memo)
        return lock

    def key(self, spec: EnvironmentSpec, lock: str, version: str) -> dict[str, Any]:
        """The parts of an environment's key, and the key (``key``) itself."""
        parts: dict[str, Any] = {
            "lock_digest": hashlib.sha256(lock.encode()).hexdigest()[:16],
            "python": version,
            "indexes": self.indexes.key_data(),
            "worker_protocol": WORKER_PROTOCOL,
            "sources": list(spec.sources),
        }
        return {**parts, "key": _digest(parts)}

    # -- building --------------------------------------------------------------------------------

    def ensure(self, spec: EnvironmentSpec, refresh: bool = False) -> Environment:
        """The environment of ``spec``: found ready, or built now (one builder at a time)."""
        started = time.perf_counter()
        python, version = self.interpreter(spec)
        lock = self.resolve(spec, python, version, refresh)
        parts = self.key(spec, lock, version)
        path = self.root / f"{spec.adapter}-{parts['key']}"
        environment = Environment(spec.adapter, parts["key"], path, parts["lock_digest"])
        if (path / COMPLETE).exists():  # the common case, without taking the lock
            environment.info = read_info(path)
            environment.seconds = time.perf_counter() - started
            return environment
        with _exclusive(path.with_name(path.name + ".lock")):
            if not (path / COMPLETE).exists():  # another process may have built it while this one waited
                self._build(spec, path, python, version, lock, parts)
                environment.built = True
        environment.info = read_info(path)
        environment.seconds = time.perf_counter() - started
        return environment

    def _build(self, spec: EnvironmentSpec, path: Path, python: str, version: str, lock: str,
               parts: dict[str, Any]) -> None:
        if path.exists():
            self.log(f"{spec.adapter}: removing an interrupted build at {path}")
            _remove_tree(path)
        self.log(f"{spec.adapter}: building environment {parts['key']} (Python {version})")
        self._uv_run(spec, ["venv", "--no-config", "--quiet", "--python", python, str(path)])
        (path / LOCK).write_text(lock, encoding="utf-8")
        self._uv_run(spec, ["pip", "sync", "--no-config", "--quiet", "--python", str(path / "bin" / "python"),
                            *self.indexes.uv_arguments(), str(path / LOCK)])
        major_minor = version.split(".")[:2]
        site_packages = path / "lib" / f"python{'.'.join(major_minor)}" / "site-packages"
        bytecode: dict[str, Any]
        if os.environ.get(BYTECODE_MODE_ENV) == "on-import":
            self.log(f"{spec.adapter}: installed; bytecode left to the first import ({BYTECODE_MODE_ENV}=on-import)")
            bytecode = {"mode": "on-import", "reused": 0, "compiled": 0}
        else:
            self.log(f"{spec.adapter}: installed; compiling bytecode (kept in {self.root / BYTECODE} for the next one)")
            # bytecode as uv's --compile-bytecode makes it, but compiled once per file for every environment
            bytecode = {"mode": "compiled", **link_and_compile(site_packages, path / "bin" / "python",
                                                               self.root / BYTECODE, f"cpython-{''.join(major_minor)}")}
        self._link_sources(spec, path, site_packages)
        info = {
            "adapter": spec.adapter, "key": parts["key"], "key_parts": {k: v for k, v in parts.items() if k != "key"},
            "requirements": list(spec.requirements), "python_requested": spec.python, "python_version": version,
            "base_python": python, "created": time.time(), "uv_version": uv_version(self.uv),
            "worker_protocol": WORKER_PROTOCOL, "bytecode": bytecode,
        }
        (path / INFO).write_text(json.dumps(info, indent=2, sort_keys=True), encoding="utf-8")
        marker = path / COMPLETE
        with marker.open("w", encoding="utf-8") as handle:  # written last: its presence means "complete"
            handle.write(parts["key"] + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    def _link_sources(self, spec: EnvironmentSpec, path: Path, site_packages: Path) -> None:
        sources = path / SOURCES
        sources.mkdir()
        for source in spec.sources:
            (sources / Path(source).name).symlink_to(source)
        (site_packages / _PTH).write_text(str(sources) + "\n", encoding="utf-8")
        # so that the worker records rlcompare's version in the environment as in the main one
        metadata = site_packages / f"rlcompare-{rlcompare.__version__}.dist-info"
        metadata.mkdir(exist_ok=True)
        (metadata / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: rlcompare\nVersion: {rlcompare.__version__}\n", encoding="utf-8")
        (metadata / "INSTALLER").write_text("rlcompare\n", encoding="utf-8")

    def _uv_run(self, spec: EnvironmentSpec, args: list[str]) -> None:
        env = {name: value for name, value in os.environ.items() if name not in ("VIRTUAL_ENV", "PYTHONPATH")}
        done = subprocess.run([self.uv, *args], capture_output=True, text=True, env=env, check=False)
        if done.returncode != 0:
            raise BuildError(f"adapter {spec.adapter!r}: uv {args[0]} failed ({_first_line(done.stderr)})")

    # -- listing and removing ----------------------------------------------------------------------

    def states(self, adapter: str | None = None) -> list[EnvironmentState]:
        found = []
        if not self.root.is_dir():
            return found
        for path in sorted(self.root.iterdir()):
            match = _NAME.match(path.name)
            if not match or not path.is_dir() or (adapter is not None and match["adapter"] != adapter):
                continue
            if (path / COMPLETE).exists():
                state = "stale" if sources_gone(path) else "ready"
            else:
                with _exclusive(path.with_name(path.name + ".lock"), blocking=False) as free:
                    state = "incomplete" if free else "building"
            total, own = _sizes(path)
            found.append(EnvironmentState(match["adapter"], match["key"], path, state, total, own, read_info(path)))
        return found

    def adapters_present(self) -> set[str]:
        return {state.adapter for state in self.states()}

    def remove(self, adapter: str | None = None, stale_only: bool = False) -> list[Path]:
        """Remove the environments of ``adapter`` (all of them when None, and then the kept
        bytecode too; with ``stale_only`` only those whose linked sources are gone, and the kept
        bytecode stays); a build in progress finishes first (its lock is waited for)."""
        removed = []
        for state in self.states(adapter):
            if stale_only and state.state != "stale":
                continue
            lock = state.path.with_name(state.path.name + ".lock")
            with _exclusive(lock):
                (state.path / COMPLETE).unlink(missing_ok=True)  # first: a half-removed one is never "ready"
                _remove_tree(state.path)
            lock.unlink(missing_ok=True)
            removed.append(state.path)
        if adapter is None and not stale_only:  # everything goes, kept bytecode included (it outlives single removals)
            prune(self.root / BYTECODE)
        return removed


def sources_gone(path: Path) -> bool:
    """Whether a source an environment links to (rlcompare, the adapter's package) no longer exists:
    the checkout or virtualenv it was built for was moved or deleted. Its key names those sources,
    so no run uses it again; ``rlcompare env remove --stale`` reclaims it."""
    try:
        return any(not link.exists() for link in (path / SOURCES).iterdir())
    except OSError:
        return True


def ready_environments(adapter: str, root: Path | None = None) -> list[Path]:
    """The complete, not stale environment folders of ``adapter``, newest first; unlike
    :meth:`EnvironmentManager.states` it measures no sizes (scoring asks this once per adapter)."""

    def built_at(folder: Path) -> float:
        try:
            return (folder / COMPLETE).stat().st_mtime
        except OSError:  # removed meanwhile
            return 0.0

    def is_ready(folder: Path) -> bool:
        match = _NAME.match(folder.name)  # "sample-*" also matches sample-factory's folders
        return match is not None and match["adapter"] == adapter and not sources_gone(folder)

    folders = [marker.parent for marker in (root or environments_root()).glob(f"{adapter}-*/{COMPLETE}")]
    return sorted(filter(is_ready, folders), key=built_at, reverse=True)


def read_info(path: Path) -> dict[str, Any]:
    """The info file of the environment at ``path`` ({} when it cannot be read)."""
    try:
        data = json.loads((path / INFO).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _sizes(path: Path) -> tuple[int, int]:
    """Bytes of the environment's files, and of those it alone holds (uv hard-links the rest from
    its cache)."""
    total = own = 0
    for folder, _dirs, files in os.walk(path):
        for name in files:
            try:
                info = os.lstat(os.path.join(folder, name))
            except OSError:
                continue
            total += info.st_size
            if info.st_nlink == 1:
                own += info.st_size
    return total, own


def _first_line(text: str) -> str:
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    if not lines:
        return "no message"
    # uv prints "error: ..." then the reason on following lines; keep the reason when there is one
    return " ".join(lines[:3])[:400]
