"""Performance criteria: what the stored runs measured, one value per seed.

Every criterion here reads the store's frames with vectorized pandas/numpy (a store may hold
hundreds of thousands of runs) and reports a pair without a single finished seed as missing with
the reason (refused up front, failed, timed out), never as zero. numpy and pandas are imported inside
the compute functions so that listing criteria stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rlcompare.hookspecs import hookimpl
from rlcompare.scoring.criteria import HIGHER, LOWER, PERFORMANCE, Criterion, CriterionResult, ScoringData

if TYPE_CHECKING:
    import pandas as pd


def _column_result(data: ScoringData, column: str, what: str, scale: float = 1.0) -> CriterionResult:
    """Per-seed values of one runs column over ok runs; pairs with ok runs but no value recorded
    are missing with a reason, as are pairs without an ok run."""
    import pandas as pd

    ok = data.ok_runs
    values = pd.DataFrame({
        "adapter": ok["adapter"].to_numpy(), "workload_id": ok["workload_id"].to_numpy(),
        "seed": ok["seed"].to_numpy(), "value": pd.to_numeric(ok[column], errors="coerce").to_numpy() * scale,
    }).dropna(subset=["value"])
    return CriterionResult.build(values, data.missing_where_unrunnable(_unrecorded(ok, values, what)))


def _unrecorded(ok: pd.DataFrame, values: pd.DataFrame, what: str) -> list[tuple[str, str, str]]:
    pairs = set(zip(ok["adapter"], ok["workload_id"], strict=True))
    lacking = pairs - set(zip(values["adapter"], values["workload_id"], strict=True))
    return [(a, w, f"no {what} recorded for its finished seeds") for a, w in sorted(lacking)]


def _run_values(data: ScoringData, runs: pd.DataFrame, per_run: pd.Series) -> pd.DataFrame:
    """Values indexed by run id, laid out as a values frame for ``runs`` (NaN rows dropped)."""
    import pandas as pd

    return pd.DataFrame({
        "adapter": runs["adapter"].to_numpy(), "workload_id": runs["workload_id"].to_numpy(),
        "seed": runs["seed"].to_numpy(), "value": runs["run_id"].map(per_run).to_numpy(dtype=float),
    }).dropna(subset=["value"])


# -- final return ------------------------------------------------------------------------------------


def final_return(data: ScoringData) -> CriterionResult:
    return _column_result(data, "final_return_mean", "final evaluation return")


# -- time to threshold -------------------------------------------------------------------------------


def _first_reach(data: ScoringData) -> tuple[pd.DataFrame, pd.DataFrame, list[tuple[str, str, str]]]:
    """For ok runs of workloads with a success threshold: the first evaluation point whose mean
    return reaches it (indexed by run id; ``grid_steps`` is the grid point it stands for, its env
    steps where the run recorded none), the runs considered, and pairs that cannot be measured."""
    import numpy as np
    import pandas as pd

    ok = data.ok_runs
    measured = ok[ok["success_threshold"].notna()]
    curves = data.curves
    grid = pd.to_numeric(curves["grid_steps"], errors="coerce") if "grid_steps" in curves else \
        pd.Series(np.nan, index=curves.index)
    curves = curves[["run_id", "env_steps", "train_seconds", "return_mean"]].assign(
        grid_steps=grid.fillna(curves["env_steps"]).astype(float), on_grid=grid.notna())
    threshold = curves["run_id"].map(dict(zip(measured["run_id"], measured["success_threshold"], strict=True)))
    reached = curves[np.greater_equal(curves["return_mean"].to_numpy(), threshold.to_numpy(dtype=float))]
    first = reached.loc[reached.groupby("run_id", sort=False)["env_steps"].idxmin()].set_index("run_id")
    with_curve = set(curves["run_id"].unique().tolist())
    measured = measured[measured["run_id"].isin(with_curve)]

    problems = []
    pairs = ok[["adapter", "workload_id", "success_threshold"]]
    no_threshold = pairs[pairs["success_threshold"].isna()].drop_duplicates(["adapter", "workload_id"])
    problems += [(a, w, "the workload sets no success threshold")
                 for a, w in zip(no_threshold["adapter"], no_threshold["workload_id"], strict=True)]
    lacking = _unrecorded(ok[ok["success_threshold"].notna()], measured, "evaluation curve")
    problems += lacking
    return first, measured, problems


def _time_to_threshold(data: ScoringData, column: str) -> CriterionResult:
    import numpy as np

    first, measured, problems = data.memo("first_reach", lambda: _first_reach(data))
    per_run = first[column].reindex(measured["run_id"]).fillna(np.inf)  # never reached: censored
    values = _run_values(data, measured, per_run)
    return CriterionResult.build(values, data.missing_where_unrunnable(problems))


def time_to_threshold_seconds(data: ScoringData) -> CriterionResult:
    return _time_to_threshold(data, "train_seconds")


def time_to_threshold_steps(data: ScoringData) -> CriterionResult:
    """Env steps to the threshold, read on the evaluation grid: each seed's value is the grid point
    its first evaluation at the threshold stands for, so it is known to one evaluation interval."""
    result = _time_to_threshold(data, "grid_steps")
    result.notes.update(_grid_resolution_notes(data))
    return result


def _grid_resolution_notes(data: ScoringData) -> dict[tuple[str, str], str]:
    """Per pair whose runs recorded grid points: the resolution its time to threshold is read at."""
    first, measured, _ = data.memo("first_reach", lambda: _first_reach(data))
    gridded = set(first.index[first["on_grid"].to_numpy(dtype=bool)])
    notes = {}
    for adapter, workload_id, run_id, digest in zip(measured["adapter"], measured["workload_id"], measured["run_id"],
                                                    measured["workload_digest"], strict=True):
        interval = data.evaluation_interval(digest)
        if run_id in gridded and interval:
            notes[(adapter, workload_id)] = (f"read on the evaluation grid: +-{int(interval):,} env steps (one "
                                             "evaluation interval); differences within it are ties")
    return notes


# -- sample efficiency -------------------------------------------------------------------------------


def _curve_average(data: ScoringData) -> pd.Series:
    """Per ok run: the area under its evaluation curve (trapezoid rule over env steps) divided by
    the steps it spans, i.e. the curve's mean return over training."""
    import numpy as np
    import pandas as pd

    curves = data.curves
    curves = curves[curves["run_id"].isin(data.ok_runs["run_id"])]
    if curves.empty:
        return pd.Series(dtype=float)
    codes, run_ids = pd.factorize(curves["run_id"], sort=False)
    steps = curves["env_steps"].to_numpy(dtype=float)
    returns = curves["return_mean"].to_numpy(dtype=float)
    order = np.lexsort((steps, codes))
    codes, steps, returns = codes[order], steps[order], returns[order]
    same_run = codes[1:] == codes[:-1]
    segments = np.diff(steps) * (returns[1:] + returns[:-1]) / 2.0
    area = np.bincount(codes[1:][same_run], weights=segments[same_run], minlength=len(run_ids))
    starts = np.flatnonzero(np.r_[True, ~same_run])
    ends = np.r_[starts[1:], len(codes)] - 1
    span = np.zeros(len(run_ids))
    span[codes[starts]] = steps[ends] - steps[starts]
    with np.errstate(divide="ignore", invalid="ignore"):
        average = np.where(span > 0, area / span, np.nan)
    return pd.Series(average, index=run_ids)


