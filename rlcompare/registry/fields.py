"""The registry's schema: every field an entry may state, what kind of value it holds, which domain
(control or llm) compares on it, and the spellings users may type for it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from rlcompare.registry.vocabulary import (
    ALGORITHM_PATTERN,
    ARCHITECTURES,
    BACKENDS,
    COMPUTING_PARALLELISM,
    DOCS,
    ENV_API_PATTERN,
    INFERENCE_BACKENDS,
    LORA,
    ORCHESTRATION,
    PARTIAL_ROLLOUTS,
    PLACEMENT,
    ROLLOUT_BUFFER,
    SIMULATION_PARALLELISM,
    SPDX_PATTERN,
    STALENESS,
    SURVEYS,
    SYNCHRONIZATION,
    TRAINING_BACKENDS,
    TYPE_HINTS,
    WEIGHT_SYNC,
)

if TYPE_CHECKING:
    pass

SCHEMA_VERSION = 2
FRAMEWORK_ID_PATTERN = r"^[a-z0-9][a-z0-9-]*$"
#: Where the built-in entries live, relative to the ``rlcompare`` package.
#: How many problems one error line names before saying "and N more".
MAX_PROBLEMS_SHOWN = 12


@dataclass(frozen=True)
class FieldSpec:
    """What values one fact accepts; ``kind`` picks the check in :func:`_check_value`."""

    kind: Literal["bool", "year", "text", "url", "spdx", "choice", "choices", "names", "release"]
    description: str
    group: Literal["common", "control", "llm"] = "common"
    allowed: tuple[str, ...] = ()
    pattern: re.Pattern[str] | None = None
    may_be_unknown: bool = True
    extra_values: tuple[str, ...] = ()  # accepted besides the kind's values, e.g. "none" for homepage


def _control(kind: Any, description: str, **kwargs: Any) -> FieldSpec:
    return FieldSpec(kind, description, group="control", **kwargs)


def _llm(description: str, allowed: tuple[str, ...]) -> FieldSpec:
    return FieldSpec("choices", description, group="llm", allowed=allowed)


#: Every fact an entry can state, in display order. Keys are what ``--where`` and the JSON output use.
FIELDS: dict[str, FieldSpec] = {
    "repository": FieldSpec("url", "Source repository, or 'none' (with a note) while the code is unpublished.",
                            may_be_unknown=False, extra_values=("none",)),
    "homepage": FieldSpec("url", "Project or documentation home page.", extra_values=("none",)),
    "licence": FieldSpec("spdx", "SPDX licence identifier.", pattern=SPDX_PATTERN),
    "institution": FieldSpec("text", "Institution that created or maintains it."),
    "first_release_year": FieldSpec("year", "Year of the first public release or the paper releasing it."),
    "latest_release": FieldSpec("release", "Latest release: {version, date}, or 'none' if never released.",
                                extra_values=("none",)),
    "surveys": FieldSpec("choices", "Comparisons (surveys) that cover it, by id.", allowed=tuple(SURVEYS)),
    "backend": FieldSpec("choices", "Deep-learning backends.", allowed=BACKENDS),
    "algorithms": FieldSpec("names", "Algorithms shipped, canonical upper-case names.", pattern=ALGORITHM_PATTERN),
    "synchronization": FieldSpec("choices", "How acting (generation) and learning synchronise.",
                                 allowed=SYNCHRONIZATION),
    "docs": FieldSpec("choice", "Documentation: a hosted site, files in the repository, or none.", allowed=DOCS),
    "type_hints": FieldSpec("choice", "Type hints: checked in CI, annotated, or none.", allowed=TYPE_HINTS),
    "tests": FieldSpec("bool", "Has an automated test suite."),
    "coverage_reported": FieldSpec("bool", "Publishes test-coverage measurements."),
    "ci": FieldSpec("bool", "Runs continuous integration."),
    # the seed survey's axes (required for control entries)
    "multi_agent": _control("bool", "Multi-agent RL support."),
    "offline_rl": _control("bool", "Offline (batch) RL support."),
    "evolutionary": _control("bool", "Evolutionary or population-based methods (ES, GA, CEM, PBT)."),
    "architecture": _control("choices", "Learning-system architecture.", allowed=ARCHITECTURES),
    "simulation_parallelism": _control("choices", "How environments run in parallel.",
                                       allowed=SIMULATION_PARALLELISM),
    "computing_parallelism": _control("choices", "Parallel hardware it uses.", allowed=COMPUTING_PARALLELISM),
    "env_apis": _control("names", "Environment interfaces supported.", pattern=ENV_API_PATTERN),
    # the LLM post-training axes (required for llm entries)
    "orchestration": _llm("Orchestration primitive that runs and connects generation and training.",
                          ORCHESTRATION),
    "rollout_buffer": _llm("How finished rollouts reach the trainer.", ROLLOUT_BUFFER),
    "weight_sync": _llm("How new weights reach the inference engines.", WEIGHT_SYNC),
    "staleness": _llm("How off-policy lag between generation and training is bounded or corrected.",
                      STALENESS),
    "partial_rollouts": _llm("What happens to generations in flight when weights change.", PARTIAL_ROLLOUTS),
    "lora": _llm("LoRA (adapter) training support.", LORA),
    "training_backend": _llm("Distributed training backends.", TRAINING_BACKENDS),
    "inference_backend": _llm("Inference (generation) engines.", INFERENCE_BACKENDS),
    "placement": _llm("Generator and trainer on the same GPUs (colocated) or separate ones (disaggregated).",
                      PLACEMENT),
}
LIST_KINDS = ("choices", "names")
COMMON_FIELDS = tuple(name for name, spec in FIELDS.items() if spec.group == "common")
CONTROL_FIELDS = tuple(name for name, spec in FIELDS.items() if spec.group == "control")
LLM_FIELDS = tuple(name for name, spec in FIELDS.items() if spec.group == "llm")
#: Facts each domain must state; the other domain's axes are optional.
REQUIRED_FIELDS: dict[str, tuple[str, ...]] = {
    "control": (*COMMON_FIELDS, *CONTROL_FIELDS),
    "llm": (*COMMON_FIELDS, *LLM_FIELDS),
}

#: The survey's taxonomy dimensions: the columns of :func:`feature_matrix`.
TAXONOMY_FIELDS: dict[str, tuple[str, ...]] = {
    "architecture": ARCHITECTURES,
    "simulation_parallelism": SIMULATION_PARALLELISM,
    "computing_parallelism": COMPUTING_PARALLELISM,
    "synchronization": SYNCHRONIZATION,
}
FEATURE_FIELDS = ("multi_agent", "offline_rl", "evolutionary")
#: The axes each domain is compared on, in display order (``rlcompare frameworks`` shows these).
DOMAIN_AXES: dict[str, tuple[str, ...]] = {
    "control": ("backend", "architecture", "simulation_parallelism", "computing_parallelism", "synchronization"),
    "llm": ("orchestration", "placement", "rollout_buffer", "weight_sync", "staleness", "partial_rollouts",
            "lora", "training_backend", "inference_backend"),
}

#: Friendly spellings accepted by ``--where``.
KEY_ALIASES = {"license": "licence", "backends": "backend", "algorithm": "algorithms", "env_api": "env_apis",
               "survey": "surveys"}
#: Plain (unsourced) attributes that ``--where`` can also filter on.
PLAIN_KEYS = ("id", "name", "domain")


