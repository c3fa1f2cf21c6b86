"""Asking adapters for their framework's update on each probe, and keeping the verdicts.

For every (adapter, gradient family it offers, probe case of that family's reference it can run),
the probe is written to a file and the adapter's ``parity_update`` runs in a fresh interpreter of
the adapter's environment (``python -m rlcompare.harness.parity_worker``): the main one, or its own
when it needs one (:mod:`rlcompare.pyenvs`). The verdict is cached in the user's cache, keyed by
everything that decides it: the adapter's code, the framework's versions (or the environment's
lock), the probe, the reference's code and the protocol version. A second ``rlcompare parity`` is
then a lookup.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import rlcompare
from rlcompare.harness.contract import Adapter
from rlcompare.harness.framework_import import framework_modules
from rlcompare.harness.host import cache_dir, usable_cpus
from rlcompare.harness.measurement_cache import MeasurementCache
from rlcompare.harness.parity import PARITY_PROTOCOL_VERSION, ParityError, ParityOutcome, ParityProbe
from rlcompare.parity.reference import ProbeCase, ReferenceUpdate, declared_variants
from rlcompare.parity.verdict import FAILED, UNVERIFIABLE, ParityVerdict, judge
from rlcompare.pyenvs.manager import EnvironmentManager, EnvironmentSpec, isolation_reason
from rlcompare.pyenvs.processes import process_environment
from rlcompare.pyenvs.warm import run_module, warm_start_requested
from rlcompare.spec.families import Families
from rlcompare.spec.workload import Workload

#: Seconds one probe may take in its fresh interpreter (a framework's import included).
PROBE_TIMEOUT_SECONDS = 600.0
PARITY_CACHE = "parity.json"
#: Folder of the user's cache holding the adapters' kept answers (:func:`answer_many`).
ANSWERS_DIR = "parity-answers"
WORKER_MODULE = "rlcompare.harness.parity_worker"


@dataclass(frozen=True)
class ParityRequest:
    """One probe to answer: an adapter, a family it offers, one of the family's probe cases."""

    adapter_id: str
    adapter_class: type[Adapter]
    reference: ReferenceUpdate
    case: ProbeCase
    #: The variants the adapter's fidelity report declares for the case's workload.
    declared: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Interpreter:
    """Where an adapter's probes run, and what identifies the installed framework there."""

    python: str
    identity: str
    versions: dict[str, str | None]


def default_cache(refresh: bool = False, log: Callable[[str], None] | None = None) -> MeasurementCache:
    return MeasurementCache(cache_dir() / PARITY_CACHE, refresh=refresh, log=log)


def parity_requests(
    adapters: Mapping[str, type[Adapter]], families: Families, adapter_ids: Sequence[str] | None = None,
    algorithms: Sequence[str] | None = None,
) -> tuple[list[ParityRequest], list[ParityVerdict]]:
    """The probes to run, and a verdict for each (adapter, gradient family) that has none to run:
    a family without a reference update is ``unverifiable`` for every adapter that offers it."""
    from rlcompare.harness.counted_envs import action_space_kind  # gymnasium: once probes are planned

    requests: list[ParityRequest] = []
    verdicts: list[ParityVerdict] = []
    for adapter_id in adapter_ids or sorted(adapters):
        adapter_class = adapters[adapter_id]
        capabilities = adapter_class().capabilities()
        for name in sorted(capabilities.algorithms):
            if algorithms is not None and name not in algorithms:
                continue
            family = families.get(name)
            if family is None or family.kind != "gradient":
                continue  # an evolutionary family makes no gradient update to probe
            reference = family.parity
            if not isinstance(reference, ReferenceUpdate):
                verdicts.append(ParityVerdict(adapter_id, name, "-", UNVERIFIABLE,
                                              reason=f"the {name} family declares no reference update"))
                continue
            for case in reference.cases():
                workload = reference.case_workload(case, families)
                if capabilities.refusal(workload, action_space_kind(workload.env, workload.env_kwargs)) is None:
                    requests.append(ParityRequest(adapter_id, adapter_class, reference, case,
                                                  _declared(adapter_class, reference, workload)))
    return requests, verdicts


def interpreter_for(adapter_class: type[Adapter], log: Callable[[str], None] | None = None) -> Interpreter:
    """The main interpreter when the adapter fits it, else its own environment's (built if needed)."""
    reason = isolation_reason(adapter_class)
    if reason is None:
        versions = {name: _version(name) for name in adapter_class.distributions}
        return Interpreter(sys.executable, "main:" + json.dumps(versions, sort_keys=True), versions)
    environment = EnvironmentManager(log=log).ensure(EnvironmentSpec.for_adapter(adapter_class))
    return Interpreter(str(environment.python), f"environment:{environment.key}",
                       {"environment": environment.key})


