"""Development-facilitation criteria: measured from the adapter code, the installed packages and
the framework registry, one value per adapter (workload id ``*``).

Nothing here is an opinion typed into a table: glue size is counted with radon, install footprint
is read from installed distributions' metadata, import time is timed in fresh interpreters, API
coverage is introspected in a subprocess. Expensive measurements are cached per (distribution,
version) in the measurement cache, and made ahead by each criterion's ``premeasure`` step while
``rlcompare run`` runs the matrix (:mod:`rlcompare.cli.premeasure`). A registry entry, field or
package that is not there makes the cell missing with the reason, never zero.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlcompare import hookimpl
from rlcompare.scoring.criteria import DEVELOPMENT, HIGHER, LOWER, Criterion
from rlcompare_criteria.adapter_lookup import per_adapter_criterion, per_adapter_premeasure
from rlcompare_criteria.api_coverage import docstring_coverage, premeasure_api, type_hint_coverage
from rlcompare_criteria.cold_import import IMPORT_REPEATS, cold_import, premeasure_cold_import
from rlcompare_criteria.feature_coverage import algorithm_coverage, distributed_feature_coverage, registry_algorithms
from rlcompare_criteria.fidelity import setting_fidelity
from rlcompare_criteria.footprint import install_distributions, install_size
from rlcompare_criteria.glue import glue_complexity, glue_lines
from rlcompare_criteria.licence import licence
from rlcompare_criteria.maintenance import release_age

if TYPE_CHECKING:
    from rlcompare.plugins.register import Register


_RATIO = " Scored as the best adapter's value divided by this one."

CRITERIA: tuple[Criterion, ...] = (
    Criterion(
        id="glue_lines", title="Adapter glue size", category=DEVELOPMENT, unit="logical lines", direction=LOWER,
        per_workload=False, compute=per_adapter_criterion(glue_lines),
        premeasure=per_adapter_premeasure(glue_lines),
        method="Logical lines of code (radon's LLOC) of the adapter's whole package (every module of the "
               "top-level package that holds it, helper and parity-probe modules included): the glue needed to "
               "run rlcompare's standard workloads (translation of the canonical settings, training loop, policy "
               "hand-over, parity probes) on the framework. Benchmark baselines live outside it "
               "(benchmarks/baselines.py)." + _RATIO,
    ),
    Criterion(
        id="glue_complexity", title="Adapter glue complexity", category=DEVELOPMENT, unit="cyclomatic complexity",
        direction=LOWER, per_workload=False, compute=per_adapter_criterion(glue_complexity),
        premeasure=per_adapter_premeasure(glue_complexity),
        method="Sum of the cyclomatic complexity (radon) of every function and method in the adapter's "
               "whole package (as glue_lines counts it)." + _RATIO,
    ),
    Criterion(
        id="install_size", title="Install footprint (size)", category=DEVELOPMENT, unit="MiB", direction=LOWER,
        per_workload=False, compute=per_adapter_criterion(install_size),
        premeasure=per_adapter_premeasure(install_size),
        method="Bytes of the installed files (RECORD sizes from importlib.metadata) of the framework's "
               "distribution and every distribution its requirements pull in transitively (extras and "
               "requirements whose markers do not hold here excluded). Shared dependencies count for "
               "every framework that needs them." + _RATIO,
    ),
    Criterion(
        id="install_distributions", title="Install footprint (distributions)", category=DEVELOPMENT,
        unit="distributions", direction=LOWER, per_workload=False, compute=per_adapter_criterion(install_distributions),
        premeasure=per_adapter_premeasure(install_distributions),
        method="Number of installed distributions in the same transitive requirement closure as the "
               "install size, the framework's own included." + _RATIO,
    ),
    Criterion(
        id="cold_import", title="Cold import time", category=DEVELOPMENT, unit="s", direction=LOWER,
        per_workload=False, compute=per_adapter_criterion(cold_import),
        premeasure=premeasure_cold_import,
        method="Seconds to import what a run imports of the framework (its import name and every module "
               "of its package the adapter module imports: a framework whose top-level package is empty "
               "is not timed on next to nothing), first thing in a fresh Python interpreter of the "
               "environment the adapter runs in (the interpreter's own start-up excluded). Each run's "
               "worker times its own import so (one sample per run) and the store keeps it; where every "
               "adapter of the store whose runs started has such samples they are used, else every adapter is "
               f"timed in {IMPORT_REPEATS} fresh interpreters after the matrix (cached per distribution "
               "version and environment), so one score never mixes the two for adapters that ran (one "
               "refused on every workload has no run and is timed in fresh interpreters). The samples "
               "give the interval." + _RATIO,
    ),
    Criterion(
        id="docstring_coverage", title="Public-API docstring coverage", category=DEVELOPMENT, unit="share",
        direction=HIGHER, normalization="share", per_workload=False, compute=per_adapter_criterion(docstring_coverage),
        premeasure=premeasure_api,
        method="Share of public classes, functions and methods with a non-empty docstring, introspected "
               "in a fresh interpreter of the environment the adapter runs in right after importing what a "
               "run imports of the framework (as for the cold import time; a run's worker walks it after "
               "timing its import, else a fresh interpreter does): the names the framework package "
               "and its public submodules then loaded export (``__all__`` where defined), defined in the "
               "package itself, and the public methods of those classes.",
    ),
    Criterion(
        id="type_hint_coverage", title="Public-API type-hint coverage", category=DEVELOPMENT, unit="share",
        direction=HIGHER, normalization="share", per_workload=False, compute=per_adapter_criterion(type_hint_coverage),
        premeasure=premeasure_api,
        method="Share of the public Python functions and methods (same walk as docstring coverage) "
               "whose every parameter (self and cls aside) and return value is annotated.",
    ),
    Criterion(
        id="algorithm_coverage", title="Canonical algorithm coverage", category=DEVELOPMENT, unit="share",
        direction=HIGHER, normalization="share", per_workload=False, compute=per_adapter_criterion(algorithm_coverage),
        method="Share of rlcompare's canonical algorithms (PPO, A2C, DQN, SAC) the adapter declares in its "
               "capabilities, i.e. that can be compared on identical workloads.",
    ),
    Criterion(
        id="registry_algorithms", title="Algorithms offered", category=DEVELOPMENT, unit="algorithms",
        direction=HIGHER, per_workload=False, compute=per_adapter_criterion(registry_algorithms),
        method="Number of distinct algorithms the framework offers according to its registry entry. "
               "Scored as a ratio to the framework offering the most.",
    ),
    Criterion(
        id="distributed_feature_coverage", title="Distributed-feature coverage", category=DEVELOPMENT,
        unit="share", direction=HIGHER, normalization="share", per_workload=False,
        compute=distributed_feature_coverage,
        method="Share of seven parallel and distributed features offered, among those whose status is "
               "known: vectorized environments, multi-process workers, asynchronous sampling or learning "
               "(declared in the adapter's capabilities, or recorded in the registry taxonomy), GPU batch "
               "simulation, multi-GPU training, multi-node cluster execution and a distributed "
               "actor/learner architecture (registry taxonomy, the survey's vocabulary). Features the "
               "registry records as unknown are left out of the share and named in the note; without a "
               "registry entry the cell is missing.",
    ),
    Criterion(
        id="licence", title="Licence", category=DEVELOPMENT, unit="class", direction=HIGHER,
        normalization="share", per_workload=False, compute=licence,
        method="The framework's licence from its registry entry (else its package metadata), classed "
               "by the obligations it puts on users' code: permissive 1, weak copyleft 0.75, strong "
               "copyleft 0.5, network copyleft 0.25. An unclassifiable licence is missing.",
    ),
    Criterion(
        id="setting_fidelity", title="Workload fidelity", category=DEVELOPMENT, unit="share", direction=HIGHER,
        normalization="share", per_workload=False, compute=setting_fidelity,
        method="How much of the workload reaches the framework as asked, over the workload's canonical "
               "settings only (every hyperparameter of its family, the network's hidden sizes and activation, "
               "the envs per worker and the workers: the same settings for every adapter; one the report "
               "leaves out counts as unsupported, and entries outside them never count): each, as the parity "
               "probe corrected it, scores 1 when mapped exactly, 0.5 approximately and 0 when unsupported; "
               "a setting counts as exact only where the probe verified the family's update (declared but "
               "unverified is approximate). A departure from the canonical update or schedule (a defaults.* "
               "or schedule.* entry that is not exact) only lowers the share: it adds what it misses of one "
               "setting to the denominator. One sample per workload started (its latest run), averaged. A "
               "pair with most canonical settings unsupported is refused before running.",
    ),
    Criterion(
        id="release_age", title="Latest release age", category=DEVELOPMENT, unit="days", direction=LOWER,
        normalization="half-life", half_life=365.0, per_workload=False, compute=release_age,
        method="Days from the framework's latest release (the registry entry's sourced latest_release "
               "fact: version and date) to the newest run in the store, so re-scoring a store gives the "
               "same figure; missing when the registry records it as unknown or the framework never "
               "released. Scored 0.5 ** (days / 365): a release a year old scores 0.5.",
    ),
)


@hookimpl
def rlcompare_register_criteria(register: Register) -> None:
    for criterion in CRITERIA:
        register.add_criterion(criterion)
