"""Studies: a published table as data, the verdict per claim, and `rlcompare study` end to end on a
stand-in table from an outside plugin (tests/plugins/study_standin) measured by the fake adapter."""

from __future__ import annotations

import copy
import json
import math
import re
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rlcompare.cli.main import main
from rlcompare.errors import InvalidStudyError
from rlcompare.plugins.manager import build_plugin_manager
from rlcompare.studies.loading import builtin_studies, study_from_dict
from rlcompare.studies.model import Study
from rlcompare.studies.verdicts import Measured, judge, mean_interval, published_interval
from tests.conftest import GOOD_PLUGINS, ROOT

STANDIN = ROOT / "tests" / "plugins" / "study_standin"
EVIDENCE = [{"url": "https://example.org/t", "accessed": "2026-12-01", "excerpt": "table"}]


def _study(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": "t", "title": "T", "seeds": 3, "arms": ["canonical"],
        "publication": {"title": "P", "hardware": "unknown", "versions": "unknown", "statistic": "mean +- std",
                        "evidence": EVIDENCE},
        "cells": [{"id": "c", "env": "CartPole-v1", "algorithm": "PPO", "env_steps": 1000, "success_threshold": 195.0}],
        "published": [
            {"cell": "c", "framework": "a", "adapter": "a", "label": "A", "metric": "final_return", "mean": 100.0,
             "std": 10.0, "n": 5, "evidence": EVIDENCE},
        ],
    }
    data.update(changes)
    return data


def _row(framework: str, metric: str, mean: float, std: float | None = None, n: int | None = 5,
         adapter: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"cell": "c", "framework": framework, "adapter": adapter or framework, "label": framework.upper(),
            "metric": metric, "mean": mean, "std": std, "n": n, "evidence": EVIDENCE, **extra}


# -- the study file ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("change", "named"), [
    ({"published": [_row("a", "final_return", 1.0) | {"cell": "nope"}]}, "published.0.cell: no cell 'nope'"),
    ({"published": [_row("a", "time_to_threshold_seconds", 1.0)]} | {"cells": [
        {"id": "c", "env": "CartPole-v1", "algorithm": "PPO", "env_steps": 10}]}, "needs the cell's success_threshold"),
    ({"published": [_row("a", "final_return", 1.0), _row("a", "final_return", 2.0)]}, "a second row for framework 'a'"),
    ({"published": [_row("a", "mean_reward", 1.0)]}, "field 'published.0.metric'"),
    ({"published": [_row("a", "final_return", math.nan)]}, "field 'published.0.mean': must be a finite number"),
    ({"arms": ["canonical", "canonical"]}, "an arm is listed twice"),
    ({"id": "Bad Id"}, "study id 'Bad Id'"),
    ({"seeds": 0}, "field 'seeds'"),
    ({"colour": "red"}, "field 'colour' is not a known setting"),
    ({"publication": {"title": "P"}}, "'publication.hardware', 'publication.versions'"),
    ({"published": [_row("a", "final_return", 1.0, std=1.0, std_over="episodes")]}, "needs 'episodes'"),
    ({"published": [_row("a", "final_return", 1.0, std=1.0, n=1)]}, "with n = 1 give std_over = 'episodes'"),
])
def test_a_bad_study_is_refused_in_one_line_naming_the_field(change: dict[str, Any], named: str) -> None:
    with pytest.raises(InvalidStudyError) as caught:
        study_from_dict(_study(**change), "study.toml")
    message = str(caught.value)
    assert message.startswith("study.toml: ") and named in message and "\n" not in message


_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-5, 10**6), st.floats(allow_nan=True),
                    st.text(max_size=12), st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=4),
                                                                                               st.integers(), max_size=2))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=st.lists(st.sampled_from(["id", "seeds", "arms", "cells", "published", "publication", 0, "cell", "metric",
                                      "mean", "std", "n", "env_steps", "evidence", "title", "std_over"]),
                     min_size=1, max_size=3), value=_VALUES)