def run_requests(requests: Iterable[ParityRequest], cache: MeasurementCache,
                 log: Callable[[str], None] | None = None) -> list[ParityVerdict]:
    """The verdict of every request, from the cache where it holds one. The others are answered
    adapter by adapter, all of an adapter's probes in one fresh interpreter (the framework is
    imported once), and kept unless they failed."""
    requests = list(requests)
    interpreters: dict[str, Interpreter] = {}
    probes: dict[tuple[str, str], ParityProbe] = {}  # one probe per (family, case), whoever asks
    digests: dict[tuple[str, str], str] = {}
    verdicts: list[ParityVerdict | None] = []
    missing: dict[str, list[tuple[int, ParityRequest, ParityProbe, str]]] = {}
    for index, request in enumerate(requests):
        if request.adapter_id not in interpreters:
            interpreters[request.adapter_id] = interpreter_for(request.adapter_class, log)
        interpreter = interpreters[request.adapter_id]
        which = (request.reference.family, request.case.name)
        if which not in digests:
            digests[which] = _probe_digest(request, cache, probes)
        key = "|".join(["parity", request.adapter_id, _adapter_digest(request.adapter_class), request.reference.family,
                        request.case.name, digests[which], _code_digest(type(request.reference)),
                        "declared " + ",".join(sorted(request.declared)),
                        interpreter.identity, f"protocol {PARITY_PROTOCOL_VERSION}", rlcompare.__version__])
        found, data = cache.lookup(key)
        verdicts.append(ParityVerdict.from_dict(data) if found else None)
        if not found:
            if which not in probes:
                probes[which] = request.reference.build_probe(request.reference.case_workload(request.case))
            missing.setdefault(request.adapter_id, []).append((index, request, probes[which], key))
    for adapter_id, pending in missing.items():
        if log is not None:
            cases = ", ".join(f"{request.reference.family} {request.case.name}" for _, request, _, _ in pending)
            where = "" if cache.path is None else f"; kept in {cache.path}"
            log(f"probing the updates of {adapter_id} ({cases}) in one process (once{where})")
    # one interpreter per adapter, as many at once as there are CPUs: a probe judges numbers, not time
    with ThreadPoolExecutor(max_workers=max(1, min(len(missing), usable_cpus()))) as pool:
        asked = {adapter_id: pool.submit(ask_many, [(request, probe) for _, request, probe, _ in pending],
                                         interpreters[adapter_id], not cache.refresh)
                 for adapter_id, pending in missing.items()}
        for adapter_id, pending in missing.items():
            for (index, _, _, key), verdict in zip(pending, asked[adapter_id].result(), strict=True):
                if verdict.status != FAILED:
                    cache.keep(key, verdict.to_dict())
                verdicts[index] = verdict
    return [verdict for verdict in verdicts if verdict is not None]



def _probe_digest(request: ParityRequest, cache: MeasurementCache,
                  probes: dict[tuple[str, str], ParityProbe]) -> str:
    """The digest of the request's probe, from the cache where it holds one, else of the probe built
    now (kept in ``probes``). A probe is a function of its case, the code that builds it (the
    reference's package, the harness's, the workload specification's) and the versions of what draws its numbers, so a ``run``
    whose verdicts are all cached builds none (building one imports torch: seconds per command)."""
    reference, case = request.reference, request.case
    key = "|".join(["probe", reference.family, case.name, json.dumps(case.workload, sort_keys=True, default=str),
                    _code_digest(type(reference)), _code_digest(ParityProbe), _code_digest(Workload),
                    *(f"{name} {_version(name)}" for name in ("numpy", "torch", "gymnasium")), rlcompare.__version__])
    found, data = cache.lookup(key)
    if found and isinstance(data, dict) and isinstance(data.get("digest"), str):
        return data["digest"]
    probe = probes[(reference.family, case.name)] = reference.build_probe(reference.case_workload(case))
    digest = probe.digest()
    cache.keep(key, {"digest": digest})
    return digest


def ask(request: ParityRequest, probe: ParityProbe, interpreter: Interpreter) -> ParityVerdict:
    """Run the adapter's ``parity_update`` on ``probe`` in a fresh interpreter and judge the answer."""
    return ask_many([(request, probe)], interpreter)[0]


def ask_many(asked: Sequence[tuple[ParityRequest, ParityProbe]], interpreter: Interpreter,
             keep: bool = True) -> list[ParityVerdict]:
    """Run one adapter's ``parity_update`` on each probe, all in one fresh interpreter, and judge each
    answer (an answer kept from an earlier asking is judged again: :func:`answer_many`). A probe the process
    never reached (it crashed or ran out of time on an earlier one) is asked again in an interpreter of its
    own, so that each failure is the probe's own."""
    return [verdict for verdict, _outcome in answer_many(asked, interpreter, keep=keep)]


