"""Every table of a report as a tidy pandas DataFrame (one observation per row).

Each table is derived from the scoring matrix or read from the store's runs and curves, never
estimated again: the numbers are the matrix's. CSV and JSON write these frames as they are; the
Markdown, HTML and LaTeX renderers lay them out for reading.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rlcompare.registry.frames import feature_matrix
from rlcompare.scoring.criteria import ALL_WORKLOADS
from rlcompare.store.contention import contended_workloads, contention_by_workload
from rlcompare.store.contention import contention_warnings as _contention_warnings
from rlcompare.store.library_versions import mixed_version_warnings

if TYPE_CHECKING:
    import pandas as pd

    from rlcompare.scoring.engine import ScoreMatrix
    from rlcompare.spec.families import Families

#: Registry facts shown per compared framework (the survey's taxonomy, and the licence).
FRAMEWORK_FACTS = ("backend", "architecture", "simulation_parallelism", "computing_parallelism",
                   "synchronization", "algorithms", "licence")


def _frame(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame.from_records(list(rows), columns=list(columns))


def _finite(value: Any) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return None


# -- from the matrix ---------------------------------------------------------------------------------


def overall_table(matrix: ScoreMatrix) -> pd.DataFrame:
    """The ranking, in rank order: each adapter's rank (``tied`` with whom), the tier that ranks it
    before its score, the score with its interval, and why a higher score ranks lower."""
    rows = []
    for adapter in matrix.ranked_adapters:
        o = matrix.overall[adapter]
        score = o.score
        rows.append({
            "adapter": adapter, "framework": o.framework, "rank": o.rank, "tied": bool(o.tied_with),
            "tied_with": ", ".join(o.tied_with), "tier": o.tier,
            "score": None if score is None else _finite(score.point),
            "low": None if score is None else _finite(score.low),
            "high": None if score is None else _finite(score.high), "n": 0 if score is None else score.n,
            "rank_note": o.rank_note or "",
            "rank_stability": o.rank_stability, "weight_coverage": o.weight_coverage,
            "valid_workloads": o.valid_workloads, "solved_workloads": o.solved_workloads,
            "learned_workloads": o.learned_workloads, "failed_workloads": ", ".join(o.failed_workloads),
            "missing_criteria": ", ".join(o.missing_criteria),
        })
    return _frame(rows, ("adapter", "framework", "rank", "tied", "tied_with", "tier", "score", "low", "high", "n",
                         "rank_note", "rank_stability", "weight_coverage", "valid_workloads", "solved_workloads",
                         "learned_workloads", "failed_workloads", "missing_criteria"))


def criteria_table(matrix: ScoreMatrix) -> pd.DataFrame:
    rows = [{"criterion": cid, "title": c.title, "category": c.category,
             "unit": c.unit, "direction": c.direction,
             "normalization": c.normalization, "per_workload": bool(c.per_workload),
             "weight": float(matrix.weights.get(cid, 0.0)), "method": c.method}
            for cid, c in matrix.criteria.items()]
    return _frame(rows, ("criterion", "title", "category", "unit", "direction", "normalization", "per_workload",
                         "weight", "method"))


def scores_table(matrix: ScoreMatrix) -> pd.DataFrame:
    """Normalized scores aggregated over workloads: one row per criterion, adapter and statistic."""
    rows = []
    for (cid, adapter), estimates in matrix.aggregates.items():
        for statistic, e in estimates.items():
            rows.append({"criterion": cid, "adapter": adapter, "statistic": statistic, "point": _finite(e.point),
                         "low": _finite(e.low), "high": _finite(e.high), "n": e.n,
                         "weight": float(matrix.weights.get(cid, 0.0))})
    return _frame(rows, ("criterion", "adapter", "statistic", "point", "low", "high", "n", "weight"))


def cells_table(matrix: ScoreMatrix) -> pd.DataFrame:
    """Raw criterion values per adapter and workload (``*``: per adapter), missing ones with why."""
    rows = []
    for cell in matrix.cells.values():
        criterion = matrix.criteria.get(cell.criterion)
        rows.append({**cell.to_dict(), "unit": criterion.unit})
    return _frame(rows, ("criterion", "adapter", "workload", "point", "low", "high", "n", "censored", "unit",
                         "label", "note", "missing"))


def improvement_table(matrix: ScoreMatrix) -> pd.DataFrame:
    rows = [{"criterion": cid, **item} for cid, items in matrix.improvement.items() for item in items]
    return _frame(rows, ("criterion", "x", "y", "p", "low", "high", "workloads"))


def profiles_table(matrix: ScoreMatrix) -> pd.DataFrame:
    rows = []
    for cid, profile in matrix.performance_profiles.items():
        for adapter, band in profile["adapters"].items():
            for tau, point, low, high in zip(profile["taus"], band["point"], band["low"], band["high"], strict=True):
                rows.append({"criterion": cid, "adapter": adapter, "tau": tau, "point": point, "low": low,
                             "high": high})
    return _frame(rows, ("criterion", "adapter", "tau", "point", "low", "high"))


def excluded_table(matrix: ScoreMatrix) -> pd.DataFrame:
    return _frame(matrix.excluded_runs, ("run_id", "adapter", "workload", "seed", "status", "reason"))


def imputed_table(matrix: ScoreMatrix) -> pd.DataFrame:
    return _frame(matrix.imputed, ("criterion", "adapter", "workload", "score", "reason"))


def left_out_table(matrix: ScoreMatrix) -> pd.DataFrame:
    return _frame(matrix.left_out, ("criterion", "workload", "reason"))


# -- from the runs -----------------------------------------------------------------------------------


def runs_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Every run with its raw figures (MiB for memory), as stored."""
    import pandas as pd

    frame = runs[["run_id", "workload_id", "adapter", "framework", "seed", "status", "error", "env_steps",
                  "framework_env_steps", "budget_env_steps", "startup_seconds", "training_seconds",
                  "evaluation_seconds", "throughput", "ideal_throughput", "cpu_seconds", "peak_rss_bytes",
                  "final_return_mean", "final_return_std", "load_start", "load_end", "load_cpus", "cpu_steal",
                  "runs_in_flight", "host_fingerprint", "adapter_plugin", "adapter_distribution",
                  "adapter_version"]].copy()
    # seeds trained in one program with the run (its time, CPU and memory are the program's); absent from
    # stores and bundles written before it existed, where every run trained alone
    frame.insert(frame.columns.get_loc("throughput") + 1, "seeds_in_program",
                 runs["seeds_in_program"] if "seeds_in_program" in runs else None)
    frame["peak_rss_mib"] = pd.to_numeric(frame.pop("peak_rss_bytes"), errors="coerce") / 2**20
    frame = frame.join(budget_windows(runs))  # each run's grain and the window it was held to
    return frame.rename(columns={"workload_id": "workload"})


