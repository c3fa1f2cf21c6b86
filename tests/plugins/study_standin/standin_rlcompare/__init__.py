"""A third-party plugin used by the tests: a stand-in published table (a study) whose rows the
``fake`` adapter of tests/plugins/good measures. Its figures are made up for the test; none is
a claim about any framework."""

from __future__ import annotations

from typing import Any

from rlcompare import hookimpl

EVIDENCE = [{"url": "https://example.org/standin-table", "accessed": "2026-12-01",
             "excerpt": "a stand-in table for the tests"}]


def row(cell: str, label: str, metric: str, mean: float, adapter: str | None = "fake", **extra: Any) -> dict[str, Any]:
    return {"cell": cell, "framework": "fakefw" if adapter == "fake" else f"{label.split()[0].lower()}",
            "adapter": adapter, "label": label, "metric": metric, "mean": mean, "evidence": EVIDENCE, **extra}


STUDY = {
    "id": "standin",
    "title": "A stand-in published table",
    "description": "Rows made up for the tests, measured by the fake adapter.",
    "seeds": 2,
    "arms": ["canonical"],
    "publication": {"title": "Stand-in", "hardware": "unknown", "versions": "unknown",
                    "statistic": "mean +- std over 5 seeds", "evidence": EVIDENCE},
    "cells": [
        {"id": "cart", "env": "CartPole-v1", "algorithm": "PPO", "env_steps": 600, "success_threshold": 5.0,
         "hyperparameters": {"rollout_steps": 64, "minibatch_size": 32, "epochs": 2},
         "evaluation": {"interval_steps": 200, "episodes": 2}},
    ],
    "published": [
        # far above anything random actions reach: not consistent, measured lower
        row("cart", "Fake far", "final_return", 10_000.0, std=0.0, n=5),
        # one published run with a huge spread: our seeds' range lies inside it
        row("cart", "Fake loose", "time_to_threshold_steps", 100.0, std=1_000.0, n=1, std_over="episodes", episodes=1),
        # an adapter nobody installed, and a framework without an adapter
        row("cart", "Ghost PPO", "final_return", 20.0, adapter="ghost", std=1.0, n=5),
        row("cart", "Elsewhere PPO", "time_to_threshold_seconds", 3.0, adapter=None, std=0.5, n=5),
        # seconds: only as a ratio against the row above (which has no adapter: not comparable)
        row("cart", "Fake PPO", "time_to_threshold_seconds", 1.5, std=0.2, n=5),
    ],
}


@hookimpl
def rlcompare_register_studies(register: Any) -> None:
    register.add_study(STUDY)
