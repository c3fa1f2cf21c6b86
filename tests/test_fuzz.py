"""Property-based fuzzing of every input surface: workload files, weights files, registry entries and
the command line. Whatever the input, the answer is a result or one line naming the problem (exit
0 or 2), never a traceback.

``RLCOMPARE_FUZZ_EXAMPLES`` raises the number of examples per property (the default keeps CI quick;
a campaign runs thousands)."""

from __future__ import annotations

import contextlib
import io
import math
import os
from pathlib import Path
from typing import Any

import pytest
import tomli_w
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlcompare.cli.main import main
from rlcompare.errors import RLCompareError
from rlcompare.registry.entries import InvalidFrameworkEntryError, framework_entry_from_dict, unpublished_entry
from rlcompare.registry.loading import load_builtin_entries
from rlcompare.scoring.profiles import load_weights_file
from rlcompare.spec.builtin_families import BUILTIN_FAMILIES
from rlcompare.spec.workload import Workload, load_workload_file, workload_from_dict
from tests.conftest import TINY_WORKLOAD

EXAMPLES = int(os.environ.get("RLCOMPARE_FUZZ_EXAMPLES", "60"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

# -- value strategies ---------------------------------------------------------------------------------

scalars = st.one_of(
    st.booleans(), st.integers(-(2**63), 2**63 - 1), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40), st.sampled_from(["PPO", "DQN", "CartPole-v1", "auto", "tanh", "async", "", "unknown"]),
    st.integers(-3, 10**20).filter(lambda n: abs(n) < 2**63),
)
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(st.text(max_size=12), inner, max_size=4)),
                      max_leaves=12)
WORKLOAD_KEYS = ["id", "description", "env", "env_kwargs", "algorithm", "env_steps", "seeds", "parallelism",
                 "network", "hyperparameters", "evaluation", "success_threshold", "spec_version"]
NESTED_KEYS = ["envs_per_worker", "workers", "mode", "threads_per_worker", "hidden_sizes", "activation",
               "learning_rate", "rollout_steps", "interval_steps", "episodes", "deterministic", "step_cost_ms",
               "train_every", "entropy_coef", "gamma", "buffer_size"]


def _toml(data: dict[str, Any]) -> bytes | None:
    """TOML text of ``data``, or None when TOML cannot express it (NaN keys, None...)."""
    try:
        return tomli_w.dumps(data).encode("utf-8")
    except (TypeError, ValueError):
        return None


def _one_line(error: BaseException) -> None:
    text = str(error)
    assert text and "\n" not in text and "Traceback" not in text and len(text) < 2_000, text


@st.composite
def workload_documents(draw: st.DrawFn) -> dict[str, Any]:
    """A valid tiny workload with some fields replaced, removed or added, at any depth."""
    import tomllib

    data = tomllib.loads(TINY_WORKLOAD)
    for _ in range(draw(st.integers(1, 4))):
        action = draw(st.sampled_from(["set", "drop", "nested"]))
        key = draw(st.sampled_from(WORKLOAD_KEYS) | st.text(min_size=1, max_size=10))
        if action == "set":
            data[key] = draw(values)
        elif action == "drop":
            data.pop(key, None)
        else:
            section = draw(st.sampled_from(["parallelism", "network", "hyperparameters", "evaluation", "env_kwargs"]))
            table = data.get(section) if isinstance(data.get(section), dict) else {}
            table[draw(st.sampled_from(NESTED_KEYS))] = draw(values)
            data[section] = table
    return data


# -- workloads ----------------------------------------------------------------------------------------


@FUZZ
@given(document=workload_documents())
def test_any_workload_document_loads_or_names_its_problem(document: dict[str, Any], tmp_path: Path) -> None:
    text = _toml(document)
    if text is None:
        return
    path = tmp_path / "w.toml"
    path.write_bytes(text)
    try:
        workload = load_workload_file(path)
    except RLCompareError as error:
        assert error.exit_status == 2
        _one_line(error)
        return
    assert isinstance(workload, Workload)
    assert 0 < workload.env_steps <= 10**12 and 0 < workload.seeds <= 1000
    assert workload.parallelism.total_envs <= 512
    for name, value in workload.hyperparameters.model_dump().items():
        if isinstance(value, float):
            assert math.isfinite(value), name


