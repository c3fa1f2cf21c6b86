"""The workload as a run's worker sees it: plain, frozen data read from the run spec.

The driver validates a workload (:mod:`rlcompare.spec.workload`, pydantic) and writes it into the run
spec resolved, every default filled in. The worker, which may run in an adapter's own environment
without pydantic, reads it back with :func:`workload_view`: the same attribute access adapters use
on the validated model (``workload.parallelism.workers``, ``workload.hyperparameters.gamma``,
``workload.rollout_env_steps``...), read-only. Hyperparameters are read generically from the data,
whatever the algorithm; a setting the data does not hold is an :class:`AttributeError`, so
``getattr(hp, "rollout_steps", None)`` works as on the model. Standard library only.
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Mapping
from typing import Any, Protocol

#: Units of its family's budget grain a run with asynchronous sampling may land from its budget: the
#: batch being learned from and up to two more of every env in flight (double-buffered samplers);
#: :meth:`rlcompare.harness.validity.BudgetTolerance.for_workload`.
ASYNC_UNITS = 3


class FamilyLike(Protocol):
    """What the harness reads of a workload's algorithm family."""

    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def granularity(self) -> str: ...
    @property
    def action_spaces(self) -> Collection[str]: ...


class WorkloadLike(Protocol):
    """A workload as the harness and adapters read it: the validated spec
    (:class:`rlcompare.spec.workload.Workload`, in the driver) and the worker's plain view
    (:class:`WorkloadView`) both have these attributes. Sections (``parallelism``, ``network``,
    ``evaluation``, ``hyperparameters``) are read by attribute, e.g. ``workload.parallelism.workers``."""

    @property
    def id(self) -> str: ...
    @property
    def env(self) -> str: ...
    @property
    def env_kwargs(self) -> Mapping[str, Any]: ...
    @property
    def algorithm(self) -> str: ...
    @property
    def env_steps(self) -> int: ...
    @property
    def seeds(self) -> int: ...
    @property
    def parallelism(self) -> Any: ...
    @property
    def network(self) -> Any: ...
    @property
    def hyperparameters(self) -> Any: ...
    @property
    def evaluation(self) -> Any: ...
    @property
    def success_threshold(self) -> float | None: ...
    @property
    def stop_when_solved(self) -> bool: ...
    @property
    def family(self) -> FamilyLike: ...
    @property
    def rollout_env_steps(self) -> int: ...
    @property
    def step_count_tolerance(self) -> int: ...
    @property
    def seed_values(self) -> list[int]: ...


def _frozen(value: Any) -> Any:
    """Lists become tuples (as the model's tuple fields are); everything else stays as it is."""
    if isinstance(value, list):
        return tuple(_frozen(item) for item in value)
    return value


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(item) for item in value]
    if isinstance(value, Section):
        return value.to_dict()
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


class Section:
    """A read-only group of settings with attribute access; :meth:`to_dict` gives them back."""

    __slots__ = ("_values",)
    #: Nested sections by key (a key not listed holds plain values).
    _sections: dict[str, type[Section]] = {}

    def __init__(self, values: Mapping[str, Any]) -> None:
        if not isinstance(values, Mapping):
            raise TypeError(f"{type(self).__name__}: expected a table of settings, got {type(values).__name__}")
        converted: dict[str, Any] = {}
        for key, value in values.items():
            section = self._sections.get(key)
            if section is not None and isinstance(value, Mapping):
                converted[key] = section(value)
            elif key == "env_kwargs" and isinstance(value, Mapping):
                converted[key] = copy.deepcopy(dict(value))  # handed to gymnasium.make as given
            else:
                converted[key] = _frozen(value)
        object.__setattr__(self, "_values", converted)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return object.__getattribute__(self, "_values")[name]
        except KeyError:
            raise AttributeError(f"{type(self).__name__.lower()} has no setting {name!r}") from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__.lower()} is read-only (tried to set {name!r})")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__.lower()} is read-only (tried to delete {name!r})")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.to_dict(),))

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self.to_dict() == other.to_dict()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(repr(self))

    def __repr__(self) -> str:
        values = object.__getattribute__(self, "_values")
        return f"{type(self).__name__}({', '.join(f'{key}={value!r}' for key, value in values.items())})"

    def __dir__(self) -> list[str]:
        return sorted({*object.__getattribute__(self, "_values"), *super().__dir__()})

    def to_dict(self) -> dict[str, Any]:
        """The settings as plain JSON data (a fresh copy)."""
        return {key: _plain(value) for key, value in object.__getattribute__(self, "_values").items()}


