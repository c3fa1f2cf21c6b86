"""One table per adapter maps canonical settings to native ones; the same table yields both the
framework's keyword arguments and the fidelity report, so the two can never disagree."""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any

from rlcompare.harness.workload_view import WorkloadLike


class Fidelity(enum.StrEnum):
    """How faithfully a canonical setting reaches the framework."""

    EXACT = "exact"
    APPROXIMATE = "approximate"
    UNSUPPORTED = "unsupported"


@dataclass(frozen=True)
class FidelityEntry:
    """One canonical setting, its framework-native counterpart and how well they match."""

    setting: str
    value: Any
    status: Fidelity
    native_name: str | None = None
    native_value: Any = None
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["status"] = self.status.value
        return data


Judge = Callable[[Any, WorkloadLike], tuple[Fidelity, str]]


def _same(value: Any, _: WorkloadLike) -> Any:
    return value


@dataclass(frozen=True)
class Setting:
    """How one canonical hyperparameter reaches the framework.

    ``native`` is the framework's keyword (None: nothing to pass); ``convert`` turns the canonical
    value into the native one; ``judge`` decides exact/approximate/unsupported for this value
    (default: exact).
    """

    canonical: str
    native: str | None
    convert: Callable[[Any, WorkloadLike], Any] = _same
    judge: Judge | None = None
    note: str = ""

    def entry(self, workload: WorkloadLike) -> tuple[FidelityEntry, Any]:
        value = getattr(workload.hyperparameters, self.canonical)
        status, note = (Fidelity.EXACT, self.note) if self.judge is None else self.judge(value, workload)
        native_value = None if status is Fidelity.UNSUPPORTED else self.convert(value, workload)
        entry = FidelityEntry(
            setting=f"hyperparameters.{self.canonical}",
            value=value,
            status=status,
            native_name=self.native,
            native_value=_plain(native_value),
            note=note or self.note,
        )
        return entry, native_value


def map_settings(workload: WorkloadLike, settings: Iterable[Setting]) -> tuple[dict[str, Any], list[FidelityEntry]]:
    """Native keyword arguments and fidelity entries for ``workload``'s hyperparameters.

    Every canonical hyperparameter of the workload's algorithm must appear in ``settings``
    (a canonical setting an adapter forgot would silently use the framework's default).
    """
    settings = list(settings)
    known = {setting.canonical for setting in settings}
    missing = canonical_settings(workload.hyperparameters) - known
    if missing:
        raise ValueError(f"no mapping for canonical settings {sorted(missing)}")
    kwargs: dict[str, Any] = {}
    entries = []
    for setting in settings:
        entry, native_value = setting.entry(workload)
        entries.append(entry)
        if setting.native is not None and entry.status is not Fidelity.UNSUPPORTED:
            kwargs[setting.native] = native_value
    return kwargs, entries


def canonical_settings(hyperparameters: Any) -> set[str]:
    """The canonical setting names of a workload's hyperparameters: the validated model's fields
    (driver), or the keys of the worker's plain-data view (:mod:`rlcompare.harness.workload_view`)."""
    fields = getattr(type(hyperparameters), "model_fields", None)
    names = fields if fields is not None else hyperparameters.to_dict()
    return set(names) - {"algorithm"}


def entry(setting: str, value: Any, status: Fidelity, native_name: str | None = None,
          native_value: Any = None, note: str = "") -> FidelityEntry:
    """A fidelity entry for a non-hyperparameter setting (network, parallelism, evaluation)."""
    return FidelityEntry(setting, _plain(value), status, native_name, _plain(native_value), note)


def vector_env_fidelity(workload: WorkloadLike, in_process: str, in_subprocesses: str,
                        subprocess_call: str) -> list[FidelityEntry]:
    """``parallelism.envs_per_worker`` and ``parallelism.workers`` for a framework whose vector env steps
    every environment sequentially in the training process with one worker (``in_process``, e.g. SB3's
    ``DummyVecEnv``), and with more workers runs each environment of every worker in a subprocess of its
    own (``in_subprocesses``, built as ``subprocess_call``, e.g. ``SubprocVecEnv(n_envs)``): exact, except
    several environments per worker across workers, which become one process each (approximate)."""
    par = workload.parallelism
    if par.workers == 1:
        return [
            entry("parallelism.envs_per_worker", par.envs_per_worker, Fidelity.EXACT, in_process,
                  par.envs_per_worker, "stepped sequentially in the training process"),
            entry("parallelism.workers", 1, Fidelity.EXACT, in_process, 1),
        ]
    status = Fidelity.EXACT if par.envs_per_worker == 1 else Fidelity.APPROXIMATE
    return [
        entry("parallelism.envs_per_worker", par.envs_per_worker, status, in_subprocesses, 1,
              f"{in_subprocesses} runs one environment per process"),
        entry("parallelism.workers", par.workers, status, subprocess_call, par.total_envs,
              f"{par.total_envs} subprocesses"),
    ]


