"""The library-neutral workload spec: what to train, on what, for how long, judged how.

A workload names a Gymnasium environment, an algorithm family (:mod:`rlcompare.spec.families`: the
built-in PPO, A2C, DQN, SAC, TD3, DDPG, ES or a plugin's, among the families passed to validation), a budget of environment steps, seeds, parallelism,
the network and the family's canonical hyperparameters, the evaluation protocol and a success
threshold. Adapters translate it into their framework's own configuration and report, setting by
setting, how faithfully they could (see :mod:`rlcompare.harness.fidelity`). Specs are validated before
anything runs; a file that does not validate raises :class:`InvalidWorkloadError` naming the field.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SerializeAsAny,
    Strict,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_validator,
)

from rlcompare.errors import InvalidWorkloadError, UnknownNameError
from rlcompare.harness.language_ids import LANGUAGE_TASK_IDS, is_language_task
from rlcompare.harness.limits import COUNTER_SLOTS
from rlcompare.harness.validity import BudgetTolerance
from rlcompare.spec.builtin_families import builtin_families
from rlcompare.spec.families import AlgorithmFamily, Families, family_named
from rlcompare.spec.files import read_text_file

SPEC_VERSION = 1
#: The built-in gradient-based families (the reference set of the algorithm-coverage criterion).
ALGORITHMS = ("PPO", "A2C", "DQN", "SAC")
WORKLOAD_ID_PATTERN = r"^[a-z0-9][a-z0-9._-]*$"
#: Longest workload id: run ids and run directories are built from it.
MAX_ID_LENGTH = 64
#: Largest budget accepted (a trillion env steps); larger numbers are typos, not plans.
MAX_ENV_STEPS = 10**12
MAX_SEEDS = 1_000
MAX_WORKERS = 256

# TOML and JSON carry types: a number where a number is meant, true/false where a switch is.
# Strict types refuse a bool for a number (``env_steps = true``) and a string for either; a float
# field still takes an integer. Floats must be finite.
Int = Annotated[int, Strict()]
Float = Annotated[float, Strict()]
Bool = Annotated[bool, Strict()]


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


# The canonical hyperparameter models live with their algorithm families (rlcompare.spec.families;
# the built-in ones in rlcompare.spec.builtin_families): a workload validates against its family's.
# Which families a workload may name is the validation context's ``families`` (a Families mapping);
# without one, the built-in families.


def _families(info: ValidationInfo) -> Families:
    context = info.context
    if isinstance(context, dict) and context.get("families") is not None:
        return context["families"]
    return builtin_families()


class Parallelism(_Spec):
    """How experience is collected (the survey's simulation and computing parallelism)."""

    envs_per_worker: Int = Field(1, gt=0, le=COUNTER_SLOTS, description="Vectorized environments in each worker.")
    workers: Int = Field(
        1, gt=0, le=MAX_WORKERS, description="Rollout workers (processes) stepping environments; 1 = in-process."
    )
    mode: Literal["sync", "async"] = Field("sync", description="Synchronous or asynchronous sampling.")
    threads_per_worker: Int = Field(
        1, gt=0, le=MAX_WORKERS, description="Torch/BLAS threads per process, pinned identically for every adapter."
    )
    simulation: Literal["gymnasium", "envpool"] = Field(
        "gymnasium", description="What steps the training environments: 'gymnasium' (the environments the "
        "harness makes with gymnasium.make, one per slot) or 'envpool' (one EnvPool of the worker's environments, "
        "stepped in C++; for the environments rlcompare checked against Gymnasium's, and adapters that accept a "
        "vector environment). Evaluation always runs on Gymnasium's environments.")
    seeds_per_program: Int = Field(
        1, gt=0, le=64, description="Seeds trained together in one program (a JAX adapter vmaps them over its "
        "seeds), for the adapters that offer it. Each seed stays a run of its own (its own counts, curve and "
        "evaluation on the harness's environments); each run records how many seeds shared its program, and its "
        "training time is the program's, so per-run throughput is its own steps over the shared time.")

    @model_validator(mode="after")
    def _fits_the_counter(self) -> Parallelism:
        if self.total_envs > COUNTER_SLOTS:
            raise ValueError(
                f"parallelism: {self.workers} workers x {self.envs_per_worker} envs = {self.total_envs} environments; "
                f"the harness counts at most {COUNTER_SLOTS} per run"
            )
        return self

    @property
    def total_envs(self) -> int:
        return self.envs_per_worker * self.workers


class Network(_Spec):
    """Fully connected policy and value networks (separate, same shape)."""

    hidden_sizes: tuple[Annotated[int, Strict(), Field(gt=0, le=65_536)], ...] = Field(
        (64, 64), min_length=0, max_length=16,
        description="Hidden layer widths; empty: a linear policy (and value function), the observation "
                    "mapped straight to the outputs (an adapter that cannot build one says so in its fidelity report).",
    )
    activation: Literal["tanh", "relu"] = Field("tanh", description="Hidden activation.")


class Evaluation(_Spec):
    """The harness's own evaluation protocol, the same for every adapter."""

    interval_steps: Int | None = Field(
        None, gt=0, description="Env steps between evaluation points (default: a tenth of the budget)."
    )
    episodes: Int = Field(10, gt=0, description="Episodes per evaluation point.")
    deterministic: Bool = Field(True, description="Greedy / mean actions during evaluation.")
    seed_offset: Int = Field(
        1_000_000, ge=0, description="Evaluation env seeds are seed_offset + run seed * episodes + i."
    )
    at_start: Bool = Field(True, description="Also evaluate the untrained policy at step 0.")


class LanguageModel(_Spec):
    """The tiny causal language model of a language workload (GRPO): a Qwen2-style decoder the harness
    initializes from each run's seed, identical for every adapter (:mod:`rlcompare.harness.language`)."""

    layers: Int = Field(2, gt=0, le=48, description="Decoder layers.")
    hidden_size: Int = Field(64, gt=0, le=8_192, description="Width of the residual stream.")
    heads: Int = Field(4, gt=0, le=128, description="Attention (query) heads.")
    kv_heads: Int = Field(2, gt=0, le=128, description="Key/value heads (grouped-query attention).")
    intermediate_size: Int = Field(128, gt=0, le=65_536, description="Width of the gated SiLU MLP.")
    rope_theta: Float = Field(10_000.0, gt=0, description="Base of the rotary position frequencies.")
    rms_norm_eps: Float = Field(1e-6, gt=0, lt=1, description="RMSNorm epsilon.")
    init_std: Float = Field(0.02, gt=0, le=1, description="Standard deviation of the normal initial weights.")

    def to_dict(self) -> dict[str, Any]:
        """The shape as plain data (as the worker's view gives it)."""
        return self.model_dump(mode="json")

    @model_validator(mode="after")
    def _heads_fit(self) -> LanguageModel:
        if self.hidden_size % self.heads:
            raise ValueError(f"hidden_size {self.hidden_size} is not a multiple of heads {self.heads}")
        if self.heads % self.kv_heads:
            raise ValueError(f"heads {self.heads} is not a multiple of kv_heads {self.kv_heads}")
        if (self.hidden_size // self.heads) % 2:
            raise ValueError(f"the head size {self.hidden_size // self.heads} must be even "
                             "(rotary positions rotate pairs)")
        return self


class Workload(_Spec):
    """One library-neutral training job; every adapter receives exactly this."""

    spec_version: Literal[1] = Field(SPEC_VERSION, description="Version of this spec format.")
    id: str = Field(pattern=WORKLOAD_ID_PATTERN, max_length=MAX_ID_LENGTH, description="Greppable id, e.g. 'cartpole-ppo'.")
    description: str = Field("", max_length=2_000, description="One line for listings and reports.")
    env: str = Field(min_length=1, max_length=200, description="Gymnasium environment id, e.g. 'CartPole-v1'.")
    env_kwargs: dict[str, Annotated[Any, Field()]] = Field(
        default_factory=dict, max_length=64, description="Passed to gymnasium.make (checked when planning)."
    )
    algorithm: str = Field(
        max_length=64, description="Canonical algorithm family (see `rlcompare list algorithms`)."
    )
    env_steps: Int = Field(gt=0, le=MAX_ENV_STEPS, description="Training budget in environment steps.")
    seeds: Int = Field(2, gt=0, le=MAX_SEEDS, description="Number of seeds (seed values 0..seeds-1).")
    parallelism: Parallelism = Field(default_factory=Parallelism)
    network: Network = Field(default_factory=Network)
    language_model: LanguageModel | None = Field(
        None, description="The language model a language family (GRPO) trains; filled with the defaults for "
        "one, refused for any other.")
    hyperparameters: SerializeAsAny[BaseModel] = Field(
        default_factory=dict, validate_default=True,  # omitted: every setting at the family's default
        description="Canonical hyperparameters of the algorithm's family (its model says which)."
    )
    evaluation: Evaluation = Field(default_factory=Evaluation)
    success_threshold: Float | None = Field(
        None, description="Mean evaluation return counted as solving the task."
    )
    stop_when_solved: bool = Field(
        False, description="Stop each run at its first evaluation whose mean return reaches success_threshold "
        "(a seconds-to-solve measurement needs nothing after it): the harness ends training there and the run "
        "is valid short of its budget. For seconds- or steps-to-solve measurements: its final return is then the "
        "solving evaluation's and its curve ends there, so the return criteria say less than after a full budget.")
    settings: Literal["canonical", "native"] = Field(
        "canonical", description="'canonical': these settings for every adapter (like for like); 'native': each "
        "adapter's own recommended configuration for this env and algorithm (out of the box), resolved per adapter "
        "when the matrix is planned; budget, evaluation and threshold stay the workload's.")
    native: dict[str, Annotated[Any, Field()]] = Field(
        default_factory=dict, max_length=64,
        description="Filled when planning the native arm: the adapter's native-only settings and their source.")
    #: The family ``algorithm`` named, resolved once when the workload was validated.
    _family: AlgorithmFamily = PrivateAttr()

    @field_validator("algorithm")
    @classmethod
    def _known_algorithm(cls, name: str, info: ValidationInfo) -> str:
        try:
            family_named(_families(info), name)
        except UnknownNameError as exc:
            raise ValueError(str(exc)) from None
        return name

    @field_validator("hyperparameters", mode="wrap")
    @classmethod
    def _family_hyperparameters(cls, value: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo) -> Any:
        # The model is the one the workload's algorithm family declares; errors keep their field
        # path (hyperparameters.<name>). With an unknown algorithm, that error is the one reported.
        name = info.data.get("algorithm")
        if name is None:
            return value
        model = family_named(_families(info), name).hyperparameters
        if isinstance(value, model):
            return value
        if isinstance(value, BaseModel):
            value = value.model_dump()
        if isinstance(value, dict) and value.get("algorithm") == name:
            # the tag older versions kept inside the table: the workload's own algorithm, nothing more
            value = {key: item for key, item in value.items() if key != "algorithm"}
        return model.model_validate(value)

    @model_validator(mode="after")
    def _resolve_family(self, info: ValidationInfo) -> Workload:
        self._family = family_named(_families(info), self.algorithm)
        return self

    @model_validator(mode="after")
    def _language_task(self) -> Workload:
        if self._family.task == "language":
            if not is_language_task(self.env):
                raise ValueError(f"field 'env': {self.algorithm} trains a language model on one of the harness's "
                                 f"language tasks ({', '.join(sorted(LANGUAGE_TASK_IDS))}), not {self.env!r}")
            if "split" in self.env_kwargs:
                raise ValueError("field 'env_kwargs.split': the harness chooses the split (training draws the "
                                 "training problems, its evaluation the held-out ones)")
            if self.language_model is None:
                object.__setattr__(self, "language_model", LanguageModel())  # frozen model: resolve once
        elif self.language_model is not None:
            raise ValueError(f"field 'language_model': {self.algorithm} does not train a language model")
        return self

    @model_validator(mode="after")
    def _native_only_in_the_native_arm(self) -> Workload:
        if self.native and self.settings != "native":
            # native-only settings reach an adapter only where the native arm resolved them: a canonical
            # workload carrying some would run other settings than it states
            raise ValueError("field 'native': the native arm's resolved settings; a canonical workload has none "
                             "(write settings = \"native\" and let the adapters recommend)")
        return self

    @model_validator(mode="after")
    def _stop_needs_a_threshold(self) -> Workload:
        if self.stop_when_solved and self.success_threshold is None:
            raise ValueError("field 'stop_when_solved': needs success_threshold (the return that counts as solved)")
        if self.stop_when_solved and self.parallelism.seeds_per_program > 1:
            raise ValueError("field 'parallelism.seeds_per_program': seeds trained in one program run to the same "
                             "budget, so it cannot be combined with stop_when_solved")
        return self

    @model_validator(mode="after")
    def _consistent(self) -> Workload:
        if self.evaluation.interval_steps is None:
            resolved = self.evaluation.model_copy(update={"interval_steps": max(1, self.env_steps // 10)})
            object.__setattr__(self, "evaluation", resolved)  # frozen model: resolve the default once
        elif self.evaluation.interval_steps > self.env_steps:
            raise ValueError(
                f"evaluation.interval_steps ({self.evaluation.interval_steps}) exceeds "
                f"env_steps ({self.env_steps})"
            )
        return self

    @property
    def family(self) -> AlgorithmFamily:
        """The algorithm family this workload names (resolved when it was validated)."""
        return self._family

    @property
    def rollout_env_steps(self) -> int:
        """Env steps between two updates, across every env: one rollout (on-policy), one update
        interval (off-policy) or one generation (evolutionary), as the algorithm's family says.
        The default grain of a run's budget tolerance."""
        return int(self.family.budget_grain(self))

    @property
    def step_count_tolerance(self) -> int:
        """The default tolerance between the framework's and the harness's step counts
        (see :class:`rlcompare.harness.validity.BudgetTolerance`)."""
        return BudgetTolerance.for_workload(self).count_gap_steps

    @property
    def seed_values(self) -> list[int]:
        return list(range(self.seeds))

    def derived(self) -> dict[str, Any]:
        """What the worker's plain view cannot compute without the algorithm's family (a plugin's,
        perhaps): written into the run spec by the driver next to the workload."""
        family = self.family
        return {
            "rollout_env_steps": self.rollout_env_steps,
            "step_count_tolerance": self.step_count_tolerance,
            "family": {"name": family.name, "kind": family.kind, "granularity": family.granularity,
                       "action_spaces": sorted(family.action_spaces),
                       **({"task": family.task} if family.task != "control" else {})},
        }

    def with_seeds(self, seeds: int) -> Workload:
        if not 0 < seeds <= MAX_SEEDS:
            raise InvalidWorkloadError(f"--seeds: expected 1 to {MAX_SEEDS}, got {seeds}")
        copy = self.model_copy(update={"seeds": seeds})
        for cached in ("json_text", "digest"):  # model_copy copies the cache of the original too
            copy.__dict__.pop(cached, None)
        return copy

    def to_dict(self) -> dict[str, Any]:
        """The spec as plain JSON data (a fresh copy each call)."""
        return json.loads(self.json_text)

    @functools.cached_property
    def json_text(self) -> str:
        """The spec as JSON text, made once (a workload is frozen; every run of it records it)."""
        data = self.model_dump(mode="json")
        data["hyperparameters"] = self.hyperparameters.model_dump(mode="json")
        # the arm's fields only where they say something: a canonical workload reads (and digests) as before
        if data.get("settings") == "canonical":
            data.pop("settings")
        if not data.get("native"):
            data.pop("native", None)
        if data.get("language_model") is None:
            data.pop("language_model", None)  # a control workload reads (and digests) as before
        if not data.get("stop_when_solved"):
            data.pop("stop_when_solved", None)
        if data["parallelism"].get("simulation") == "gymnasium":
            data["parallelism"].pop("simulation")  # the default: a workload without EnvPool reads as before
        if data["parallelism"].get("seeds_per_program") == 1:
            data["parallelism"].pop("seeds_per_program")  # the default: one seed per program, as before
        return json.dumps(data)

    @functools.cached_property
    def digest(self) -> str:
        """Content digest of everything that shapes a run (not the description or seed count)."""
        data = self.to_dict()
        data.pop("description", None)
        data.pop("seeds", None)
        payload = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(payload.encode()).hexdigest()[:16]


def workload_from_dict(data: Any, source: str, families: Families | None = None) -> Workload:
    """Validate ``data`` against ``families`` (default: the built-in ones); raise
    :class:`InvalidWorkloadError` with the field path on failure."""
    if not isinstance(data, dict):
        raise InvalidWorkloadError(f"{source}: a workload must be a table, got {type(data).__name__}")
    if "spec_version" in data and data["spec_version"] != SPEC_VERSION:
        raise InvalidWorkloadError(
            f"{source}: field 'spec_version': unsupported version {data['spec_version']!r} "
            f"(this rlcompare reads version {SPEC_VERSION})"
        )
    if "hyperparameters" in data and not isinstance(data["hyperparameters"], dict):
        raise InvalidWorkloadError(f"{source}: field 'hyperparameters': expected a table")
    families = builtin_families() if families is None else families
    try:
        return Workload.model_validate(data, context={"families": families})
    except ValidationError as exc:
        raise InvalidWorkloadError(f"{source}: {describe_validation_error(exc, data, families)}") from None


def load_workload_file(path: str | Path, families: Families | None = None) -> Workload:
    """Read one workload from a TOML file; ``id`` defaults to the file's stem."""
    path = Path(path)
    text = read_text_file(path, "workload file", InvalidWorkloadError)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidWorkloadError(f"{path}: not valid TOML ({exc})") from None
    if "id" not in data:
        data["id"] = re.sub(r"[^a-z0-9._-]+", "-", path.stem.lower()).strip("-")[:MAX_ID_LENGTH] or "workload"
    return workload_from_dict(data, str(path), families)


def describe_validation_error(exc: ValidationError, data: Any = None, families: Families | None = None) -> str:
    """One line for the first error: the dotted field path, what was expected, what was given
    (``data``, the input, lets a misspelled hyperparameter name its family's closest setting)."""
    errors = exc.errors()
    first = errors[0]
    loc = [str(part) for part in first["loc"]]
    field = ".".join(loc) or "(top level)"
    kind = first["type"]
    if kind == "missing":
        message = f"field '{field}' is required"
    elif kind == "extra_forbidden":
        message = f"field '{field}' is not a known setting"
        parent = (_hyperparameter_model(data, families or builtin_families()) if loc[:-1] == ["hyperparameters"]
                  else _model_at(loc[:-1]))
        if parent is not None:
            close = difflib.get_close_matches(loc[-1], list(parent.model_fields), n=1)
            if close:
                message += f"; did you mean '{close[0]}'?"
    elif not loc:  # a check across fields; its message names them
        message = first["msg"].removeprefix("Value error, ")
    else:
        text = first["msg"].removeprefix("Value error, ")
        message = f"field '{field}': {text}"
        if "input" in first and kind != "value_error" and not isinstance(first["input"], dict):
            message += f" (got {first['input']!r})"
    if len(errors) > 1:
        message += f" (and {len(errors) - 1} more)"
    return message


def _hyperparameter_model(data: Any, families: Families) -> type[BaseModel] | None:
    # The model of the family the workload named, when it names a known one.
    name = data.get("algorithm") if isinstance(data, dict) else None
    return families[name].hyperparameters if isinstance(name, str) and name in families else None


def _model_at(loc: list[str]) -> type[BaseModel] | None:
    model: type[BaseModel] = Workload
    for part in loc:
        annotation = model.model_fields.get(part)
        if annotation is None:
            return None
        target = annotation.annotation
        if isinstance(target, type) and issubclass(target, BaseModel):
            model = target
        else:
            return None
    return model


def check_environment(workload: Workload) -> None:
    """Refuse a workload whose environment is not registered with Gymnasium, or cannot be made with
    its ``env_kwargs`` (imports gymnasium and makes the environment once; only then, since reading
    a workload must not cost gymnasium's import), or that asks EnvPool to simulate an environment it
    may not (:func:`rlcompare.harness.envpool_envs.envpool_refusal`)."""
    import gymnasium

    from rlcompare.harness.counted_envs import make_env, register_builtin_envs

    register_builtin_envs()
    if workload.env not in gymnasium.envs.registry:
        raise UnknownNameError("environment", workload.env, gymnasium.envs.registry)
    try:
        env = make_env(workload.env, workload.env_kwargs)
    except Exception as exc:  # noqa: BLE001 - whatever the environment says is the user's answer
        message = f"{type(exc).__name__}: {exc}".splitlines()[0][:300] if str(exc) else type(exc).__name__
        raise InvalidWorkloadError(
            f"workload {workload.id!r}: field 'env_kwargs': {workload.env} cannot be made with "
            f"{dict(workload.env_kwargs)!r} ({message})"
        ) from None
    env.close()
    if workload.parallelism.simulation == "envpool":
        from rlcompare.harness.envpool_envs import envpool_refusal

        # whether envpool is installed is the pair's question (an adapter refuses it), not the workload's
        refusal = envpool_refusal(workload.env, dict(workload.env_kwargs), installed=True)
        if refusal is not None:
            raise InvalidWorkloadError(f"workload {workload.id!r}: field 'parallelism.simulation': {refusal}")


@dataclass(frozen=True)
class Suite:
    """A named list of workload ids (``rlcompare run --suite NAME``)."""

    name: str
    workload_ids: tuple[str, ...]
    description: str = ""
