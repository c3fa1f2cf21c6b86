"""The adapter contract: one class per framework, translating a workload into the framework's
own API without ever importing the framework outside :meth:`Adapter.train`.

An adapter declares what it can do (:class:`Capabilities`), says setting by setting how faithfully
it maps a workload (:class:`FidelityEntry`), and trains with the framework's own API, calling
``context.checkpoint(policy)`` often so the harness can evaluate on its own environments.
"""

from __future__ import annotations

import importlib.util
import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from rlcompare.errors import IncompatibleError, PluginError
from rlcompare.harness.fidelity import FidelityEntry
from rlcompare.harness.parity import ParityOutcome, ParityProbe
from rlcompare.harness.validity import BudgetTolerance
from rlcompare.harness.workload_view import WorkloadLike

if TYPE_CHECKING:  # numpy and gymnasium: an adapter module stays light to import (listing imports it)
    from rlcompare.harness.context import TrainingContext
    from rlcompare.harness.evaluation import Policy


@dataclass(frozen=True)
class Capabilities:
    """What an adapter can run, declared without importing its framework."""

    algorithms: frozenset[str]
    action_spaces: frozenset[str] = frozenset({"discrete", "continuous"})
    vectorized_envs: bool = True
    rollout_workers: bool = False
    modes: frozenset[str] = frozenset({"sync"})
    max_workers: int | None = None
    #: Per-algorithm restriction of ``action_spaces`` (e.g. DQN: discrete only); absent = no restriction.
    algorithm_action_spaces: dict[str, frozenset[str]] = field(default_factory=dict)
    #: What may step the training environments (``parallelism.simulation``): ``gymnasium`` (the harness's
    #: env factories) and, for an adapter that trains on ``context.vector_env()``, ``envpool``.
    simulations: frozenset[str] = frozenset({"gymnasium"})
    #: Whether the adapter trains several seeds in one program (``parallelism.seeds_per_program``), through
    #: :meth:`Adapter.train_seeds`.
    seeds_in_one_program: bool = False

    def refusal(self, workload: WorkloadLike, action_space: str | None) -> str | None:
        """Why this adapter cannot run ``workload``, or None when it can."""
        par = workload.parallelism
        if workload.algorithm not in self.algorithms:
            return f"algorithm {workload.algorithm} is not offered (offers {', '.join(sorted(self.algorithms))})"
        if action_space is not None:
            # the adapter's own narrowing for this algorithm, else what the family can act in
            allowed = self.algorithm_action_spaces.get(
                workload.algorithm, self.action_spaces & frozenset(workload.family.action_spaces))
            if not allowed:
                return (f"{workload.algorithm} acts in {', '.join(sorted(workload.family.action_spaces))} action "
                        f"spaces, this adapter in {', '.join(sorted(self.action_spaces))} only")
            if action_space not in allowed:
                return (f"{workload.algorithm} runs on {', '.join(sorted(allowed))} action spaces only, "
                        f"{workload.env} has {action_space}")
        if par.mode not in self.modes:
            return f"{par.mode} sampling is not offered"
        if par.workers > 1 and not self.rollout_workers:
            return "separate rollout workers are not offered"
        if self.max_workers is not None and par.workers > self.max_workers:
            return f"at most {self.max_workers} rollout workers"
        if par.envs_per_worker > 1 and not self.vectorized_envs:
            return "vectorized environments are not offered"
        if getattr(par, "seeds_per_program", 1) > 1 and not self.seeds_in_one_program:
            return "several seeds in one program (parallelism.seeds_per_program) are not offered"
        simulation = getattr(par, "simulation", "gymnasium")
        if simulation not in self.simulations:
            return (f"parallelism.simulation = {simulation!r} is not honoured: the adapter trains on "
                    f"{' and '.join(sorted(self.simulations))} environments only (EnvPool needs an adapter that "
                    "trains on the harness's vector environment, context.vector_env())")
        if simulation == "envpool" and importlib.util.find_spec("envpool") is None:
            return ("parallelism.simulation = 'envpool' needs the envpool package, which is not installed "
                    "(pip install 'rlcompare[envpool]')")
        return None

    def to_dict(self) -> dict[str, Any]:
        def plain(value: Any) -> Any:
            if isinstance(value, frozenset):
                return sorted(value)
            if isinstance(value, dict):
                return {key: plain(item) for key, item in value.items()}
            return value

        return {key: plain(value) for key, value in asdict(self).items()}