@FUZZ
@given(raw=st.binary(max_size=600))
def test_any_bytes_as_a_workload_file_are_refused_in_one_line(raw: bytes, tmp_path: Path) -> None:
    path = tmp_path / "w.toml"
    path.write_bytes(raw)
    try:
        load_workload_file(path)
    except RLCompareError as error:
        _one_line(error)


@FUZZ
@given(data=st.dictionaries(st.text(max_size=15), values, max_size=6) | values)
def test_any_data_as_a_workload_spec_is_valid_or_one_line(data: Any) -> None:
    try:
        workload_from_dict(data, "fuzz")
    except RLCompareError as error:
        _one_line(error)


# -- weights files --------------------------------------------------------------------------------------

CRITERIA_IDS = ["final_return", "throughput", "glue_lines", "release_age", "nope"]


@FUZZ
@given(document=st.dictionaries(st.sampled_from(["base", "name", "categories", "weights", "extra"]),
                                values | st.dictionaries(st.sampled_from([*CRITERIA_IDS, "performance",
                                                                          "development"]), scalars, max_size=4),
                                max_size=4))
def test_any_weights_file_gives_a_profile_or_one_line(document: dict[str, Any], tmp_path: Path) -> None:
    from rlcompare_criteria.development import CRITERIA as DEVELOPMENT
    from rlcompare_criteria.performance import CRITERIA as PERFORMANCE

    criteria = {c.id: c for c in (*PERFORMANCE, *DEVELOPMENT)}
    text = _toml(document)
    if text is None:
        return
    path = tmp_path / "weights.toml"
    path.write_bytes(text)
    try:
        profile = load_weights_file(path, criteria)
    except RLCompareError as error:
        _one_line(error)
        return
    weights = profile.resolve(criteria)
    assert all(w >= 0 and math.isfinite(w) for w in weights.values())
    assert sum(weights.values()) == pytest.approx(1.0) or sum(weights.values()) == 0


# -- registry entries ---------------------------------------------------------------------------------


@FUZZ
@given(data=st.data())
def test_any_change_to_a_registry_entry_validates_or_names_the_fields(data: st.DataObject) -> None:
    entries = load_builtin_entries()
    entry = data.draw(st.sampled_from(entries))
    document = entry.model_dump(mode="json")
    for _ in range(data.draw(st.integers(1, 3))):
        key = data.draw(st.sampled_from(sorted(document)) | st.text(min_size=1, max_size=8))
        action = data.draw(st.sampled_from(["value", "fact", "drop", "evidence"]))
        if action == "drop":
            document.pop(key, None)
        elif action == "fact" or not isinstance(document.get(key), dict):
            document[key] = data.draw(values)
        elif action == "value":
            document[key] = {**document[key], "value": data.draw(values)}
        else:
            document[key] = {**document[key], "evidence": data.draw(values)}
    try:
        framework_entry_from_dict(document, "fuzz")
    except InvalidFrameworkEntryError as error:
        _one_line(error)


@FUZZ
@given(framework_id=st.text(max_size=12), name=st.text(max_size=12), domain=st.text(max_size=8) | st.sampled_from(
    ["control", "llm"]), where=st.text(max_size=20), facts=st.dictionaries(st.text(max_size=10) | st.sampled_from(["id", "repository", "licence", "lora"]),
                                                     values, max_size=3))
def test_any_unpublished_entry_validates_or_names_the_fields(framework_id: str, name: str, domain: str,
                                                            where: str, facts: dict[str, Any]) -> None:
    try:
        entry = unpublished_entry(framework_id, name, domain, where=where, source="fuzz", facts=facts)
    except InvalidFrameworkEntryError as error:
        _one_line(error)
        assert str(error).startswith("fuzz: ")
    else:
        assert (entry.id, entry.domain, entry.value("repository")) == (framework_id, domain, "none")


