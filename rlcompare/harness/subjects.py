"""Subject ids: what the store, the scores and the reports key results by. A subject is an adapter
id, or ``adapter@release`` when its runs were pinned to one release of the framework
(``rlcompare run --versions``, :mod:`rlcompare.plan.releases`)."""

from __future__ import annotations

#: Between an adapter id and a release in a subject id; adapter ids never contain it.
SEPARATOR = "@"


def subject_id(adapter_id: str, release: str | None) -> str:
    """``sb3@2.4.0`` for a release, the adapter id itself without one."""
    return adapter_id if release is None else f"{adapter_id}{SEPARATOR}{release}"


def split_subject(subject: str) -> tuple[str, str | None]:
    """The adapter id and the release of a subject id (None: the installed version)."""
    adapter_id, separator, release = subject.partition(SEPARATOR)
    return adapter_id, (release if separator else None)
