"""The rules of the adapter contract, each checked against one adapter with the project's own
machinery: the plan ``rlcompare plan`` makes, the driver and local backend ``rlcompare run`` uses,
the store it writes and the validity verdict it stores.

One tiny run per adapter (:class:`Trial`) serves every rule that needs training, so a framework's
start-up is paid once. A rule that fails raises :class:`ConformanceFailure` whose message says, in
one or two lines, what is wrong and what to change.
"""

from __future__ import annotations

import difflib
import functools
import importlib.metadata
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlcompare.errors import IncompatibleError, PluginError
from rlcompare.execution.backend import BackendOptions, Limits
from rlcompare.execution.driver import Driver
from rlcompare.execution.local import LocalBackend, LocalRun
from rlcompare.execution.process_tree import TreeMonitor
from rlcompare.harness.contract import Adapter, check_adapter_class
from rlcompare.harness.fidelity import Fidelity
from rlcompare.harness.language_ids import DIGIT_ADDITION_ID, is_language_task
from rlcompare.harness.run_directory import RunDirectory
from rlcompare.harness.validity import BudgetTolerance, grain_refusal
from rlcompare.parity.runner import default_cache, parity_requests, run_requests
from rlcompare.parity.verdict import DIFFERS, FAILED
from rlcompare.plan.matrix import PlannedRun, build_plan, check_faithful
from rlcompare.plan.placement import place_runs
from rlcompare.plugins.manager import Plugins, build_plugin_manager
from rlcompare.spec.families import variant_settings
from rlcompare.spec.settings import outside_settings, structural_settings
from rlcompare.spec.workload import Workload, workload_from_dict
from rlcompare.store.records import RunRecord
from rlcompare.store.sqlite_store import Store
from rlcompare.testing.probe_worker import PROBE_ENV, probe_batch_size

if TYPE_CHECKING:
    from rlcompare.spec.families import Families

#: Environments the tiny workload may use, in order of preference (cheap, and every install has them).
CONFORMANCE_ENVS = ("CartPole-v1", "Pendulum-v1", DIGIT_ADDITION_ID)
#: Smallest budget of the tiny run, in env steps.
MIN_BUDGET = 2_000
#: Evaluation points during the tiny run (besides the one at step 0).
EVALUATION_POINTS = 4
#: Episodes per evaluation point: the largest batch the policy sees during evaluation.
EVALUATION_EPISODES = 4
# structural_settings (rlcompare.spec.settings): what every fidelity report covers besides the
# algorithm's canonical hyperparameters: the network (a language workload: its language model) and the
# parallelism (``parallelism.mode`` only where the adapter offers async sampling; ``threads_per_worker``
# is pinned by the harness itself).
#: Modules no plugin module may import, whatever its framework.
HEAVY_MODULES = ("torch", "tensorflow", "jax", "ray")
#: How long processes the worker started may take to go after it exited.
LINGER_GRACE_SECONDS = 3.0


class ConformanceFailure(AssertionError):
    """A rule the adapter breaks; the message says what to fix."""


@dataclass(frozen=True)
class Rule:
    """One rule of the contract: ``id`` names the generated test, ``check`` raises on a breach."""

    id: str
    summary: str
    check: Callable[[Subject], None]


# -------------------------------------------------------------------------------------------------
# the adapter under test, and the evidence the rules share
# -------------------------------------------------------------------------------------------------


@dataclass
class Trial:
    """The tiny run, as stored, with what the kit observed around it."""

    record: RunRecord
    curve: list[dict[str, Any]]
    probes: list[dict[str, Any]]
    lingering: list[str]
    seconds: float