#: What :func:`budget_windows` adds to each run: the grain its validity was judged at.
GRAIN_COLUMNS = ("budget_granularity", "budget_overshoot_steps", "allowed_low", "allowed_high", "step_count_tolerance")


def budget_windows(runs: pd.DataFrame) -> pd.DataFrame:
    """Per run (same index): the budget granularity and overshoot it was judged at (the family's, or
    the finer one its adapter declared), the env steps it was allowed to end at, and the allowed gap
    between the framework's count and the harness's. Empty for runs that never started."""
    import pandas as pd

    frame = pd.DataFrame(index=runs.index)
    for column in ("budget_granularity", "budget_overshoot_steps", "step_count_tolerance"):
        frame[column] = runs[column] if column in runs else None
    budget = pd.to_numeric(runs.get("budget_env_steps"), errors="coerce")
    overshoot = pd.to_numeric(frame["budget_overshoot_steps"], errors="coerce")
    frame["allowed_low"] = (budget - overshoot).clip(lower=0)
    frame["allowed_high"] = budget + overshoot
    return frame[list(GRAIN_COLUMNS)]


def grain_rows(runs: pd.DataFrame) -> list[dict[str, Any]]:
    """One row per workload x adapter x grain, for the reports: the granularity, the allowed window
    of env steps (budget +- overshoot), the allowed count gap and each run's steps (by seed), so a
    reader sees every run's grain and the window it was held to."""
    if runs.empty or "budget_granularity" not in runs:
        return []
    started = runs[runs["budget_granularity"].notna() & (runs["status"] != "unsupported")]
    frame = started[["workload_id", "adapter", "seed", "env_steps", "budget_env_steps"]].join(budget_windows(started))
    rows = []
    keys = ["workload_id", "adapter", "budget_granularity", "budget_overshoot_steps"]
    for (workload, adapter, granularity, overshoot), group in frame.groupby(keys, sort=True):
        group = group.sort_values("seed")
        steps = [str(int(value)) for value in map(_finite, group["env_steps"]) if value is not None]
        first = group.iloc[0]
        rows.append({"workload": workload, "adapter": adapter, "granularity": granularity,
                     "overshoot": int(overshoot), "budget": _int_or_none(first["budget_env_steps"]),
                     "low": _int_or_none(first["allowed_low"]), "high": _int_or_none(first["allowed_high"]),
                     "count_gap": _int_or_none(first["step_count_tolerance"]), "steps": ", ".join(steps) or "-"})
    return rows


