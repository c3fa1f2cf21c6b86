"""Algorithm families as plugins: the built-ins behind the hook, an outside package adding one,
workloads validated against the registered set, refusals by action space, stable digests."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import Field

from rlcompare.adapter import Capabilities
from rlcompare.errors import InvalidWorkloadError, PluginError
from rlcompare.harness.protocol import Origin
from rlcompare.harness.validity import BudgetTolerance
from rlcompare.plugins.manager import BUILTIN_PLUGINS, build_plugin_manager
from rlcompare.plugins.register import Register
from rlcompare.spec.builtin_families import BUILTIN_FAMILIES
from rlcompare.spec.builtin_workloads import builtin_workloads
from rlcompare.spec.families import AlgorithmFamily, CanonicalHyperparameters
from rlcompare.spec.workload import workload_from_dict
from tests.conftest import ROOT, _with_path, run_cli

ALGO_PLUGINS = ROOT / "tests" / "plugins" / "algos"

#: Digests of the built-in workloads as stored by runs made before families became plugins
#: (rlcompare 845ac37). A stored run is matched to its workload by this digest: it must not move.
#: Moved on purpose once since: the PPO and DQN workloads' evaluation intervals became multiples of
#: their update sizes (5,000 -> 5,120, 10,000 -> 10,240: every adapter evaluated on one grid of update
#: boundaries), so their earlier runs are stale, as a changed workload's runs must be.
STORED_DIGESTS = {
    "acrobot-dqn": "4c97b32baaf910e2",
    "calibrated-ppo-w1": "bb50c5a8ee4d25f6",
    "calibrated-ppo-w2": "235b305dd1f10414",
    "calibrated-ppo-w4": "2852ab15cbb1b614",
    "cartpole-a2c": "cbf778f895369e8e",
    "cartpole-dqn": "ddfa9cc7b5403bab",
    "cartpole-ppo": "b9141dd8714e7aad",
    "cartpole-ppo-quick": "76ef66a01eff84ca",
    "pendulum-sac": "631710e4525f8c4e",
}
PPO_QUICK_JSON_PREFIX = (
    '{"spec_version": 1, "id": "cartpole-ppo-quick", "description": "CartPole-v1 PPO, 4 in-process envs; '
)


@pytest.fixture
def cem_plugin(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Install the outside package (family CEM, adapter cem, workload cartpole-cem) by entry point,
    for this process and every process it starts."""
    monkeypatch.setenv("PYTHONPATH", _with_path(ALGO_PLUGINS))
    monkeypatch.syspath_prepend(str(ALGO_PLUGINS))
    monkeypatch.delenv("RLCOMPARE_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    yield ALGO_PLUGINS


def _cem(**hyperparameters: object) -> dict:
    return {"id": "cem", "env": "CartPole-v1", "algorithm": "CEM", "env_steps": 1000,
            "hyperparameters": hyperparameters}


# -- built-ins -------------------------------------------------------------------------------------


def test_builtin_families_come_through_the_hook_like_any_plugin() -> None:
    plugins = build_plugin_manager(autoload=False)
    assert plugins.errors == []
    assert set(plugins.register.algorithms) == {"PPO", "A2C", "PG", "DQN", "SAC", "TD3", "DDPG", "ES", "GRPO"}
    origin = plugins.origin("algorithm", "ES")
    assert (origin.plugin, origin.distribution) == ("rlcompare.builtins.families", "rlcompare")
    assert plugins.algorithms["ES"].kind == "evolutionary" and plugins.algorithms["PPO"].kind == "gradient"


def test_builtins_are_known_without_any_plugin_manager() -> None:
    code = ("import sys\nfrom rlcompare.spec.workload import workload_from_dict\n"
            "w = workload_from_dict({'id': 'x', 'env': 'CartPole-v1', 'algorithm': 'ES', 'env_steps': 10,"
            " 'hyperparameters': {'sigma': 0.5}}, 't')\n"
            "print(w.hyperparameters.sigma, 'rlcompare.plugins.manager' in sys.modules)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                            env={"PYTHONPATH": str(ROOT), "RLCOMPARE_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0.5", "False"]  # built-ins needed no plugin manager


def test_stored_digests_and_json_of_existing_workloads_do_not_change() -> None:
    workloads = {w.id: w for w in builtin_workloads()}
    assert {key: workloads[key].digest for key in STORED_DIGESTS} == STORED_DIGESTS
    quick = workloads["cartpole-ppo-quick"]
    assert quick.json_text.startswith(PPO_QUICK_JSON_PREFIX)
    assert "algorithm" not in quick.to_dict()["hyperparameters"]
    # read back from what a run stored, the same workload with the same digest
    assert workload_from_dict(quick.to_dict(), "stored").digest == STORED_DIGESTS["cartpole-ppo-quick"]


def test_old_tag_inside_the_hyperparameters_table_is_accepted_only_for_its_own_algorithm() -> None:
    ppo = {"id": "p", "env": "CartPole-v1", "algorithm": "PPO", "env_steps": 100}
    tagged = workload_from_dict({**ppo, "hyperparameters": {"algorithm": "PPO", "epochs": 3}}, "t")
    assert tagged.digest == workload_from_dict({**ppo, "hyperparameters": {"epochs": 3}}, "t").digest
    with pytest.raises(InvalidWorkloadError, match="field 'hyperparameters.algorithm' is not a known setting"):
        workload_from_dict({**ppo, "hyperparameters": {"algorithm": "DQN"}}, "t")


def test_unknown_algorithm_names_the_closest_family() -> None:
    with pytest.raises(InvalidWorkloadError) as caught:
        workload_from_dict({"id": "x", "env": "CartPole-v1", "algorithm": "PP0", "env_steps": 10,
                            "hyperparameters": {}}, "w.toml")
    assert str(caught.value) == ("w.toml: field 'algorithm': unknown algorithm 'PP0'; did you mean 'PPO'? "
                                 "(see `rlcompare list algorithms`)")


def test_es_hyperparameter_errors_keep_their_field_path() -> None:
    base = {"id": "x", "env": "CartPole-v1", "algorithm": "ES", "env_steps": 10}
    with pytest.raises(InvalidWorkloadError, match=r"field 'hyperparameters.sigm' is not a known setting; "
                                                   r"did you mean 'sigma'\?"):
        workload_from_dict({**base, "hyperparameters": {"sigm": 0.1}}, "t")
    with pytest.raises(InvalidWorkloadError, match=r"field 'hyperparameters.antithetic': Input should be a valid "
                                                   r"boolean \(got 1\)"):
        workload_from_dict({**base, "hyperparameters": {"antithetic": 1}}, "t")


def test_es_budget_tolerance_is_one_generation_of_full_episodes() -> None:
    es = workload_from_dict({"id": "x", "env": "CartPole-v1", "algorithm": "ES", "env_steps": 1000,
                             "hyperparameters": {"population_size": 8, "episodes_per_candidate": 2}}, "t")
    assert BudgetTolerance.for_workload(es) == BudgetTolerance("generation", 8 * 2 * 500, 8 * 2 * 500)
    short = workload_from_dict({**es.to_dict(), "env_kwargs": {"max_episode_steps": 50}}, "t")
    assert BudgetTolerance.for_workload(short).overshoot_steps == 8 * 2 * 50
    from rlcompare_evotorch import EvoTorchAdapter

    odd = workload_from_dict({**es.to_dict(), "hyperparameters": {"population_size": 7}}, "t")
    # mirrored sampling rounds the population up to 8: the adapter's generation is that one
    assert EvoTorchAdapter().budget_tolerance(odd).overshoot_steps == 8 * 500


# -- an outside package ------------------------------------------------------------------------------


def test_outside_family_registers_through_its_entry_point(cem_plugin: Path) -> None:
    plugins = build_plugin_manager()
    assert plugins.errors == []
    assert "CEM" in plugins.algorithms
    origin = plugins.origin("algorithm", "CEM")
    assert (origin.plugin, origin.distribution, origin.version) == ("cemfw", "cemfw-rlcompare", "0.1")
    # the plugin's own workload names its own family: families are registered before workloads
    assert plugins.workloads["cartpole-cem"].hyperparameters.population_size == 4

    families = plugins.algorithms
    workload = workload_from_dict(_cem(elite_fraction=0.5), "t", families)
    assert workload.hyperparameters.elite_fraction == 0.5 and workload.hyperparameters.population_size == 16
    assert workload.family.kind == "evolutionary"
    assert BudgetTolerance.for_workload(workload) == BudgetTolerance("generation", 16 * 500, 16 * 500)
    with pytest.raises(InvalidWorkloadError, match="unknown algorithm 'CEN'; did you mean 'CEM'"):
        workload_from_dict({**_cem(), "algorithm": "CEN"}, "t", families)
    with pytest.raises(InvalidWorkloadError, match=r"field 'hyperparameters.elite_fractio' is not a known setting; "
                                                   r"did you mean 'elite_fraction'\?"):
        workload_from_dict(_cem(elite_fractio=0.5), "t", families)
    with pytest.raises(InvalidWorkloadError, match=r"field 'hyperparameters.elite_fraction': Input should be less "
                                                   r"than or equal to 1 \(got 2.0\)"):
        workload_from_dict(_cem(elite_fraction=2.0), "t", families)


def test_outside_family_is_refused_where_its_action_spaces_do_not_reach(cem_plugin: Path) -> None:
    plugins = build_plugin_manager()
    adapter = plugins.adapter("cem")  # declares both action spaces itself; the family needs discrete
    pendulum = workload_from_dict({**_cem(), "env": "Pendulum-v1"}, "t", plugins.algorithms)
    assert adapter.capabilities().refusal(pendulum, "continuous") == (
        "CEM runs on discrete action spaces only, Pendulum-v1 has continuous")
    assert adapter.capabilities().refusal(workload_from_dict(_cem(), "t", plugins.algorithms), "discrete") is None


def test_family_action_spaces_apply_where_the_adapter_does_not_narrow_them() -> None:
    dqn = workload_from_dict({"id": "d", "env": "Pendulum-v1", "algorithm": "DQN", "env_steps": 10,
                              "hyperparameters": {}}, "t")
    open_adapter = Capabilities(algorithms=frozenset({"DQN"}))
    assert open_adapter.refusal(dqn, "continuous") == "DQN runs on discrete action spaces only, Pendulum-v1 has continuous"
    # an adapter's own narrowing still wins (it may know its framework supports less)
    narrowed = Capabilities(algorithms=frozenset({"ES"}), algorithm_action_spaces={"ES": frozenset({"continuous"})})
    es = workload_from_dict({"id": "e", "env": "CartPole-v1", "algorithm": "ES", "env_steps": 10,
                             "hyperparameters": {}}, "t")
    assert narrowed.refusal(es, "discrete") == "ES runs on continuous action spaces only, CartPole-v1 has discrete"
    only_continuous = Capabilities(algorithms=frozenset({"DQN"}), action_spaces=frozenset({"continuous"}))
    assert only_continuous.refusal(dqn, "continuous") == (
        "DQN acts in discrete action spaces, this adapter in continuous only")


def test_every_cli_path_that_reads_workloads_sees_the_outside_family(cem_plugin: Path, tmp_path: Path) -> None:
    workload = tmp_path / "cem.toml"
    workload.write_text(textwrap.dedent("""
        env = "CartPole-v1"
        algorithm = "CEM"
        env_steps = 400
        seeds = 1
        [hyperparameters]
        population_size = 4
        [evaluation]
        interval_steps = 200
        episodes = 2
    """))
    env = {"PYTHONPATH": _with_path(ALGO_PLUGINS)}
    listing = run_cli(["list", "algorithms", "--json"], env=env)
    assert listing.returncode == 0, listing.stderr
    rows = {row["name"]: row for row in json.loads(listing.stdout)}
    assert rows["CEM"]["distribution"] == "cemfw-rlcompare" and rows["CEM"]["kind"] == "evolutionary"
    assert rows["ES"]["hyperparameters"]["sigma"]["default"] == 0.1

    plan = run_cli(["plan", "--workload", str(workload), "--json"], env=env)
    assert plan.returncode == 0, plan.stderr
    planned = json.loads(plan.stdout)
    assert [run["adapter"] for run in planned["runs"]] == ["cem"]
    assert {refused["adapter"] for refused in planned["refused"]} >= {"sb3", "evotorch"}

    store = tmp_path / "runs.db"
    run = run_cli(["run", "--workload", str(workload), "--adapters", "cem", "--store", str(store)], env=env)
    assert run.returncode == 0, run.stdout + run.stderr  # the worker read the workload with the family
    score = run_cli(["score", "--store", str(store), "--json"], env=env)
    assert score.returncode == 0, score.stderr
    assert "cem" in score.stdout

    # without the package, the same file names what is missing, with the listing command
    bare = run_cli(["plan", "--workload", str(workload)], env={"PYTHONPATH": str(ROOT)})
    assert bare.returncode == 2
    assert "field 'algorithm': unknown algorithm 'CEM'" in bare.stderr and "rlcompare list algorithms" in bare.stderr


# -- registration checks -----------------------------------------------------------------------------


class _NoDefault(CanonicalHyperparameters):
    rate: float = Field(description="no default")


class _Undocumented(CanonicalHyperparameters):
    rate: float = 0.1


def _family(**changes: object) -> dict:
    fields = {"name": "NEW", "description": "a new family", "hyperparameters": CanonicalHyperparameters,
              "action_spaces": frozenset({"discrete"}), "kind": "gradient", "granularity": "update",
              "budget_grain": lambda workload: 1}
    return {**fields, **changes}


@pytest.mark.parametrize(("changes", "message"), [
    ({"name": "bad name"}, "name must match"),
    ({"description": "two\nlines"}, "description must be one non-empty line"),
    ({"hyperparameters": dict}, "must be a pydantic model class"),
    ({"hyperparameters": _NoDefault}, "hyperparameter 'rate' has no default"),
    ({"hyperparameters": _Undocumented}, "hyperparameter 'rate' has no description"),
    ({"action_spaces": frozenset({"pixels"})}, "action_spaces must be a non-empty frozenset"),
    ({"kind": "bayesian"}, "kind must be one of gradient, evolutionary"),
    ({"granularity": "epoch"}, "granularity must be one of"),
])
def test_a_family_that_breaks_the_contract_is_refused_naming_the_field(changes: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        AlgorithmFamily(**_family(**changes))


def test_add_algorithm_refuses_other_objects_naming_the_plugin() -> None:
    register = Register(current=Origin("someplugin"))
    with pytest.raises(PluginError, match="plugin 'someplugin' failed: add_algorithm expects"):
        register.add_algorithm({"name": "X"})  # type: ignore[arg-type]
    assert register.algorithms == {}


def test_a_plugin_cannot_take_over_a_builtin_family(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "ppo_again.py").write_text(textwrap.dedent("""
        from rlcompare import hookimpl
        from rlcompare.spec.families import AlgorithmFamily, CanonicalHyperparameters

        @hookimpl
        def rlcompare_register_algorithms(register):
            register.add_algorithm(AlgorithmFamily("PPO", "another PPO", CanonicalHyperparameters,
                                                   frozenset({"discrete"}), "gradient", "update", lambda w: 1))
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    plugins = build_plugin_manager(builtins=(*BUILTIN_PLUGINS, "ppo_again"), autoload=False)
    [error] = [e for e in plugins.errors if "'PPO'" in str(e)]
    assert "registered by both 'rlcompare.builtins.families' (rlcompare 0.1.0) and 'ppo_again'" in str(error)
    # the built-in stays what workloads validate against
    assert plugins.algorithms["PPO"] is next(f for f in BUILTIN_FAMILIES if f.name == "PPO")
    workload = workload_from_dict({"id": "p", "env": "CartPole-v1", "algorithm": "PPO", "env_steps": 10,
                                   "hyperparameters": {"epochs": 2}}, "t", plugins.algorithms)
    assert workload.hyperparameters.epochs == 2


def test_families_are_validation_context_not_process_state(cem_plugin: Path) -> None:
    with_cem = build_plugin_manager()
    cem = workload_from_dict(_cem(), "t", with_cem.algorithms)
    build_plugin_manager(autoload=False)  # a later plugin manager changes nothing already validated
    assert cem.family is with_cem.algorithms["CEM"]
    assert BudgetTolerance.for_workload(cem.with_seeds(1)).granularity == "generation"
    # nor what a validation without those families accepts
    with pytest.raises(InvalidWorkloadError, match="unknown algorithm 'CEM'"):
        workload_from_dict(_cem(), "t")
    assert set(build_plugin_manager(autoload=False).algorithms) == {"PPO", "A2C", "PG", "DQN", "SAC", "TD3", "DDPG", "ES", "GRPO"}


# -- scoring and reports ------------------------------------------------------------------------------


def test_an_es_workload_is_scored_and_reported_next_to_gradient_ones(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from rlcompare.cli import report as reporting_cli
    from rlcompare.cli import score as score_cli
    from rlcompare.cli.main import main
    from tests.reporting_support import REPORT_BUILTINS
    from tests.test_criteria_support import curve, run_record, workload_spec, write_store

    ppo = workload_spec("cart-ppo", threshold=100.0)
    es = {**workload_spec("cart-es", algorithm="ES", threshold=100.0), "hyperparameters": {"population_size": 4}}
    runs = []
    for adapter, spec, speed in (("alpha", ppo, 1.0), ("beta", ppo, 2.0), ("alpha", es, 0.5)):
        for seed in range(3):
            runs.append((run_record(spec, adapter, seed, final_return=95.0 + seed, throughput=1000.0 * speed,
                                    startup=1.0, training=10.0 / speed),
                         curve([(0, 0.0, 10.0), (500, 1.0 / speed, 60.0), (1000, 2.0 / speed, 100.0 + seed)])))
    store = write_store(tmp_path / "runs.db", runs)
    plugins = lambda: build_plugin_manager(builtins=REPORT_BUILTINS, autoload=False)  # noqa: E731
    monkeypatch.setattr(score_cli, "load_plugins", plugins)
    monkeypatch.setattr(reporting_cli, "load_plugins", plugins)

    assert main(["score", "--store", str(store), "--json", "--reps", "100"]) == 0
    scored = json.loads(capsys.readouterr().out)
    assert {"cart-ppo", "cart-es"} <= set(json.dumps(scored).replace('"', " ").split())

    out = tmp_path / "report"
    assert main(["report", "--store", str(store), "--out", str(out), "--format", "md,csv", "--reps", "100"]) == 0
    text = (out / "rlcompare-report.md").read_text()
    assert "environment CartPole-v1, algorithm ES (evolutionary), budget 1,000 env steps" in text
    assert "environment CartPole-v1, algorithm PPO (gradient), budget 1,000 env steps" in text
    table = next(out.rglob("workloads.csv")).read_text().splitlines()
    assert table[0].split(",")[:5] == ["workload", "description", "env", "algorithm", "family"]
    assert any(line.startswith("cart-es,") and ",ES,evolutionary," in line for line in table)


@pytest.mark.parametrize("algorithm", ["PPO", "ES"])
def test_omitted_hyperparameters_are_the_familys_defaults(algorithm: str) -> None:
    base = {"id": "x", "env": "CartPole-v1", "algorithm": algorithm, "env_steps": 1_000}
    omitted = workload_from_dict(base, "t")
    empty = workload_from_dict({**base, "hyperparameters": {}}, "t")
    assert omitted.hyperparameters == empty.hyperparameters == omitted.family.hyperparameters()
    assert omitted.digest == empty.digest