@dataclass
class Subject:
    """One adapter under test; evidence is gathered once, on first use, and shared by the rules."""

    kit: Kit
    adapter_id: str
    seconds: dict[str, float] = field(default_factory=dict)
    _cache: dict[str, Any] = field(default_factory=dict)

    def _once(self, key: str, make: Callable[[], Any]) -> Any:
        if key not in self._cache:
            started = time.perf_counter()
            try:
                self._cache[key] = make()
            except ConformanceFailure as failure:
                self._cache[key] = failure
            finally:
                self.seconds[key] = time.perf_counter() - started
        value = self._cache[key]
        if isinstance(value, ConformanceFailure):
            raise ConformanceFailure(str(value))
        return value

    @property
    def adapter_class(self) -> type[Adapter]:
        return self._once("class", self._find_class)

    @property
    def adapter(self) -> Adapter:
        return self._once("adapter", lambda: self.adapter_class())

    @property
    def workload(self) -> Workload:
        return self._once("workload", lambda: tiny_workload(self.kit.plugins, self.adapter))

    @property
    def declaration_workload(self) -> Workload:
        """What the declaration rules ask ``fidelity()`` about: the tiny workload, or, when the adapter
        can run none (a training rule says why), a registered workload of an algorithm it offers."""
        return self._once("declaration_workload", self._declaration_workload)

    def _declaration_workload(self) -> Workload:
        try:
            return self.workload
        except ConformanceFailure:
            return any_offered_workload(self.kit.plugins, self.adapter)

    @property
    def plugin_module(self) -> str:
        """The module that registered the adapter (what ``rlcompare list`` imports)."""
        origin = self.kit.plugins.origin("adapter", self.adapter_id)
        plugin = self.kit.plugins.manager.get_plugin(origin.plugin)
        return getattr(plugin, "__name__", origin.plugin)

    @property
    def declarations(self) -> dict[str, Any]:
        return self._once("declarations", lambda: declarations_in_fresh_process(
            self.adapter_id, self.declaration_workload, self.plugin_module))

    @property
    def import_probe(self) -> dict[str, Any]:
        return self._once("import", lambda: {**import_in_fresh_process(self.plugin_module),
                                             **self.kit.reference_import})

    @property
    def trial(self) -> Trial:
        return self._once("trial", self._run_trial)

    def finished_trial(self) -> Trial:
        """The trial, for rules that judge what a finished run left; a failed run fails them too."""
        trial = self.trial
        if trial.record.status not in ("ok", "invalid"):
            raise ConformanceFailure(f"not judged: the tiny run did not finish ({trial.record.status}: "
                                     f"{trial.record.error}); see the rule trains_within_budget")
        return trial

    @property
    def program_trial(self) -> list[RunRecord]:
        """Two seeds of the tiny workload in one program (``parallelism.seeds_per_program = 2``): the
        runs, as ``rlcompare run`` stores them. Only for an adapter that declares ``seeds_in_one_program``."""
        return self._once("program_trial", self._run_program_trial)

    def _run_program_trial(self) -> list[RunRecord]:
        directory = self.kit.workdir / self.adapter_id
        directory.mkdir(parents=True, exist_ok=True)
        store_path = directory / "program.db"
        store_path.unlink(missing_ok=True)
        base = self.workload.to_dict()
        workload = workload_from_dict(
            {**base, "id": f"{base['id']}-program", "seeds": 2,
             "parallelism": {**base["parallelism"], "seeds_per_program": 2}},
            "the conformance kit's program of two seeds", self.kit.plugins.algorithms)
        try:
            plan = build_plan(self.kit.plugins.plan_catalogue(), [workload], [self.adapter_id])
        except IncompatibleError as refusal:
            raise ConformanceFailure(f"`rlcompare plan` refuses two seeds in one program: {refusal}") from None
        plan = place_runs(self.kit.plugins.adapters, plan)
        backend = LocalBackend(Limits(self.kit.timeout_seconds), BackendOptions(jobs=1))
        with Store(store_path) as store:
            summary = Driver(store, backend, families=self.kit.plugins.algorithms).run(plan)
        return [outcome.record for outcome in summary.outcomes]

    def _find_class(self) -> type[Adapter]:
        plugins = self.kit.plugins
        if self.adapter_id in plugins.adapters:
            return plugins.adapters[self.adapter_id]
        about = [str(error) for error in plugins.errors if repr(self.adapter_id) in str(error)]
        if about:  # e.g. refused by check_adapter_class at registration
            raise ConformanceFailure(f"adapter {self.adapter_id!r} is not registered: {'; '.join(about)[:600]}")
        close = difflib.get_close_matches(self.adapter_id, list(plugins.adapters), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else " (is its package installed, with an 'rlcompare' entry point?)"
        failed = "; ".join(str(error) for error in plugins.errors)
        raise ConformanceFailure(f"adapter {self.adapter_id!r} is not registered{hint}"
                                 + (f" Plugins that failed: {failed[:400]}" if failed else ""))

    def _run_trial(self) -> Trial:
        directory = self.kit.workdir / self.adapter_id
        directory.mkdir(parents=True, exist_ok=True)
        store_path, probe_path = directory / "conformance.db", directory / "probes.jsonl"
        for stale in (store_path, probe_path):
            stale.unlink(missing_ok=True)
        started = time.perf_counter()
        try:
            plan = build_plan(self.kit.plugins.plan_catalogue(), [self.workload], [self.adapter_id])
        except IncompatibleError as refusal:
            raise ConformanceFailure(f"`rlcompare plan` refuses the tiny workload: {refusal}") from None
        # an adapter that does not fit this environment runs in its own, as under `rlcompare run`
        plan = place_runs(self.kit.plugins.adapters, plan)
        backend = ProbingBackend(Limits(self.kit.timeout_seconds), BackendOptions(jobs=1), probe_path=probe_path)
        with Store(store_path) as store:
            store.check_writable()
            summary = Driver(store, backend, families=self.kit.plugins.algorithms).run(plan)
            curves = store.curves_frame()
        record = summary.outcomes[0].record
        curve = curves[curves["run_id"] == record.run_id].to_dict("records")
        probes = [json.loads(line) for line in probe_path.read_text(encoding="utf-8").splitlines()
                  if line.strip()] if probe_path.exists() else []
        return Trial(record, curve, probes, backend.lingering, time.perf_counter() - started)


class ProbingBackend(LocalBackend):
    """The local backend with the kit's worker (:mod:`rlcompare.testing.probe_worker`), noting
    which of the run's processes are still alive once the worker has exited."""

    name = "conformance"
    description = "the local backend, probing policies and processes (conformance kit)"
    worker_module = "rlcompare.testing.probe_worker"
    per_run_variables = LocalBackend.per_run_variables | {PROBE_ENV}

    def __init__(self, *args: Any, probe_path: Path, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.probe_path = probe_path
        self.lingering: list[str] = []

    def submit(self, planned: PlannedRun, directory: RunDirectory) -> LocalRun:
        previous = os.environ.get(PROBE_ENV)
        os.environ[PROBE_ENV] = str(self.probe_path)  # the worker's environment is built from ours
        try:
            return super().submit(planned, directory)
        finally:
            if previous is None:
                os.environ.pop(PROBE_ENV, None)
            else:
                os.environ[PROBE_ENV] = previous

    def _ending(self, handle: LocalRun) -> Any:
        if handle.stop_status is None and handle.process.returncode is not None:
            self.lingering = lingering_processes(handle.monitor, handle.process.pid)
        return super()._ending(handle)  # which then stops whatever lingers, as in every run


def lingering_processes(monitor: TreeMonitor, root_pid: int, grace_seconds: float = LINGER_GRACE_SECONDS) -> list[str]:
    """Processes of the run (seen in its tree, or carrying its run id) alive ``grace_seconds`` after
    the worker exited."""
    deadline = time.monotonic() + grace_seconds
    while True:
        monitor.adopt_marked()
        alive = [process for process in monitor.survivors() if process.pid != root_pid]
        if not alive or time.monotonic() >= deadline:
            break
        time.sleep(0.1)
    described = []
    for process in alive:
        try:
            described.append(f"{process.name()} (pid {process.pid})")
        except Exception:  # noqa: BLE001 - it went meanwhile
            continue
    return described


@dataclass
class Kit:
    """The conformance kit for one session: the plugins, where runs go, and each adapter's evidence."""

    workdir: Path
    timeout_seconds: float = 600.0
    #: Longest import of an adapter's plugin module accepted; None: measured and reported only.
    max_import_seconds: float | None = 5.0
    plugins_factory: Callable[[], Plugins] | None = None
    _plugins: Plugins | None = None
    subjects: dict[str, Subject] = field(default_factory=dict)

    @property
    def plugins(self) -> Plugins:
        if self._plugins is None:
            self._plugins = (self.plugins_factory or build_plugin_manager)()
        return self._plugins

    def adapter_ids(self, requested: Iterable[str]) -> list[str]:
        """Requested ids (comma-separated allowed); ``all`` means every registered adapter."""
        ids: list[str] = []
        for item in requested:
            for name in (part.strip() for part in item.split(",")):
                if name == "all":
                    ids.extend(sorted(self.plugins.adapters))
                elif name:
                    ids.append(name)
        return list(dict.fromkeys(ids))

    @functools.cached_property
    def reference_import(self) -> dict[str, Any]:
        """What the adapters' plugin modules are compared with: importing :data:`REFERENCE_MODULE`."""
        reference = import_in_fresh_process(REFERENCE_MODULE)
        return {"reference_module": REFERENCE_MODULE, "reference_seconds": reference["seconds"]}

    def subject(self, adapter_id: str) -> Subject:
        if adapter_id not in self.subjects:
            self.subjects[adapter_id] = Subject(self, adapter_id)
        return self.subjects[adapter_id]

    def check(self, adapter_id: str, rule_id: str) -> None:
        """Check one rule against one adapter; raise :class:`ConformanceFailure` naming what to fix."""
        subject = self.subject(adapter_id)
        started = time.perf_counter()
        try:
            RULES_BY_ID[rule_id].check(subject)
        finally:
            subject.seconds[f"rule:{rule_id}"] = time.perf_counter() - started


# -------------------------------------------------------------------------------------------------
# the tiny workload
# -------------------------------------------------------------------------------------------------


def tiny_workload(plugins: Plugins, adapter: Adapter) -> Workload:
    """A small run derived from the first registered workload the adapter can run, on CartPole, then
    Pendulum, then the language task (each environment's offered algorithms alphabetically): one seed,
    one worker, a budget of a few rollouts (at least :data:`MIN_BUDGET` env steps),
    :data:`EVALUATION_POINTS` evaluation points."""
    from rlcompare.harness.counted_envs import action_space_kind  # gymnasium, once the kit runs

    try:
        offered = sorted(adapter.capabilities().algorithms)
    except Exception as exc:  # noqa: BLE001 - reported as the adapter's failure
        raise ConformanceFailure(f"capabilities() raised {type(exc).__name__}: {exc}") from None
    refusals: dict[str, list[str]] = {}  # reason -> the registered workloads it refused
    unfaithful = False
    # environment first (CartPole before Pendulum: a tiny discrete run costs a fraction of a continuous
    # one), then the offered algorithms alphabetically, then the workload ids
    candidates = sorted((w for w in plugins.workloads.values() if w.algorithm in offered and w.env in CONFORMANCE_ENVS),
                        key=lambda w: (CONFORMANCE_ENVS.index(w.env), w.algorithm, w.id))
    for base in candidates:
        workload = derive_tiny(base, adapter, plugins.algorithms)
        try:
            adapter.check_compatible(workload, action_space_kind(workload.env, workload.env_kwargs))
        except IncompatibleError as refusal:
            refusals.setdefault(_reason(refusal), []).append(base.id)
            continue
        try:
            check_faithful(adapter, workload)
        except IncompatibleError as refusal:
            unfaithful = True
            refusals.setdefault(_reason(refusal), []).append(base.id)
            continue
        return workload
    where = " or ".join(_conformance_envs(plugins, offered))
    algorithms = ", ".join(offered) or "(none)"
    if not refusals:
        raise ConformanceFailure(
            f"no registered workload on {where} names an algorithm adapter {adapter.id!r} offers ({algorithms}); "
            "register one (a plugin's rlcompare_register_workloads hook: docs/writing-an-adapter.md, section 3)"
        )
    found = "; ".join(f"{', '.join(ids)}: {reason}" for reason, ids in refusals.items())
    fix = ("map more of the canonical settings (a pair whose fidelity report leaves more than half of them "
           "unsupported is refused: docs/writing-an-adapter.md, section 4)" if unfaithful else
           "offer what these workloads need in capabilities(), or register a workload the adapter can run "
           "(rlcompare_register_workloads: docs/writing-an-adapter.md, section 3)")
    raise ConformanceFailure(f"`rlcompare plan` refuses adapter {adapter.id!r} on every registered workload on "
                             f"{where} of its algorithms ({algorithms}): {found}. Fix: {fix}")


def _conformance_envs(plugins: Plugins, algorithms: Iterable[str]) -> list[str]:
    """The conformance environments the offered algorithms can train on: the language task for a language
    family, CartPole and Pendulum for the others."""
    tasks = {plugins.algorithms[name].task for name in algorithms if name in plugins.algorithms} or {"control"}
    return [env for env in CONFORMANCE_ENVS if ("language" if is_language_task(env) else "control") in tasks]


def _reason(refusal: IncompatibleError) -> str:
    """The reason of a refusal without the sentence naming the pair (the message names the adapter)."""
    text = str(refusal)
    head, separator, reason = text.partition(": ")
    return reason if separator and head.startswith("adapter ") else text


def any_offered_workload(plugins: Plugins, adapter: Adapter) -> Workload:
    """A registered workload of the adapter's first offered algorithm that has one (on a
    conformance environment first), else that algorithm's defaults on CartPole or Pendulum."""
    try:
        offered = sorted(adapter.capabilities().algorithms)
    except Exception as exc:  # noqa: BLE001 - reported as the adapter's failure
        raise ConformanceFailure(f"capabilities() raised {type(exc).__name__}: {exc}") from None
    for algorithm in offered:
        registered = sorted((w for w in plugins.workloads.values() if w.algorithm == algorithm),
                            key=lambda w: (w.env not in CONFORMANCE_ENVS, w.id))
        if registered:
            return registered[0]
    for algorithm in offered:
        family = plugins.algorithms.get(algorithm)
        if family is None:
            continue
        env = (DIGIT_ADDITION_ID if family.task == "language" else
               CONFORMANCE_ENVS[0] if "discrete" in family.action_spaces else CONFORMANCE_ENVS[1])
        return workload_from_dict({"id": f"conformance-{adapter.id}"[:64], "env": env, "algorithm": algorithm,
                                   "env_steps": MIN_BUDGET, "seeds": 1}, "conformance kit", plugins.algorithms)
    raise ConformanceFailure(f"adapter {adapter.id!r} offers no registered algorithm ({', '.join(offered) or 'none'}); "
                             "see `rlcompare list algorithms`")


def derive_tiny(base: Workload, adapter: Adapter, families: Families) -> Workload:
    """``base`` shrunk to a budget of a few of the adapter's budget grains."""
    data = base.to_dict()
    data["id"] = f"conformance-{adapter.id}"[:64]
    data["description"] = f"conformance kit: {base.id} with a tiny budget"
    data["seeds"] = 1
    data["parallelism"] = {**data["parallelism"], "workers": 1, "mode": "sync"}
    data["evaluation"] = {**data["evaluation"], "episodes": EVALUATION_EPISODES, "at_start": True}

    def shaped(budget: int) -> Workload:
        hyper = dict(data["hyperparameters"])
        for key in ("learning_starts",):
            if key in hyper:
                hyper[key] = min(int(hyper[key]), budget // EVALUATION_POINTS)
        if "buffer_size" in hyper:
            hyper["buffer_size"] = min(int(hyper["buffer_size"]), budget)
        interval = max(1, budget // EVALUATION_POINTS)
        return workload_from_dict({**data, "env_steps": budget, "hyperparameters": hyper,
                                   "evaluation": {**data["evaluation"], "interval_steps": interval}},
                                  f"conformance workload for {adapter.id}", families)

    workload = shaped(MIN_BUDGET)
    grain = adapter.budget_tolerance(workload).overshoot_steps
    budget = max(MIN_BUDGET, EVALUATION_POINTS * grain)
    return workload if budget == MIN_BUDGET else shaped(budget)


# -------------------------------------------------------------------------------------------------
# fresh processes: declarations without the framework, and the plugin module's import
# -------------------------------------------------------------------------------------------------

_DECLARATIONS_SCRIPT = r"""
import json, sys
import numpy, gymnasium
import rlcompare.harness.counted_envs, rlcompare.spec.workload
from rlcompare.plugins.manager import BUILTIN_PLUGINS, build_plugin_manager
from rlcompare.testing.conformance import framework_modules
from rlcompare.spec.workload import workload_from_dict
baseline = {name.split('.')[0] for name in sys.modules}
# the harness's own plugins and the adapter's, nothing else: another plugin's imports are not its own
plugins = build_plugin_manager((*BUILTIN_PLUGINS, sys.argv[3]), autoload=False)
adapter = plugins.adapter(sys.argv[1])
workload = workload_from_dict(json.loads(sys.argv[2]), 'conformance', plugins.algorithms)
before = set(sys.modules)
answer = {'error': None}
try:
    adapter.capabilities()
    adapter.fidelity(workload)
except Exception as exc:
    answer['error'] = f'{type(exc).__name__}: {exc}'.splitlines()[0][:300]
loaded = {name.split('.')[0] for name in set(sys.modules) - before}
forbidden = framework_modules(adapter) - baseline
answer['framework_modules'] = sorted(forbidden)
answer['imported'] = sorted(loaded & (forbidden | {'torch'}))
print('\n' + json.dumps(answer))
"""

_IMPORT_SCRIPT = r"""
import importlib, json, sys, time
started = time.perf_counter()
importlib.import_module(sys.argv[1])
seconds = time.perf_counter() - started
print('\n' + json.dumps({'seconds': seconds, 'modules': sorted({name.split('.')[0] for name in sys.modules})}))
"""

#: What the import of a plugin module is compared with: the adapter contract itself.
REFERENCE_MODULE = "rlcompare.adapter"


def framework_modules(adapter: Adapter) -> set[str]:
    """Top-level modules of the adapter's framework: its ``import_name`` and the modules installed by
    its ``distributions`` (those installed; the harness's own, numpy and gymnasium, are told apart
    by the caller)."""
    names = {adapter.import_name.split(".")[0]} if adapter.import_name else set()
    for distribution in adapter.distributions:
        try:
            dist = importlib.metadata.distribution(distribution)
        except importlib.metadata.PackageNotFoundError:
            continue
        top_level = dist.read_text("top_level.txt")
        if top_level:
            names.update(line.strip() for line in top_level.splitlines() if line.strip())
            continue
        for path in dist.files or ():
            first = path.parts[0] if path.parts else ""
            if first.endswith((".dist-info", ".data", ".pth")) or first in ("..", "__pycache__"):
                continue
            if len(path.parts) > 1 or first.endswith(".py"):
                names.add(first.removesuffix(".py"))
    return names


def _fresh_python(script: str, *args: str, timeout: float = 300) -> dict[str, Any]:
    completed = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True,
                               timeout=timeout, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    lines = completed.stdout.strip().splitlines()
    if completed.returncode != 0 or not lines:
        tail = (completed.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise ConformanceFailure(f"a fresh interpreter could not load the adapter: {tail[:400]}")
    return json.loads(lines[-1])


def declarations_in_fresh_process(adapter_id: str, workload: Workload, plugin_module: str) -> dict[str, Any]:
    """capabilities() and fidelity() in a fresh interpreter that loads the built-in plugins and
    ``plugin_module`` only, with the framework modules the two calls imported."""
    return _fresh_python(_DECLARATIONS_SCRIPT, adapter_id, workload.json_text, plugin_module)


def import_in_fresh_process(module: str) -> dict[str, Any]:
    """Seconds to import ``module`` in a fresh interpreter, and every top-level module it loaded."""
    measured = _fresh_python(_IMPORT_SCRIPT, module)
    return {"module": module, "seconds": measured["seconds"], "modules": measured["modules"]}


# -------------------------------------------------------------------------------------------------
# the rules
# -------------------------------------------------------------------------------------------------


def check_registration(subject: Subject) -> None:
    """The class passes check_adapter_class, and its framework names a valid registry entry (entries
    are validated when they are registered: an invalid one is not registered, and its error says why)."""
    adapter_class = subject.adapter_class
    try:
        check_adapter_class(adapter_class)
    except PluginError as error:
        raise ConformanceFailure(f"{error}; fix the class attribute it names (rlcompare.adapter.Adapter)") from None
    framework = adapter_class.framework
    registered = subject.kit.plugins.frameworks
    if framework not in registered:
        refused = [str(error) for error in subject.kit.plugins.errors if repr(framework) in str(error)]
        if refused:
            raise ConformanceFailure(f"the registry entry of {framework!r} does not validate: {refused[0]}")
        close = difflib.get_close_matches(framework, list(registered), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConformanceFailure(
            f"framework {framework!r} names no registry entry{hint}: set Adapter.framework to a registered id "
            "(`rlcompare frameworks`) or register the entry with rlcompare_register_frameworks"
        )


def check_light_import(subject: Subject) -> None:
    """Importing the plugin module imports no framework, no torch, and stays quick."""
    module = subject.plugin_module
    probe = subject.import_probe
    framework = set(subject.declarations.get("framework_modules", ())) - {module.split(".")[0]}
    heavy = sorted(set(probe["modules"]) & (framework | set(HEAVY_MODULES)))
    if heavy:
        raise ConformanceFailure(
            f"importing the plugin module {module!r} imports {', '.join(heavy)}; import the framework inside "
            "train() only (`rlcompare list` imports every plugin module and must not load torch or an RL library)"
        )
    limit = subject.kit.max_import_seconds
    if limit is not None and probe["seconds"] > limit:
        raise ConformanceFailure(
            f"importing the plugin module {module!r} took {probe['seconds']:.2f} s ({REFERENCE_MODULE}: "
            f"{probe['reference_seconds']:.2f} s), more than the {limit:g} s allowed; defer heavy imports to train()"
        )


def check_light_declarations(subject: Subject) -> None:
    """capabilities() and fidelity() work in a fresh interpreter without importing the framework."""
    answer = subject.declarations
    if answer["error"]:
        raise ConformanceFailure(
            f"capabilities() or fidelity() raised {answer['error']}; both must work from the workload and class "
            "data alone, without the framework"
        )
    if answer["imported"]:
        raise ConformanceFailure(
            f"capabilities() or fidelity() imported {', '.join(answer['imported'])}; import the framework in "
            "train() only (`rlcompare list` and `plan` call them without it)"
        )


def required_settings(workload: Workload, modes: Iterable[str] = ("sync",)) -> list[str]:
    """What a fidelity report must cover: every canonical hyperparameter of the workload's algorithm,
    the network (or language model) and the parallelism (:func:`structural_settings`), and the sampling
    mode when the adapter offers more than synchronous sampling."""
    canonical = [f"hyperparameters.{name}" for name in type(workload.hyperparameters).model_fields
                 if name != "algorithm"]
    mode = ["parallelism.mode"] if set(modes) - {"sync"} else []
    return [*canonical, *structural_settings(workload.language_model is not None), *mode]


def fidelity_problems(adapter: Adapter, workload: Workload) -> list[str]:
    """What is wrong with ``adapter``'s fidelity report of ``workload`` (one phrase per problem)."""
    try:
        entries = adapter.fidelity(workload)
    except Exception as exc:  # noqa: BLE001 - the adapter's failure is the finding
        return [f"fidelity() raised {type(exc).__name__}: {exc} for workload {workload.id!r}"]
    settings = {getattr(entry, "setting", None) for entry in entries}
    problems = []
    required = required_settings(workload, adapter.capabilities().modes)
    missing = [name.removeprefix("hyperparameters.") for name in required if name not in settings]
    if missing:
        problems.append(
            f"fidelity() misses settings: {', '.join(missing)} ({workload.algorithm}) — add a FidelityEntry "
            "(rlcompare.adapter) for each canonical setting, marked unsupported where the framework has none"
        )
    bad_status = [str(getattr(entry, "setting", entry)) for entry in entries
                  if not isinstance(getattr(entry, "status", None), Fidelity)]
    if bad_status:
        problems.append(f"fidelity() entries without a valid status: {', '.join(bad_status)} — use "
                        "rlcompare.adapter.Fidelity.EXACT, APPROXIMATE or UNSUPPORTED")
    unnamed = [entry.setting for entry in entries
               if getattr(entry, "status", None) in (Fidelity.EXACT, Fidelity.APPROXIMATE)
               and not entry.native_name and not str(entry.note or "").strip()]
    if unnamed:
        problems.append(f"fidelity() marks {', '.join(unnamed)} exact or approximate without a native_name — "
                        "name the framework's own setting (or, for a behaviour the framework fixes, say so in "
                        "the note), or mark it unsupported")
    return problems


def offered_workloads(subject: Subject) -> list[Workload]:
    """The tiny workload (or, when there is none, another of an offered algorithm) and every
    registered workload of an offered algorithm: what the declaration rules judge."""
    adapter = subject.adapter
    workloads = [subject.declaration_workload]
    capabilities = adapter.capabilities()
    for workload in subject.kit.plugins.workloads.values():
        if capabilities.refusal(workload, None) is None:
            workloads.append(workload)
    return workloads


def check_fidelity_coverage(subject: Subject) -> None:
    """Fidelity covers every canonical setting, network and parallelism, with valid statuses and
    native names, for the tiny workload and every registered workload of an offered algorithm."""
    for workload in offered_workloads(subject):
        problems = fidelity_problems(subject.adapter, workload)
        if problems:
            raise ConformanceFailure("; ".join(problems))


def check_canonical_settings(subject: Subject) -> None:
    """Fidelity lists the canonical settings only, and besides them only the settings of the variants
    of the family's reference update (a departure the parity probe checks): nothing that could pad
    the fidelity share (:mod:`rlcompare.spec.settings`)."""
    adapter = subject.adapter
    families = subject.kit.plugins.algorithms
    for workload in offered_workloads(subject):
        try:
            entries = adapter.fidelity(workload)
        except Exception:  # noqa: BLE001 - fidelity_coverage reports it
            continue
        family = families[workload.algorithm]
        outside = outside_settings((str(getattr(entry, "setting", "")) for entry in entries),
                                   type(workload.hyperparameters).model_fields, variant_settings(family),
                                   language=workload.language_model is not None)
        if outside:
            variants = sorted(variant_settings(family))
            allowed = (f"and the {family.name} reference update's variant settings ({', '.join(variants)})"
                       if variants else f"({family.name} has no reference update, so nothing else)")
            raise ConformanceFailure(
                f"fidelity() lists settings outside the canonical set: {', '.join(outside)} ({workload.algorithm}, "
                f"workload {workload.id!r}) — report the canonical settings (hyperparameters, network, parallelism) "
                f"{allowed} only; remove them (they never count, docs/writing-an-adapter.md, section 4)"
            )


def check_budget_grain(subject: Subject) -> None:
    """The declared budget tolerance is no coarser than the family's (granularity, overshoot and
    count gap), on the tiny workload and every registered workload of an offered algorithm: the
    family sets the grain; a coarser declaration refuses the pair at plan time."""
    adapter = subject.adapter
    for workload in offered_workloads(subject):
        allowed = BudgetTolerance.for_workload(workload)
        try:
            declared = adapter.budget_tolerance(workload)
        except Exception as exc:  # noqa: BLE001 - the adapter's failure is the finding
            raise ConformanceFailure(f"budget_tolerance() raised {type(exc).__name__}: {exc} for workload "
                                     f"{workload.id!r}") from None
        if not isinstance(declared, BudgetTolerance):
            raise ConformanceFailure(f"budget_tolerance() returned {type(declared).__name__} for workload "
                                     f"{workload.id!r}; return an rlcompare.adapter.BudgetTolerance")
        refusal = grain_refusal(declared, allowed, workload.algorithm)
        if refusal is not None:
            raise ConformanceFailure(
                f"budget_tolerance() on workload {workload.id!r}: {refusal} — stop at the family's grain "
                "(check context.budget_reached after every rollout or update) and keep the default "
                "Adapter.budget_tolerance, or declare a finer one"
            )


#: What to change, by the validity check a run failed.
VALIDITY_HINTS = {
    "steps": "step the environments made by context.env_factory(i)() (the harness counts their steps)",
    "budget": "stop when context.budget_reached, within Adapter.budget_tolerance(workload) (the family's grain: "
              "check the budget after every rollout or update)",
    "step_counts": "return TrainingResult(framework_env_steps=...) with the framework's own count of env steps",
    "evaluated": "call context.checkpoint(policy, framework_steps) while training",
    "finite_returns": "return a policy whose actions keep the environment's rewards finite",
}


def check_trains_within_budget(subject: Subject) -> None:
    """The tiny workload trains in a fresh worker and its run is valid, as `rlcompare run` judges it."""
    trial = subject.trial
    record = trial.record
    workload = subject.workload
    if record.status == "ok":
        return
    if record.status == "invalid":
        failed = [check["rule"] for check in (record.validity_json or {}).get("checks", []) if not check["passed"]]
        hints = "; ".join(VALIDITY_HINTS[rule] for rule in failed if rule in VALIDITY_HINTS)
        raise ConformanceFailure(f"the tiny run ({workload.algorithm} on {workload.env}, {workload.env_steps} env "
                                 f"steps) is invalid: {record.error}. Fix: {hints}")
    raise ConformanceFailure(f"the tiny run ({workload.algorithm} on {workload.env}, {workload.env_steps} env steps) "
                             f"ended {record.status}: {record.error}")


def check_checkpoints(subject: Subject) -> None:
    """The curve evaluates every point of the evaluation grid during training: for each multiple of
    the interval, a point that stands for it (its ``grid_steps``), made at or after it and at most one
    budget grain (plus one step of every env: a checkpoint per vector step) later."""
    trial = subject.finished_trial()
    workload = subject.workload
    interval = workload.evaluation.interval_steps
    late = (trial.record.budget_overshoot_steps or 0) + workload.parallelism.total_envs
    points = sorted((int(point["env_steps"]), _whole(point.get("grid_steps"))) for point in trial.curve)
    due = [k * interval for k in range(1, workload.env_steps // interval)]
    missed = [mark for mark in due if not any(mark <= step <= mark + late and grid in (mark, None)
                                              for step, grid in points)]
    if missed:
        shown = ", ".join(f"{step}" + ("" if grid is None else f" (for {grid})") for step, grid in points)
        raise ConformanceFailure(
            f"no evaluation near env step {', '.join(map(str, missed))} (points at {shown}; interval {interval}: "
            "each multiple of it needs a point that stands for it, within one budget grain after it); call "
            "context.checkpoint(policy, framework_steps) after every rollout or update, and context.trace('update') "
            "at each update so that evaluations land on update boundaries"
        )


def _whole(value: Any) -> int | None:
    """A curve column's integer, None where the frame holds none (NaN)."""
    return None if value is None or value != value else int(value)


def check_policy_batches(subject: Subject) -> None:
    """The policy answers batches of every size from the vector size down to 1, in the action space."""
    trial = subject.trial
    size = probe_batch_size(subject.workload)
    if not trial.probes and trial.record.status not in ("ok", "invalid"):
        subject.finished_trial()  # not judged: says why
    if not trial.probes:
        raise ConformanceFailure("the harness never received a policy (no checkpoint, no final evaluation); "
                                 "call context.checkpoint(policy) and return TrainingResult(policy=...)")
    for probe in trial.probes:
        if probe["problems"]:
            raise ConformanceFailure(
                f"the {probe['when']} policy returned {probe['problems'][0]}; return one action per observation "
                f"(batches shrink from {size} to 1 as evaluation episodes end), each in {probe['action_space']}"
            )


def check_no_lingering_processes(subject: Subject) -> None:
    """Nothing the worker started is alive once it has exited."""
    trial = subject.finished_trial()
    if trial.lingering:
        raise ConformanceFailure(
            f"{len(trial.lingering)} processes outlived the run: {', '.join(trial.lingering[:5])}; stop what train() "
            "starts (close vector envs, shut down worker pools and clusters) before it returns"
        )


def check_parity(subject: Subject) -> None:
    """Each parity probe of each gradient family the adapter offers: never ``differs`` unexplained,
    never ``differs`` in a way the fidelity report does not declare (the variant's setting must be
    there, not exact), never a failing probe. ``unverifiable`` passes, with its reason (the run's
    fidelity then counts as unverified)."""
    plugins = subject.kit.plugins
    requests, unverifiable = parity_requests(plugins.adapters, plugins.algorithms, [subject.adapter_id])
    verdicts = [*unverifiable, *run_requests(requests, default_cache())]
    problems = []
    for verdict in verdicts:
        where = f"{verdict.family} ({verdict.case})"
        if verdict.status == FAILED:
            problems.append(f"{where}: the probe failed: {verdict.reason}")
        elif verdict.status == DIFFERS and not verdict.variant:
            problems.append(f"{where}: the update differs from the reference and no known variant explains it "
                            f"({verdict.summary()})")
        elif verdict.status == DIFFERS:
            family = plugins.algorithms[verdict.family]
            reference = family.parity
            case = next(c for c in reference.cases() if c.name == verdict.case)
            declared = {entry.setting: entry.status for entry in subject.adapter.fidelity(
                reference.case_workload(case, plugins.algorithms))}
            for name in verdict.variant:
                variant = reference.variants[name]
                if declared.get(variant.setting) in (None, Fidelity.EXACT):
                    problems.append(f"{where}: the framework's update differs: {variant.description}; fidelity() "
                                    f"{'declares ' + variant.setting + ' exact' if variant.setting in declared else 'does not say so'}"
                                    f" (declare {variant.setting} approximate, value {variant.framework!r})")
    if problems:
        raise ConformanceFailure("; ".join(problems)[:900] + " (rlcompare parity --adapters "
                                 f"{subject.adapter_id} shows the verdicts; docs/parity.md)")


def check_seeds_in_program(subject: Subject) -> None:
    """An adapter that declares ``seeds_in_one_program`` trains two seeds of the tiny workload in one
    program into two valid runs, each recording the program (nothing to check for the others)."""
    if not subject.adapter.capabilities().seeds_in_one_program:
        return
    records = subject.program_trial
    fix = ("implement Adapter.train_seeds(workload, contexts), one TrainingResult per context in order, or "
           "leave Capabilities.seeds_in_one_program off")
    failed = [f"{record.run_id} ended {record.status}: {record.error}" for record in records if record.status != "ok"]
    if failed:
        raise ConformanceFailure("capabilities() declares seeds_in_one_program, but two seeds in one program did "
                                 f"not train into valid runs: {'; '.join(failed)[:600]}. Fix: {fix}")
    alone = [record.run_id for record in records if record.seeds_in_program != 2]
    if len(records) != 2 or alone:
        raise ConformanceFailure("capabilities() declares seeds_in_one_program, but the runs do not record a program "
                                 f"of two seeds ({', '.join(alone) or len(records)}). Fix: {fix}")


RULES: tuple[Rule, ...] = (
    Rule("registration", "check_adapter_class passes; the framework names a registry entry", check_registration),
    Rule("light_import", "importing the plugin module loads no framework and no torch", check_light_import),
    Rule("light_declarations", "capabilities() and fidelity() work without the framework", check_light_declarations),
    Rule("fidelity_coverage", "fidelity covers every canonical setting, network and parallelism",
         check_fidelity_coverage),
    Rule("canonical_settings", "fidelity lists canonical settings and the family's variant settings only",
         check_canonical_settings),
    Rule("budget_grain", "the declared budget tolerance is no coarser than the family's", check_budget_grain),
    Rule("trains_within_budget", "a tiny workload trains into a valid run", check_trains_within_budget),
    Rule("checkpoints", "evaluation points at the evaluation interval", check_checkpoints),
    Rule("policy_batches", "well-shaped actions for shrinking batches", check_policy_batches),
    Rule("no_lingering_processes", "no process outlives the run", check_no_lingering_processes),
    Rule("parity", "the framework's own update is the reference's, or differs as declared", check_parity),
    Rule("seeds_in_program", "seeds_in_one_program, where declared, trains two seeds in one program into two runs",
         check_seeds_in_program),
)
RULES_BY_ID = {rule.id: rule for rule in RULES}


def describe_timings(subjects: Sequence[Subject]) -> list[str]:
    """One line per adapter: the kit's time, the tiny run's, and the plugin module's import."""
    lines = []
    for subject in subjects:
        total = sum(value for key, value in subject.seconds.items() if key.startswith("rule:"))
        parts = [f"{subject.adapter_id}: {total:.1f} s"]
        trial = subject._cache.get("trial")
        if isinstance(trial, Trial):
            record = trial.record
            cpu = f", {record.cpu_seconds:.1f} CPU s" if record.cpu_seconds is not None else ""
            parts.append(f"tiny run {trial.seconds:.1f} s ({record.env_steps} env steps, {record.status}{cpu})")
        probe = subject._cache.get("import")
        if isinstance(probe, dict):
            parts.append(f"import {probe['module']} {probe['seconds']:.2f} s ({probe['reference_module']} "
                         f"{probe['reference_seconds']:.2f} s)")
        lines.append(", ".join(parts))
    return lines
