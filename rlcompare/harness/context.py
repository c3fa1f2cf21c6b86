"""What an adapter sees of the harness while it trains, inside the run's own process.

The context owns the clock: start-up ends at :meth:`TrainingContext.start_training`, evaluation
time is measured around each evaluation and subtracted, so training time is the framework's own.
It owns the step count (through :mod:`rlcompare.harness.counted_envs`) and the curve, which it appends to a
progress file as it goes, so a run that crashes or times out keeps every finished evaluation.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rlcompare.harness import run_directory as rundir
from rlcompare.harness.counted_envs import DEFAULT_SLOTS, EnvFactory, StepCounter
from rlcompare.harness.evaluation import EvaluationGrid, EvaluationResult, Evaluator, Policy
from rlcompare.harness.machine_load import LoadSample
from rlcompare.harness.protocol import CurvePoint
from rlcompare.harness.schedule import ScheduleTrace
from rlcompare.harness.workload_view import WorkloadLike


class SolvedStop(BaseException):  # noqa: N818 - a stop, not an error
    """Raised by :meth:`TrainingContext.checkpoint` when a workload with ``stop_when_solved`` reaches its
    success threshold: it unwinds the framework's training loop from inside its own callback, so every
    adapter stops there without code of its own. A ``BaseException`` (as ``KeyboardInterrupt`` is), so a
    framework's ``except Exception`` around its callbacks does not swallow it; the worker catches it and
    finishes the run with the policy that solved."""


class TrainingContext:
    """Handed to :meth:`rlcompare.harness.contract.Adapter.train`."""

    def __init__(
        self,
        workload: WorkloadLike,
        seed: int,
        run_dir: str | Path,
        launched_at: float | None = None,
    ) -> None:
        self.workload = workload
        self.seed = seed
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.launched_at = launched_at if launched_at is not None else time.time()
        self.counter = StepCounter(self.run_dir / rundir.STEPS, DEFAULT_SLOTS, create=True)
        self.progress_path = self.run_dir / rundir.PROGRESS
        protocol = workload.evaluation
        first = seed * protocol.episodes + protocol.seed_offset
        self._evaluator = Evaluator(workload.env, workload.env_kwargs, list(range(first, first + protocol.episodes)))
        self.grid = EvaluationGrid(protocol.interval_steps, protocol.at_start)
        self._last_evaluated_at: int | None = None
        #: Updates traced so far (``trace("update")``) and the env-step count at the last one.
        self.updates = 0
        self._last_update_at: int | None = None
        #: The machine's load when the run started (its end is sampled in :meth:`summary`).
        self.load_at_start = LoadSample.now()
        self.curve: list[CurvePoint] = []
        self.startup_seconds: float | None = None
        self.evaluation_seconds = 0.0
        self._evaluation_during_training = 0.0
        self._training_started: float | None = None
        self._training_stopped: float | None = None
        self.torch_threads: int | None = None
        self.schedule = ScheduleTrace()
        #: Where a ``stop_when_solved`` workload stopped: the policy that solved and the framework's count.
        self.solved_policy: Policy | None = None
        self.solved_framework_env_steps: int | None = None
        self.solved_at: int | None = None
        #: Every context of this run's program (``parallelism.seeds_per_program``, :meth:`share_clocks`):
        #: an evaluation in one of them pauses the training clocks of all. Empty: a run alone.
        self.program: list[TrainingContext] = []

    # -- for adapters ------------------------------------------------------------------------------

    @property
    def deterministic(self) -> bool:
        """Whether evaluation policies should act greedily (the workload says)."""
        return self.workload.evaluation.deterministic

    def env_factory(self, slot: int) -> EnvFactory:
        """A picklable factory for the environment in ``slot`` (one slot per env instance)."""
        if not 0 <= slot < self.counter.slots:
            raise ValueError(f"env slot {slot} outside 0..{self.counter.slots - 1}")
        return EnvFactory(self.workload.env, dict(self.workload.env_kwargs), str(self.counter.path), slot)

    def env_factories(self) -> list[EnvFactory]:
        """One factory per environment of the workload (every worker's), slots 0, 1, ..."""
        return [self.env_factory(slot) for slot in range(self.workload.parallelism.total_envs)]

    @property
    def simulation(self) -> str:
        """What steps the training environments: ``"gymnasium"`` or ``"envpool"`` (``parallelism.simulation``)."""
        from rlcompare.harness.envpool_envs import simulation_of

        return simulation_of(self.workload)

    def vector_env(self, autoreset_mode: Any = "NextStep", num_envs: int | None = None, first_slot: int = 0,
                   threads: int | None = None) -> Any:
        """The workload's environments as one counted Gymnasium vector environment (slots ``first_slot``
        on; ``num_envs``: default every environment of the workload), in ``autoreset_mode``
        (``gymnasium.vector.AutoresetMode`` or its value: ``"NextStep"``, ``"SameStep"``): one EnvPool
        when ``parallelism.simulation = "envpool"`` (built with this run's seed; ``threads`` EnvPool
        threads, default the workload's workers), else Gymnasium's Sync/AsyncVectorEnv over
        :meth:`env_factories`. Every step is counted as those of :meth:`env_factories` are
        (:mod:`rlcompare.harness.envpool_envs`)."""
        from rlcompare.harness.envpool_envs import make_vector_env

        return make_vector_env(self.workload, self.seed, self.counter.path, autoreset_mode, num_envs, first_slot,
                               threads)

    @property
    def env_steps(self) -> int:
        """Env steps counted by the harness so far, across every process on this host."""
        return self.counter.steps()

    @property
    def budget_reached(self) -> bool:
        return self.env_steps >= self.workload.env_steps

    def start_training(self) -> None:
        """Mark the end of start-up: the framework is imported and the algorithm built."""
        self.pin_threads()
        now = time.time()
        self.startup_seconds = now - self.launched_at
        self._training_started = time.perf_counter()

    def checkpoint(self, policy: Policy, framework_env_steps: int | None = None) -> bool:
        """Evaluate ``policy`` if a point of the evaluation grid is due; return whether it evaluated.

        Cheap when nothing is due; call it after every environment step or rollout. A grid point is
        evaluated at the first update boundary at or after it (:class:`EvaluationGrid`): once an
        update traced with ``trace("update")`` at or after the point has happened.

        With ``stop_when_solved``, an evaluation that reaches the success threshold ends training: the
        clock stops and :class:`SolvedStop` is raised (the worker keeps ``policy`` as the trained one).
        """
        if self.solved_at is not None:  # solved: training is over (an asynchronous loop may still call)
            return False
        steps = self.env_steps
        grid_point = self.grid.due(steps, self.updates, self._last_update_at)
        if grid_point is None:
            return False
        self._evaluate(policy, steps, framework_env_steps, grid_point)
        if grid_point > 0 and self._solved():
            self.stop_training()
            self.solved_policy = policy
            self.solved_framework_env_steps = framework_env_steps
            self.solved_at = steps
            raise SolvedStop(f"solved at {steps} env steps")
        return True

    @property
    def solved(self) -> bool:
        """Whether a ``stop_when_solved`` workload reached its threshold (training is over)."""
        return self.solved_at is not None

    @contextlib.contextmanager
    def until_solved(self) -> Iterator[None]:
        """Around a framework's own training loop: the :class:`SolvedStop` a checkpoint inside it raises
        ends the loop here, and the adapter goes on as after a full budget (closing what it built,
        returning its step count and native configuration). Without it the worker catches the stop."""
        try:
            yield
        except SolvedStop:
            pass

    def _solved(self) -> bool:
        # never at grid point 0 (called from checkpoint with grid_point > 0): an untrained policy at the
        # threshold says it is too low or the policy lucky, not that training solved the task
        threshold = self.workload.success_threshold
        return (bool(getattr(self.workload, "stop_when_solved", False)) and threshold is not None
                and self.curve[-1].return_mean >= float(threshold))

    def trace(self, event: str, value: float | None = None) -> None:
        """Record a training event at the harness's current env-step count: ``gradient_step``,
        ``target_sync``, ``exploration`` (``value``: epsilon), ``update`` (:mod:`rlcompare.harness.schedule`).
        Call it from the framework's callbacks, or by wrapping its optimizer and target update.
        ``update`` events also place the evaluations on the grid (:meth:`checkpoint`)."""
        steps = self.counter.steps()
        self.schedule.record(event, steps, value)
        if event == "update":
            self.updates += 1
            self._last_update_at = steps

    # -- for the harness ---------------------------------------------------------------------------

    def pin_threads(self) -> None:
        """Pin torch's threads the same way for every adapter (env vars cover BLAS and OpenMP)."""
        torch = sys.modules.get("torch")
        threads = self.workload.parallelism.threads_per_worker
        if torch is not None:
            torch.set_num_threads(threads)
            self.torch_threads = int(torch.get_num_threads())

    def stop_training(self) -> None:
        if self._training_stopped is None:
            self._training_stopped = time.perf_counter()

    @property
    def training_seconds(self) -> float:
        """Wall time between start and stop of training, less evaluations made meanwhile."""
        if self._training_started is None:
            return 0.0
        end = self._training_stopped if self._training_stopped is not None else time.perf_counter()
        return max(0.0, end - self._training_started - self._evaluation_during_training)

    def final_evaluation(self, policy: Policy, framework_env_steps: int | None) -> CurvePoint:
        """Evaluate the trained policy at the final step count, unless that was just done."""
        self.stop_training()
        steps = self.env_steps
        if self._last_evaluated_at != steps or not self.curve:
            self._evaluate(policy, steps, framework_env_steps, self.grid.final(steps))
        return self.curve[-1]

    def _evaluate(self, policy: Policy, steps: int, framework_env_steps: int | None,
                  grid_point: int | None) -> None:
        started = time.perf_counter()
        result: EvaluationResult = self._evaluator.evaluate(policy)
        self._exclude(time.perf_counter() - started)
        point = CurvePoint(
            env_steps=steps,
            framework_env_steps=framework_env_steps,
            train_seconds=self.training_seconds,
            return_mean=result.mean,
            return_std=result.std,
            returns=tuple(result.returns),
            episode_length_mean=float(sum(result.lengths)) / len(result.lengths),
            grid_steps=grid_point,
            updates=self.updates or None,  # None: no update traced yet, placed by the checkpoint call
        )
        if grid_point is not None:
            self.grid.taken(grid_point)
        self.curve.append(point)
        self._last_evaluated_at = steps
        # The bookkeeping is the harness's too: excluded from training time like the evaluation.
        started = time.perf_counter()
        self.counter.flush()  # the counts behind this point reach the disk with it
        with self.progress_path.open("a", encoding="utf-8") as progress:
            progress.write(json.dumps(point.to_dict()) + "\n")
            progress.flush()
            os.fsync(progress.fileno())
        self._exclude(time.perf_counter() - started)

    def _exclude(self, seconds: float) -> None:
        """Count ``seconds`` as evaluation time, out of training time (of every run of the program: the
        seeds trained together wait while one is evaluated)."""
        self.evaluation_seconds += seconds
        for context in self.program or [self]:
            if context._training_stopped is None:
                context._evaluation_during_training += seconds

    @staticmethod
    def share_clocks(contexts: list[TrainingContext]) -> None:
        """Make ``contexts`` the runs of one program: an evaluation in any of them is left out of the
        training time of all (each run's training time is then the program's, less every evaluation)."""
        for context in contexts:
            context.program = list(contexts)

    def close(self) -> None:
        self._evaluator.close()

    def summary(self) -> dict[str, Any]:
        steps, episodes = self.counter.totals()
        return {
            "env_steps": steps,
            "episodes": episodes,
            "startup_seconds": self.startup_seconds,
            "training_seconds": self.training_seconds,
            "evaluation_seconds": self.evaluation_seconds,
            "torch_threads": self.torch_threads,
            "schedule": self.schedule.summary() or None,
            **self.load_at_start.until(LoadSample.now()).to_dict(),
        }