def _int_or_none(value: Any) -> int | None:
    number = _finite(value)
    return None if number is None else int(number)


def curves_table(curves: pd.DataFrame) -> pd.DataFrame:
    columns = ["run_id", "workload_id", "adapter", "seed", "env_steps", "grid_steps", "updates",
               "framework_env_steps", "train_seconds", "return_mean", "return_std"]
    return curves[columns].rename(columns={"workload_id": "workload"}).reset_index(drop=True)


def _family_kind(algorithm: Any, families: Families) -> str | None:
    """``gradient`` or ``evolutionary`` for a known algorithm family (None for one no longer known):
    runs of both kinds are compared on the same env-step budget, and the table says which is which."""
    family = families.get(algorithm) if isinstance(algorithm, str) else None
    return family.kind if family is not None else None


def workloads_table(runs: pd.DataFrame, families: Families) -> pd.DataFrame:
    rows = []
    for text in runs.drop_duplicates("workload_id", keep="last")["workload_json"]:
        spec = _json(text) or {}
        parallelism = spec.get("parallelism") or {}
        evaluation = spec.get("evaluation") or {}
        rows.append({
            "workload": spec.get("id"), "description": spec.get("description", ""), "env": spec.get("env"),
            "algorithm": spec.get("algorithm"), "family": _family_kind(spec.get("algorithm"), families),
            "env_steps": spec.get("env_steps"), "seeds": spec.get("seeds"),
            "workers": parallelism.get("workers"), "envs_per_worker": parallelism.get("envs_per_worker"),
            "mode": parallelism.get("mode"), "threads_per_worker": parallelism.get("threads_per_worker"),
            "evaluation_interval": evaluation.get("interval_steps"), "evaluation_episodes": evaluation.get("episodes"),
            "success_threshold": spec.get("success_threshold"),
            # native: each adapter ran its own recommended settings (the sources are in the fidelity table)
            "settings": spec.get("settings", "canonical"),
        })
    rows.sort(key=lambda r: str(r["workload"]))
    return _frame(rows, ("workload", "description", "env", "algorithm", "family", "env_steps", "seeds", "workers",
                         "envs_per_worker", "mode", "threads_per_worker", "evaluation_interval",
                         "evaluation_episodes", "success_threshold", "settings"))


