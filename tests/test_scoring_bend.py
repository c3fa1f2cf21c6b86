"""Scores that cannot be bent: unknown never helps, ties are called ties, learning comes first, and
score and rank agree on screen.

The adapters are an outside package on an entry point (tests/plugins/bend_scoring: its adapters,
their frameworks' registry entries and the frameworks' own distributions), scored and reported by
``rlcompare`` in a fresh interpreter with the package on its path. Their runs are synthetic (a real
SQLite store written with ``Store.save_run``) so that each situation is exactly the one the rule
must withstand, not what a loaded machine happened to measure.
"""

from __future__ import annotations

import csv
import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from rlcompare.reporting.numbers import format_number
from tests.conftest import ROOT, run_cli
from tests.test_criteria_support import curve, run_record, workload_spec, write_store

BEND = ROOT / "tests" / "plugins" / "bend_scoring"
REPS = "400"
#: The rl-zoo DQN situation: CartPole-v1, success threshold 475, 3 seeds.
ZOO = workload_spec("zoo-dqn", algorithm="DQN", env_steps=50_000, threshold=475.0)
#: Development criteria the registry (or the framework's package) answers: unknown for hiddenfw.
REGISTRY_CRITERIA = ("licence", "release_age", "registry_algorithms")


@pytest.fixture
def outside() -> dict[str, str]:
    """The environment of a fresh interpreter that finds the package through its entry point."""
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(BEND), os.environ.get("PYTHONPATH")]))}
    return env


def _unset_autoload() -> None:
    os.environ.pop("RLCOMPARE_DISABLE_PLUGIN_AUTOLOAD", None)


def _runs(adapter: str, finals: Sequence[float], *, framework: str = "openfw", throughput: Sequence[float],
          startup: Sequence[float], rss_mib: Sequence[float], reached: float | None = None) -> list[tuple[Any, Any]]:
    """One valid run per seed of ``adapter`` on the zoo workload, with an evaluation curve from the
    untrained return (about 20, acting at random) to its final return; ``reached``: the env step
    at which it first evaluates at the threshold."""
    out = []
    for seed, final in enumerate(finals):
        training = ZOO["env_steps"] / throughput[seed]
        record = run_record(ZOO, adapter, seed, framework=framework, final_return=final,
                            throughput=throughput[seed], startup=startup[seed], training=training,
                            peak_rss=int(rss_mib[seed] * 2**20))
        middle = 25_000 if reached is None else reached
        middle_return = final if reached is not None else 20.0 + (final - 20.0) / 2
        points = [(0, 0.0, 20.0 + seed), (middle, training * middle / ZOO["env_steps"], middle_return),
                  (ZOO["env_steps"], training, final)]
        out.append((record, curve(points)))
    return out


def _score(store: Path, env: dict[str, str], *args: str) -> tuple[str, dict[str, Any]]:
    """``rlcompare score`` of ``store``: the tables and the JSON."""
    _unset_autoload()
    table = run_cli(["score", "--store", str(store), "--reps", REPS, *args], env=env)
    assert table.returncode == 0, table.stderr
    data = run_cli(["score", "--store", str(store), "--reps", REPS, "--json", *args], env=env)
    assert data.returncode == 0, data.stderr
    return table.stdout, json.loads(data.stdout)


def _report(store: Path, out: Path, env: dict[str, str], *args: str) -> Path:
    _unset_autoload()
    done = run_cli(["report", "--store", str(store), "--out", str(out), "--format", "md,html,latex,csv,json",
                    "--reps", REPS, *args], env=env)
    assert done.returncode == 0, done.stderr
    return out


def _adapters(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["adapter"]: row for row in data["adapters"]}