class Parallelism(Section):
    __slots__ = ()

    @property
    def total_envs(self) -> int:
        return int(self.envs_per_worker) * int(self.workers)


class Hyperparameters(Section):
    """The algorithm's canonical hyperparameters, whichever they are."""

    __slots__ = ()


class Derived(Section):
    """What the driver derived from the workload's algorithm family (see ``Workload.derived``)."""

    __slots__ = ()
    _sections = {"family": Section}


class WorkloadView(Section):
    """One resolved workload, read-only; what adapters receive inside the worker."""

    __slots__ = ()
    _sections = {"parallelism": Parallelism, "network": Section, "evaluation": Section,
                 "hyperparameters": Hyperparameters, "derived": Derived, "language_model": Section}

    def _derived(self, name: str) -> Any:
        derived = object.__getattribute__(self, "_values").get("derived")
        return None if derived is None else object.__getattribute__(derived, "_values").get(name)

    @property
    def family(self) -> Section:
        """The algorithm family's name, kind and budget granularity, as the driver resolved them."""
        family = self._derived("family")
        if family is None:
            raise AttributeError("workloadview has no 'family' (the run spec carries no derived values)")
        return family

    @property
    def rollout_env_steps(self) -> int:
        """Env steps between two updates, across every env (as :attr:`rlcompare.spec.workload.Workload.rollout_env_steps`:
        the driver resolves it from the algorithm's family; without that, one rollout or update interval, or
        one GRPO step's completions)."""
        resolved = self._derived("rollout_env_steps")
        if resolved is not None:
            return int(resolved)
        hp = self.hyperparameters
        if getattr(hp, "group_size", None) is not None:  # GRPO: one step's completions at the task's longest
            from rlcompare.harness.language_ids import completion_tokens

            return int(hp.prompts_per_step) * int(hp.group_size) * completion_tokens(self.env_kwargs)
        per_env = getattr(hp, "rollout_steps", None) or getattr(hp, "train_every", 1)
        return int(per_env) * self.parallelism.total_envs

    @property
    def step_count_tolerance(self) -> int:
        """As :attr:`rlcompare.spec.workload.Workload.step_count_tolerance` (resolved by the driver)."""
        resolved = self._derived("step_count_tolerance")
        if resolved is not None:
            return int(resolved)
        steps = self.rollout_env_steps
        return steps * ASYNC_UNITS if self.parallelism.mode == "async" else steps

    @property
    def seed_values(self) -> list[int]:
        return list(range(int(self.seeds)))


#: Every top-level setting the worker relies on; a spec without one is refused with its name.
REQUIRED = ("id", "env", "algorithm", "env_steps", "parallelism", "network", "hyperparameters", "evaluation")


def workload_view(data: Mapping[str, Any], derived: Mapping[str, Any] | None = None) -> WorkloadView:
    """The read-only view of a resolved workload (as :meth:`rlcompare.spec.workload.Workload.to_dict` writes it),
    with the values the driver derived from its algorithm family (:meth:`rlcompare.spec.workload.Workload.derived`)."""
    if not isinstance(data, Mapping):
        raise ValueError(f"a workload must be a table, got {type(data).__name__}")
    missing = [key for key in REQUIRED if key not in data]
    if missing:
        raise ValueError(f"the run spec's workload lacks {', '.join(missing)} (not a resolved workload)")
    values = dict(data)
    hyperparameters = dict(values["hyperparameters"])
    hyperparameters.setdefault("algorithm", values["algorithm"])  # as on the validated model
    values["hyperparameters"] = hyperparameters
    values.setdefault("env_kwargs", {})
    values.setdefault("stop_when_solved", False)  # omitted from the JSON where it is False
    values.setdefault("language_model", None)  # omitted from the JSON of a control workload
    if isinstance(values["parallelism"], Mapping):  # omitted from the JSON where it is the default
        values["parallelism"] = {"simulation": "gymnasium", "seeds_per_program": 1, **values["parallelism"]}
    if derived is not None:
        values["derived"] = dict(derived)
    return WorkloadView(values)