def fidelity_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Each canonical setting of each adapter x workload: exact, approximate or unsupported, with the
    native name and value (from the pair's newest run that recorded a fidelity report)."""
    rows = []
    recorded = runs[runs["fidelity_json"].notna() & (runs["status"] != "unsupported")]
    for (workload, adapter), group in recorded.groupby(["workload_id", "adapter"], sort=True):
        items = _json(group.sort_values("run_id")["fidelity_json"].iloc[-1]) or []
        for item in items:
            rows.append({"workload": workload, "adapter": adapter, "setting": item.get("setting"),
                         "value": _text(item.get("value")), "status": item.get("status"),
                         "native_name": item.get("native_name"), "native_value": _text(item.get("native_value")),
                         "note": item.get("note") or ""})
    for row in runs[runs["status"] == "unsupported"].itertuples():
        rows.append({"workload": row.workload_id, "adapter": row.adapter, "setting": "*", "value": None,
                     "status": "refused", "native_name": None, "native_value": None,
                     "note": row.error if isinstance(row.error, str) else ""})
    return _frame(rows, ("workload", "adapter", "setting", "value", "status", "native_name", "native_value", "note"))


def fidelity_summary(fidelity: pd.DataFrame) -> pd.DataFrame:
    """Per adapter x workload: how many settings are exact, approximate, unsupported (or refused)."""
    if fidelity.empty:
        return _frame([], ("workload", "adapter", "exact", "approximate", "unsupported", "refused"))
    counts = fidelity.groupby(["workload", "adapter", "status"]).size().unstack(fill_value=0)
    for status in ("exact", "approximate", "unsupported", "refused"):
        if status not in counts.columns:
            counts[status] = 0
    return counts[["exact", "approximate", "unsupported", "refused"]].reset_index()


def _newest(runs: pd.DataFrame, column: str, statuses: Sequence[str] | None = None) -> list[Any]:
    """The newest run (by run id, as :func:`fidelity_table` picks it) of each workload x adapter pair
    that recorded ``column``, among runs of ``statuses`` (any status but refused when None)."""
    if column not in runs:
        return []
    kept = runs[runs[column].notna()]
    kept = kept[kept["status"].isin(statuses)] if statuses is not None else kept[kept["status"] != "unsupported"]
    return [group.sort_values("run_id").iloc[-1] for _, group in kept.groupby(["workload_id", "adapter"], sort=True)]


def _loaded(value: Any) -> Any:
    """A JSON column's value as data (text in a store's frame, data already in a bundle's)."""
    return value if isinstance(value, (list, dict)) else _json(value)


def family_reference(families: Families, family: Any) -> Any:
    """The reference update the family object carries (a
    :class:`rlcompare.parity.reference.ReferenceUpdate`), or None."""
    from rlcompare.parity.reference import ReferenceUpdate

    found = families.get(family) if isinstance(family, str) else None
    reference = getattr(found, "parity", None)
    return reference if isinstance(reference, ReferenceUpdate) else None


def variant_settings(variants: Sequence[str], reference: Any) -> list[dict[str, Any]]:
    """What each named variant changes: its setting with the canonical and the framework's value,
    from the family's reference update (a variant the installed reference does not know is said)."""
    found = []
    for name in variants:
        variant = reference.variants.get(name) if reference is not None else None
        if variant is None:
            found.append({"variant": name, "setting": None, "canonical": None, "framework": None,
                          "description": "not a variant of the family's reference update" if reference is not None
                          else "no reference update of the family is installed to say what it changes"})
        else:
            found.append({"variant": name, "setting": variant.setting, "canonical": _text(variant.canonical),
                          "framework": _text(variant.framework), "description": variant.description})
    return found


def _settings_text(settings: Sequence[Mapping[str, Any]]) -> str:
    return "; ".join(f"{s['variant']}: {s['description']}" if s["setting"] is None else
                     f"{s['variant']}: {s['setting']} canonical {s['canonical']}, framework {s['framework']}"
                     for s in settings)


def _verdicts(runs: pd.DataFrame) -> list[tuple[Any, dict[str, Any]]]:
    """(run, verdict) for every verdict the pairs' newest runs record, each distinct verdict of an
    adapter once (the workloads of one family carry the same verdicts)."""
    found: dict[str, tuple[Any, dict[str, Any]]] = {}
    for run in _newest(runs, "parity_json"):
        for verdict in _loaded(run["parity_json"]) or []:
            if isinstance(verdict, Mapping):
                key = json.dumps([run["adapter"], verdict], sort_keys=True, default=str)
                found.setdefault(key, (run, dict(verdict)))
    return sorted(found.values(), key=lambda item: (str(item[0]["adapter"]), str(item[1].get("family")),
                                                    str(item[1].get("case"))))


def parity_table(runs: pd.DataFrame, families: Families) -> pd.DataFrame:
    """Each parity verdict (docs/parity.md) the pairs' newest runs record: adapter x family x probe,
    the verdict, the variant that explains a difference and what it changes per setting (canonical and
    framework value, from the family's reference update), the verdict's summary or reason, and the
    framework versions it was probed on."""
    rows = []
    for run, verdict in _verdicts(runs):
        variants = [str(name) for name in verdict.get("variant") or ()]
        settings = variant_settings(variants, family_reference(families, verdict.get("family")))
        versions = verdict.get("versions") or {}
        rows.append({"adapter": run["adapter"], "framework": run["framework"], "family": verdict.get("family"),
                     "probe": verdict.get("case"), "verdict": verdict.get("status"),
                     "variant": " + ".join(variants), "settings": _settings_text(settings),
                     "detail": str(verdict.get("summary") or verdict.get("reason") or ""),
                     "versions": ", ".join(f"{name} {version or 'not installed'}"
                                           for name, version in sorted(versions.items()))})
    return _frame(rows, ("adapter", "framework", "family", "probe", "verdict", "variant", "settings", "detail",
                         "versions"))


def effective_defaults_table(runs: pd.DataFrame) -> pd.DataFrame:
    """The defaults each adapter read back from its framework's built agent when probed (optimizer,
    Adam epsilon, initialization, action squashing, ...), one row per adapter x family x key; where
    the probes of a family read different values, each is given with its probe."""
    values: dict[tuple[str, str, str], dict[str, str | None]] = {}
    for run, verdict in _verdicts(runs):
        for key, value in (verdict.get("defaults") or {}).items():
            found = values.setdefault((str(run["adapter"]), str(verdict.get("family")), str(key)), {})
            found[str(verdict.get("case"))] = _text(value)
    rows = []
    for (adapter, family, key), by_case in sorted(values.items()):
        distinct = list(dict.fromkeys(by_case.values()))
        value = distinct[0] if len(distinct) == 1 else "; ".join(f"{v} ({case})" for case, v in by_case.items())
        rows.append({"adapter": adapter, "family": family, "key": key, "value": value})
    return _frame(rows, ("adapter", "family", "key", "value"))


def schedule_differences_table(runs: pd.DataFrame, families: Families) -> pd.DataFrame:
    """How the schedule each pair's newest valid run traced from inside its framework departs from the
    one the workload's canonical settings define (:func:`rlcompare.parity.schedules.schedule_differences`).
    Valid runs only: a run cut short traced fewer updates than its budget defines."""
    from rlcompare.parity.schedules import schedule_differences

    rows = []
    for run in _newest(runs, "schedule_json", ("ok",)):
        spec = dict(_loaded(run["workload_json"]) or {})
        if "algorithm" not in spec or "env_steps" not in spec:
            continue
        family = families.get(spec["algorithm"]) if isinstance(spec["algorithm"], str) else None
        # a spec stored without some hyperparameters means the family's defaults
        defaults = family.hyperparameters().model_dump(mode="json") if family is not None else {}
        spec["hyperparameters"] = {**defaults, **(spec.get("hyperparameters") or {})}
        for difference in schedule_differences(spec, _loaded(run["schedule_json"])):
            rows.append({"workload": run["workload_id"], "adapter": run["adapter"], "aspect": difference.aspect,
                         "measured": difference.measured, "canonical": difference.canonical,
                         "text": difference.text})
    return _frame(rows, ("workload", "adapter", "aspect", "measured", "canonical", "text"))


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return str(value)


def versions_table(runs: pd.DataFrame) -> pd.DataFrame:
    rows: dict[tuple[str, str], str | None] = {}
    for adapter, text in zip(runs["adapter"], runs["versions_json"], strict=True):
        for name, version in (_json(text) or {}).items():
            rows[(adapter, name)] = version
    return _frame([{"adapter": a, "distribution": d, "version": v} for (a, d), v in sorted(rows.items())],
                  ("adapter", "distribution", "version"))


def gymnasium_warnings(runs: pd.DataFrame) -> list[str]:
    """One line per workload whose runs used different gymnasium versions (empty when they agree)."""
    return mixed_version_warnings(runs, "gymnasium")


def contention_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per workload and adapter, the machine load its valid runs' timings were measured under (mean
    load average per CPU, CPU steal, most runs in flight) and whether the workload is flagged for
    different contention (:mod:`rlcompare.store.contention`)."""
    rows = contention_by_workload(runs)
    flagged = contended_workloads(rows)
    return _frame([{**row, "different_contention": row["workload"] in flagged} for row in rows],
                  ("workload", "adapter", "runs", "load_per_cpu", "cpu_steal", "runs_in_flight",
                   "different_contention"))


def contention_warnings(runs: pd.DataFrame) -> list[str]:
    """One line per workload whose adapters' timing figures were measured under different machine
    load (empty when they agree, or when no run recorded its load)."""
    return _contention_warnings(runs)


def hosts_table(runs: pd.DataFrame) -> pd.DataFrame:
    hosts: dict[str, dict[str, Any]] = {}
    counts: dict[str, int] = {}
    for text in runs["host_json"]:
        host = _json(text)
        if host:
            key = str(host.get("fingerprint"))
            hosts[key] = host
            counts[key] = counts.get(key, 0) + 1
    rows = [{"fingerprint": key, "cpu_model": h.get("cpu_model"), "logical_cpus": h.get("logical_cpus"),
             "usable_cpus": h.get("usable_cpus"),
             "memory_gib": None if not h.get("memory_bytes") else round(h["memory_bytes"] / 2**30, 1),
             "system": h.get("system"), "machine": h.get("machine"), "python": h.get("python"), "gpu": h.get("gpu"),
             "runs": counts[key]} for key, h in sorted(hosts.items())]
    return _frame(rows, ("fingerprint", "cpu_model", "logical_cpus", "usable_cpus", "memory_gib", "system",
                         "machine", "python", "gpu", "runs"))


# -- from the registry -------------------------------------------------------------------------------


def registry_evidence_table(frameworks: Sequence[str], entries: Mapping[str, Any]) -> pd.DataFrame:
    """Each compared framework's registry facts, one row per piece of evidence (source and excerpt);
    a framework without an entry has one row saying so."""
    rows = []
    for framework in frameworks:
        entry = entries.get(framework)
        if entry is None:
            rows.append({"framework": framework, "name": None, "fact": None, "value": None, "as_of": None,
                         "source": None, "excerpt": None, "note": "not in the registry"})
            continue
        for name, fact in entry.facts().items():
            value = _text(fact.json_value())
            evidence = fact.evidence or (None,)
            for item in evidence:
                rows.append({"framework": framework, "name": entry.name, "fact": name, "value": value,
                             "as_of": fact.as_of.isoformat(), "source": None if item is None else item.describe(),
                             "excerpt": None if item is None else item.excerpt,
                             "note": fact.note or fact.searched or ""})
    return _frame(rows, ("framework", "name", "fact", "value", "as_of", "source", "excerpt", "note"))


def taxonomy_table(frameworks: Sequence[str], entries: Mapping[str, Any]) -> pd.DataFrame:
    """The compared frameworks' taxonomy (wide: one row per framework, one column per fact)."""
    rows = []
    for framework in frameworks:
        entry = entries.get(framework)
        row: dict[str, Any] = {"framework": framework, "name": entry.name if entry else "(not in the registry)"}
        for name in FRAMEWORK_FACTS:
            fact = entry.fact(name) if entry is not None and name in type(entry).model_fields else None
            value = None if fact is None else fact.value
            row[name] = ", ".join(value) if isinstance(value, (list, tuple)) else (None if value is None else str(value))
            if row[name] is not None and fact is not None and fact.author_stated:
                row[name] += " (authors)"  # its authors' word alone, never verified (docs/registry.md)
        rows.append(row)
    return _frame(rows, ("framework", "name", *FRAMEWORK_FACTS))


