"""Per-adapter Python environments: an adapter whose pins conflict with the main environment runs
its workers in one of its own, built with uv (:mod:`rlcompare.environments.manager`), with package
sources taken from pip's configuration (:mod:`rlcompare.environments.indexes`)."""

from __future__ import annotations

from rlcompare.environments.placement import place_runs

__all__ = ["place_runs"]
