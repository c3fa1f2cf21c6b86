"""Algorithm families: what a workload's ``algorithm`` may name, and what each name brings along.

A family is registered through the ``rlcompare_register_algorithms`` hook with
``register.add_algorithm(AlgorithmFamily(...))``; the built-in PPO, A2C, DQN, SAC and ES come in
through the same hook (:mod:`rlcompare.builtin_algorithms`). A family declares its canonical
hyperparameters (a pydantic model whose every field has a default and a description), the action
spaces it can act in, whether it is gradient-based or evolutionary, and its budget grain: how many
env steps one update (or generation) covers, which bounds how far a run may overshoot its budget
(:meth:`rlcompare.validity.BudgetTolerance.for_workload`).

Workloads are validated against the families known in this process: the built-ins always, plus
whatever the most recently built plugin manager registered. A workload naming a family that is not
known yet builds the plugin manager once, so every path that reads workloads (a run's worker, a
resumed driver, a report reading stored runs) sees plugin-registered families.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from rlcompare.errors import PluginError, UnknownNameError

if TYPE_CHECKING:
    from rlcompare.workload import Workload

#: What a family's name may look like (``PPO``, ``ES``, ``CMA-ES``, ``my_algo``).
FAMILY_NAME_PATTERN = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")
#: Action-space kinds, as :func:`rlcompare.envs.action_space_kind` names them.
ACTION_SPACES = frozenset({"discrete", "continuous"})
KINDS = ("gradient", "evolutionary")

Kind = Literal["gradient", "evolutionary"]
#: Env steps one update (or generation) of this family covers for a workload, across every env.
BudgetGrain = Callable[["Workload"], int]


class CanonicalHyperparameters(BaseModel):
    """Base class for a family's hyperparameter model: unknown keys are refused (a typo would
    otherwise fall back to a framework's default unseen), values are frozen and finite."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


@dataclass(frozen=True)
class AlgorithmFamily:
    """One algorithm a workload can name.

    ``name`` is what workloads write in ``algorithm``; ``description`` is one line for listings and
    docs; ``hyperparameters`` is the canonical model (subclass :class:`CanonicalHyperparameters`:
    every field needs a default and a ``description``); ``action_spaces`` are those the algorithm
    can act in (``discrete``, ``continuous``); ``kind`` says whether it learns by gradient steps or
    by evolving a population; ``granularity`` names the unit its training loop meets the budget in
    (one of :data:`rlcompare.validity.GRANULARITIES`) and ``budget_grain(workload)`` says how many
    env steps that unit covers, across every env of the workload.
    """

    name: str
    description: str
    hyperparameters: type[BaseModel]
    action_spaces: frozenset[str]
    kind: Kind
    granularity: str
    budget_grain: BudgetGrain

    def __post_init__(self) -> None:
        check_family(self)

    def to_dict(self) -> dict[str, Any]:
        """What listings show: everything but the grain function."""
        return {
            "name": self.name,
            "description": self.description,
            "kind": self.kind,
            "action_spaces": sorted(self.action_spaces),
            "granularity": self.granularity,
            "hyperparameters": {
                name: {"default": _plain(info.default), "description": info.description}
                for name, info in self.hyperparameters.model_fields.items()
            },
        }


def check_family(family: Any) -> None:
    """Refuse a family that breaks the declarations above, naming the offending field."""
    from rlcompare.validity import GRANULARITIES

    name = getattr(family, "name", None)
    label = f"algorithm family {name!r}"
    if not isinstance(name, str) or not FAMILY_NAME_PATTERN.match(name):
        raise ValueError(f"{label}: name must match {FAMILY_NAME_PATTERN.pattern}")
    if not isinstance(family.description, str) or not family.description or "\n" in family.description:
        raise ValueError(f"{label}: description must be one non-empty line")
    model = family.hyperparameters
    if not isinstance(model, type) or not issubclass(model, BaseModel):
        raise ValueError(f"{label}: hyperparameters must be a pydantic model class")
    if model.model_config.get("extra") != "forbid" or not model.model_config.get("frozen"):
        raise ValueError(f"{label}: hyperparameters model must refuse unknown keys and be frozen "
                         "(subclass rlcompare.algorithms.CanonicalHyperparameters)")
    for field_name, info in model.model_fields.items():
        if info.is_required():
            raise ValueError(f"{label}: hyperparameter {field_name!r} has no default")
        if not info.description:
            raise ValueError(f"{label}: hyperparameter {field_name!r} has no description")
    spaces = family.action_spaces
    if not isinstance(spaces, frozenset) or not spaces or not spaces <= ACTION_SPACES:
        raise ValueError(f"{label}: action_spaces must be a non-empty frozenset of {sorted(ACTION_SPACES)}")
    if family.kind not in KINDS:
        raise ValueError(f"{label}: kind must be one of {', '.join(KINDS)}, got {family.kind!r}")
    if family.granularity not in GRANULARITIES:
        raise ValueError(f"{label}: granularity must be one of {', '.join(GRANULARITIES)}, "
                         f"got {family.granularity!r}")
    if not callable(family.budget_grain):
        raise ValueError(f"{label}: budget_grain must be a function of the workload")


def check_family_for_plugin(family: Any, plugin: str) -> None:
    """:func:`check_family` for ``register.add_algorithm``: failures name the plugin."""
    if not isinstance(family, AlgorithmFamily):
        raise PluginError(plugin, "add_algorithm expects an rlcompare.algorithms.AlgorithmFamily")
    try:
        check_family(family)
    except ValueError as exc:
        raise PluginError(plugin, str(exc)) from None


# -------------------------------------------------------------------------------------------------
# the families this process knows
# -------------------------------------------------------------------------------------------------

_registered: dict[str, AlgorithmFamily] = {}
_plugins_loaded = False
_loading = False


def builtin_families() -> dict[str, AlgorithmFamily]:
    from rlcompare.builtin_algorithms import BUILTIN_FAMILIES

    return {family.name: family for family in BUILTIN_FAMILIES}


def known_families() -> dict[str, AlgorithmFamily]:
    """The built-in families, plus those the latest plugin manager registered (a built-in name
    cannot be taken over: a plugin registering one is reported as a clash and ignored)."""
    return {**_registered, **builtin_families()}


def family(name: str) -> AlgorithmFamily:
    """The family ``name``; builds the plugin manager once when ``name`` is not a built-in and no
    plugin manager was built yet. Raises :class:`UnknownNameError` with the closest name."""
    families = known_families()
    if name not in families and not _plugins_loaded and not _loading:
        from rlcompare.plugins import build_plugin_manager

        build_plugin_manager()
        families = known_families()
    if name not in families:
        raise UnknownNameError("algorithm", name, families, "rlcompare list algorithms")
    return families[name]


def install(families: Mapping[str, AlgorithmFamily]) -> None:
    """Make ``families`` (what a plugin manager registered) the known plugin families."""
    global _plugins_loaded
    _registered.clear()
    _registered.update(families)
    _plugins_loaded = True


@contextmanager
def loading_plugins() -> Iterator[None]:
    """While the plugin manager is being built: an unknown name must not build another one."""
    global _loading
    previous, _loading = _loading, True
    try:
        yield
    finally:
        _loading = previous


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    return value