def test_any_change_to_a_study_gives_a_study_or_one_line_naming_the_source(path: list[Any], value: Any) -> None:
    data = _study()
    target: Any = data
    for key in path[:-1]:
        try:
            target = target[key]
        except (KeyError, IndexError, TypeError):
            return
    try:
        target[path[-1]] = value
    except (TypeError, IndexError):
        return
    try:
        study = study_from_dict(copy.deepcopy(data), "fuzzed.toml")
    except InvalidStudyError as error:
        assert str(error).startswith("fuzzed.toml: ") and "\n" not in str(error)
    else:
        assert isinstance(study, Study)


def test_the_builtin_studies_load_and_their_rows_cite_commits() -> None:
    studies = {study.id: study for study in builtin_studies()}
    assert "sb3-zoo" in studies
    zoo = studies["sb3-zoo"]
    assert len(zoo.published) == 7 and zoo.seeds == 3
    for row in zoo.published:
        [evidence] = row.evidence
        assert evidence.repo == "DLR-RM/rl-baselines3-zoo" and evidence.path == "benchmark.md"
        assert f"{row.mean:.3f}" in evidence.excerpt  # the row's figure is the one its excerpt shows
        assert row.n == 1 and row.std_over == "episodes"


def test_every_zoo_cell_can_be_planned_now_that_td3_is_a_family_and_one_cell_can_be_chosen() -> None:
    """The zoo's TD3 row was a cell that could not be planned while no TD3 family existed; its cell
    carries the zoo's td3.yml settings. ``--cells`` plans that cell alone."""
    from rlcompare.cli.study import study_plan

    plugins = build_plugin_manager(autoload=False)
    zoo = plugins.study("sb3-zoo")
    plan = study_plan(plugins, zoo)
    assert plan.unrunnable == []
    td3 = study_plan(plugins, zoo, cells=["td3-pendulum"])
    # both arms: the cell's settings (canonical) and SB3's own recommendation, the zoo's entry (native)
    assert [run.run_id for run in td3.runs] == [
        *(f"sb3-zoo--td3-pendulum__sb3__s{seed}" for seed in range(3)),
        *(f"sb3-zoo--td3-pendulum--native__sb3__s{seed}" for seed in range(3))]
    canonical, native = td3.runs[0].workload, td3.runs[3].workload
    for workload in (canonical, native):  # the cell carries the zoo's td3.yml settings; the native arm reads them
        assert workload.algorithm == "TD3" and workload.hyperparameters.learning_starts == 10_000
        assert workload.hyperparameters.exploration_noise == 0.1 and workload.hyperparameters.gamma == 0.98
        assert list(workload.network.hidden_sizes) == [400, 300]
    assert native.settings == "native" and "rl_zoo3/hyperparams/td3.yml" in native.native["source"]


