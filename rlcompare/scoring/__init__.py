"""Scoring: criteria values -> normalized scores -> aggregates, overall scores, ranks (the engine),
with every interval from one vectorized stratified bootstrap, under named weight profiles.

Names are loaded on first use: importing ``rlcompare.scoring.profiles`` (the command line does, to
check a profile before anything else) must not import numpy and pandas.
"""

from __future__ import annotations

import importlib
from typing import Any

_LOCATIONS = {
    "DEFAULT_REPS": "rlcompare.scoring.bootstrap", "Estimate": "rlcompare.scoring.bootstrap",
    "AGGREGATES": "rlcompare.scoring.engine", "MISSING_DATA_RULE": "rlcompare.scoring.engine",
    "OverallScore": "rlcompare.scoring.engine", "ScoreMatrix": "rlcompare.scoring.engine",
    "ScoringOptions": "rlcompare.scoring.engine", "aggregate_estimates": "rlcompare.scoring.engine",
    "normalize": "rlcompare.scoring.engine", "score": "rlcompare.scoring.engine",
    "score_store": "rlcompare.scoring.engine",
}

__all__ = sorted(_LOCATIONS)


def __getattr__(name: str) -> Any:
    if name not in _LOCATIONS:
        raise AttributeError(f"module 'rlcompare.scoring' has no attribute {name!r}")
    return getattr(importlib.import_module(_LOCATIONS[name]), name)
