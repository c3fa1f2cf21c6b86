"""Scoring: criteria values -> normalized scores -> aggregates, overall scores, ranks (the engine),
with every interval from one vectorized stratified bootstrap, under named weight profiles."""

from __future__ import annotations

from rlcompare.scoring.bootstrap import DEFAULT_REPS, Estimate
from rlcompare.scoring.engine import (
    AGGREGATES,
    MISSING_DATA_RULE,
    OverallScore,
    ScoreMatrix,
    ScoringOptions,
    aggregate_estimates,
    normalize,
    score,
    score_store,
)

__all__ = [
    "AGGREGATES", "DEFAULT_REPS", "MISSING_DATA_RULE", "Estimate", "OverallScore", "ScoreMatrix", "ScoringOptions",
    "aggregate_estimates", "normalize", "score", "score_store",
]