def feature_table(frameworks: Sequence[str], entries: Mapping[str, Any]) -> pd.DataFrame:
    """The feature matrix of the compared frameworks that have entries, tidy: framework, dimension,
    value, offered (true, false, or empty when the registry does not say)."""
    known = [entries[f] for f in frameworks if f in entries and entries[f].domain == "control"]
    if not known:
        return _frame([], ("framework", "dimension", "value", "offered"))
    import pandas as pd

    matrix = feature_matrix(known)
    rows = []
    for framework, row in matrix.iterrows():
        for (dimension, value), offered in row.items():
            rows.append({"framework": framework, "dimension": dimension, "value": value,
                         "offered": None if pd.isna(offered) else bool(offered)})
    return _frame(rows, ("framework", "dimension", "value", "offered"))


def missing_reasons(matrix: ScoreMatrix) -> list[dict[str, Any]]:
    """Missing cells grouped by (adapter, workload, reason), with the criteria they concern."""
    reasons: dict[tuple[str, str, str], list[str]] = {}
    for cell in matrix.cells.values():
        if cell.missing is not None:
            reasons.setdefault((cell.adapter, cell.workload_id, cell.missing), []).append(cell.criterion)
    return [{"adapter": a, "workload": "all workloads" if w == ALL_WORKLOADS else w, "reason": r,
             "criteria": ", ".join(sorted(c))} for (a, w, r), c in sorted(reasons.items())]


