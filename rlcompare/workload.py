"""The library-neutral workload spec: what to train, on what, for how long, judged how.

A workload names a Gymnasium environment, a canonical algorithm, a budget of environment steps,
seeds, parallelism, the network and canonical hyperparameters, the evaluation protocol and a success
threshold. Adapters translate it into their framework's own configuration and report, setting by
setting, how faithfully they could (see :mod:`rlcompare.fidelity`). Specs are validated before
anything runs; a file that does not validate raises :class:`InvalidWorkloadError` naming the field.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, Strict, ValidationError, model_validator

from rlcompare.errors import InvalidWorkloadError, UnknownNameError
from rlcompare.limits import COUNTER_SLOTS

SPEC_VERSION = 1
ALGORITHMS = ("PPO", "A2C", "DQN", "SAC")
Algorithm = Literal["PPO", "A2C", "DQN", "SAC"]
WORKLOAD_ID_PATTERN = r"^[a-z0-9][a-z0-9._-]*$"
#: Longest workload id: run ids and run directories are built from it.
MAX_ID_LENGTH = 64
#: Largest budget accepted (a trillion env steps); larger numbers are typos, not plans.
MAX_ENV_STEPS = 10**12
MAX_SEEDS = 1_000
MAX_WORKERS = 256
#: Largest workload file read.
MAX_FILE_BYTES = 1 << 20

# TOML and JSON carry types: a number where a number is meant, true/false where a switch is.
# Strict types refuse a bool for a number (``env_steps = true``) and a string for either; a float
# field still takes an integer. Floats must be finite.
Int = Annotated[int, Strict()]
Float = Annotated[float, Strict()]
Bool = Annotated[bool, Strict()]


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


# -------------------------------------------------------------------------------------------------
# canonical hyperparameters, one model per algorithm; defaults are the common reference values
# (SB3 / CleanRL) except where noted, and every field says what it means in framework-neutral terms
# -------------------------------------------------------------------------------------------------


class PPOHyperparameters(_Spec):
    """Proximal Policy Optimization (clipped surrogate objective, GAE)."""

    algorithm: Literal["PPO"] = Field("PPO", exclude=True)
    learning_rate: Float = Field(3e-4, gt=0, description="Adam step size, constant over training.")
    gamma: Float = Field(0.99, gt=0, le=1, description="Discount factor.")
    gae_lambda: Float = Field(0.95, ge=0, le=1, description="GAE lambda.")
    clip_range: Float = Field(0.2, gt=0, description="Policy ratio clip epsilon.")
    rollout_steps: Int = Field(128, gt=0, description="Steps collected per environment per update.")
    minibatch_size: Int = Field(64, gt=0, description="Transitions per gradient step.")
    epochs: Int = Field(10, gt=0, description="Passes over each rollout.")
    entropy_coef: Float = Field(0.0, ge=0, description="Entropy bonus coefficient.")
    value_coef: Float = Field(0.5, ge=0, description="Value-loss coefficient.")
    max_grad_norm: Float = Field(0.5, gt=0, description="Global gradient-norm clip.")
    normalize_advantage: Bool = Field(True, description="Normalize advantages per minibatch.")


class A2CHyperparameters(_Spec):
    """Advantage Actor-Critic (synchronous)."""

    algorithm: Literal["A2C"] = Field("A2C", exclude=True)
    learning_rate: Float = Field(7e-4, gt=0, description="Optimizer step size, constant.")
    optimizer: Literal["adam", "rmsprop"] = Field(
        "adam", description="Optimizer; Adam by default because most frameworks use it for A2C."
    )
    gamma: Float = Field(0.99, gt=0, le=1, description="Discount factor.")
    gae_lambda: Float = Field(1.0, ge=0, le=1, description="GAE lambda (1.0: n-step returns).")
    rollout_steps: Int = Field(5, gt=0, description="Steps collected per environment per update.")
    entropy_coef: Float = Field(0.0, ge=0, description="Entropy bonus coefficient.")
    value_coef: Float = Field(0.5, ge=0, description="Value-loss coefficient.")
    max_grad_norm: Float = Field(0.5, gt=0, description="Global gradient-norm clip.")
    normalize_advantage: Bool = Field(False, description="Normalize advantages per update.")


class DQNHyperparameters(_Spec):
    """Deep Q-Network with a target network and an epsilon-greedy schedule."""

    algorithm: Literal["DQN"] = Field("DQN", exclude=True)
    learning_rate: Float = Field(1e-4, gt=0, description="Adam step size, constant.")
    gamma: Float = Field(0.99, gt=0, le=1, description="Discount factor.")
    buffer_size: Int = Field(100_000, gt=0, description="Replay buffer capacity in transitions.")
    learning_starts: Int = Field(1_000, ge=0, description="Env steps before the first update.")
    minibatch_size: Int = Field(64, gt=0, description="Transitions per gradient step.")
    train_every: Int = Field(4, gt=0, description="Env steps between updates.")
    gradient_steps: Int = Field(1, gt=0, description="Gradient steps per update.")
    target_update_interval: Int = Field(1_000, gt=0, description="Env steps between target syncs.")
    exploration_initial_eps: Float = Field(1.0, ge=0, le=1, description="Initial epsilon.")
    exploration_final_eps: Float = Field(0.05, ge=0, le=1, description="Final epsilon.")
    exploration_fraction: Float = Field(
        0.1, gt=0, le=1, description="Share of the budget over which epsilon decays linearly."
    )
    max_grad_norm: Float = Field(10.0, gt=0, description="Global gradient-norm clip.")
    double_q: Bool = Field(False, description="Double Q-learning targets.")


class SACHyperparameters(_Spec):
    """Soft Actor-Critic with automatic entropy tuning by default."""

    algorithm: Literal["SAC"] = Field("SAC", exclude=True)
    learning_rate: Float = Field(3e-4, gt=0, description="Adam step size for actor, critics, alpha.")
    gamma: Float = Field(0.99, gt=0, le=1, description="Discount factor.")
    buffer_size: Int = Field(1_000_000, gt=0, description="Replay buffer capacity in transitions.")
    learning_starts: Int = Field(100, ge=0, description="Env steps before the first update.")
    minibatch_size: Int = Field(256, gt=0, description="Transitions per gradient step.")
    tau: Float = Field(0.005, gt=0, le=1, description="Polyak coefficient for target critics.")
    train_every: Int = Field(1, gt=0, description="Env steps between updates.")
    gradient_steps: Int = Field(1, gt=0, description="Gradient steps per update.")
    entropy_coef: Float | Literal["auto"] = Field("auto", description="Fixed alpha, or 'auto'.")


Hyperparameters = Annotated[
    PPOHyperparameters | A2CHyperparameters | DQNHyperparameters | SACHyperparameters,
    Field(discriminator="algorithm"),
]
HYPERPARAMETER_MODELS: dict[str, type[_Spec]] = {
    "PPO": PPOHyperparameters,
    "A2C": A2CHyperparameters,
    "DQN": DQNHyperparameters,
    "SAC": SACHyperparameters,
}


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
        (64, 64), min_length=1, max_length=16, description="Hidden layer widths."
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


class Workload(_Spec):
    """One library-neutral training job; every adapter receives exactly this."""

    spec_version: Literal[1] = Field(SPEC_VERSION, description="Version of this spec format.")
    id: str = Field(pattern=WORKLOAD_ID_PATTERN, max_length=MAX_ID_LENGTH, description="Greppable id, e.g. 'cartpole-ppo'.")
    description: str = Field("", max_length=2_000, description="One line for listings and reports.")
    env: str = Field(min_length=1, max_length=200, description="Gymnasium environment id, e.g. 'CartPole-v1'.")
    env_kwargs: dict[str, Annotated[Any, Field()]] = Field(
        default_factory=dict, max_length=64, description="Passed to gymnasium.make (checked when planning)."
    )
    algorithm: Algorithm = Field(description="Canonical algorithm name.")
    env_steps: Int = Field(gt=0, le=MAX_ENV_STEPS, description="Training budget in environment steps.")
    seeds: Int = Field(2, gt=0, le=MAX_SEEDS, description="Number of seeds (seed values 0..seeds-1).")
    parallelism: Parallelism = Field(default_factory=Parallelism)
    network: Network = Field(default_factory=Network)
    hyperparameters: Hyperparameters = Field(description="Canonical hyperparameters.")
    evaluation: Evaluation = Field(default_factory=Evaluation)
    success_threshold: Float | None = Field(
        None, description="Mean evaluation return counted as solving the task."
    )

    @model_validator(mode="before")
    @classmethod
    def _tag_hyperparameters(cls, data: Any) -> Any:
        # The hyperparameter model is chosen by the workload's algorithm: tag the table with it.
        if isinstance(data, dict):
            data = dict(data)
            raw = data.get("hyperparameters", {})
            algorithm = data.get("algorithm")
            if isinstance(raw, dict) and isinstance(algorithm, str) and algorithm in HYPERPARAMETER_MODELS:
                data["hyperparameters"] = {**raw, "algorithm": data["algorithm"]}
        return data

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
    def rollout_env_steps(self) -> int:
        """Env steps between two updates, across every env: one rollout (on-policy) or one update
        interval (off-policy). The default grain of a run's budget tolerance."""
        hp = self.hyperparameters
        per_env = getattr(hp, "rollout_steps", None) or getattr(hp, "train_every", 1)
        return int(per_env) * self.parallelism.total_envs

    @property
    def step_count_tolerance(self) -> int:
        """The default tolerance between the framework's and the harness's step counts
        (see :class:`rlcompare.validity.BudgetTolerance`)."""
        from rlcompare.validity import BudgetTolerance

        return BudgetTolerance.for_workload(self).count_gap_steps

    @property
    def seed_values(self) -> list[int]:
        return list(range(self.seeds))

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
        return json.dumps(data)

    @functools.cached_property
    def digest(self) -> str:
        """Content digest of everything that shapes a run (not the description or seed count)."""
        data = self.to_dict()
        data.pop("description", None)
        data.pop("seeds", None)
        payload = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(payload.encode()).hexdigest()[:16]


