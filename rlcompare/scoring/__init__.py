"""Scoring: criteria values -> normalized scores -> aggregates, overall scores, ranks
(:mod:`~rlcompare.scoring.engine`), with every interval from one vectorized stratified bootstrap
(:mod:`~rlcompare.scoring.bootstrap`), under named weight profiles (:mod:`~rlcompare.scoring.profiles`).
The criterion contract is :mod:`~rlcompare.scoring.criteria`."""