def test_one_arm_of_a_study_can_be_planned_alone_and_an_unknown_arm_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--arms native`` plans the native arm only (re-running one adapter's recommendations must not
    re-run its canonical timeouts); an arm the study does not have is one line, exit 2, no store."""
    from rlcompare.cli.study import study_plan

    plugins = build_plugin_manager(autoload=False)
    zoo = plugins.study("sb3-zoo")
    native = study_plan(plugins, zoo, cells=["td3-pendulum"], arms=["native"])
    assert [run.run_id for run in native.runs] == [f"sb3-zoo--td3-pendulum--native__sb3__s{seed}" for seed in range(3)]
    store = tmp_path / "s.db"
    assert main(["study", "run", "sb3-zoo", "--arms", "natve", "--store", str(store)]) == 2
    assert not store.exists()
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith(
        "--arms: study 'sb3-zoo' has no arm 'natve' (its arms: canonical, native)")


# -- verdicts ----------------------------------------------------------------------------------------


def _judge(rows: list[dict[str, Any]], measured: dict[str, Measured]) -> list[Any]:
    study = study_from_dict(_study(published=rows), "t")
    table = {("canonical", "c", adapter, row["metric"]): value
             for adapter, value in measured.items() for row in rows if row["adapter"] == adapter}
    return judge(study, table)


def test_a_return_inside_our_interval_is_consistent_and_one_outside_says_which_side() -> None:
    near, = _judge([_row("a", "final_return", 101.0, std=2.0, n=5)], {"a": Measured((98.0, 100.0, 103.0, 99.0))})
    assert near.status == "consistent"
    far, = _judge([_row("a", "final_return", 150.0, std=2.0, n=5)], {"a": Measured((98.0, 100.0, 103.0, 99.0))})
    assert far.status == "not consistent" and far.reason.startswith("measured lower by")


def test_a_single_published_run_is_compared_with_where_one_more_of_our_runs_would_land() -> None:
    """One published run is one draw, not a mean: 500 lies where a fourth of seeds reaching 480 to
    500 could land (a t prediction interval: the range of three seeds would miss a fourth draw half
    of the time); a run far above three tightly grouped seeds is not consistent."""
    row = _row("a", "final_return", 500.0, std=0.0, n=1, std_over="episodes", episodes=300)
    inside, = _judge([row], {"a": Measured((480.0, 490.0, 500.0))})
    assert inside.status == "consistent" and "one more of our runs would land" in inside.reason
    above, = _judge([row], {"a": Measured((400.0, 401.0, 402.0))})
    assert above.status == "not consistent" and above.reason.startswith("measured lower by 99")


def test_steps_read_on_the_evaluation_grid_reach_one_interval_lower() -> None:
    """Three seeds first evaluated at the threshold at 1,000 to 1,200 steps, on a grid of 500: each
    crossed it up to 500 steps earlier, so a published 700 is not contradicted; read exactly, it
    would be."""
    row = _row("a", "time_to_threshold_steps", 700.0, std=10.0, n=5)
    seeds = (1000.0, 1100.0, 1200.0)
    exact, = _judge([row], {"a": Measured(seeds)})
    assert exact.status == "not consistent"
    gridded, = _judge([row], {"a": Measured(seeds, resolution=500.0)})
    assert gridded.status == "consistent" and "reaching 500 env steps lower (one evaluation interval)" in gridded.reason
    assert gridded.measured.startswith("1,100 [")


def test_seeds_that_all_ran_out_of_budget_contradict_a_claim_below_the_budget() -> None:
    censored = Measured(missing="3 of 3 seeds never reached the threshold within the budget (their time is unknown)",
                        censored_above=50_000.0)
    below, = _judge([_row("a", "time_to_threshold_steps", 20_000.0, std=1_000.0, n=5)], {"a": censored})
    assert below.status == "not consistent" and below.measured == "> 50,000"
    assert below.reason == ("measured higher: no seed of a reached the threshold within 50,000 env steps, beyond "
                            "the published interval")
    beyond, = _judge([_row("a", "time_to_threshold_steps", 80_000.0, std=1_000.0, n=5)], {"a": censored})
    assert beyond.status == "not comparable" and "never reached" in beyond.reason  # it may yet, later


def test_missing_figures_are_not_comparable_with_the_reason() -> None:
    rows = [_row("a", "final_return", 1.0), _row("b", "final_return", 1.0), _row("c", "final_return", 1.0),
            _row("d", "final_return", 1.0)]
    verdicts = _judge(rows, {"a": Measured(missing="refused: cannot run it faithfully"), "b": Measured((1.0,)),
                             "c": Measured(missing="2 of 3 seeds never reached the threshold within the budget")})
    assert [v.status for v in verdicts] == ["not comparable"] * 4
    assert [v.reason for v in verdicts] == [
        "a: refused: cannot run it faithfully", "b: 1 seed measured, 2 needed for an interval",
        "c: 2 of 3 seeds never reached the threshold within the budget", "d was not run on this cell"]


def test_seconds_are_compared_only_as_ratios_and_a_reversed_order_is_said() -> None:
    """Published: A took 3x as long as B. Here A is faster: the order is reversed. A lone row of
    seconds cannot be compared with other hardware at all."""
    rows = [_row("a", "time_to_threshold_seconds", 30.0, std=1.0), _row("b", "time_to_threshold_seconds", 10.0, std=1.0)]
    reversed_, = _judge(rows, {"a": Measured((5.0, 5.5, 4.8)), "b": Measured((9.0, 10.0, 11.0))})
    assert reversed_.claim.startswith("A / B: 3") and reversed_.status == "not consistent"
    assert "order is reversed: A is faster here" in reversed_.reason
    same, = _judge(rows, {"a": Measured((60.0, 62.0, 58.0)), "b": Measured((20.0, 21.0, 19.0))})
    assert same.status == "consistent"  # twice as slow hardware, the same ratio
    alone, = _judge(rows[:1], {"a": Measured((5.0, 6.0))})
    assert alone.status == "not comparable" and "only as ratios" in alone.reason


@settings(max_examples=60, deadline=None)
@given(a=st.lists(st.floats(1.0, 100.0), min_size=2, max_size=6), b=st.lists(st.floats(1.0, 100.0), min_size=2, max_size=6),
       pa=st.floats(1.0, 100.0), pb=st.floats(1.0, 100.0))
# a bootstrap bound equal to the published ratio: a / b one way, 1 / (b / a) the other, apart in the last bit
@example(a=[4.0, 3.953125], b=[1.0, 1.75], pa=3.953125, pb=1.75)
def test_a_ratio_verdict_does_not_depend_on_which_framework_comes_first(a: list[float], b: list[float], pa: float,
                                                                          pb: float) -> None:
    forward, = _judge([_row("a", "time_to_threshold_seconds", pa), _row("b", "time_to_threshold_seconds", pb)],
                      {"a": Measured(tuple(a)), "b": Measured(tuple(b))})
    backward, = _judge([_row("b", "time_to_threshold_seconds", pb), _row("a", "time_to_threshold_seconds", pa)],
                       {"a": Measured(tuple(a)), "b": Measured(tuple(b))})
    assert forward.status == backward.status


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.floats(-1e3, 1e3), min_size=2, max_size=8))
def test_our_own_mean_is_always_consistent_with_itself(values: list[float]) -> None:
    mean = float(np.mean(values))
    verdict, = _judge([_row("a", "final_return", mean, std=None)], {"a": Measured(tuple(values))})
    interval = mean_interval(values)
    assert interval.low <= mean + 1e-9 and interval.high >= mean - 1e-9
    assert verdict.status == "consistent"


def test_the_published_interval_is_a_t_interval_over_the_seeds_or_the_episodes_its_deviation_is_over() -> None:
    from scipy.stats import t

    study = study_from_dict(_study(published=[
        _row("a", "final_return", 0.0, std=10.0, n=4),
        _row("b", "final_return", 0.0, std=10.0, n=1, std_over="episodes", episodes=100),
        _row("c", "final_return", 0.0, std=10.0, n=4, std_ddof=0),
        _row("d", "time_to_threshold_steps", 5.0, std=10.0, n=4)]), "t")
    over_seeds, over_episodes, population, steps = (published_interval(row) for row in study.published)
    assert over_seeds.high == pytest.approx(t.ppf(0.975, 3) * 10 / 2)
    assert over_episodes.high == pytest.approx(t.ppf(0.975, 99) * 10 / 10)
    assert population.high == pytest.approx(t.ppf(0.975, 3) * 10 * math.sqrt(4 / 3) / 2)  # n - 1 for the sample
    assert steps.low == 0.0  # a time is never negative


def test_a_time_of_zero_and_two_rows_of_one_adapter_are_not_comparable() -> None:
    rows = [_row("a", "time_to_threshold_seconds", 3.0, std=1.0), _row("b", "time_to_threshold_seconds", 1.0, std=1.0)]
    zero, = _judge(rows, {"a": Measured((2.0, 3.0)), "b": Measured((0.0, 1.0))})
    assert zero.status == "not comparable" and "time 0" in zero.reason
    with pytest.raises(InvalidStudyError, match="a second row for adapter a"):
        study_from_dict(_study(published=[_row("a", "final_return", 1.0), _row("b", "final_return", 1.0, adapter="a")]),
                        "t")


# -- the command line ---------------------------------------------------------------------------------


@pytest.fixture
def standin(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stand-in study's plugin and the fake adapter's, as outside packages on the path (for this
    process and the run workers it starts)."""
    import os

    paths = [str(STANDIN), str(GOOD_PLUGINS)]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([*paths, os.environ.get("PYTHONPATH", "")]))
    for path in paths:
        monkeypatch.syspath_prepend(path)
    monkeypatch.delenv("RLCOMPARE_DISABLE_PLUGIN_AUTOLOAD", raising=False)


