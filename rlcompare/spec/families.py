"""Algorithm families: what a workload's ``algorithm`` may name, and what each name brings along.

A family is registered through the ``rlcompare_register_algorithms`` hook with
``register.add_algorithm(AlgorithmFamily(...))``; the built-in PPO, A2C, DQN, SAC, TD3, DDPG and ES
(:mod:`rlcompare.spec.builtin_families`) come in through the same hook. A family declares its
canonical hyperparameters (a pydantic model whose every field has a default and a description),
the action spaces it can act in, whether it is gradient-based or evolutionary, and its budget
grain: how many env steps one update (or generation) covers, which bounds how far a run may
overshoot its budget (:meth:`rlcompare.harness.validity.BudgetTolerance.for_workload`).

There is no process-wide table of families: whoever validates a workload passes the families it
may name (a :data:`Families` mapping; the plugin manager's catalogue, or :func:`builtin_families`),
and the validated workload keeps the family it resolved.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict

from rlcompare.errors import PluginError, UnknownNameError
from rlcompare.harness.validity import GRANULARITIES
from rlcompare.harness.workload_view import WorkloadLike

#: What a family's name may look like (``PPO``, ``ES``, ``CMA-ES``, ``my_algo``).
FAMILY_NAME_PATTERN = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")
#: Action-space kinds, as :func:`rlcompare.harness.counted_envs.action_space_kind` names them.
ACTION_SPACES = frozenset({"discrete", "continuous"})
KINDS = ("gradient", "evolutionary")
#: What a family learns: a control policy on any Gymnasium environment, or a language model on one of
#: the harness's language tasks (:mod:`rlcompare.harness.language`).
TASKS = ("control", "language")

Kind = Literal["gradient", "evolutionary"]
#: Env steps one update (or generation) of this family covers for a workload, across every env.
BudgetGrain = Callable[[WorkloadLike], int]


class ParityVariant(Protocol):
    """One named departure from a family's reference update: the setting it is a different value of
    (``defaults.adam_eps``, ``hyperparameters.max_grad_norm``)."""

    setting: str


class ParityReference(Protocol):
    """A family's reference update, as the family object carries it (the parity layer checks it is a
    :class:`rlcompare.parity.reference.ReferenceUpdate`): its family and its named variants."""

    family: str
    variants: Mapping[str, ParityVariant]


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
    (one of :data:`rlcompare.harness.validity.GRANULARITIES`) and ``budget_grain(workload)`` says how many
    env steps that unit covers, across every env of the workload. The family sets the grain: it is
    the widest budget tolerance any adapter may declare for the family's workloads (a coarser
    declaration refuses the pair at plan time, :func:`rlcompare.plan.matrix.check_grain`).
    """

    name: str
    description: str
    hyperparameters: type[BaseModel]
    action_spaces: frozenset[str]
    kind: Kind
    granularity: str
    budget_grain: BudgetGrain
    #: The family's reference update for parity probes (:class:`rlcompare.parity.reference.ReferenceUpdate`),
    #: or None: adapters offering the family are then ``unverifiable`` for it.
    parity: ParityReference | None = None
    #: ``control`` or ``language`` (:data:`TASKS`): a language family's workloads name a language task and
    #: a ``language_model``.
    task: str = "control"

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
            "task": self.task,
            "hyperparameters": {
                name: {"default": _plain(info.default), "description": info.description}
                for name, info in self.hyperparameters.model_fields.items()
            },
        }


def check_family(family: Any) -> None:
    """Refuse a family that breaks the declarations above, naming the offending field."""
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
                         "(subclass rlcompare.spec.families.CanonicalHyperparameters)")
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
    if family.task not in TASKS:
        raise ValueError(f"{label}: task must be one of {', '.join(TASKS)}, got {family.task!r}")
    if not callable(family.budget_grain):
        raise ValueError(f"{label}: budget_grain must be a function of the workload")
    if family.parity is not None:
        if getattr(family.parity, "family", None) != name:
            raise ValueError(f"{label}: parity must be a reference update of the family {name!r}")
        variants = getattr(family.parity, "variants", None)
        if not isinstance(variants, Mapping) or not all(
                isinstance(getattr(variant, "setting", None), str) for variant in variants.values()):
            raise ValueError(f"{label}: parity.variants must map names to variants that each name their setting")


def check_family_for_plugin(family: Any, plugin: str) -> None:
    """:func:`check_family` for ``register.add_algorithm``: failures name the plugin."""
    if not isinstance(family, AlgorithmFamily):
        raise PluginError(plugin, "add_algorithm expects an rlcompare.spec.families.AlgorithmFamily")
    try:
        check_family(family)
    except ValueError as exc:
        raise PluginError(plugin, str(exc)) from None


#: The families a workload may name, by name.
Families = Mapping[str, AlgorithmFamily]


def variant_settings(family: AlgorithmFamily) -> frozenset[str]:
    """The settings of the variants of the family's reference update (none without one): what an
    adapter's fidelity report may list besides the canonical settings (:mod:`rlcompare.spec.settings`)."""
    if family.parity is None:
        return frozenset()
    return frozenset(variant.setting for variant in family.parity.variants.values())


def family_named(families: Families, name: str) -> AlgorithmFamily:
    """The family ``name`` among ``families``; :class:`UnknownNameError` with the closest name."""
    if name not in families:
        raise UnknownNameError("algorithm", name, families, "rlcompare list algorithms")
    return families[name]


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    return value
