"""``rlcompare score``, weight profiles and third-party criteria."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rlcompare.cli import score as score_cli
from rlcompare.errors import RLCompareError, UnknownNameError, UsageError
from rlcompare.plugins.manager import Plugins, build_plugin_manager
from rlcompare.scoring.engine import ScoringOptions, score_store
from rlcompare.scoring.profiles import BUILTIN_PROFILES, get_profile, load_weights_file
from rlcompare.store.sqlite_store import Store
from tests.test_criteria_support import TEST_BUILTINS, curve, run_record, workload_spec, write_store

CART = workload_spec("cart", threshold=100.0)
PEND = workload_spec("pend", env="Pendulum-v1", algorithm="SAC")


def _plugins(autoload: bool = False) -> Plugins:
    return build_plugin_manager(builtins=TEST_BUILTINS, autoload=autoload)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    runs = []
    for adapter, speed in (("alpha", 1.0), ("beta", 2.0)):
        for seed in range(3):
            runs.append((run_record(CART, adapter, seed, final_return=90.0 + 5 * seed * speed,
                                    throughput=1000.0 * speed, startup=2.0 / speed, peak_rss=2**27),
                         curve([(0, 0.0, 0.0), (500, 1.0 / speed, 60.0 * speed), (1000, 2.0 / speed, 100.0)])))
    runs.append((run_record(PEND, "alpha", 0, final_return=-300.0, throughput=400.0, startup=1.0), []))
    runs.append((run_record(PEND, "beta", -1, status="unsupported", error="algorithm SAC is not offered"), []))
    return write_store(tmp_path / "store.db", runs)


def _cli(argv: list[str]) -> tuple[int, argparse.Namespace | None]:
    parser = argparse.ArgumentParser(prog="rlcompare")
    add = parser.add_subparsers(dest="command")
    score_cli.add_commands(add)
    args = parser.parse_args(argv)
    try:
        return score_cli.COMMANDS[args.command](args), args
    except RLCompareError as error:
        print(f"rlcompare: error: {error}", file=sys.stderr)
        return error.exit_status, args


@pytest.fixture(autouse=True)
def builtin_criteria(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(score_cli, "load_plugins", _plugins)


def test_score_prints_the_matrix_as_tables(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, _ = _cli(["score", "--store", str(store), "--reps", "200"])
    out = capsys.readouterr().out
    assert status == 0
    assert "Scores, profile balanced" in out and "OVERALL SCORE" in out and "rank stability" in out
    assert "Performance by workload" in out and "Development facilitation" in out
    assert "missing: refused before" in out
    assert "beta / pend: refused before running: algorithm SAC is not offered" in out


def test_score_json_has_cells_scores_and_ranks(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, _ = _cli(["score", "--store", str(store), "--profile", "performance", "--json", "--reps", "200"])
    data = json.loads(capsys.readouterr().out)
    assert status == 0
    assert data["profile"]["name"] == "performance"
    ranks = {a["adapter"]: a["rank"] for a in data["adapters"]}
    # beta is faster on cart but was refused pend: ranked on fewer workloads, it cannot rank first
    assert ranks == {"alpha": 1, "beta": 2}
    assert {a["adapter"]: a["valid_workloads"] for a in data["adapters"]} == {"alpha": 2, "beta": 1}
    refused = [c for c in data["cells"] if c["adapter"] == "beta" and c["workload"] == "pend"]
    assert refused and all(c["point"] is None and c["missing"].startswith("refused") for c in refused)
    criteria = {c["id"]: c for c in data["criteria"]}
    assert criteria["throughput"]["unit"] == "env steps/s" and criteria["throughput"]["method"]
    assert all(c["weight"] == 0 for c in data["criteria"] if c["category"] == "development")


def test_unknown_profile_is_one_line_and_exit_2(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, _ = _cli(["score", "--store", str(store), "--profile", "balance"])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert status == 2
    assert err == "rlcompare: error: unknown profile 'balance'; did you mean 'balanced'?"


def test_missing_store_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, _ = _cli(["score", "--store", str(tmp_path / "none.db")])
    err = [line for line in capsys.readouterr().err.splitlines() if not line.startswith("warning:")]
    assert status == 2 and len(err) == 1 and "--store: no results store at" in err[0]
    assert not (tmp_path / "none.db").exists()


@pytest.mark.parametrize(("text", "message"), [
    ("[weights]\nthroughput = -1\n", "weights.throughput: expected a non-negative number, got -1"),
    ("[weights]\nthroughput = 'a lot'\n", "weights.throughput: expected a non-negative number, got 'a lot'"),
    ("[weights]\nthrouhgput = 1\n", "weights.throuhgput: unknown criterion 'throuhgput'; did you mean 'throughput'?"),
    ("[categories]\nfun = 1\n", "categories.fun: unknown category"),
    ("[categories]\nperformance = 0\ndevelopment = 0\n", "categories: at least one category needs a positive share"),
    ("base = 'fast'\n", "base: unknown profile 'fast'"),
    ("weigths = 1\n", "unknown key 'weigths'"),
    ("[weights\n", "not valid TOML"),
])
def test_bad_weights_files_name_the_field(tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str],
                                          text: str, message: str) -> None:
    path = tmp_path / "w.toml"
    path.write_text(text, encoding="utf-8")
    status, _ = _cli(["score", "--store", str(store), "--weights", str(path)])
    err = [line for line in capsys.readouterr().err.splitlines() if not line.startswith("warning:")]
    assert status == 2 and len(err) == 1
    assert message in err[0] and str(path) in err[0]


def test_weights_file_changes_the_weights(tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "mine.toml"
    path.write_text("base = 'performance'\n[weights]\nthroughput = 10\nfinal_return = 0\n", encoding="utf-8")
    status, _ = _cli(["score", "--store", str(store), "--weights", str(path), "--json", "--reps", "200"])
    data = json.loads(capsys.readouterr().out)
    weights = {c["id"]: c["weight"] for c in data["criteria"]}
    assert status == 0 and data["profile"]["name"] == "mine"
    assert weights["final_return"] == 0 and weights["throughput"] == max(weights.values())


def test_profiles_resolve_to_weights_summing_to_one() -> None:
    criteria = _plugins().criteria
    for name in BUILTIN_PROFILES:
        weights = get_profile(name).resolve(criteria)
        assert sum(weights.values()) == pytest.approx(1.0), name
    balanced = get_profile("balanced").resolve(criteria)
    performance = sum(w for cid, w in balanced.items() if criteria[cid].category == "performance")
    assert performance == pytest.approx(0.5)
    with pytest.raises(UnknownNameError):
        get_profile("nope")


def test_load_weights_file_reads_toml(tmp_path: Path) -> None:
    path = tmp_path / "team.toml"
    path.write_text('name = "team"\n[categories]\nperformance = 3\ndevelopment = 1\n', encoding="utf-8")
    profile = load_weights_file(path, _plugins().criteria)
    assert profile.name == "team" and profile.categories == {"performance": 3.0, "development": 1.0}
    with pytest.raises(UsageError, match="cannot read"):
        load_weights_file(tmp_path / "absent.toml", {})


THIRD_PARTY = '''
from rlcompare.scoring.criteria import Criterion, CriterionResult
from rlcompare.hookspecs import hookimpl


def _lucky(data):
    ok = data.ok_runs
    return CriterionResult.build(list(zip(ok["adapter"], ok["workload_id"], ok["seed"], [7.0] * len(ok))))


@hookimpl
def rlcompare_register_criteria(register):
    register.add_criterion(Criterion(
        id="lucky_sevens", title="Lucky sevens", category="performance", unit="sevens", direction="higher",
        method="Always seven.", compute=_lucky))
'''


def test_a_third_party_criterion_appears_in_the_matrix(tmp_path: Path, store: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    (site / "lucky_criteria-0.1.dist-info").mkdir(parents=True)
    (site / "lucky_criteria.py").write_text(THIRD_PARTY, encoding="utf-8")
    (site / "lucky_criteria-0.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: lucky-criteria\nVersion: 0.1\n", encoding="utf-8")
    (site / "lucky_criteria-0.1.dist-info" / "entry_points.txt").write_text(
        "[rlcompare]\nlucky = lucky_criteria\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delenv("RLCOMPARE_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    plugins = _plugins(autoload=True)
    assert plugins.plugin_origin("criterion", "lucky_sevens") == "lucky"
    with Store(store) as opened:
        matrix = score_store(opened, plugins.scoring_catalogue(), get_profile("balanced"), ScoringOptions(reps=200))
    cell = matrix.cell("lucky_sevens", "alpha", "cart")
    assert (cell.point, cell.n) == (7.0, 3)
    assert matrix.weights["lucky_sevens"] > 0


def test_listing_criteria_imports_no_rl_library() -> None:
    code = textwrap.dedent("""
        import sys
        from rlcompare.plugins.manager import BUILTIN_PLUGINS, build_plugin_manager
        plugins = build_plugin_manager(builtins=(*BUILTIN_PLUGINS, "rlcompare_criteria.performance", "rlcompare_criteria.development"))
        assert not [e for e in plugins.errors if e.plugin.startswith("criteria")], plugins.errors
        rows = [(c.id, c.unit, c.direction) for c in plugins.criteria.values()]
        heavy = sorted(m for m in ("torch", "ray", "stable_baselines3", "tianshou", "torchrl", "skrl", "rliable",
                                   "pandas") if m in sys.modules)
        print(len(rows), heavy)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[1], env={"RLCOMPARE_DISABLE_PLUGIN_AUTOLOAD": "1",
                                                                         "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "22 []"