def sample_efficiency(data: ScoringData) -> CriterionResult:
    ok = data.ok_runs
    values = _run_values(data, ok, _curve_average(data))
    problems = _unrecorded(ok, values, "evaluation curve with two or more points")
    return CriterionResult.build(values, data.missing_where_unrunnable(problems))


# -- throughput, start-up, memory ------------------------------------------------------------------


def _contention_notes(data: ScoringData, runs: pd.DataFrame | None = None) -> dict[tuple[str, str], str]:
    """Cells whose valid runs kept more CPUs busy than their backend gave them (contention)."""
    runs = data.ok_runs if runs is None else runs
    if "cpus_needed" not in runs or "cpus_given" not in runs:
        return {}
    crowded = runs[runs["cpus_needed"].notna() & runs["cpus_given"].notna()
                   & (runs["cpus_needed"] > runs["cpus_given"])]
    notes = {}
    for (adapter, workload_id), group in crowded.groupby(["adapter", "workload_id"], sort=True):
        needed, given = int(group["cpus_needed"].max()), int(group["cpus_given"].min())
        notes[(adapter, workload_id)] = (f"oversubscribed: needed {needed} CPUs, had {given} "
                                         f"({len(group)} seeds): measures contention, not the framework")
    return notes


def throughput(data: ScoringData) -> CriterionResult:
    result = _column_result(data, "throughput", "throughput")
    result.notes.update(_contention_notes(data))
    return result


