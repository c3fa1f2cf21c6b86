"""The conformance kit's run worker: ``rlcompare.harness.worker`` itself, plus a probe of the policies the
adapter hands the harness.

The run is the one ``rlcompare run`` makes (same spec, same context, same result file); the only
addition is that the first policy evaluated after step 0 and the final policy are also asked for
actions on batches of every size from the evaluation's vector size down to 1, the way the
harness's evaluation shrinks its batch as episodes end. What they answered is appended, one JSON
line per probe, to the file named by :data:`PROBE_ENV`.
"""

from __future__ import annotations

# ruff: noqa: E402 - run as ``python -m``, the current directory leaves the import path first of all
from rlcompare.harness.import_path import drop_current_directory

if __name__ == "__main__":
    drop_current_directory()  # before numpy, gymnasium, the adapter and its framework are imported

import json
import os
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np

from rlcompare.harness import worker
from rlcompare.harness.context import TrainingContext
from rlcompare.harness.counted_envs import make_env
from rlcompare.harness.evaluation import Policy
from rlcompare.harness.workload_view import WorkloadLike

#: Where the probe writes its findings (set by the kit's backend for each run).
PROBE_ENV = "RLCOMPARE_CONFORMANCE_PROBE"


def probe_batch_size(workload: WorkloadLike) -> int:
    """The largest batch the harness sends: one observation per evaluation episode (or per env)."""
    return max(workload.evaluation.episodes, workload.parallelism.total_envs)


def probe_policy(policy: Policy, workload: WorkloadLike) -> dict[str, Any]:
    """Ask ``policy`` for actions on shrinking batches of real observations; report what is wrong."""
    env = make_env(workload.env, dict(workload.env_kwargs))
    try:
        size = probe_batch_size(workload)
        observations = [env.reset(seed=seed)[0] for seed in range(size)]
        space = env.action_space
    finally:
        env.close()
    problems: list[str] = []
    sizes: list[int] = []
    for batch in range(size, 0, -1):
        sizes.append(batch)
        try:
            actions = np.asarray(policy(np.stack(observations[:batch])))
        except Exception as exc:  # noqa: BLE001 - the adapter's failure is the finding
            problems.append(f"raised {type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''} "
                            f"for a batch of {batch}")
            break
        if actions.ndim == 0 or actions.shape[0] != batch:
            problems.append(f"an array of shape {actions.shape} for a batch of {batch} observations")
            continue
        outside = [action for action in actions if not _contains(space, action)]
        if outside:
            problems.append(f"{len(outside)} of {batch} actions outside {space} (e.g. {outside[0]!r}) "
                            f"for a batch of {batch}")
    return {"sizes": sizes, "problems": problems, "action_space": str(space)}


def _contains(space: Any, action: Any) -> bool:
    if isinstance(space, gymnasium.spaces.Box):
        action = np.asarray(action)
        if action.dtype.kind != "f" and space.dtype.kind == "f":
            return False
        action = action.astype(space.dtype, copy=False)
    return bool(space.contains(action))


def install_probe(path: Path) -> None:
    """Wrap the training context's evaluations so that they also probe the policy."""
    checkpoint, final_evaluation = TrainingContext.checkpoint, TrainingContext.final_evaluation
    probed: set[str] = set()

    def record(context: TrainingContext, policy: Policy, when: str) -> None:
        if when in probed:
            return
        probed.add(when)
        finding = {"when": when, "env_steps": context.env_steps, **probe_policy(policy, context.workload)}
        with path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(finding, default=str) + "\n")

    def probing_checkpoint(self: TrainingContext, policy: Policy, framework_env_steps: int | None = None) -> bool:
        try:
            evaluated = checkpoint(self, policy, framework_env_steps)
        except Exception:
            record(self, policy, "checkpoint")  # say why the evaluation failed, if the policy is why
            raise
        if evaluated and self.env_steps > 0:
            record(self, policy, "checkpoint")
        return evaluated

    def probing_final(self: TrainingContext, policy: Policy, framework_env_steps: int | None) -> Any:
        try:
            return final_evaluation(self, policy, framework_env_steps)
        finally:
            record(self, policy, "final")

    TrainingContext.checkpoint = probing_checkpoint  # type: ignore[method-assign]
    TrainingContext.final_evaluation = probing_final  # type: ignore[method-assign]


def main() -> int:
    target = os.environ.get(PROBE_ENV)
    if target:
        install_probe(Path(target))
    return worker.main()


if __name__ == "__main__":
    raise SystemExit(main())