def workload_from_dict(data: Any, source: str) -> Workload:
    """Validate ``data``; raise :class:`InvalidWorkloadError` with the field path on failure."""
    if not isinstance(data, dict):
        raise InvalidWorkloadError(f"{source}: a workload must be a table, got {type(data).__name__}")
    if "spec_version" in data and data["spec_version"] != SPEC_VERSION:
        raise InvalidWorkloadError(
            f"{source}: field 'spec_version': unsupported version {data['spec_version']!r} "
            f"(this rlcompare reads version {SPEC_VERSION})"
        )
    if "hyperparameters" in data and not isinstance(data["hyperparameters"], dict):
        raise InvalidWorkloadError(f"{source}: field 'hyperparameters': expected a table")
    try:
        return Workload.model_validate(data)
    except ValidationError as exc:
        raise InvalidWorkloadError(f"{source}: {describe_validation_error(exc)}") from None


def load_workload_file(path: str | Path) -> Workload:
    """Read one workload from a TOML file; ``id`` defaults to the file's stem."""
    path = Path(path)
    text = read_text_file(path, "workload file", InvalidWorkloadError)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidWorkloadError(f"{path}: not valid TOML ({exc})") from None
    if "id" not in data:
        data["id"] = re.sub(r"[^a-z0-9._-]+", "-", path.stem.lower()).strip("-")[:MAX_ID_LENGTH] or "workload"
    return workload_from_dict(data, str(path))