@dataclass(frozen=True)
class Recommendation:
    """An adapter's own recommended configuration for one environment and algorithm: what a
    workload with ``settings = "native"`` (the native arm) runs for it. The values are in canonical
    terms where canonical settings exist, so budgets, grains, counting and schedules work as in the
    canonical arm; ``native`` holds the settings the canonical model has no field for (a linear
    learning-rate schedule, say), which the adapter applies in the native arm and lists in its
    fidelity report; ``source`` says where the configuration comes from (a package and file, or a
    repository, commit and path), and is shown with every run."""

    source: str
    #: Canonical hyperparameters of the family; a setting left out takes the family's default.
    hyperparameters: dict[str, Any] = field(default_factory=dict)
    #: ``hidden_sizes``, ``activation``; None: the workload's.
    network: dict[str, Any] | None = None
    #: ``envs_per_worker``, ``workers``, ``mode``; None: the workload's.
    parallelism: dict[str, Any] | None = None
    #: Native-only settings (plain JSON values), applied by the adapter.
    native: dict[str, Any] = field(default_factory=dict)


@dataclass
class TrainingResult:
    """What :meth:`Adapter.train` hands back; the harness then runs the final evaluation."""

    policy: Policy
    framework_env_steps: int | None = None
    native_config: dict[str, Any] = field(default_factory=dict)


class Adapter(ABC):
    """Base class of every adapter. Subclasses set the class attributes and implement the methods."""

    #: What users type in ``--adapters``.
    id: ClassVar[str]
    #: The registry id of the framework this adapter drives.
    framework: ClassVar[str]
    #: One line for ``rlcompare list adapters``.
    summary: ClassVar[str] = ""
    #: Module whose import proves the framework is installed (checked by ``doctor``, not ``list``).
    import_name: ClassVar[str | None] = None
    #: Distributions whose versions are recorded with each run; the first is the framework's own.
    distributions: ClassVar[tuple[str, ...]] = ()
    #: What pip must install for this adapter to run (requirement strings, extras allowed), used to
    #: measure the install footprint; empty means ``distributions``.
    install_requires: ClassVar[tuple[str, ...]] = ()
    #: What the adapter's own Python environment installs (requirement strings, pins allowed);
    #: empty means ``install_requires`` (or ``distributions``). The harness adds the worker's own
    #: needs (numpy, gymnasium); see :mod:`rlcompare.pyenvs`.
    environment_requires: ClassVar[tuple[str, ...]] = ()
    #: The Python version of its own environment (e.g. ``"3.10"``); None: the driver's.
    environment_python: ClassVar[str | None] = None
    #: True when the adapter's pins conflict with the main environment: its runs always go to its
    #: own environment. Otherwise that happens when the running interpreter does not satisfy
    #: :meth:`environment_requirements`, or when the user asks (``rlcompare run --isolate``).
    requires_isolation: ClassVar[bool] = False

    @classmethod
    def environment_requirements(cls) -> tuple[str, ...]:
        """The requirements of this adapter's own environment (see ``environment_requires``)."""
        return cls.environment_requires or cls.install_requires or cls.distributions

    @abstractmethod
    def capabilities(self) -> Capabilities:
        """What this adapter can run. Must not import the framework."""

    @abstractmethod
    def fidelity(self, workload: WorkloadLike) -> list[FidelityEntry]:
        """Each canonical setting of ``workload`` and how it maps. Must not import the framework."""

    @abstractmethod
    def train(self, workload: WorkloadLike, context: TrainingContext) -> TrainingResult:
        """Train for ``workload.env_steps`` on ``context.env_factory`` environments, calling
        ``context.start_training()`` once everything is built and ``context.checkpoint(policy)``
        often while training."""

    def train_seeds(self, workload: WorkloadLike, contexts: Sequence[TrainingContext]) -> list[TrainingResult]:
        """Train one run per context in one program (``parallelism.seeds_per_program``; only for an
        adapter whose capabilities declare ``seeds_in_one_program``): each context is a run of its own,
        with its seed, counter and evaluations, as in :meth:`train`. Return one result per context, in
        order. The contexts share their training clocks (an evaluation of one pauses them all)."""
        raise NotImplementedError(f"adapter {self.id!r} does not train several seeds in one program")

    def budget_tolerance(self, workload: WorkloadLike) -> BudgetTolerance:
        """How far a run may land from its budget, and the framework's count from the harness's.

        The workload's algorithm family sets the grain, and this default is what it allows: one
        rollout of every env for on-policy algorithms, one update interval for off-policy ones, one
        generation for evolutionary ones, three of them with asynchronous sampling. An adapter may
        override it with a *finer* tolerance (its loop meets the budget more closely), never a coarser
        one: a coarser declaration refuses the pair when the run matrix is planned. The run's validity
        verdict (:mod:`rlcompare.harness.validity`) is judged against it.
        """
        return BudgetTolerance.for_workload(workload)

    def recommended_settings(self, env: str, algorithm: str) -> Recommendation | None:
        """The framework's own recommended configuration for ``algorithm`` on ``env`` (its tuned
        example, its zoo's entry), for the native arm; None when it has none. Raise
        :class:`IncompatibleError` when it has one that the adapter cannot apply (the reason is shown).
        Must not import the framework."""
        return None

    def parity_update(self, probe: ParityProbe) -> ParityOutcome:
        """Run the framework's own update on ``probe`` (:mod:`rlcompare.harness.parity`): load the
        probe's weights into the framework's own model objects, let the framework compute its targets
        (advantages and returns, or TD targets) and make exactly one optimizer step on the probe's
        batch, and return what it computed. Called in a fresh process in the adapter's environment,
        for each gradient family the adapter offers. The default says the adapter cannot: override
        it, or keep it and say why in ``parity_unverifiable_reason``."""
        return ParityOutcome.unverifiable(self.parity_unverifiable_reason)

    #: Why :meth:`parity_update` is not implemented (shown with the ``unverifiable`` verdict).
    parity_unverifiable_reason: ClassVar[str] = "the adapter declares no parity probe"

    def check_compatible(self, workload: WorkloadLike, action_space: str | None) -> None:
        """Raise :class:`IncompatibleError` naming both sides when the pair cannot run."""
        reason = self.capabilities().refusal(workload, action_space)
        if reason is not None:
            raise IncompatibleError(f"adapter {self.id!r} cannot run workload {workload.id!r}: {reason}")