def imputed_reasons(matrix: ScoreMatrix) -> list[dict[str, Any]]:
    """Cells scored the worst (unknown never helps), grouped by (adapter, workload, reason), with
    the criteria they concern."""
    groups: dict[tuple[str, str, str], list[str]] = {}
    for item in matrix.imputed:
        groups.setdefault((item["adapter"], item["workload"], item["reason"]), []).append(item["criterion"])
    return [{"adapter": a, "workload": "all workloads" if w == ALL_WORKLOADS else w, "reason": r,
             "criteria": ", ".join(sorted(c))} for (a, w, r), c in sorted(groups.items())]


def curve_bands(curves: pd.DataFrame, ok_run_ids: Sequence[str], reps: int, seed: int,
                confidence: float) -> pd.DataFrame:
    """Learning curves over seeds: per workload, adapter and evaluation point (the i-th evaluation
    of each valid run), the mean return with a pointwise percentile interval from the scoring
    engine's stratified bootstrap (each point's seeds resampled), at the mean env-step count."""
    return _point_bands(curves, ok_run_ids, "return_mean", reps, seed, confidence)


def accuracy_bands(curves: pd.DataFrame, language_run_ids: Sequence[str], reps: int, seed: int,
                   confidence: float) -> pd.DataFrame:
    """For the valid runs of language tasks (:mod:`rlcompare.harness.language`): the greedy accuracy at each
    evaluation point (the share of its episodes answered exactly right: return 1.0), over seeds as
    :func:`curve_bands` gives the return."""
    import json

    import numpy as np

    runs = curves[curves["run_id"].isin(set(language_run_ids))]
    accuracy = [float(np.mean(np.asarray(json.loads(text), dtype=float) >= 1.0)) if text else np.nan
                for text in runs["returns_json"].tolist()]
    return _point_bands(runs.assign(accuracy=accuracy).dropna(subset=["accuracy"]), language_run_ids, "accuracy",
                        reps, seed, confidence)


