"""What a warm start's parent preloaded, as its forked run's process sees it (:mod:`rlcompare.harness.zygote`).

Its own module: the worker reads it and the parent, run as ``__main__``, sets it, with neither importing
the other. Standard library only.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Preloaded:
    """What the parent imported before forking this process: the framework modules, the cold
    import's measurement (as a cold worker takes it), and the parent's seconds from its launch by
    the driver until it was ready, which a forked run adds to its start-up."""

    modules: tuple[str, ...]
    measurement: dict[str, Any] | None
    seconds: float
    #: Names the parent: the runs it forked share one import sample (one sample, not one per run).
    parent: str = ""
    #: When this run's process was forked (``time.time()``); 0 in the parent.
    forked_at: float = 0.0


#: Set in a warm start's parent, and so in each process it forks (None in a cold worker).
PRELOADED: Preloaded | None = None


def forked_from() -> Preloaded | None:
    """What the parent of this run's process preloaded; None in a cold worker."""
    return PRELOADED


def set_preloaded(preloaded: Preloaded) -> None:
    global PRELOADED
    PRELOADED = preloaded


def add_preload_seconds(seconds: float) -> None:
    """Count ``seconds`` more of preload (what the parent imported after its first run taught it)."""
    if PRELOADED is not None:
        set_preloaded(dataclasses.replace(PRELOADED, seconds=PRELOADED.seconds + seconds))


def mark_forked() -> None:
    """In a process just forked: when that happened."""
    if PRELOADED is not None:
        set_preloaded(dataclasses.replace(PRELOADED, forked_at=time.time()))