# -- the command line -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Files the generated command lines point at: a good store, another application's database,
    a workload, a directory, a file of random bytes."""
    import sqlite3

    from tests.test_criteria_support import run_record, workload_spec, write_store

    root = tmp_path_factory.mktemp("fuzz-inputs")
    store = write_store(root / "good.db", [(run_record(workload_spec("w"), a, s, final_return=float(s),
                                                       throughput=100.0 + s), []) for a in ("a", "b") for s in (0, 1)])
    foreign = root / "app.db"
    connection = sqlite3.connect(foreign)
    connection.execute("CREATE TABLE users (name TEXT)")
    connection.close()
    workload = root / "w.toml"
    workload.write_text(TINY_WORKLOAD, encoding="utf-8")
    noise = root / "noise.bin"
    noise.write_bytes(os.urandom(256))
    return {"store": str(store), "foreign": str(foreign), "workload": str(workload), "dir": str(root),
            "noise": str(noise), "missing": str(root / "missing" / "x.db"), "out": str(root / "out")}


COMMANDS = ["list", "plan", "run", "score", "report", "frameworks", "show", ""]
OPTIONS = ["--suite", "--workload", "--adapters", "--seeds", "--store", "--jobs", "--timeout", "--resume",
           "--json", "--where", "--profile", "--weights", "--reps", "--seed", "--format", "--out", "--max-memory",
           "--backend", "--version", "--remeasure"]


@st.composite
def command_lines(draw: st.DrawFn, inputs: dict[str, str]) -> list[str]:
    argv = [draw(st.sampled_from(COMMANDS))]
    if argv[0] == "list":
        argv.append(draw(st.sampled_from(["adapters", "criteria", "workloads", "suites", "formats", "x"])))
    if argv[0] == "show":
        argv += ["framework", draw(st.sampled_from(["rllib", "trl", "nope", ""]) | st.text(max_size=8))]
    for _ in range(draw(st.integers(0, 4))):
        argv.append(draw(st.sampled_from(OPTIONS)))
        argv.append(draw(
            st.sampled_from([*inputs.values(), "quick", "sb3", "sb3,sb3", "fake", "0", "-1", "3", "1e9", "2G", "md",
                             "html,md", "balanced", "synchronization=asynchronous", "weight_sync=nccl-broadcast",
                             "survey=hf-2026", "KEY", "=", "", "local"])
            | st.text(max_size=12)
            | st.integers(-5, 10**12).map(str)))
    return [part for part in argv if part != ""] if draw(st.booleans()) else argv


def test_generated_command_lines_exit_0_or_2_in_at_most_two_lines(inputs: dict[str, str],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Training is not what is fuzzed here: a command line that passes every check gets an empty
    matrix instead of runs (the runner's own tests train for real). The driver is what `run` drives,
    whatever its backend (LocalRunner is the driver on the local one). Nor is measuring: the
    development criteria's measurements in fresh interpreters (cold imports and public APIs of every
    installed framework, minutes on a first scoring) answer as a measurement that could not be made,
    so those criteria score the adapters as missing with that reason (test_criteria_development and
    test_environments measure for real)."""
    from rlcompare_criteria import fresh_interpreter

    from rlcompare.execution.driver import Driver, RunSummary

    monkeypatch.setattr(Driver, "run", lambda self, plan, resume=False: RunSummary())
    monkeypatch.setattr(fresh_interpreter, "run_in",
                        lambda installation, script, names: (None, "not measured while fuzzing the command line"))
    monkeypatch.setenv("RLCOMPARE_DISABLE_PLUGIN_AUTOLOAD", "1")

    tried: list[list[str]] = []

    @FUZZ
    @given(argv=command_lines(inputs))
    def check(argv: list[str]) -> None:
        tried.append(argv)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = main(argv)
            except SystemExit as exit_:  # argparse's own exits (--help, usage errors)
                status = exit_.code if isinstance(exit_.code, int) else 2
        lines = [line for line in err.getvalue().splitlines() if line.strip() and not line.startswith("warning:")]
        assert status in (0, 2), (argv, status, err.getvalue())
        assert "Traceback" not in err.getvalue(), (argv, err.getvalue())
        if status == 2:
            assert 1 <= len(lines) <= 2, (argv, err.getvalue())

    check()
    assert len(tried) >= EXAMPLES  # every generated command line was really run