def _point_bands(curves: pd.DataFrame, run_ids: Sequence[str], value: str, reps: int, seed: int,
                 confidence: float) -> pd.DataFrame:
    import numpy as np

    from rlcompare.scoring.bootstrap import Column, ColumnMeans, Layout, bootstrap

    columns = ("workload", "adapter", "point", "env_steps", "mean", "low", "high", "seeds")
    valid = curves[curves["run_id"].isin(set(run_ids))]
    if valid.empty:
        return _frame([], columns)
    valid = valid.sort_values(["workload_id", "adapter", "run_id", "env_steps"], kind="stable")
    valid = valid.assign(point=valid.groupby("run_id", sort=False).cumcount())
    valid = valid.sort_values(["workload_id", "adapter", "point", "seed"], kind="stable")
    keys = valid[["workload_id", "adapter", "point"]].to_numpy()
    values = valid[value].to_numpy(dtype=float)
    steps = valid["env_steps"].to_numpy(dtype=float)
    change = np.flatnonzero((keys[1:] != keys[:-1]).any(axis=1)) + 1
    starts, ends = np.concatenate([[0], change]), np.concatenate([change, [len(valid)]])
    layout = Layout((ends - starts).tolist())
    stat = ColumnMeans(layout, [Column(u, values[s:e]) for u, (s, e) in enumerate(zip(starts, ends, strict=True))])
    [interval] = bootstrap(layout, [stat], reps, confidence, seed)
    rows = [{"workload": keys[s][0], "adapter": keys[s][1], "point": int(keys[s][2]),
             "env_steps": float(steps[s:e].mean()), "mean": float(interval.point[u]), "low": float(interval.low[u]),
             "high": float(interval.high[u]), "seeds": int(e - s)}
            for u, (s, e) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True))]
    return _frame(rows, columns)


