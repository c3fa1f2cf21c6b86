"""The calibrated-cost CartPole's id and the throughput its known cost allows (standard library only:
the driver reads these when it stores a run, without importing gymnasium)."""

from __future__ import annotations

#: Gymnasium id of :class:`rlcompare.harness.counted_envs.CalibratedCartPole`.
CALIBRATED_ENV_ID = "rlcompare/CalibratedCartPole-v0"


def ideal_throughput(step_cost_ms: float, workers: int) -> float:
    """Env steps per second that ``workers`` processes could reach if stepping were all they did."""
    return workers * 1000.0 / step_cost_ms