@st.composite
def env_command_lines(draw: st.DrawFn) -> list[str]:
    """``env list|build|remove [ADAPTER] [options]``; ``build`` is only ever drawn with something
    that must refuse it (--stale, or an adapter that does not exist), so no environment is built."""
    action = draw(st.sampled_from(["list", "build", "remove", "prune", ""]))
    argv = ["env", action]
    adapter = draw(st.sampled_from(["", "nope", "tinyenb", "sb", "-", "sample-factory-x"])
                   | st.text(max_size=10).filter(lambda text: text.strip() not in ("", "sb3", "tianshou", "rllib")))
    options = draw(st.lists(st.sampled_from(["--stale", "--refresh", "--json", "--jobs", "-x"]), max_size=3))
    if action == "build" and "--stale" not in options and adapter in ("", "-"):
        options.append("--stale")
    return [part for part in [*argv, adapter, *options] if part != ""]


def test_generated_env_command_lines_exit_0_or_2_in_at_most_two_lines_and_build_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLCOMPARE_CACHE_DIR", str(tmp_path / "cache"))
    tried: list[list[str]] = []

    @FUZZ
    @given(argv=env_command_lines())
    def check(argv: list[str]) -> None:
        tried.append(argv)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = main(argv)
            except SystemExit as exit_:  # argparse's own exits (usage errors)
                status = exit_.code if isinstance(exit_.code, int) else 2
        lines = [line for line in err.getvalue().splitlines() if line.strip() and not line.startswith("#")]
        assert status in (0, 2), (argv, status, err.getvalue())
        assert "Traceback" not in err.getvalue(), (argv, err.getvalue())
        if status == 2:
            assert 1 <= len(lines) <= 2, (argv, err.getvalue())
        built = tmp_path / "cache" / "environments"
        assert not built.exists() or not any(built.iterdir()), argv  # nothing written

    check()
    assert len(tried) >= EXAMPLES


# -- algorithm families ---------------------------------------------------------------------------------

FAMILY_NAMES = [family.name for family in BUILTIN_FAMILIES]
HYPERPARAMETER_NAMES = sorted({name for family in BUILTIN_FAMILIES for name in family.hyperparameters.model_fields})


@FUZZ
@given(algorithm=st.sampled_from(FAMILY_NAMES) | st.sampled_from(["ppo", "PP0", "EE", "E S", "CEM", ""]) | st.text(max_size=70),
       hyperparameters=st.dictionaries(st.sampled_from(HYPERPARAMETER_NAMES) | st.text(max_size=12), values, max_size=5))
def test_any_algorithm_and_hyperparameters_validate_against_the_family_or_name_the_field(
        algorithm: str, hyperparameters: dict[str, Any]) -> None:
    from rlcompare.spec.builtin_families import builtin_families

    family = builtin_families().get(algorithm)
    # each family on an environment it can train on (a language family on the harness's language task:
    # GRPO naming CartPole is refused for its env, tests/test_language.py)
    env = "rlcompare/DigitAddition-v0" if family is not None and family.task == "language" else "CartPole-v1"
    data = {"id": "fuzz", "env": env, "algorithm": algorithm, "env_steps": 1000,
            "hyperparameters": hyperparameters}
    try:
        workload = workload_from_dict(data, "fuzz")
    except RLCompareError as error:
        _one_line(error)
        text = str(error)
        if algorithm not in builtin_families():
            assert "field 'algorithm'" in text
            if algorithm in ("ppo", "PP0"):
                assert "did you mean 'PPO'?" in text
        else:
            assert "field 'hyperparameters" in text, text
        return
    family = builtin_families()[algorithm]
    assert isinstance(workload.hyperparameters, family.hyperparameters)
    assert set(hyperparameters) <= set(family.hyperparameters.model_fields) | {"algorithm"}
    for name, value in workload.hyperparameters.model_dump().items():
        assert getattr(workload.hyperparameters, name) == value
    # what a run stores reads back as the same workload, digest and all
    again = workload_from_dict(workload.to_dict(), "stored")
    assert again.digest == workload.digest and again.hyperparameters == workload.hyperparameters
    assert workload.rollout_env_steps > 0