def _ranking_lines(text: str) -> list[list[str]]:
    """``rlcompare score``'s ranking lines: [rank, adapter, the rest] in the order printed."""
    lines = text.split("Ranking (tier, then overall score", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    ranked = [line for line in lines if re.match(r"  (\d+=?|-) ", line)]
    return [line.split(maxsplit=2) for line in ranked]


def _ranking_rows(markdown: str) -> dict[str, list[str]]:
    section = markdown.split("## Ranking", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
        if line.startswith("| ") and len(cells) > 2 and not cells[0].startswith("rank"):
            rows[cells[1].replace("\\_", "_")] = cells
    return rows


# -- unknown never helps ------------------------------------------------------------------------------


def test_unknown_registry_facts_score_the_worst_and_never_leave_the_competitors_score(
        tmp_path: Path, outside: dict[str, str]) -> None:
    """hiddenfw has no public repository: licence, release and algorithms unknown, and a package
    that names no licence. Those criteria stay in open's overall score (which has them), and hidden
    scores the worst on each; with identical runs, hidden ranks below."""
    same = {"throughput": [1000.0, 1010.0, 990.0], "startup": [2.0, 2.1, 1.9], "rss_mib": [200.0, 201.0, 199.0]}
    runs = _runs("open", [300.0, 320.0, 310.0], **same) + _runs("hidden", [300.0, 320.0, 310.0],
                                                                 framework="hiddenfw", **same)
    store = write_store(tmp_path / "s.db", runs)
    text, data = _score(store, outside)
    cells = {(c["criterion"], c["adapter"]): c for c in data["cells"] if c["workload"] == "*"}
    weights = {c["id"]: c["weight"] for c in data["criteria"]}
    left_out = {item["criterion"] for item in data["left_out"]}
    imputed = {(i["criterion"], i["adapter"]): i for i in data["imputed"]}
    for criterion in REGISTRY_CRITERIA:
        assert cells[(criterion, "open")]["point"] is not None, criterion  # open has the fact...
        assert cells[(criterion, "hidden")]["missing"], criterion  # ...hidden's is unknown
        assert criterion not in left_out and weights[criterion] > 0, criterion  # so it stays in the scores
        assert imputed[(criterion, "hidden")]["score"] == 0.0, criterion  # and hidden scores the worst
        assert imputed[(criterion, "hidden")]["reason"].startswith("no value ("), criterion
    assert "unknown" in imputed[("release_age", "hidden")]["reason"]
    scores = {(s["criterion"], s["adapter"]): s["mean"]["point"] for s in data["scores"]}
    for criterion in REGISTRY_CRITERIA:
        assert scores[(criterion, "hidden")] == 0.0 <= scores[(criterion, "open")]
    # the same capabilities, a taxonomy unknown against one that is known: unknown features count as
    # not offered, so leaving them unknown cannot raise the share
    assert scores[("distributed_feature_coverage", "hidden")] <= scores[("distributed_feature_coverage", "open")]
    adapters = _adapters(data)
    assert adapters["open"]["missing_criteria"] == [] and adapters["open"]["weight_coverage"] == pytest.approx(1.0)
    assert adapters["hidden"]["score"]["point"] < adapters["open"]["score"]["point"]
    assert (adapters["open"]["rank"], adapters["hidden"]["rank"]) == (1, 2)
    assert "hidden / all workloads: no value (" in text and "unknown never helps" in text


# -- ties are called ties -----------------------------------------------------------------------------


def _twins(tmp_path: Path) -> Path:
    """One class under two ids, run in one invocation: the same returns seed for seed (the same
    code and seeds), timing figures that differ only by run-to-run noise."""
    returns = [480.0, 500.0, 490.0]
    runs = _runs("twin_a", returns, throughput=[1000.0, 930.0, 985.0], startup=[2.0, 2.4, 2.1],
                 rss_mib=[210.0, 204.0, 207.0], reached=40_000)
    runs += _runs("twin_b", returns, throughput=[960.0, 1012.0, 955.0], startup=[2.3, 2.0, 2.25],
                  rss_mib=[206.0, 209.0, 205.0], reached=40_000)
    return write_store(tmp_path / "twins.db", runs)


def test_two_identical_adapters_in_one_store_are_tied_in_score_output(tmp_path: Path, outside: dict[str, str]) -> None:
    text, data = _score(_twins(tmp_path), outside)
    twins = _adapters(data)
    a, b = twins["twin_a"], twins["twin_b"]
    assert a["score"]["point"] != b["score"]["point"]  # noise sets them apart by a little...
    assert a["rank"] == b["rank"] == 1  # ...which the bootstrap does not call a difference
    assert a["tied"] and a["tied_with"] == ["twin_b"] and b["tied_with"] == ["twin_a"]
    [comparison] = data["overall_comparisons"]
    assert not comparison["separated"] and 0.025 < comparison["p"] < 0.975
    assert a["rank_stability"] == b["rank_stability"] == 1.0  # each stays within the tie
    lines = {adapter: (rank, rest) for rank, adapter, rest in _ranking_lines(text)}
    assert lines["twin_a"][0] == lines["twin_b"][0] == "1="
    assert lines["twin_a"][1].endswith("tied with twin_b") and lines["twin_b"][1].endswith("tied with twin_a")
    assert "'=' marks adapters whose overall scores the bootstrap" in text


def test_two_identical_adapters_in_one_store_are_tied_in_every_report_format(
        tmp_path: Path, outside: dict[str, str]) -> None:
    out = _report(_twins(tmp_path), tmp_path / "report", outside)
    rows = _ranking_rows((out / "rlcompare-report.md").read_text(encoding="utf-8"))
    assert rows["twin_a"][0] == rows["twin_b"][0] == "1="
    assert rows["twin_a"][5] == "twin\\_b" and rows["twin_b"][5] == "twin\\_a"  # the "tied with" column
    html = (out / "rlcompare-report.html").read_text(encoding="utf-8")
    for twin, other in (("twin_a", "twin_b"), ("twin_b", "twin_a")):
        assert f'<tr><td class="num">1=</td><td>{twin}</td>' in html
        assert f"<td>{other}</td><td class=\"num\">" in html
    latex = (out / "rlcompare-report.tex").read_text(encoding="utf-8")
    assert "1= & twin\\_a &" in latex and "1= & twin\\_b &" in latex
    with open(out / "rlcompare-report-csv" / "overall.csv", encoding="utf-8") as handle:
        table = {row["adapter"]: row for row in csv.DictReader(handle)}
    assert table["twin_a"]["rank"] == table["twin_b"]["rank"] == "1"
    assert table["twin_a"]["tied"] == "True" and table["twin_a"]["tied_with"] == "twin_b"
    document = json.loads((out / "rlcompare-report.json").read_text(encoding="utf-8"))
    overall = {row["adapter"]: row for row in document["tables"]["overall"]}
    assert overall["twin_b"]["tied"] is True and overall["twin_b"]["tied_with"] == "twin_a"
    assert {row["adapter"]: row["tied_with"] for row in document["matrix"]["adapters"]} == {
        "twin_a": ["twin_b"], "twin_b": ["twin_a"]}


# -- learning comes first; score and rank agree on screen ---------------------------------------------


def _zoo(tmp_path: Path) -> Path:
    """The rl-zoo DQN case: solver reaches 500 (solved), plodder 384 (learned, slowly, with a large
    install), sprinter ends at 16 (worse than acting at random) but is fast, starts fast and is small."""
    runs = _runs("solver", [500.0, 500.0, 500.0], throughput=[900.0, 910.0, 905.0], startup=[3.0, 3.1, 2.9],
                 rss_mib=[300.0, 305.0, 302.0], reached=30_000)
    runs += _runs("plodder", [384.0, 390.0, 378.0], throughput=[400.0, 410.0, 395.0], startup=[6.0, 6.2, 5.9],
                  rss_mib=[900.0, 905.0, 910.0])
    runs += _runs("sprinter", [16.2, 15.9, 16.5], throughput=[4000.0, 4100.0, 3950.0], startup=[1.0, 1.1, 0.95],
                  rss_mib=[150.0, 152.0, 151.0])
    return write_store(tmp_path / "zoo.db", runs)


@pytest.mark.parametrize("profile", ["balanced", "performance", "research-prototyping", "production-scale"])
def test_speed_and_footprint_cannot_lift_an_adapter_that_did_not_learn(
        tmp_path: Path, outside: dict[str, str], profile: str) -> None:
    _, data = _score(_zoo(tmp_path), outside, "--profile", profile)
    zoo = _adapters(data)
    assert [zoo[a]["rank"] for a in ("solver", "plodder", "sprinter")] == [1, 2, 3], profile
    assert (zoo["solver"]["solved_workloads"], zoo["solver"]["learned_workloads"]) == (1, 1)
    assert (zoo["plodder"]["solved_workloads"], zoo["plodder"]["learned_workloads"]) == (0, 1)
    assert (zoo["sprinter"]["solved_workloads"], zoo["sprinter"]["learned_workloads"]) == (0, 0)
    assert data["profile"]["learning_first"] is True


def test_a_profile_that_wants_raw_speed_says_so_and_then_speed_counts(tmp_path: Path, outside: dict[str, str]) -> None:
    """The same store under learning_first = false: the sprinter's speed and footprint outweigh the
    plodder's learning, which is what learning first prevents under the built-in profiles."""
    weights = tmp_path / "speed.toml"
    weights.write_text('name = "raw-speed"\nlearning_first = false\n[weights]\nthroughput = 3\n', encoding="utf-8")
    text, data = _score(_zoo(tmp_path), outside, "--weights", str(weights))
    zoo = _adapters(data)
    assert data["profile"]["learning_first"] is False
    assert zoo["sprinter"]["score"]["point"] > zoo["plodder"]["score"]["point"]
    assert zoo["sprinter"]["rank"] < zoo["plodder"]["rank"]
    assert "workloads solved" not in text.split("Ranks:")[-1]
    bad = tmp_path / "bad.toml"
    bad.write_text("learning_first = 'no'\n", encoding="utf-8")
    done = run_cli(["score", "--store", str(tmp_path / "zoo.db"), "--weights", str(bad)], env=outside)
    errors = [line for line in done.stderr.splitlines() if not line.startswith("warning:")]
    assert done.returncode == 2 and len(errors) == 1 and "learning_first: expected true or false" in errors[0]


def test_a_higher_score_beside_a_worse_rank_says_why_in_score_output(tmp_path: Path, outside: dict[str, str]) -> None:
    text, data = _score(_zoo(tmp_path), outside, "--profile", "production-scale")
    zoo = _adapters(data)
    # production-scale weighs throughput and memory most: the sprinter outscores both learners...
    assert zoo["sprinter"]["score"]["point"] > max(zoo[a]["score"]["point"] for a in ("solver", "plodder"))
    # ...ranks below them, and every output says why, beside the score
    assert zoo["sprinter"]["rank_note"] == (
        "ranked below solver, plodder despite a higher overall score: fewer workloads solved than solver "
        "(0 against 1); fewer workloads learned than plodder (0 against 1)")
    assert zoo["sprinter"]["tier"] == "1 valid, 0 solved, 0 learned"
    assert zoo["solver"]["rank_note"] is None and zoo["plodder"]["rank_note"] is None
    # the ranking is in rank order, each score with the tier that ranks it before the score
    lines = _ranking_lines(text)
    assert [(rank, adapter) for rank, adapter, _ in lines] == [("1", "solver"), ("2", "plodder"), ("3", "sprinter")]
    for (_, adapter, rest), tier in zip(lines, ("1 valid, 1 solved, 1 learned", "1 valid, 0 solved, 1 learned",
                                                "1 valid, 0 solved, 0 learned"), strict=True):
        score = zoo[adapter]["score"]["point"]
        assert rest.startswith(format_number(score)) and rest.endswith(f"tier: {tier}"), rest
    assert f"sprinter: {zoo['sprinter']['rank_note']}" in " ".join(text.split())


def test_a_higher_score_beside_a_worse_rank_says_why_in_every_report_format(
        tmp_path: Path, outside: dict[str, str]) -> None:
    out = _report(_zoo(tmp_path), tmp_path / "report", outside, "--profile", "production-scale")
    document = json.loads((out / "rlcompare-report.json").read_text(encoding="utf-8"))
    overall = document["tables"]["overall"]
    assert [(row["adapter"], row["rank"]) for row in overall] == [("solver", 1), ("plodder", 2), ("sprinter", 3)]
    assert overall[2]["score"] > overall[0]["score"] and overall[2]["rank_note"].startswith("ranked below solver, ")
    for above, below in zip(overall, overall[1:], strict=False):  # a higher score below always says why
        assert below["score"] <= above["score"] or below["rank_note"], below
    rows = _ranking_rows((out / "rlcompare-report.md").read_text(encoding="utf-8"))
    assert list(rows) == ["solver", "plodder", "sprinter"]  # in rank order
    assert rows["sprinter"][0] == "3" and rows["sprinter"][4] == "1 valid, 0 solved, 0 learned"  # tier beside score
    note = overall[2]["rank_note"]
    for name, escaped in (("rlcompare-report.md", note), ("rlcompare-report.html", note),
                          ("rlcompare-report.tex", note)):
        text = " ".join((out / name).read_text(encoding="utf-8").split())
        assert "tier (ranks before the score)" in text, name
        assert "speed or footprint never lifts" in text, name
        assert f"sprinter: {escaped}" in text, name
    with open(out / "rlcompare-report-csv" / "overall.csv", encoding="utf-8") as handle:
        table = list(csv.DictReader(handle))
    assert [row["adapter"] for row in table] == ["solver", "plodder", "sprinter"] and table[2]["rank_note"] == note


# -- the rules on their own (no store) ----------------------------------------------------------------


def test_adapters_get_different_ranks_only_where_every_pair_across_the_boundary_is_separated() -> None:
    import numpy as np

    from rlcompare.scoring.ranking import Tier, rank_adapters

    rng = np.random.default_rng(0)
    tiers = {a: Tier(None, 1, 0, 0) for a in "abcd"}
    # a and b overlap, b and c overlap, a and c do not: a chain is one tie; d is far below all
    joint = np.column_stack([rng.normal(1.0, 0.05, 1000), rng.normal(0.92, 0.05, 1000),
                             rng.normal(0.84, 0.05, 1000), rng.normal(0.2, 0.05, 1000)])
    ranking = rank_adapters(list("abcd"), tiers, joint.mean(axis=0), joint)
    assert ranking.ranks == {"a": 1, "b": 1, "c": 1, "d": 4}
    assert ranking.tied_with["b"] == ["a", "c"] and ranking.tied_with["d"] == []
    separated = {(c["x"], c["y"]): c["separated"] for c in ranking.comparisons}
    assert separated[("a", "c")] and not separated[("a", "b")] and not separated[("b", "c")]
    assert ranking.stability["d"] == 1.0 and all(ranking.stability[a] > 0.99 for a in "abc")
    # a tier above the score: the same replicates, d in a better tier, ranks first whatever its score
    tiers["d"] = Tier(None, 2, 0, 0)
    ranking = rank_adapters(list("abcd"), tiers, joint.mean(axis=0), joint)
    assert ranking.ranks == {"d": 1, "a": 2, "b": 2, "c": 2}
    assert ranking.notes["a"] == ("ranked below d despite a higher overall score: fewer workloads with a valid "
                                  "result than d (1 against 2)")


def test_solved_and_learned_are_judged_on_the_valid_seeds_mean_final_return() -> None:
    import pandas as pd

    from rlcompare.scoring.criteria import ScoringData
    from rlcompare.scoring.ranking import learning_by_adapter

    rows = [("a", "w", 480.0, "ok"), ("a", "w", 470.0, "ok"),  # mean 475: solved
            ("b", "w", 250.0, "ok"), ("b", "w", 500.0, "failed"),  # the failed seed does not count: learned
            ("c", "w", 200.0, "ok"),  # (200 - 20) / (475 - 20) < 0.5: not learned
            ("c", "v", 10.0, "ok")]  # v sets no threshold: counts for nobody
    runs = pd.DataFrame({"run_id": [f"r{i}" for i in range(len(rows))], "adapter": [r[0] for r in rows],
                         "workload_id": [r[1] for r in rows], "final_return_mean": [r[2] for r in rows],
                         "status": [r[3] for r in rows],
                         "success_threshold": [475.0 if r[1] == "w" else None for r in rows]})
    curves = pd.DataFrame({"run_id": ["r0", "r2", "r4"], "env_steps": [0, 0, 0], "train_seconds": 0.0,
                           "return_mean": [20.0, 20.0, 20.0]})
    found = learning_by_adapter(ScoringData(runs, curves=curves))
    assert (found["a"].solved, found["a"].learned) == ({"w"}, {"w"})
    assert (found["b"].solved, found["b"].learned) == (set(), {"w"})
    assert (found["c"].solved, found["c"].learned) == (set(), set())
    # without evaluations at step 0 there is no untrained return: learned means solved
    assert learning_by_adapter(ScoringData(runs))["b"].learned == set()