def read_text_file(path: Path, what: str, error: type[Exception], limit: int = MAX_FILE_BYTES) -> str:
    """The UTF-8 text of a regular file no larger than ``limit``, or ``error`` with one line.

    A FIFO, a device such as /dev/zero, a folder or a huge file is refused before it is read."""
    import stat

    try:
        info = path.stat()
    except OSError as exc:
        raise error(f"{path}: cannot read {what} ({exc.strerror})") from None
    if not stat.S_ISREG(info.st_mode):
        raise error(f"{path}: {what} must be a regular file")
    if info.st_size > limit:
        raise error(f"{path}: {what} is {info.st_size:,} bytes; at most {limit:,} are read")
    try:
        with path.open("rb") as handle:
            raw = handle.read(limit + 1)
    except OSError as exc:
        raise error(f"{path}: cannot read {what} ({exc.strerror})") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{path}: {what} is not UTF-8 text (byte {exc.start})") from None


def describe_validation_error(exc: ValidationError) -> str:
    """One line for the first error: the dotted field path, what was expected, what was given."""
    errors = exc.errors()
    first = errors[0]
    loc = [str(part) for part in first["loc"]]
    hyper_model: type[BaseModel] | None = None
    # The discriminated union puts the algorithm tag into the path; users never wrote it.
    if len(loc) >= 2 and loc[0] == "hyperparameters" and loc[1] in HYPERPARAMETER_MODELS:
        hyper_model = HYPERPARAMETER_MODELS[loc.pop(1)]
    field = ".".join(loc) or "(top level)"
    kind = first["type"]
    if kind == "missing":
        message = f"field '{field}' is required"
    elif kind == "extra_forbidden":
        message = f"field '{field}' is not a known setting"
        parent = hyper_model if loc[:-1] == ["hyperparameters"] else _model_at(loc[:-1])
        if parent is not None:
            import difflib

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
    its ``env_kwargs`` (imports gymnasium and makes the environment once)."""
    import gymnasium

    from rlcompare.envs import make_env, register_builtin_envs

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