ADAPTER_ID_PATTERN = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")


def check_adapter_class(adapter_class: Any) -> None:
    """Refuse, at registration, an adapter class that breaks the contract's declarations."""
    name = getattr(adapter_class, "__qualname__", repr(adapter_class))
    if not isinstance(adapter_class, type) or not issubclass(adapter_class, Adapter):
        raise PluginError(name, "add_adapter expects a subclass of rlcompare.harness.contract.Adapter")
    adapter_id = getattr(adapter_class, "id", None)
    if not isinstance(adapter_id, str) or not ADAPTER_ID_PATTERN.match(adapter_id):
        raise PluginError(name, f"adapter id {adapter_id!r} must match {ADAPTER_ID_PATTERN.pattern}")
    framework = getattr(adapter_class, "framework", None)
    if not isinstance(framework, str) or not framework:
        raise PluginError(name, f"adapter {adapter_id!r}: 'framework' must name its registry entry")
    if getattr(adapter_class, "__abstractmethods__", None):
        missing = ", ".join(sorted(adapter_class.__abstractmethods__))
        raise PluginError(name, f"adapter {adapter_id!r} does not implement {missing}")
    for attribute in ("distributions", "install_requires", "environment_requires"):
        value = getattr(adapter_class, attribute, ())
        if not isinstance(value, tuple) or not all(isinstance(item, str) for item in value):
            raise PluginError(name, f"adapter {adapter_id!r}: '{attribute}' must be a tuple of strings")
    python = getattr(adapter_class, "environment_python", None)
    if python is not None and not (isinstance(python, str) and re.match(r"^\d+(\.\d+){0,2}$", python)):
        raise PluginError(name, f"adapter {adapter_id!r}: 'environment_python' must be a version such as '3.11'")
