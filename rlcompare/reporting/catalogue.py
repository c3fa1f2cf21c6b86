"""What a report needs of the registered plugins: what scoring needs, the registered suites and
workloads (to say which command reproduces a stored matrix) and the algorithm families."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from rlcompare.scoring.criteria import ScoringCatalogue
from rlcompare.spec.families import Families
from rlcompare.spec.workload import Suite, Workload


@dataclass(frozen=True)
class ReportingCatalogue:
    """The plugins' contribution to a report (built by the plugin manager, or by hand in a test)."""

    scoring: ScoringCatalogue
    suites: Mapping[str, Suite] = field(default_factory=dict)
    workloads: Mapping[str, Workload] = field(default_factory=dict)
    families: Families = field(default_factory=dict)
