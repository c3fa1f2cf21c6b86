"""Scores that cannot be bent, in the plan and the kit: each situation reproduced by an outside package
on an entry point (tests/plugins/bend_*), driven through the command line in fresh interpreters.

- bend_grain: a PPO adapter declaring a generation grain (and one a rollout grain ten rollouts wide)
  is refused at plan time in one line; a finer declaration is planned and shown with its window.
- bend_padding: two identical adapters, one padding its fidelity report with six exact entries: the
  kit fails it naming them, and the fidelity criterion scores both the same.
- bend_glue: an adapter whose glue spans several modules, a benchmark baseline beside its package:
  the glue criteria count the whole package and only it; a folder named like its framework in the
  current directory shadows nothing in a run's worker or a parity probe's process.
- bend_show: a run that fails, whose traceback `rlcompare show run ID` prints.
- bend_unfaithful: an adapter with no runnable workload (most settings unsupported): the kit says so.
- the built-in workloads by id (`--workload ID`), and a linear policy (`hidden_sizes = []`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.test_conformance_kit import run_kit

PLUGINS = ROOT / "tests" / "plugins"
GRAIN, PADDING, GLUE = PLUGINS / "bend_grain", PLUGINS / "bend_padding", PLUGINS / "bend_glue"
SHOW, UNFAITHFUL = PLUGINS / "bend_show", PLUGINS / "bend_unfaithful"

TINY = """id = "tiny-ppo"
env = "CartPole-v1"
algorithm = "PPO"
env_steps = 1024
seeds = 1
[parallelism]
envs_per_worker = 2
[hyperparameters]
rollout_steps = 32
[evaluation]
interval_steps = 512
episodes = 2
"""


def _env(tmp_path: Path, *packages: Path, autoload: bool = True, own_cache: bool = False) -> dict[str, str]:
    """The commands' environment: ``packages`` on the path; the test run's measurement cache (each
    framework measured once a run), or with ``own_cache`` one of this test's own, where nothing
    measured or probed elsewhere may stand in for what this test must see measured here."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*(str(p) for p in packages), str(ROOT)])}
    if own_cache:
        env["RLCOMPARE_CACHE_DIR"] = str(tmp_path / "cache")
    env.pop("RLCOMPARE_DISABLE_PLUGIN_AUTOLOAD", None)
    if not autoload:
        env["RLCOMPARE_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    return env


def _cli(args: list[str], env: dict[str, str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rlcompare", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=timeout)


def _workload(tmp_path: Path, text: str = TINY, name: str = "tiny-ppo.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# -- the family sets the grain ------------------------------------------------------------------------


GRAIN_WORKLOAD = TINY.replace('id = "tiny-ppo"', 'id = "grain-ppo"').replace("env_steps = 1024", "env_steps = 20000") \
    .replace("envs_per_worker = 2", "envs_per_worker = 4").replace("rollout_steps = 32", "rollout_steps = 128") \
    .replace("interval_steps = 512", "interval_steps = 5120")


def test_a_ppo_adapter_declaring_a_generation_grain_is_refused_at_plan_time_in_one_line(tmp_path: Path) -> None:
    workload = _workload(tmp_path, GRAIN_WORKLOAD)
    env = _env(tmp_path, GRAIN)
    refused = _cli(["plan", "--workload", str(workload), "--adapters", "coarse-ppo"], env, tmp_path)
    assert refused.returncode == 2 and refused.stdout == "", refused.stdout + refused.stderr
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1, refused.stderr
    # names the adapter, the workload, the declared grain and the one PPO allows (one rollout of 4 x 128)
    assert "adapter 'coarse-ppo' cannot run workload 'grain-ppo'" in lines[0]
    assert "budget grain of generation, +-8000 env steps" in lines[0]
    assert "coarser than PPO allows (rollout, +-512 env steps)" in lines[0]

    # with every adapter: refused like any other refusal, the others planned with their windows
    plan = _cli(["plan", "--workload", str(workload), "--json"], env, tmp_path)
    assert plan.returncode == 0, plan.stderr
    data = json.loads(plan.stdout)
    reasons = {item["adapter"]: item["reason"] for item in data["refused"]}
    assert "+-8000 env steps" in reasons["coarse-ppo"]
    assert "rollout, +-5120 env steps" in reasons["wide-ppo"] and "more than 512" in reasons["wide-ppo"]
    planned = {run["adapter"] for run in data["runs"]}
    assert {"family-ppo", "fine-ppo"} <= planned and not {"coarse-ppo", "wide-ppo"} & planned
    pairs = {(pair["adapter"]): pair for pair in data["pairs"]}
    assert pairs["family-ppo"]["grain"]["declared"] == pairs["family-ppo"]["grain"]["allowed"] == {
        "granularity": "rollout", "overshoot_steps": 512, "count_gap_steps": 512}
    assert pairs["family-ppo"]["grain"]["window"] == [19488, 20512]
    assert pairs["fine-ppo"]["grain"]["declared"]["granularity"] == "step"
    assert pairs["fine-ppo"]["grain"]["window"] == [19744, 20256]
    assert pairs["coarse-ppo"]["refused"] and pairs["coarse-ppo"]["grain"] is None

    text = _cli(["plan", "--workload", str(workload)], env, tmp_path)
    assert "grain=rollout+-512" in text.stdout and "grain=step+-256" in text.stdout
    refusals = [line for line in text.stdout.splitlines() if line.startswith("refused\tadapter 'coarse-ppo'")]
    assert len(refusals) == 1 and "coarser than PPO allows" in refusals[0]


# -- one store: padding, glue and a failed run --------------------------------------------------------


@pytest.fixture(scope="module")
def bent_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], dict[str, Any]]:
    """plain, padded, glue and crashing on the tiny workload, stored and scored once."""
    tmp_path = tmp_path_factory.mktemp("bent")
    env = _env(tmp_path, PADDING, GLUE, SHOW)
    store = tmp_path / "runs.db"
    ran = _cli(["run", "--workload", str(_workload(tmp_path)), "--adapters", "plain,padded,glue,crashing",
                "--store", str(store), "--no-parity"], env, tmp_path)
    assert ran.returncode == 1, ran.stdout + ran.stderr  # the crashing adapter's run failed, the rest stored
    scored = _cli(["score", "--store", str(store), "--json", "--reps", "200"], env, tmp_path)
    assert scored.returncode == 0, scored.stderr
    return store, env, json.loads(scored.stdout)


def _cell(matrix: dict[str, Any], criterion: str, adapter: str) -> dict[str, Any]:
    return next(c for c in matrix["cells"] if c["criterion"] == criterion and c["adapter"] == adapter)


def _stored_fidelity(store: Path, run_id: str, env: dict[str, str], cwd: Path) -> list[dict[str, Any]]:
    shown = _cli(["show", "run", run_id, "--store", str(store), "--json"], env, cwd)
    assert shown.returncode == 0, shown.stderr
    return json.loads(shown.stdout)["fidelity_json"]


def test_padding_a_fidelity_report_does_not_raise_its_score(
        bent_store: tuple[Path, dict[str, str], dict[str, Any]], tmp_path: Path) -> None:
    store, env, matrix = bent_store
    padded = _stored_fidelity(store, "tiny-ppo__padded__s0", env, tmp_path)
    padding = {"padding.made_up", "algorithm", "evaluation.episodes", "parity.PPO", "schedule.gradient_steps",
               "defaults.truncation_bootstrap"}
    assert padding <= {item["setting"] for item in padded if item["status"] == "exact"}  # the padding was stored
    plain = _stored_fidelity(store, "tiny-ppo__plain__s0", env, tmp_path)
    assert [item["setting"] for item in plain if not item["setting"].startswith(
        ("hyperparameters.", "network.", "parallelism."))] == ["defaults.adam_eps"]
    # not probed (--no-parity): exact counts 0.5. PPO's 11 settings (7 exact, 2 approximate, 2 unsupported)
    # and 4 structural (exact): 6.5 over 15 counted settings, plus half a setting for the approximate
    # defaults.adam_eps departure
    expected = (7 * 0.5 + 2 * 0.5 + 2 * 0.0 + 4 * 0.5) / (15 + 0.5)
    assert _cell(matrix, "setting_fidelity", "plain")["point"] == pytest.approx(expected)
    assert _cell(matrix, "setting_fidelity", "padded")["point"] == pytest.approx(expected)


def test_the_kit_fails_a_padded_report_naming_the_entries(tmp_path: Path) -> None:
    completed, outcomes = run_kit(PADDING, "plain,padded", tmp_path)
    message = outcomes[("padded", "canonical_settings")]
    assert message is not None, completed.stdout[-3000:]
    assert ("fidelity() lists settings outside the canonical set: padding.made_up, algorithm, evaluation.episodes, "
            "parity.PPO, schedule.gradient_steps (PPO") in message
    assert "defaults.truncation_bootstrap," in message  # named among what PPO allows, not among the offenders
    assert len(message.strip().splitlines()) == 2, message
    # the same adapter without the padding keeps every rule; the padded one breaks this rule only
    assert [rule for (adapter, rule), failure in outcomes.items() if failure and adapter == "plain"] == []
    assert [rule for (adapter, rule), failure in outcomes.items() if failure and adapter == "padded"] == [
        "canonical_settings"]


def test_glue_is_counted_over_the_whole_package_and_only_it(
        bent_store: tuple[Path, dict[str, str], dict[str, Any]]) -> None:
    from radon.complexity import cc_visit
    from radon.raw import analyze
    from radon.visitors import Function

    _, _, matrix = bent_store
    package = sorted((GLUE / "bendglue_rlcompare").glob("*.py"))
    assert [path.name for path in package] == ["__init__.py", "loop.py", "mapping.py", "parity_probe.py"]
    sources = [path.read_text(encoding="utf-8") for path in package]
    lines = sum(analyze(text).lloc for text in sources)
    complexity = sum(block.complexity for text in sources for block in cc_visit(text) if isinstance(block, Function))
    assert _cell(matrix, "glue_lines", "glue")["point"] == pytest.approx(lines)
    assert _cell(matrix, "glue_complexity", "glue")["point"] == pytest.approx(complexity)
    # more than the adapter's own module, and nothing of the baseline beside the package
    assert lines > analyze(sources[0]).lloc
    baseline = analyze((GLUE / "bendglue_baselines.py").read_text(encoding="utf-8")).lloc
    assert baseline > 0 and _cell(matrix, "glue_lines", "glue")["point"] != pytest.approx(lines + baseline)


def test_every_report_shows_each_runs_grain_and_allowed_window(
        bent_store: tuple[Path, dict[str, str], dict[str, Any]], tmp_path: Path) -> None:
    import csv

    store, env, _ = bent_store
    out = tmp_path / "report"
    made = _cli(["report", "--store", str(store), "--out", str(out), "--format", "md,html,latex,csv",
                 "--reps", "200"], env, tmp_path)
    assert made.returncode == 0, made.stderr
    # one rollout of 2 envs x 32 steps: the window 1024 +- 64, and the steps each run ended at
    markdown = (out / "rlcompare-report.md").read_text(encoding="utf-8")
    rows = [line for line in markdown.splitlines() if line.startswith("| tiny-ppo | plain | rollout, +-64 |")]
    assert len(rows) == 1 and "| 960..1088 | 64 | 1024 |" in rows[0], rows
    html = (out / "rlcompare-report.html").read_text(encoding="utf-8")
    assert "<td>plain</td><td>rollout, &plusmn;64</td>" in html and "960..1088" in html
    latex = next(out.glob("*.tex")).read_text(encoding="utf-8")
    assert "plain & rollout, $\\pm$64 & 960..1088 & 64 & 1024" in latex
    with (out / "rlcompare-report-csv" / "runs.csv").open(encoding="utf-8") as handle:
        runs = {row["run_id"]: row for row in csv.DictReader(handle)}
    plain = runs["tiny-ppo__plain__s0"]
    assert (plain["budget_granularity"], plain["allowed_low"], plain["allowed_high"]) == ("rollout", "960", "1088")


def test_show_run_prints_a_stored_run_with_its_traceback(
        bent_store: tuple[Path, dict[str, str], dict[str, Any]], tmp_path: Path) -> None:
    store, env, _ = bent_store
    shown = _cli(["show", "run", "tiny-ppo__crashing__s0", "--store", str(store)], env, tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "run tiny-ppo__crashing__s0" in shown.stdout and "status: failed" in shown.stdout
    assert "traceback:" in shown.stdout and "Traceback (most recent call last)" in shown.stdout
    assert "DivergingUpdate: the loss became NaN after 10 env steps (on purpose)" in shown.stdout
    ok = _cli(["show", "run", "tiny-ppo__plain__s0", "--store", str(store)], env, tmp_path)
    assert "status: ok" in ok.stdout and "budget grain: rollout, +-64 env steps (allowed 960..1088)" in ok.stdout
    assert "traceback: none recorded" in ok.stdout

    unknown = _cli(["show", "run", "tiny-ppo__crashng__s0", "--store", str(store)], env, tmp_path)
    assert unknown.returncode == 2 and unknown.stdout == ""
    assert unknown.stderr.strip().splitlines() == [
        f"rlcompare: error: unknown run in {store} 'tiny-ppo__crashng__s0'; did you mean 'tiny-ppo__crashing__s0'? "
        "(see `rlcompare show run --help`)"]
    missing = _cli(["show", "run", "x", "--store", str(tmp_path / "none.db")], env, tmp_path)
    assert missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1


# -- the kit's message when no workload can run --------------------------------------------------------


def test_the_kit_names_fidelity_as_the_reason_no_workload_can_run(tmp_path: Path) -> None:
    completed, outcomes = run_kit(UNFAITHFUL, "unfaithful", tmp_path)
    message = outcomes[("unfaithful", "trains_within_budget")]
    assert message is not None, completed.stdout[-3000:]
    assert ("`rlcompare plan` refuses adapter 'unfaithful' on every registered workload on CartPole-v1 or "
            "Pendulum-v1 of its algorithms (A2C): cartpole-a2c: 6 of 9 canonical A2C settings are unsupported or "
            "missing from its fidelity report") in message
    assert "Fix: map more of the canonical settings" in message
    # whole, not cut mid-word, and not blamed on the import rules (which it keeps)
    assert message.rstrip().endswith("docs/writing-an-adapter.md, section 4)"), message
    assert "import" not in message.lower()
    for rule in ("registration", "light_import", "light_declarations", "fidelity_coverage", "canonical_settings",
                 "budget_grain"):
        assert outcomes[("unfaithful", rule)] is None, (rule, outcomes[("unfaithful", rule)])


def test_the_adapter_guide_documents_workload_registration_and_fidelity_judges() -> None:
    guide = (ROOT / "docs" / "writing-an-adapter.md").read_text(encoding="utf-8")
    assert "rlcompare_register_workloads" in guide
    assert "`judge`" in guide and "without a `judge`" in guide and "counts as exact" in guide
    assert "ES as a plugin" not in guide and "canonical algorithms (`PPO`, `A2C`, `DQN`, `SAC`)" not in guide


# -- built-in workloads by id, and a linear policy ------------------------------------------------------


def test_workload_accepts_a_registered_workload_id(tmp_path: Path) -> None:
    env = _env(tmp_path, autoload=False)
    plan = _cli(["plan", "--workload", "cartpole-ppo-quick", "--adapters", "sb3", "--json"], env, tmp_path)
    assert plan.returncode == 0, plan.stderr
    runs = json.loads(plan.stdout)["runs"]
    assert [run["run_id"] for run in runs] == ["cartpole-ppo-quick__sb3__s0", "cartpole-ppo-quick__sb3__s1"]

    typo = _cli(["plan", "--workload", "cartpole-ppo-quik", "--adapters", "sb3"], env, tmp_path)
    assert typo.returncode == 2 and typo.stdout == ""
    assert typo.stderr.strip().splitlines() == [
        "rlcompare: error: unknown workload (neither a file nor a registered workload id) 'cartpole-ppo-quik'; "
        "did you mean 'cartpole-ppo-quick'? (see `rlcompare list workloads`)"]

    # a file of that name in the current directory wins over the registered workload
    _workload(tmp_path, TINY.replace('id = "tiny-ppo"', 'id = "from-file"'), name="cartpole-ppo-quick")
    local = _cli(["plan", "--workload", "cartpole-ppo-quick", "--adapters", "sb3", "--json"], env, tmp_path)
    assert [run["workload"] for run in json.loads(local.stdout)["runs"]] == ["from-file"]


LINEAR = TINY.replace('id = "tiny-ppo"', 'id = "linear-ppo"') + "[network]\nhidden_sizes = []\n"


def test_a_linear_policy_is_expressible_and_each_adapter_says_whether_it_can_build_one(tmp_path: Path) -> None:
    from rlcompare.spec.workload import workload_from_dict

    assert workload_from_dict({"id": "l", "env": "CartPole-v1", "algorithm": "PPO", "env_steps": 1000,
                               "network": {"hidden_sizes": []}}, "t").network.hidden_sizes == ()
    env = _env(tmp_path, autoload=False)
    plan = _cli(["plan", "--workload", str(_workload(tmp_path, LINEAR)), "--json"], env, tmp_path)
    assert plan.returncode == 0, plan.stderr
    network = {pair["adapter"]: next(e for e in pair["fidelity"] if e["setting"] == "network.hidden_sizes")
               for pair in json.loads(plan.stdout)["pairs"] if pair["refused"] is None}
    assert network["sb3"]["status"] == "exact" and network["sb3"]["native_value"] == {"pi": [], "vf": []}
    for adapter in ("skrl", "tianshou", "torchrl"):
        assert network[adapter]["status"] == "exact", (adapter, network[adapter])
    for adapter in ("rllib", "sample-factory"):
        assert network[adapter]["status"] == "unsupported" and "linear policy" in network[adapter]["note"]


@pytest.mark.framework
def test_sb3_trains_a_linear_policy(tmp_path: Path) -> None:
    env = _env(tmp_path, autoload=False)
    store = tmp_path / "linear.db"
    ran = _cli(["run", "--workload", str(_workload(tmp_path, LINEAR)), "--adapters", "sb3", "--store", str(store),
                "--no-parity"], env, tmp_path)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    shown = _cli(["show", "run", "linear-ppo__sb3__s0", "--store", str(store), "--json"], env, tmp_path)
    run = json.loads(shown.stdout)
    assert run["status"] == "ok" and run["native_config_json"]["policy_kwargs"]["net_arch"] == "{'pi': [], 'vf': []}"


# -- the current directory shadows nothing in a worker ----------------------------------------------------


def test_a_folder_named_like_the_framework_in_the_current_directory_shadows_nothing(tmp_path: Path) -> None:
    shadow = tmp_path / "bendglue_fw"
    shadow.mkdir()
    (shadow / "__init__.py").write_text('raise ImportError("the shadowing copy in the current directory")\n')
    env = _env(tmp_path, GLUE, own_cache=True)  # measured and probed from this folder, not found cached
    # the folder does shadow the framework for a plain `python -c` started here
    plain = subprocess.run([sys.executable, "-c", "import bendglue_fw"], capture_output=True, text=True, env=env,
                           cwd=tmp_path, timeout=60)
    assert plain.returncode != 0 and "the shadowing copy" in plain.stderr

    store = tmp_path / "runs.db"
    ran = _cli(["run", "--workload", str(_workload(tmp_path)), "--adapters", "glue", "--store", str(store),
                "--no-parity"], env, tmp_path)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    shown = json.loads(_cli(["show", "run", "tiny-ppo__glue__s0", "--store", str(store), "--json"], env,
                            tmp_path).stdout)
    assert shown["status"] == "ok"
    assert shown["native_config_json"]["framework"] == str((GLUE / "bendglue_fw" / "__init__.py").resolve())

    probed = _cli(["parity", "--adapters", "glue", "--algorithms", "PPO", "--json"], env, tmp_path)
    assert probed.returncode == 0, probed.stderr
    verdicts = json.loads(probed.stdout)
    assert verdicts and {v["status"] for v in verdicts} == {"unverifiable"}, verdicts
    assert all("bendglue_fw (installed," in v["reason"] for v in verdicts), verdicts
