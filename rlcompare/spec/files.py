"""Reading the files a user hands rlcompare (workloads, weight profiles): bounded, regular, UTF-8."""

from __future__ import annotations

import stat
from pathlib import Path

#: Largest file read.
MAX_FILE_BYTES = 1 << 20


def read_text_file(path: Path, what: str, error: type[Exception], limit: int = MAX_FILE_BYTES) -> str:
    """The UTF-8 text of a regular file no larger than ``limit``, or ``error`` with one line.

    A FIFO, a device such as /dev/zero, a folder or a huge file is refused before it is read."""
    try:
        info = path.stat()
    except OSError as exc:
        raise error(f"{path}: cannot read {what} ({exc.strerror})") from None
    if not stat.S_ISREG(info.st_mode):
        raise error(f"{path}: {what} must be a regular file")
    if info.st_size > limit:
        raise error(f"{path}: {what} is {info.st_size:,} bytes; at most {limit:,} are read")
    try:
        with path.open("rb") as handle:
            raw = handle.read(limit + 1)
    except OSError as exc:
        raise error(f"{path}: cannot read {what} ({exc.strerror})") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{path}: {what} is not UTF-8 text (byte {exc.start})") from None