def language_fidelity(workload: WorkloadLike, model_class: str, model_config: str, reward_hook: str,
                      placement: tuple[str, Any, str]) -> list[FidelityEntry]:
    """``language_model``, ``parallelism.envs_per_worker`` and ``parallelism.workers`` of a language workload
    (:mod:`rlcompare.harness.language`) for a library that loads the harness's model into ``model_class``
    (built as ``model_config``), scores every completion through ``reward_hook`` in the harness's one counted
    environment, and generates and trains in the run's process as ``placement`` (native name, value, note)
    says: each exact."""
    par = workload.parallelism
    return [
        entry("language_model", workload.language_model.to_dict(), Fidelity.EXACT, model_class, model_config,
              "the harness's architecture and initial weights for the run's seed, loaded by name"),
        entry("parallelism.envs_per_worker", par.envs_per_worker, Fidelity.EXACT, reward_hook, 1,
              "every completion is scored in the harness's one counted environment"),
        entry("parallelism.workers", par.workers, Fidelity.EXACT, *placement),
    ]


def only_if(expected: Any, note: str) -> Judge:
    """Exact when the canonical value equals ``expected``; unsupported otherwise. ``note`` says how
    the framework fixes this behaviour, which is also why an exact entry names no native setting."""

    def judge(value: Any, _: WorkloadLike) -> tuple[Fidelity, str]:
        return (Fidelity.EXACT if value == expected else Fidelity.UNSUPPORTED), note

    return judge


def _plain(value: Any) -> Any:
    """JSON-friendly form of a native value (classes by qualified name)."""
    if isinstance(value, type):
        return f"{value.__module__}.{value.__qualname__}"
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


@dataclass(frozen=True)
class NativeSetting:
    """A setting of the native arm (:class:`rlcompare.harness.contract.Recommendation.native`) that the
    canonical model has no field for, as one adapter applies it: the families it applies to, where it
    goes in the framework's configuration, the canonical settings it overrides (their entries turn
    approximate in the native arm: a hyperparameter's name, or a dotted path such as
    ``network.activation``) and what it does (the fidelity note)."""

    families: tuple[str, ...]
    target: str
    replaces: tuple[str, ...] = ()
    note: str = ""


#: Puts one native setting into the framework's configuration: (its description, key, value) -> the
#: native value to show in the fidelity entry (None: the value itself).
NativePut = Callable[[NativeSetting, str, Any], Any]


def apply_native_settings(workload: WorkloadLike, entries: list[FidelityEntry],
                          table: Callable[[str, Any], NativeSetting | None], put: NativePut,
                          framework: str) -> list[FidelityEntry]:
    """The native arm's settings (``workload.native``: the ``source`` and ``settings`` of the adapter's
    recommendation) into the framework's configuration through ``put``, each with a fidelity entry; a
    setting ``table`` does not know for the workload's family is listed as unsupported (not applied);
    a canonical setting one replaces turns approximate. A canonical workload: ``entries`` unchanged."""
    import dataclasses

    native = getattr(workload, "native", None) or {}
    if not native:
        return entries
    entries = [*entries, entry("native.source", native.get("source", ""), Fidelity.EXACT, None, None,
                               "where the native arm's settings come from")]
    replaced: dict[str, str] = {}
    for key, value in sorted(dict(native.get("settings") or {}).items()):
        setting = table(key, value)
        if setting is None or workload.algorithm not in setting.families:
            entries.append(entry(f"native.{key}", value, Fidelity.UNSUPPORTED, None, None,
                                 f"a native setting the {framework} adapter does not apply to {workload.algorithm}"))
            continue
        shown = put(setting, key, value)
        entries.append(entry(f"native.{key}", value, Fidelity.EXACT, setting.target,
                             value if shown is None else shown, setting.note))
        replaced.update({name if "." in name else f"hyperparameters.{name}": key for name in setting.replaces})
    return [dataclasses.replace(item, status=Fidelity.APPROXIMATE,
                                note=f"{item.note}; in the native arm with native.{replaced[item.setting]}".lstrip("; "))
            if item.setting in replaced and item.status is Fidelity.EXACT else item for item in entries]