# -- across releases (rlcompare run --versions) -------------------------------------------------------


def _release_key(release: str) -> Any:
    from packaging.version import InvalidVersion, Version

    try:
        return (0, Version(release))
    except InvalidVersion:
        return (1, release)


def release_series(adapters: Sequence[str]) -> dict[str, list[tuple[str, str]]]:
    """Per adapter with runs pinned to two or more releases, its (release, subject) pairs in release
    order (:mod:`rlcompare.harness.subjects`)."""
    from rlcompare.harness.subjects import split_subject

    series: dict[str, list[tuple[str, str]]] = {}
    for subject in adapters:
        adapter_id, release = split_subject(subject)
        if release is not None:
            series.setdefault(adapter_id, []).append((release, subject))
    return {adapter_id: sorted(pairs, key=lambda pair: _release_key(pair[0]))
            for adapter_id, pairs in sorted(series.items()) if len(pairs) >= 2}


def releases_table(matrix: ScoreMatrix) -> pd.DataFrame:
    """Each criterion of each workload (``*``: per adapter) across the releases of one framework:
    the release's value with its interval, and the change from the release before it (after minus
    before) with a bootstrap interval over both releases' seeds; ``changed`` is True when that
    interval excludes zero, False when it holds zero, and empty when either release has fewer than
    two values (no interval: a single measurement shows no change it could separate from noise)."""
    from rlcompare.scoring.bootstrap import difference_interval

    options = matrix.options
    rows = []
    for adapter_id, pairs in release_series(matrix.adapters).items():
        keys = sorted({(criterion, workload) for criterion, subject, workload in matrix.cells
                       if any(subject == s for _, s in pairs)},
                      key=lambda key: (list(matrix.criteria).index(key[0]) if key[0] in matrix.criteria else 99,
                                       key[1] != ALL_WORKLOADS, key[1]))
        for criterion, workload in keys:
            unit = matrix.criteria[criterion].unit if criterion in matrix.criteria else ""
            before = None
            for release, subject in pairs:
                cell = matrix.cell(criterion, subject, workload)
                row = {"adapter": adapter_id, "release": release, "subject": subject, "criterion": criterion,
                       "workload": workload, "unit": unit, "point": None, "low": None, "high": None, "n": 0,
                       "change": None, "change_low": None, "change_high": None, "changed": None,
                       "missing": None}
                if cell is None or cell.is_missing:
                    row["missing"] = cell.missing if cell is not None else "no value"
                    rows.append(row)
                    before = None
                    continue
                row.update(point=_finite(cell.point), low=_finite(cell.low), high=_finite(cell.high), n=cell.n)
                if before is not None:
                    change = difference_interval(list(cell.values), list(before.values), options.reps, options.seed,
                                                 options.confidence)
                    if change is not None:
                        row.update(change=_finite(change.point), change_low=_finite(change.low),
                                   change_high=_finite(change.high), changed=not change.low <= 0 <= change.high)
                    elif cell.point is not None and before.point is not None:
                        row["change"] = _finite(cell.point - before.point)
                rows.append(row)
                before = cell
    return _frame(rows, ("adapter", "release", "subject", "criterion", "workload", "unit", "point", "low", "high",
                         "n", "change", "change_low", "change_high", "changed", "missing"))
