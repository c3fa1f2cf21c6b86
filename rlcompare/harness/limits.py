"""Limits of the harness that inputs are validated against (standard library only: the worker
imports it too)."""

from __future__ import annotations

#: Slots in a run's step counter: one per environment instance, so the most environments one run
#: can have across all its workers.
COUNTER_SLOTS = 512