def startup_latency(data: ScoringData) -> CriterionResult:
    return _column_result(data, "startup_seconds", "start-up time")


def peak_memory(data: ScoringData) -> CriterionResult:
    return _column_result(data, "peak_rss_bytes", "peak memory", scale=1.0 / 2**20)


# -- completion --------------------------------------------------------------------------------------


def completion_rate(data: ScoringData) -> CriterionResult:
    import numpy as np
    import pandas as pd

    attempted = data.attempted_runs
    values = pd.DataFrame({
        "adapter": attempted["adapter"].to_numpy(), "workload_id": attempted["workload_id"].to_numpy(),
        "seed": attempted["seed"].to_numpy(), "value": (attempted["status"] == "ok").to_numpy(dtype=float),
    })
    refused = data.unrunnable
    tried = set(zip(attempted["adapter"], attempted["workload_id"], strict=True))
    keep = [(a, w) not in tried for a, w in zip(refused["adapter"], refused["workload_id"], strict=True)]
    return CriterionResult.build(values, refused[np.array(keep, dtype=bool)])


# -- parallel scaling --------------------------------------------------------------------------------

_SCALING_KEY = ["adapter", "env_id", "algorithm", "envs_per_worker", "mode"]


def _parallelism(data: ScoringData, runs: pd.DataFrame) -> pd.DataFrame:
    import pandas as pd

    rows = {}
    for digest, spec in data.workload_specs.items():
        parallelism = spec.get("parallelism") or {}
        rows[digest] = (int(parallelism.get("workers", 1)), int(parallelism.get("envs_per_worker", 1)),
                        str(parallelism.get("mode", "sync")))
    table = pd.DataFrame.from_dict(rows, orient="index", columns=["workers", "envs_per_worker", "mode"])
    return runs.join(table, on="workload_digest")


def scaling_efficiency(data: ScoringData) -> CriterionResult:
    """throughput(k workers) / (k x mean throughput(1 worker)), pairing workloads of one adapter
    with the same environment, algorithm, envs per worker and sampling mode."""
    import numpy as np

    runs = _parallelism(data, data.runs)
    multi = runs[runs["workers"] > 1]
    if multi.empty:
        return CriterionResult.build()  # no multi-worker workload: the criterion does not apply
    ok = runs[(runs["status"] == "ok") & runs["throughput"].notna()]
    baseline = ok[ok["workers"] == 1].groupby(_SCALING_KEY)["throughput"].mean().rename("baseline")
    scaled = ok[ok["workers"] > 1].join(baseline, on=_SCALING_KEY)
    scaled = scaled.assign(value=scaled["throughput"] / (scaled["workers"] * scaled["baseline"]))
    values = scaled.dropna(subset=["value"])[["adapter", "workload_id", "seed", "value"]]

    no_baseline = scaled[scaled["baseline"].isna()].drop_duplicates(["adapter", "workload_id"])
    problems = [
        (row.adapter, row.workload_id,
         f"no 1-worker baseline ({row.env_id}, {row.algorithm}, {row.envs_per_worker} envs per worker, {row.mode})")
        for row in no_baseline.itertuples()
    ]
    multi_pairs = set(zip(multi["adapter"], multi["workload_id"], strict=True))
    unrunnable = data.unrunnable
    keep = [(a, w) in multi_pairs for a, w in zip(unrunnable["adapter"], unrunnable["workload_id"], strict=True)]
    missing = unrunnable[np.array(keep, dtype=bool)]
    return CriterionResult.build(values, list(zip(missing["adapter"], missing["workload_id"], missing["reason"],
                                                  strict=True)) + problems, notes=_contention_notes(data))


# -- registration ------------------------------------------------------------------------------------

_RETURN_NOTE = (
    "Scored with the return normalization: (value - untrained return) / (success threshold - "
    "untrained return), per workload."
)

