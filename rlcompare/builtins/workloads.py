"""Built-in plugin registering the quick, classic and scaling suites and their workloads
(:mod:`rlcompare.spec.builtin_workloads`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlcompare import hookimpl
from rlcompare.spec.builtin_workloads import BUILTIN_SUITES, builtin_workloads

if TYPE_CHECKING:
    from rlcompare.plugins.register import Register


@hookimpl
def rlcompare_register_workloads(register: Register) -> None:
    for workload in builtin_workloads():
        register.add_workload(workload)
    for suite in BUILTIN_SUITES:
        register.add_suite(suite.name, suite.workload_ids, suite.description)
