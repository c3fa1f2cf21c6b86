"""Compiled bytecode shared between adapter environments, as uv shares the files themselves.

An environment needs its packages compiled (a worker that compiles torch's modules at every start
loses ~3 s), but compiling torch takes ~35 s of CPU, longer than installing everything. uv installs
by hard-linking each file from its cache, so two environments with the same wheel hold the very
same source files (same inode). A ``.pyc`` is valid for a source when the source's modification
time and size match those recorded in it, and Python sets the code's file name from where it
loads it, so bytecode compiled for one environment's ``torch/nn/functional.py`` is right for every
environment that links that file. This module keeps each compiled file once, under its source
file's identity (device, inode, modification time in ns, size), links it into each new environment
whose source is that file, and compiles only what no environment compiled before.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from rlcompare.harness.host import usable_cpus


def _identity(info: os.stat_result) -> str:
    return f"{info.st_dev:x}-{info.st_ino:x}-{info.st_mtime_ns:x}-{info.st_size:x}"


def link_and_compile(site_packages: Path, python: Path, store: Path, cache_tag: str) -> dict[str, int]:
    """Give every module of ``site_packages`` its bytecode: linked from ``store`` where a previous
    environment compiled the same file, compiled by ``python`` otherwise (then kept in ``store``).
    Returns how many files were ``reused`` and ``compiled``."""
    shelf = store / cache_tag
    shelf.mkdir(parents=True, exist_ok=True)
    kept = set(os.listdir(shelf))
    reused = 0
    fresh: list[tuple[str, Path, str]] = []
    for folder, dirs, files in os.walk(site_packages):
        dirs[:] = [name for name in dirs if name != "__pycache__"]
        cache = Path(folder) / "__pycache__"
        for name in files:
            if not name.endswith(".py"):
                continue
            source = os.path.join(folder, name)
            try:
                info = os.stat(source)
            except OSError:
                continue
            target = cache / f"{name[:-3]}.{cache_tag}.pyc"
            key = f"{_identity(info)}.pyc"
            if info.st_nlink < 2 or key not in kept:  # this environment's own file, or new to the shelf
                fresh.append((source, target, key if info.st_nlink >= 2 else ""))
                continue
            try:
                os.link(shelf / key, target)
            except FileNotFoundError:
                cache.mkdir(exist_ok=True)
                os.link(shelf / key, target)
            except FileExistsError:
                pass
            reused += 1
    _compile([source for source, _target, _key in fresh], python)
    for _source, target, key in fresh:
        if key:
            try:
                os.link(target, shelf / key)
            except OSError:
                pass  # not compilable (a test file in newer syntax), kept by a concurrent build, ...
    return {"reused": reused, "compiled": len(fresh)}


def _compile(sources: list[str], python: Path) -> None:
    """Compile ``sources`` with ``python`` (as uv's --compile-bytecode does), on every CPU."""
    if not sources:
        return
    workers = min(usable_cpus(), len(sources) // 200 + 1)
    processes = []
    for index in range(workers):
        chunk = "\n".join(sources[index::workers]) + "\n"
        process = subprocess.Popen([str(python), "-m", "compileall", "-q", "-i", "-"], stdin=subprocess.PIPE,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)
        assert process.stdin is not None
        process.stdin.write(chunk)
        process.stdin.close()
        processes.append(process)
    for process in processes:
        process.wait()


def prune(store: Path) -> int:
    """Drop kept bytecode that no environment links any more; returns how many files went."""
    removed = 0
    if not store.is_dir():
        return removed
    for shelf in store.iterdir():
        if not shelf.is_dir():
            continue
        with os.scandir(shelf) as entries:
            for entry in entries:
                try:
                    if entry.stat(follow_symlinks=False).st_nlink == 1:
                        os.unlink(entry.path)
                        removed += 1
                except OSError:
                    continue
    return removed
