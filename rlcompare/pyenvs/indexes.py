"""Where packages come from: pip's index settings, read the way pip reads them, handed to uv.

uv does not read pip's configuration. Without it, a machine whose pip installs torch's CPU build
from a local wheel folder or a private index gets torch's CUDA build (and its GPU libraries) from
PyPI in an adapter's environment. So rlcompare reads pip's settings itself (configuration files,
then ``PIP_*`` variables, later ones overriding earlier ones, as pip does), passes them to uv
explicitly, and makes them part of every environment's key: other indexes, another environment.
"""

from __future__ import annotations

import configparser
import hashlib
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The settings read, by pip's name; lists are whitespace-separated, as pip writes them.
_LISTS = ("extra-index-url", "find-links", "constraint")
_KNOWN = ("index-url", "no-index", *_LISTS)
_TRUE = {"1", "true", "yes", "on"}


@dataclass(frozen=True)
class IndexSettings:
    """The package sources and constraints an environment is resolved and installed with."""

    index_url: str | None = None
    extra_index_urls: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()
    no_index: bool = False
    constraints: tuple[str, ...] = ()

    def uv_arguments(self) -> list[str]:
        """uv options that find packages where pip would: every index and link, the best version
        across all of them (pip's rule; uv's default stops at the first index that has a name)."""
        args = ["--index-strategy", "unsafe-best-match"]
        if self.no_index:
            args.append("--no-index")
        if self.index_url:
            args += ["--index-url", self.index_url]
        for url in self.extra_index_urls:
            args += ["--extra-index-url", url]
        for link in self.find_links:
            args += ["--find-links", link]
        return args

    def constraint_arguments(self) -> list[str]:
        args: list[str] = []
        for path in self.constraints:
            args += ["--constraint", path]
        return args

    def key_data(self) -> dict[str, Any]:
        """What goes into an environment's key: the settings, and each constraint file's content."""
        data: dict[str, Any] = {"index_url": self.index_url, "extra_index_urls": list(self.extra_index_urls),
                                "find_links": list(self.find_links), "no_index": self.no_index,
                                "index_strategy": "unsafe-best-match", "constraints": {}}
        for path in self.constraints:
            try:
                content = Path(path).read_bytes()
            except OSError:
                content = b""
            data["constraints"][path] = hashlib.sha256(content).hexdigest()[:16]
        return data


def pip_config_files(environ: Mapping[str, str]) -> list[Path]:
    """pip's configuration files, lowest precedence first: global, user, site, ``PIP_CONFIG_FILE``."""
    config_file = environ.get("PIP_CONFIG_FILE")
    if config_file == os.devnull:  # pip's way of saying "no configuration files"
        return []
    xdg_dirs = environ.get("XDG_CONFIG_DIRS") or "/etc/xdg"
    files = [Path(directory) / "pip" / "pip.conf" for directory in xdg_dirs.split(os.pathsep) if directory]
    files.append(Path("/etc/pip.conf"))
    home = Path(environ.get("HOME") or Path.home())
    files.append(home / ".pip" / "pip.conf")
    files.append(Path(environ.get("XDG_CONFIG_HOME") or home / ".config") / "pip" / "pip.conf")
    files.append(Path(sys.prefix) / "pip.conf")
    if config_file:
        files.append(Path(config_file))
    return files


def _read_file(path: Path, settings: dict[str, str]) -> None:
    parser = configparser.RawConfigParser()
    try:
        parser.read(path, encoding="utf-8")
    except (configparser.Error, OSError, UnicodeDecodeError):
        return  # pip would refuse it; nothing rlcompare can do better than ignore it
    for section in ("global", "install"):  # the command's section overrides [global]
        if parser.has_section(section):
            for name, value in parser.items(section):
                name = name.replace("_", "-")
                if name in _KNOWN:
                    settings[name] = value


def pip_index_settings(environ: Mapping[str, str] | None = None) -> IndexSettings:
    """pip's index settings as pip itself would use them for ``pip install``."""
    environ = os.environ if environ is None else environ
    settings: dict[str, str] = {}
    for path in pip_config_files(environ):
        if path.is_file():
            _read_file(path, settings)
    for name in _KNOWN:
        value = environ.get("PIP_" + name.upper().replace("-", "_"))
        if value is not None:
            settings[name] = value

    def many(name: str) -> tuple[str, ...]:
        return tuple(settings.get(name, "").split())

    return IndexSettings(
        index_url=settings.get("index-url") or None,
        extra_index_urls=many("extra-index-url"),
        find_links=many("find-links"),
        no_index=settings.get("no-index", "").strip().lower() in _TRUE,
        constraints=many("constraint"),
    )


def main() -> int:
    """Print, one per line, the uv options that install from where pip would (``make install``
    passes them to ``uv pip install``; the standard library only, so it runs before anything is
    installed)."""
    settings = pip_index_settings()
    print("\n".join([*settings.uv_arguments(), *settings.constraint_arguments()]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
