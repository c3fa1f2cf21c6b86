"""Weight profiles: how much each criterion counts towards the overall score.

A profile gives each category (performance, development) a share of the total weight and each
criterion a relative weight within its category (1 unless listed). The share of a category is split
over the criteria of that category that have data, in proportion to their relative weights, so a
criterion without data anywhere (say, scaling efficiency when no scaling suite ran) passes its weight
to its own category rather than to the other one. User profiles are TOML files::

    base = "balanced"            # optional: start from a built-in profile
    name = "my-team"             # optional
    [categories]                 # optional: category shares (normalized to sum to 1)
    performance = 0.7
    development = 0.3
    [weights]                    # optional: relative weights within a category; 0 drops a criterion
    final_return = 3
    glue_lines = 2

**Learning comes first.** Every built-in profile ranks adapters by the workloads they solved and
learned before their overall score (:mod:`rlcompare.scoring.ranking`), so speed and footprint
cannot lift an adapter that did not learn a workload above one that did. A profile that wants raw
speed says so: ``learning_first = false`` (a top-level key of the file) ranks by overall score right
after parity and valid workloads.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlcompare.errors import UnknownNameError, UsageError
from rlcompare.scoring.criteria import CATEGORIES, DEVELOPMENT, PERFORMANCE
from rlcompare.spec.files import read_text_file

DEFAULT_PROFILE = "balanced"


@dataclass(frozen=True)
class WeightProfile:
    """Category shares and relative criterion weights (unlisted criteria weigh 1)."""

    name: str
    description: str
    categories: Mapping[str, float]
    weights: Mapping[str, float] = field(default_factory=dict)
    #: Rank by workloads solved, then learned, before the overall score (docs/criteria.md, "Ranks").
    #: False only in a profile that wants raw speed to count whether or not an adapter learned.
    learning_first: bool = True

    def relative_weight(self, criterion_id: str) -> float:
        return float(self.weights.get(criterion_id, 1.0))

    def resolve(self, criteria: Mapping[str, Any], present: Iterable[str] | None = None) -> dict[str, float]:
        """The final weight of each criterion in ``present`` (default: all of ``criteria``).

        Each category's share is split over its present criteria in proportion to their relative
        weights; categories without a present, positively weighted criterion drop out and the
        remaining shares are renormalized, so the weights sum to 1 (or are all 0).
        """
        present_ids = list(criteria) if present is None else [cid for cid in present if cid in criteria]
        raw: dict[str, float] = {}
        for category in CATEGORIES:
            members = [cid for cid in present_ids if criteria[cid].category == category]
            total = sum(self.relative_weight(cid) for cid in members)
            share = float(self.categories.get(category, 0.0))
            for cid in members:
                raw[cid] = share * self.relative_weight(cid) / total if total > 0 and share > 0 else 0.0
        overall = sum(raw.values())
        return {cid: (raw.get(cid, 0.0) / overall if overall > 0 else 0.0) for cid in present_ids}

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "categories": dict(self.categories),
                "weights": dict(self.weights), "learning_first": self.learning_first}


BUILTIN_PROFILES: dict[str, WeightProfile] = {
    profile.name: profile
    for profile in (
        WeightProfile(
            name="balanced",
            description="Performance and development facilitation count half each; every criterion "
                        "weighs the same within its category.",
            categories={PERFORMANCE: 0.5, DEVELOPMENT: 0.5},
        ),
        WeightProfile(
            name="performance",
            description="Only measured run performance; learning results count double.",
            categories={PERFORMANCE: 1.0, DEVELOPMENT: 0.0},
            weights={"final_return": 2, "sample_efficiency": 2, "time_to_threshold_steps": 1.5},
        ),
        WeightProfile(
            name="research-prototyping",
            description="Fast iteration on new ideas: sample efficiency and time to result, little glue, "
                        "quick imports, documented and typed APIs, broad algorithm coverage.",
            categories={PERFORMANCE: 0.45, DEVELOPMENT: 0.55},
            weights={
                "final_return": 2, "sample_efficiency": 2, "time_to_threshold_seconds": 2,
                "startup_latency": 1.5, "scaling_efficiency": 0.25, "peak_memory": 0.5,
                "glue_lines": 2, "glue_complexity": 1.5, "cold_import": 1.5, "docstring_coverage": 2,
                "type_hint_coverage": 1.5, "algorithm_coverage": 2, "registry_algorithms": 2,
                "distributed_feature_coverage": 0.25, "install_size": 0.5, "install_distributions": 0.5,
            },
        ),
        WeightProfile(
            name="production-scale",
            description="Large, long-running training: throughput, parallel scaling, reliability and "
                        "memory; distributed features, maintenance and licence.",
            categories={PERFORMANCE: 0.6, DEVELOPMENT: 0.4},
            weights={
                "throughput": 3, "scaling_efficiency": 3, "completion_rate": 3, "peak_memory": 2,
                "final_return": 1, "sample_efficiency": 0.5, "startup_latency": 0.5,
                "distributed_feature_coverage": 3, "release_age": 2, "licence": 2, "type_hint_coverage": 1,
                "glue_lines": 0.5, "glue_complexity": 0.5, "cold_import": 0.25, "algorithm_coverage": 0.5,
            },
        ),
    )
}


def get_profile(name: str) -> WeightProfile:
    if name not in BUILTIN_PROFILES:
        raise UnknownNameError("profile", name, BUILTIN_PROFILES)
    return BUILTIN_PROFILES[name]


_FILE_KEYS = ("base", "name", "description", "categories", "weights", "learning_first")


def _number(path: Path, where: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0 or value == float("inf"):
        raise UsageError(f"{path}: {where}: expected a non-negative number, got {value!r}")
    return float(value)


def _table(path: Path, data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise UsageError(f"{path}: {key}: expected a table of name = number")
    return value


def load_weights_file(path: str | Path, criteria: Mapping[str, Any]) -> WeightProfile:
    """A profile from a TOML file, validated against the registered ``criteria``; errors are one
    line naming the file and the offending key."""
    path = Path(path)
    text = read_text_file(path, "weights file", UsageError, limit=1 << 16)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: not valid TOML ({exc})") from None
    unknown = [key for key in data if key not in _FILE_KEYS]
    if unknown:
        raise UsageError(f"{path}: unknown key {unknown[0]!r} (expected {', '.join(_FILE_KEYS)})")
    base_name = data.get("base", DEFAULT_PROFILE)
    if not isinstance(base_name, str):
        raise UsageError(f"{path}: base: expected a profile name, got {base_name!r}")
    try:
        base = get_profile(base_name)
    except UnknownNameError as error:
        raise UsageError(f"{path}: base: {error}") from None

    categories = dict(base.categories)
    for category, value in _table(path, data, "categories").items():
        if category not in CATEGORIES:
            raise UsageError(f"{path}: categories.{category}: unknown category (expected {', '.join(CATEGORIES)})")
        categories[category] = _number(path, f"categories.{category}", value)
    if not any(share > 0 for share in categories.values()):
        raise UsageError(f"{path}: categories: at least one category needs a positive share")

    weights = dict(base.weights)
    for criterion_id, value in _table(path, data, "weights").items():
        if criterion_id not in criteria:
            error = UnknownNameError("criterion", criterion_id, criteria, "rlcompare list criteria")
            raise UsageError(f"{path}: weights.{criterion_id}: {error}")
        weights[criterion_id] = _number(path, f"weights.{criterion_id}", value)

    learning_first = data.get("learning_first", base.learning_first)
    if not isinstance(learning_first, bool):
        raise UsageError(f"{path}: learning_first: expected true or false, got {learning_first!r}")
    name = data.get("name", path.stem)
    description = data.get("description", f"weights from {path}")
    if not isinstance(name, str) or not isinstance(description, str):
        raise UsageError(f"{path}: name and description must be strings")
    return WeightProfile(name=name, description=description, categories=categories, weights=weights,
                         learning_first=learning_first)