CRITERIA: tuple[Criterion, ...] = (
    Criterion(
        id="final_return", title="Final evaluation return", category=PERFORMANCE, unit="return",
        direction=HIGHER, normalization="return", compute=final_return,
        method="Mean episodic return of the trained policy, evaluated by the harness on its own "
               "environments and seeds after the full budget of environment steps; one value per "
               "finished seed. " + _RETURN_NOTE,
    ),
    Criterion(
        id="time_to_threshold_seconds", title="Time to threshold (training wall time)", category=PERFORMANCE,
        unit="s", direction=LOWER, compute=time_to_threshold_seconds,
        method="Training wall time (evaluation excluded) at the first evaluation point whose mean "
               "return reaches the workload's success threshold. A seed that never reaches it within "
               "the budget is censored: left out of the raw estimate, counted in the note, and scored 0. "
               "Workloads without a threshold have no value. Scored relative to the fastest adapter's mean.",
    ),
    Criterion(
        id="time_to_threshold_steps", title="Time to threshold (env steps)", category=PERFORMANCE,
        unit="env steps", direction=LOWER, compute=time_to_threshold_steps,
        method="Environment steps at the first evaluation point whose mean return reaches the workload's "
               "success threshold, read on the evaluation grid: every adapter is evaluated at the first "
               "update boundary at or after each multiple of the evaluation interval, and a seed's value is "
               "the grid point its evaluation stands for (its env steps for runs that recorded none, and "
               "for a final evaluation off the grid). A value is known to one evaluation interval (+-), "
               "so differences within one interval are ties, not ranks. Seeds that never reach it are "
               "censored as for the wall-time variant. Scored relative to the best adapter's mean.",
    ),
    Criterion(
        id="sample_efficiency", title="Sample efficiency (area under the curve)", category=PERFORMANCE,
        unit="return", direction=HIGHER, normalization="return", compute=sample_efficiency,
        method="Area under the evaluation curve (mean return against environment steps, trapezoid "
               "rule) divided by the steps it spans: the curve's average return over training, so "
               "faster learning scores higher at equal final return. Needs two or more evaluation "
               "points. " + _RETURN_NOTE,
    ),
    Criterion(
        id="throughput", title="Training throughput", category=PERFORMANCE, unit="env steps/s",
        direction=HIGHER, compute=throughput,
        method="Environment steps counted by the harness divided by training wall time; start-up and "
               "evaluation time are excluded. Scored as a ratio to the fastest adapter's mean.",
    ),
    Criterion(
        id="startup_latency", title="Start-up latency", category=PERFORMANCE, unit="s", direction=LOWER,
        compute=startup_latency,
        method="Seconds from launching the run's process to the first training step (imports, "
               "environment and model construction). Scored as the best adapter's mean divided by the value.",
    ),
    Criterion(
        id="peak_memory", title="Peak memory", category=PERFORMANCE, unit="MiB", direction=LOWER,
        compute=peak_memory,
        method="Peak resident set size of the run's whole process tree (workers included), sampled by "
               "the harness. Scored as the best adapter's mean divided by the value.",
    ),
    Criterion(
        id="scaling_efficiency", title="Parallel scaling efficiency", category=PERFORMANCE, unit="share",
        direction=HIGHER, normalization="share", compute=scaling_efficiency,
        method="For a workload with k > 1 rollout workers: its per-seed throughput divided by k times "
               "the mean throughput of the same adapter on the 1-worker workload with the same "
               "environment, algorithm, envs per worker and sampling mode (the scaling suite). 1 is "
               "linear scaling. Without a 1-worker baseline the cell is missing; 1-worker workloads "
               "have no value. A cell whose runs kept more CPUs busy than they were given (k workers "
               "plus the learner on fewer cores) says so in its note: it measures contention, not scaling.",
    ),
    Criterion(
        id="completion_rate", title="Completion rate", category=PERFORMANCE, unit="share", direction=HIGHER,
        normalization="share", compute=completion_rate,
        method="Share of the seeds started for a workload that finished (status ok); failed and timed-out "
               "seeds count as 0. A pair refused before running (capabilities) is missing, not 0.",
    ),
)


@hookimpl
def rlcompare_register_criteria(register: Any) -> None:
    for criterion in CRITERIA:
        register.add_criterion(criterion)