def answer_many(asked: Sequence[tuple[ParityRequest, ParityProbe]], interpreter: Interpreter,
                answers: Path | None = None, keep: bool = True) -> list[tuple[ParityVerdict, ParityOutcome | None]]:
    """:func:`ask_many`, each verdict with the adapter's answer it judged (None where the probe failed).

    An answer is a function of the adapter's code, the framework it runs (the interpreter's identity), the
    harness's code and the probe: answers are kept in ``answers`` (default: ``parity-answers`` in the user's
    cache) and an answer kept there is judged again instead of asked again (``keep=False``: every probe is
    asked, as ``rlcompare parity --refresh`` wants). Two processes asking the same adapter's probes at once
    take turns, so the second reads what the first asked."""
    if not asked:
        return []
    if not keep:
        return _answer_fresh(asked, interpreter, [None] * len(asked))
    folder = answers if answers is not None else cache_dir() / ANSWERS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    # one adapter's probes (one interpreter runs them): what identifies an answer besides its probe, read once
    adapter = _adapter_digest(asked[0][0].adapter_class)
    common = "|".join(["answer", adapter, _code_digest(ParityProbe), interpreter.identity,
                       f"protocol {PARITY_PROTOCOL_VERSION}", rlcompare.__version__])
    keys = [hashlib.sha256(f"{common}|{probe.digest()}".encode()).hexdigest()[:32] for _, probe in asked]
    turn = hashlib.sha256((adapter + interpreter.identity).encode()).hexdigest()
    with open(folder / f"{turn[:24]}.lock", "a+", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found: list[tuple[ParityVerdict, ParityOutcome | None] | None] = []
        for (request, probe), key in zip(asked, keys, strict=True):
            outcome_path = folder / f"{key}.npz"
            seconds_path = Path(str(outcome_path) + ".seconds")
            found.append(_judged(request, probe, interpreter, outcome_path, float(seconds_path.read_text(encoding="utf-8")))
                         if outcome_path.is_file() and seconds_path.is_file() else None)
        missing = [index for index, answer in enumerate(found) if answer is None]
        fresh = _answer_fresh([asked[index] for index in missing], interpreter,
                              [folder / f"{keys[index]}.npz" for index in missing])
    for index, answer in zip(missing, fresh, strict=True):
        found[index] = answer
    return [answer for answer in found if answer is not None]


def _answer_fresh(asked: Sequence[tuple[ParityRequest, ParityProbe]], interpreter: Interpreter,
                  keep_at: Sequence[Path | None]) -> list[tuple[ParityVerdict, ParityOutcome | None]]:
    """Ask every probe in one fresh interpreter; a judged answer is copied to its ``keep_at`` path (if any)."""
    if not asked:
        return []
    adapter_class = asked[0][0].adapter_class
    name = f"{adapter_class.__module__}:{adapter_class.__qualname__}"
    timeout = PROBE_TIMEOUT_SECONDS * len(asked)
    with tempfile.TemporaryDirectory(prefix="rlcompare-parity-") as scratch:
        paths = []
        for number, (_, probe) in enumerate(asked):
            probe_path, outcome_path = Path(scratch) / f"probe{number}.npz", Path(scratch) / f"outcome{number}.npz"
            probe.save(probe_path)
            paths.append((probe_path, outcome_path))
        manifest = Path(scratch) / "manifest.json"
        manifest.write_text(json.dumps([[str(a), str(b)] for a, b in paths]), encoding="utf-8")
        try:
            status, output = _ask_process(interpreter.python, adapter_class, [name, "--batch", str(manifest)], timeout)
            ended = f"the probe's process exited with {status}: " + \
                (output.strip().splitlines() or ["no output"])[-1][:300]
        except subprocess.TimeoutExpired:
            ended = f"the probe took over {PROBE_TIMEOUT_SECONDS:g} s"
        answers: list[tuple[ParityVerdict, ParityOutcome | None]] = []
        for (request, probe), (_, outcome_path), keep_path in zip(asked, paths, keep_at, strict=True):
            error_path = Path(str(outcome_path) + ".error.json")
            seconds_path = Path(str(outcome_path) + ".seconds")
            if error_path.exists():
                error = json.loads(error_path.read_text(encoding="utf-8"))
                answers.append((_failed(request, probe, interpreter, f"parity_update raised {error.get('error')}"),
                                None))
            elif outcome_path.exists() and seconds_path.exists():
                answer = _judged(request, probe, interpreter, outcome_path,
                                 float(seconds_path.read_text(encoding="utf-8")))
                if keep_path is not None and answer[1] is not None:
                    _keep_answer(outcome_path, seconds_path, keep_path)
                answers.append(answer)
            elif len(asked) > 1:  # never reached: on its own
                answers.extend(_answer_fresh([(request, probe)], interpreter, [keep_path]))
            else:
                answers.append((_failed(request, probe, interpreter, ended), None))
    return answers


def _ask_process(python: str, adapter_class: type, argv: list[str], timeout: float) -> tuple[int, str]:
    """The parity worker's exit status and its error output: forked from a parent that imported the
    framework when warm starts are on (:mod:`rlcompare.pyenvs.warm`), else a fresh interpreter. Its
    environment is a one-thread run's (:func:`rlcompare.pyenvs.processes.process_environment`): the same
    pins for every framework, in an adapter's own environment that environment's interpreter first on the
    path, so the parent a driver's one-thread runs are forked from serves it too. The driver's import path
    stays (an outside adapter's package may be on it only), also in an adapter's own environment."""
    env = process_environment(os.environ, 1, None if python == sys.executable else python, keep_import_path=True)
    if warm_start_requested():
        try:
            modules = framework_modules(adapter_class)
        except Exception:  # noqa: BLE001 - an odd plugin class: its probe starts cold
            modules = ()
        done = run_module(python, WORKER_MODULE, argv, modules, timeout, env=env)
        if done is not None:
            return done
    cold = subprocess.run([python, "-m", WORKER_MODULE, *argv], capture_output=True, text=True, timeout=timeout,
                          check=False, env=env)
    return cold.returncode, cold.stderr


def _keep_answer(outcome_path: Path, seconds_path: Path, keep_path: Path) -> None:
    """Copy an answer (and its CPU seconds) into the kept answers; whole files only (written, then renamed)."""
    partial = keep_path.with_name(keep_path.name + ".partial")
    shutil.copyfile(outcome_path, partial)
    Path(str(keep_path) + ".seconds").write_text(seconds_path.read_text(encoding="utf-8"), encoding="utf-8")
    partial.replace(keep_path)


def _judged(request: ParityRequest, probe: ParityProbe, interpreter: Interpreter, outcome_path: Path,
            seconds: float) -> tuple[ParityVerdict, ParityOutcome | None]:
    try:
        outcome = ParityOutcome.load(outcome_path)
    except ParityError as error:
        return _failed(request, probe, interpreter, str(error)), None
    verdict = judge(request.reference, request.case, probe, outcome, request.adapter_id, interpreter.versions,
                    request.declared)
    return ParityVerdict.from_dict({**verdict.to_dict(), "notes": [
        *verdict.notes, f"probe answered in {seconds:.1f} s of CPU (the first of an adapter's with its import)"]}), \
        outcome


def _failed(request: ParityRequest, probe: ParityProbe, interpreter: Interpreter, reason: str) -> ParityVerdict:
    return ParityVerdict(request.adapter_id, request.reference.family, request.case.name, FAILED, reason=reason,
                         versions=interpreter.versions, probe_digest=probe.digest())


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _declared(adapter_class: type[Adapter], reference: ReferenceUpdate, workload: Workload) -> frozenset[str]:
    """The variants ``adapter_class`` declares on ``workload`` (none where fidelity() fails: the
    conformance kit reports that on its own)."""
    try:
        return declared_variants(reference, adapter_class().fidelity(workload))
    except Exception:  # noqa: BLE001 - an adapter's bug is reported by the kit, not here
        return frozenset()


def _adapter_digest(adapter_class: type) -> str:
    """Digest of an adapter's code: its package's, and that of every class it derives from outside rlcompare
    (an outside adapter that subclasses a built-in one answers with the built-in's parity code)."""
    owners = [cls for cls in adapter_class.__mro__ if cls.__module__.split(".")[0] not in ("rlcompare", "builtins", "abc")]
    return hashlib.sha256("".join(_code_digest(cls) for cls in owners or [adapter_class]).encode()).hexdigest()[:12]


def _code_digest(cls: type) -> str:
    """Digest of the sources that define ``cls``: every module of the package its module belongs to
    (an adapter's parity code lives beside its class), or the module alone when it is top-level. A
    change to any of them asks again."""
    module = sys.modules.get(cls.__module__)
    digest = hashlib.sha256(cls.__qualname__.encode())
    path = Path(getattr(module, "__file__", None) or "")
    if not path.is_file():
        return digest.hexdigest()[:12]
    package = "." in cls.__module__ or path.name == "__init__.py"
    for source in sorted(path.parent.glob("*.py")) if package else [path]:
        digest.update(source.name.encode())
        digest.update(source.read_bytes())
    return digest.hexdigest()[:12]
