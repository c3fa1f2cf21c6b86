"""Writing a report's files under its output folder without ever following a link out of it.

A report is often written into a folder that others can write to (a shared ``reports/``, a CI
workspace). A link planted there under the name of a report file, or of one of its folders, must not
make rlcompare write elsewhere: each file is written to a new temporary file in its own folder and
moved over its name (:func:`os.replace`, as ``rlcompare bundle`` writes), so a link at that name is
replaced, never written through; a folder under the output folder that is a link is replaced by a
real folder. Where the platform can, every step is taken relative to an open folder
(``dir_fd``, ``O_NOFOLLOW``), so a link swapped in while the report is written is not followed either.
The output folder itself is the user's choice and may be a link.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from rlcompare.errors import UsageError

_AT_FOLDER = {os.open, os.mkdir, os.unlink, os.stat, os.rename} <= os.supports_dir_fd and hasattr(os, "O_NOFOLLOW")
_FOLDER_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)


def write_files(out_dir: str | Path, files: Mapping[str, bytes], option: str = "--out") -> list[Path]:
    """Write each ``relative/path -> bytes`` under ``out_dir`` (created if missing); returns the
    paths written. A link at a file's or a folder's name is replaced, never followed; a failure is
    one :class:`UsageError` naming ``option`` and the path."""
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{option}: cannot create {out} ({exc.strerror})") from None
    written = []
    for name, content in files.items():
        parts = PurePosixPath(name).parts
        path = out.joinpath(*parts)
        try:
            if _AT_FOLDER:
                _write_at(out, parts, content)
            else:
                _write_by_path(out, parts, content)
        except IsADirectoryError:
            raise UsageError(f"{option}: cannot write {path}: a folder is in the way") from None
        except OSError as exc:
            raise UsageError(f"{option}: cannot write {path} ({exc.strerror or exc})") from None
        written.append(path)
    return written


def _partial_name(name: str) -> str:
    return f".{name}.{os.getpid()}.{secrets.token_hex(4)}.partial"


def _write_at(out: Path, parts: tuple[str, ...], content: bytes) -> None:
    """Folder by folder from an open descriptor of ``out``: nothing below it is followed."""
    folder = os.open(out, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        for part in parts[:-1]:
            inner = _enter_at(folder, part)
            os.close(folder)
            folder = inner
        name, partial = parts[-1], _partial_name(parts[-1])
        handle = os.open(partial, _FILE_FLAGS, 0o666, dir_fd=folder)
        try:
            with os.fdopen(handle, "wb") as stream:
                stream.write(content)
            os.replace(partial, name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(partial, dir_fd=folder)
            raise
    finally:
        os.close(folder)


def _enter_at(parent: int, name: str) -> int:
    """An open descriptor of the folder ``name`` in ``parent``, made if missing; a link there is
    replaced by a real folder, a file there is an error."""
    try:
        return os.open(name, _FOLDER_FLAGS, dir_fd=parent)
    except FileNotFoundError:
        pass
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            raise
        if not stat.S_ISLNK(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode):
            raise NotADirectoryError(errno.ENOTDIR, f"{name} is not a folder") from None
        os.unlink(name, dir_fd=parent)
    try:
        os.mkdir(name, dir_fd=parent)
    except FileExistsError:  # made meanwhile by another writer: entered below, still without following
        pass
    return os.open(name, _FOLDER_FLAGS, dir_fd=parent)


def _write_by_path(out: Path, parts: tuple[str, ...], content: bytes) -> None:
    """The same by path, where the platform has no ``dir_fd`` (checked, then written)."""
    folder = out
    for part in parts[:-1]:
        folder = folder / part
        if folder.is_symlink():
            folder.unlink()
        folder.mkdir(exist_ok=True)
    partial = folder / _partial_name(parts[-1])
    try:
        with os.fdopen(os.open(partial, _FILE_FLAGS, 0o666), "wb") as stream:
            stream.write(content)
        os.replace(partial, folder / parts[-1])
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