def test_a_study_runs_and_its_report_judges_every_claim(standin: None, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert "standin" in build_plugin_manager().studies
    store, out = tmp_path / "s.db", tmp_path / "report"
    assert main(["study", "plan", "standin", "--json"]) == 0
    planned = json.loads(capsys.readouterr().out)
    assert [run["run_id"] for run in planned["runs"]] == ["standin--cart__fake__s0", "standin--cart__fake__s1"]
    assert main(["study", "plan", "standin", "--cells", "cart", "--json"]) == 0  # one cell: all there is here
    assert json.loads(capsys.readouterr().out)["runs"] == planned["runs"]
    assert planned["refused"] == [{"workload": "standin--cart", "adapter": "ghost",
                                   "reason": "adapter 'ghost' is not installed"}]
    assert main(["study", "run", "standin", "--store", str(store), "--jobs", "2"]) == 0
    capsys.readouterr()
    assert main(["study", "report", "standin", "--store", str(store), "--out", str(out), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    verdicts = {(v["claim"].split(":")[0]): v for v in document["verdicts"]}
    assert set(verdicts) == {"Fake far", "Fake loose", "Ghost PPO", "Elsewhere PPO / Fake PPO"}
    assert verdicts["Fake far"]["status"] == "not consistent" and "measured lower" in verdicts["Fake far"]["reason"]
    assert verdicts["Fake loose"]["status"] == "consistent"
    assert "reaching 200 env steps lower (one evaluation interval)" in verdicts["Fake loose"]["reason"]
    assert verdicts["Ghost PPO"]["reason"] == "ghost: refused before running: adapter 'ghost' is not installed"
    assert verdicts["Elsewhere PPO / Fake PPO"]["reason"].startswith("no adapter runs elsewhere here")
    assert document["counts"] == {"not consistent": 1, "consistent": 1, "not comparable": 2}
    text = (out / "verdicts.md").read_text(encoding="utf-8")
    assert "| cart | final\\_return | Fake far: 10,000 return |" in text and "https://example.org/standin-table" in text
    # how the runs were made, from the store's record (two at a time here: seconds would be contended)
    assert re.fullmatch(r"Runs: 2 runs stored \(2 ok\), at most [12] in flight at once on \d+ CPUs\.",
                        document["conditions"]), document["conditions"]
    assert document["conditions"] in text
    assert (out / "index.html").exists() or any(out.glob("*.html"))  # the store's own report beside it
    # a seed that did not finish is never dropped from a figure: the claims on that cell say why instead
    with sqlite3.connect(store) as connection:
        connection.execute("UPDATE runs SET status = 'failed' WHERE run_id = 'standin--cart__fake__s1'")
    connection.close()
    assert main(["study", "report", "standin", "--store", str(store), "--out", str(tmp_path / "again"), "--json"]) == 0
    again = {(v["claim"].split(":")[0]): v for v in json.loads(capsys.readouterr().out)["verdicts"]}
    for claim in ("Fake far", "Fake loose"):
        assert again[claim]["status"] == "not comparable"
        assert again[claim]["reason"] == "fake: 1 of 2 seeds did not finish (seed 1 failed)"
    with sqlite3.connect(store) as connection:  # and one of the study's seeds that was never run
        connection.execute("DELETE FROM runs WHERE run_id = 'standin--cart__fake__s1'")
    connection.close()
    assert main(["study", "report", "standin", "--store", str(store), "--out", str(tmp_path / "third"), "--json"]) == 0
    third = {(v["claim"].split(":")[0]): v for v in json.loads(capsys.readouterr().out)["verdicts"]}
    assert third["Fake loose"]["status"] == "not comparable"
    assert third["Fake loose"]["reason"] == ("fake: 1 of the study's 2 seeds were run "
                                             "(`rlcompare study run standin` runs the others)")


def test_bad_study_input_is_one_line_and_exit_2(standin: None, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["study", "plan", "standn"]) == 2
    assert "unknown study 'standn'; did you mean 'standin'?" in capsys.readouterr().err
    assert main(["study", "plan", "standin", "--adapters", "sb3"]) == 2
    assert "names no row of adapter 'sb3'" in capsys.readouterr().err
    assert main(["study", "plan", "standin", "--cells", "cart,\x1b[2Jpole"]) == 2
    err = capsys.readouterr().err
    assert "--cells: study 'standin' has no cell '\\x1b[2Jpole' (its cells: cart)" in err and "\x1b" not in err
    missing = tmp_path / "none.db"
    assert main(["study", "report", "standin", "--store", str(missing), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and not missing.exists() and not (tmp_path / "r").exists()


def test_the_evidence_checker_finds_each_excerpt_at_its_commit_or_names_the_row(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A local clone with one file at one commit: an excerpt that is in it (whitespace collapsed)
    is verified; one that is not names the study and its row; exit status 1."""
    import subprocess

    from rlcompare.studies.evidence import main as check_main

    clone = tmp_path / "mirrors" / "someone+table"
    clone.mkdir(parents=True)
    git = ["git", "-C", str(clone), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    (clone / "table.md").write_text("| a | 100.0 |\n| b |    7.5 |\n", encoding="utf-8")
    subprocess.run([*git, "add", "table.md"], check=True)
    subprocess.run([*git, "commit", "-qm", "table"], check=True)
    commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()

    def evidence(excerpt: str) -> list[dict[str, str]]:
        return [{"repo": "someone/table", "commit": commit, "path": "table.md", "excerpt": excerpt}]

    import tomli_w

    good = _study(published=[_row("a", "final_return", 100.0) | {"evidence": evidence("| a | 100.0 |")},
                             _row("b", "final_return", 7.5) | {"evidence": evidence("| b | 7.5 |")}])
    path = tmp_path / "t.toml"
    path.write_bytes(tomli_w.dumps(_strip_none(good)).encode())
    assert check_main(["--mirrors", str(tmp_path / "mirrors"), str(path)]) == 0
    bad = _study(published=[_row("b", "final_return", 8.5) | {"evidence": evidence("| b | 8.5 |")}])
    path.write_bytes(tomli_w.dumps(_strip_none(bad)).encode())
    capsys.readouterr()
    assert check_main(["--mirrors", str(tmp_path / "mirrors"), str(path)]) == 1
    assert "t.published.0 (B): excerpt-not-found" in capsys.readouterr().out


def _strip_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _strip_none(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_strip_none(item) for item in value]
    return value


@settings(max_examples=40, deadline=None)
@given(label=st.text(min_size=1, max_size=40), note=st.text(max_size=40))
def test_hostile_labels_keep_the_verdict_table_one_row_per_claim(label: str, note: str) -> None:
    """Whatever a study's labels and notes hold (pipes, newlines, HTML, control characters), each
    claim stays one table row in verdicts.md and the JSON round-trips it."""
    from rlcompare.studies.document import verdicts_json, verdicts_markdown

    rows = [_row("a", "final_return", 1.0, std=0.5) | {"label": label}, _row("b", "final_return", 2.0)]
    study = study_from_dict(_study(published=rows, cells=[
        {"id": "c", "env": "CartPole-v1", "algorithm": "PPO", "env_steps": 1000, "note": note}]), "t")
    verdicts = judge(study, {("canonical", "c", "a", "final_return"): Measured((1.0, 1.2))})
    text = verdicts_markdown(study, verdicts, "s.db")
    table = [line for line in text.splitlines() if line.startswith("| c |")]
    assert len(table) == 2  # one row per claim, whatever the label held
    assert all(line.endswith("|") for line in table)
    document = json.loads(json.dumps(verdicts_json(study, verdicts, "s.db")))
    assert document["verdicts"][0]["claim"].startswith(label)


def test_an_interrupted_study_names_the_study_command_that_resumes_it(standin: None, tmp_path: Path) -> None:
    """A study's runs are stopped like any matrix's (stored as interrupted); the hint to finish them
    is the study's own command, with the store it wrote to."""
    import os
    import signal
    import subprocess
    import sys
    import time

    import tomli_w
    from standin_rlcompare import STUDY, row

    from rlcompare.harness.run_directory import runs_root

    study = {**STUDY, "id": "endless", "published": [row("cart", "Sleepy", "final_return", 1.0, adapter="sleepy",
                                                         std=1.0, n=5)]}
    path, store = tmp_path / "my studies" / "endless.toml", tmp_path / "s.db"
    path.parent.mkdir()
    path.write_text(tomli_w.dumps(study), encoding="utf-8")
    driver = subprocess.Popen([sys.executable, "-m", "rlcompare", "study", "run", str(path), "--store", str(store)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    deadline = time.monotonic() + 120
    while (driver.poll() is None and not any(runs_root(store).glob("*/progress.jsonl"))
           and time.monotonic() < deadline):
        time.sleep(0.1)  # a run has started and evaluated: it is in flight
    driver.send_signal(signal.SIGTERM)
    _, err = driver.communicate(timeout=120)
    assert driver.returncode == 143, err
    [line] = [line for line in err.splitlines() if line.startswith("rlcompare: stopped")]
    assert line.endswith(f"`rlcompare study run '{path}' --store {store} --resume` runs what is missing")


def test_a_cell_that_cannot_be_planned_for_one_adapter_explains_only_that_adapter_s_rows(
        standin: None, tmp_path: Path) -> None:
    from rlcompare.store.sqlite_store import Store
    from rlcompare.studies.measured import measured_from_store
    from rlcompare.studies.model import Unplannable

    plugins = build_plugin_manager()
    study = plugins.study("standin")
    with Store(tmp_path / "empty.db") as store:
        store.check_writable()  # creates it: a store with no runs

        def reason(*unrunnable: Unplannable) -> str | None:
            table = measured_from_store(study, store, plugins.scoring_catalogue(), {}, unrunnable)
            return table[("canonical", "cart", "fake", "final_return")].missing

        assert reason() == "not run"
        assert reason(Unplannable("cart", "canonical", "its environment is not installed", "other")) == "not run"
        assert reason(Unplannable("cart", "native", "no such family")) == "not run"
        assert reason(Unplannable("cart", "canonical", "its environment is not installed", "fake")) == (
            "cannot be planned: cell cart (canonical arm) with fake: its environment is not installed")
        assert reason(Unplannable("cart", "canonical", "no such family")) == (
            "cannot be planned: cell cart (canonical arm): no such family")
