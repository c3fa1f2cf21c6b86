"""Parity in every report format: each verdict with the variant that explains a difference and what it
changes per setting, the adapter whose difference nothing explains flagged in the ranking, the
effective defaults side by side per family, the schedule differences, and "not probed" for a store
whose runs record no verdicts."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from rlcompare.harness.schedule import ScheduleTrace
from rlcompare.parity.schedules import schedule_differences
from rlcompare.parity.verdict import ParityVerdict, PartCheck
from rlcompare.plugins.manager import Plugins, build_plugin_manager
from rlcompare.reporting.escape import latex, markdown
from rlcompare.reporting.formats import write_report
from rlcompare.reporting.model import build_report
from rlcompare.scoring.engine import ScoringOptions
from rlcompare.scoring.profiles import get_profile
from rlcompare.spec.builtin_families import builtin_families
from rlcompare.spec.workload import workload_from_dict
from rlcompare.store.records import RunRecord
from tests.reporting_support import HOSTILE, REPORT_BUILTINS, synthetic_store
from tests.test_criteria_support import curve, run_record, workload_spec, write_store

FORMATS = ("html", "md", "latex", "csv", "json")
FLAG = "UNEXPLAINED: differs from the reference"
#: The DQN workload's budget, and how often alpha's framework really synced its target network.
DQN_STEPS, ALPHA_SYNC = 20_000, 10_000


def _checks(error: float) -> tuple[PartCheck, ...]:
    return (PartCheck("targets", 1e-8, 1e-4, "advantages"), PartCheck("gradients", error, 2e-3, "value.out.weight"))


def _verdict(adapter: str, family: str, case: str, status: str, **fields: Any) -> dict[str, Any]:
    defaults = fields.pop("defaults", {})
    return ParityVerdict(adapter=adapter, family=family, case=case, status=status, defaults=defaults,
                         versions={"torch": "2.3.1", f"{adapter}-lib": "1.2.3"}, **fields).to_dict()


#: Per adapter, its verdicts on each family: alpha verified, beta differs with value clipping, gamma
#: differs and nothing explains it, delta unverifiable (its reason carries markup of every language).
VERDICTS: dict[str, dict[str, list[dict[str, Any]]]] = {
    "alpha": {
        "PPO": [_verdict("alpha", "PPO", "discrete", "verified", checks=_checks(1e-6),
                         defaults={"optimizer": "adam", "adam_eps": 1e-5, "action_squashing": "none"}),
                _verdict("alpha", "PPO", "continuous", "verified", checks=_checks(1e-6),
                         defaults={"optimizer": "adam", "adam_eps": 1e-5, "action_squashing": "clip"})],
        "DQN": [_verdict("alpha", "DQN", "clip-idle", "verified", checks=_checks(1e-6),
                         defaults={"optimizer": "adam", "td_loss": "huber", "target_update": "hard every 1000"})],
    },
    "beta": {
        "PPO": [_verdict("beta", "PPO", "discrete", "differs", variant=("value_clipping",), checks=_checks(0.2),
                         defaults={"optimizer": "adam", "adam_eps": 1e-5, "value_clipping": "clip_range"})],
        "DQN": [_verdict("beta", "DQN", "clip-idle", "verified", checks=_checks(1e-6),
                         defaults={"optimizer": "adam", "td_loss": "huber"})],
    },
    "gamma": {
        "PPO": [_verdict("gamma", "PPO", "discrete", "differs", checks=_checks(0.4),
                         reason="no known variant explains the difference",
                         defaults={"optimizer": "rmsprop", "initialization": "xavier " + HOSTILE})],
    },
    "delta": {
        "PPO": [_verdict("delta", "PPO", "discrete", "unverifiable",
                         reason="the optimizer is built inside the trainer " + HOSTILE)],
    },
}


def _full(spec: dict[str, Any]) -> dict[str, Any]:
    """The spec as a run stores it: every canonical hyperparameter filled in."""
    return workload_from_dict(spec, "test", builtin_families()).to_dict()


def _dqn_schedule(sync_every: int) -> dict[str, Any]:
    """A DQN schedule as the harness traces it: canonical updates (one gradient step every 4 env steps
    from env step 1,000 on), the target network synced every ``sync_every`` env steps."""
    trace = ScheduleTrace()
    for step in range(1, DQN_STEPS + 1):
        if step > 1000 and step % 4 == 0:
            trace.record("gradient_step", step)
            trace.record("update", step)
        if step > 1000 and step % sync_every == 0:
            trace.record("target_sync", step)
    return trace.summary()


def parity_runs() -> list[tuple[RunRecord, list[Any]]]:
    cart = _full(workload_spec("cart", threshold=100.0))
    dqn = _full(workload_spec("dqn", algorithm="DQN", env_steps=DQN_STEPS))
    runs = []
    for index, (adapter, families) in enumerate(VERDICTS.items()):
        for spec in (cart, dqn):
            if spec["algorithm"] not in families:
                continue
            for seed in range(2):
                record = run_record(spec, adapter, seed, final_return=100.0 - 10 * index + seed,
                                    throughput=1000.0 + 100 * index, startup=1.0, training=5.0, peak_rss=2**27)
                record.budget_env_steps = record.env_steps = spec["env_steps"]
                record.parity_json = families[spec["algorithm"]]
                if spec["algorithm"] == "DQN":
                    record.schedule_json = _dqn_schedule(ALPHA_SYNC if adapter == "alpha" else 1000)
                runs.append((record, curve([(0, 0.0, 10.0), (spec["env_steps"], 1.0, 100.0 - 10 * index + seed)])))
    return runs


def report_plugins() -> Plugins:
    """The reporting tests' plugins and the built-in families with their reference updates (which say
    what each variant changes), as the CLI loads them."""
    return build_plugin_manager(builtins=("rlcompare.builtins.families", *REPORT_BUILTINS), autoload=False)


def _write(store: Path, out: Path) -> Path:
    plugins = report_plugins()
    report = build_report(store, plugins.reporting_catalogue(), get_profile("balanced"), ScoringOptions(reps=200))
    write_report(report, out, [plugins.report_formats[f] for f in FORMATS])
    return out


@pytest.fixture(scope="module")
def probed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("parity")
    return _write(write_store(root / "store.db", parity_runs()), root / "out")


@pytest.fixture(scope="module")
def alpha_sync_text() -> str:
    """What the report must say about alpha's target syncs (the parity layer's own words)."""
    spec = _full(workload_spec("dqn", algorithm="DQN", env_steps=DQN_STEPS))
    found = {d.aspect: d for d in schedule_differences(spec, _dqn_schedule(ALPHA_SYNC))}
    difference = found["target_sync_interval_env_steps"]
    assert (difference.measured, difference.canonical) == (ALPHA_SYNC, 1000)
    return difference.text


def _section(text: str, start: str, end: str) -> str:
    assert start in text, start
    return text.split(start, 1)[1].split(end, 1)[0]


def test_markdown_shows_verdicts_flag_variant_defaults_and_schedule(probed: Path, alpha_sync_text: str) -> None:
    text = (probed / "rlcompare-report.md").read_text()
    assert text.index("## Fidelity") < text.index("## Parity") < text.index("## Frameworks")
    ranking = _section(text, "## Ranking", "\n## ")
    assert "| weight with data | parity |" in ranking
    rows = {line.split(" | ")[1]: line for line in ranking.splitlines() if line.startswith("| ") and " | " in line}
    assert rows["gamma"].endswith(f"| **{FLAG}** |") and rows["gamma"].startswith("| 4 |")  # flagged, ranked last
    assert rows["alpha"].endswith("| verified |") and rows["beta"].endswith("| verified |")
    assert rows["delta"].endswith("| unverified |")
    note = next(line for line in ranking.splitlines() if line.startswith("Parity standing orders the ranks"))
    assert "gamma: the update differs from the reference and no known variant explains it" in note
    assert "delta: the update was not verified by the probe, so it ranks after every verified adapter" in note

    parity = _section(text, "## Parity", "\n## ")
    assert "| alpha | alpha-fw | PPO | discrete | verified | - | - |" in parity
    assert (f"| beta | beta-fw | PPO | discrete | differs | {markdown('value_clipping')} | "
            f"{markdown('defaults.value_clipping')}: canonical off, framework {markdown('clip_range')} |") in parity
    assert f"| gamma | gamma-fw | PPO | discrete | **{FLAG}** | - | - |" in parity
    assert "| delta | delta-fw | PPO | discrete | unverifiable | - | - |" in parity
    assert markdown("unverifiable: the optimizer is built inside the trainer " + HOSTILE) in parity
    assert "(probed on alpha-lib 1.2.3, torch 2.3.1)" in parity
    # the defaults side by side, one table per family, a column per adapter
    assert "| default | alpha | beta | gamma |" in parity and "| default | alpha | beta |" in parity
    assert "| optimizer | adam | adam | rmsprop |" in parity
    assert f"| {markdown('adam_eps')} | 1e-05 | 1e-05 | - |" in parity
    assert f"| {markdown('action_squashing')} | clip (continuous); none (discrete) | - | - |" in parity
    assert f"| initialization | - | - | {markdown('xavier ' + HOSTILE)} |" in parity
    assert f"| {markdown('td_loss')} | huber | huber |" in parity
    assert f"- dqn / alpha: {markdown(alpha_sync_text)}" in parity
    assert "dqn / beta" not in parity  # beta syncs on the canonical schedule
    for block in re.findall(r"(?:^\|.*\|\n)+", text, re.M):  # the hostile texts add no table cell
        assert len({len(re.findall(r"(?<!\\)\|", row)) for row in block.splitlines()}) == 1, block


def test_html_shows_verdicts_flag_variant_defaults_and_schedule(probed: Path, alpha_sync_text: str) -> None:
    page = (probed / "rlcompare-report.html").read_text()
    assert "<script" not in page
    ranking = _section(page, '<section id="ranking">', "</section>")
    assert "<th>parity</th>" in ranking
    assert f'<td class="status-unsupported"><strong>{FLAG}</strong></td>' in ranking
    assert "<strong>gamma</strong>: the update differs from the reference" in ranking
    parity = _section(page, '<section id="parity">', "</section>")
    assert page.index('id="fidelity"') < page.index('id="parity"') < page.index('id="frameworks"')
    assert "<code>defaults.value_clipping</code>: canonical off, framework clip_range" in parity
    assert "value predictions clipped to the old value" in parity  # what the variant means
    assert f'<td class="status-unsupported"><strong>{FLAG}</strong></td>' in parity
    assert html.escape("the optimizer is built inside the trainer " + HOSTILE) in parity
    assert "<th>default</th><th>alpha</th><th>beta</th><th>gamma</th>" in parity
    assert "<tr><td><code>optimizer</code></td><td>adam</td><td>adam</td><td>rmsprop</td></tr>" in parity
    assert f"<td>{html.escape('xavier ' + HOSTILE)}</td>" in parity
    assert f"dqn / alpha: {html.escape(alpha_sync_text)}" in parity


def test_latex_shows_verdicts_flag_variant_defaults_and_schedule(probed: Path, alpha_sync_text: str) -> None:
    text = (probed / "rlcompare-report.tex").read_text()
    assert "\\begin{tabular}{rlllllrrl}" in text and f"\\textbf{{{FLAG}}} \\\\" in text
    parity = _section(text, "\\subsection*{Parity}", "\\subsection*")
    assert f"beta & beta-fw & PPO & discrete & differs & {latex('value_clipping')} \\\\" in parity
    assert f"gamma & gamma-fw & PPO & discrete & \\textbf{{{FLAG}}} & - \\\\" in parity
    assert (f"{latex('value_clipping')} sets {latex('defaults.value_clipping')}: canonical off, framework "
            f"{latex('clip_range')}") in parity
    assert latex("the optimizer is built inside the trainer " + HOSTILE) in parity
    assert "default & alpha & beta & gamma \\\\" in parity and "optimizer & adam & adam & rmsprop \\\\" in parity
    assert f"initialization & - & - & {latex('xavier ' + HOSTILE)} \\\\" in parity
    assert f"\\item dqn / alpha: {latex(alpha_sync_text)}" in parity
    assert "\\textbf{gamma}: the update differs from the reference" in text
    for spec, body in re.findall(r"\\begin\{tabular\}\{([^}]*)\}(.*?)\\end\{tabular\}", text, re.S):
        for row in body.split("\\\\\n"):
            cells = re.sub(r"\\(toprule|midrule|bottomrule)", "", row)
            if cells.strip():
                assert len(re.findall(r"(?<!\\)&", cells)) == len(spec) - 1, (spec, row)
    unescaped = text.replace("\\\\", "")
    for char in "{}&%$#_":
        unescaped = unescaped.replace("\\" + char, "")
    assert unescaped.count("{") == unescaped.count("}")


def test_csv_and_json_carry_the_parity_tables(probed: Path, alpha_sync_text: str) -> None:
    folder = probed / "rlcompare-report-csv"
    parity = pd.read_csv(folder / "parity.csv", keep_default_na=False)
    assert list(parity.columns) == ["adapter", "framework", "family", "probe", "verdict", "variant", "settings",
                                    "detail", "versions"]
    verdicts = {(r.adapter, r.family, r.probe): r for r in parity.itertuples()}
    assert set(verdicts) == {("alpha", "PPO", "discrete"), ("alpha", "PPO", "continuous"),
                             ("alpha", "DQN", "clip-idle"), ("beta", "PPO", "discrete"),
                             ("beta", "DQN", "clip-idle"), ("gamma", "PPO", "discrete"),
                             ("delta", "PPO", "discrete")}  # each verdict once, though two seeds carry it
    beta = verdicts[("beta", "PPO", "discrete")]
    assert (beta.verdict, beta.variant) == ("differs", "value_clipping")
    assert beta.settings == "value_clipping: defaults.value_clipping canonical off, framework clip_range"
    assert beta.detail == "differs: matches the reference with value_clipping"
    gamma = verdicts[("gamma", "PPO", "discrete")]
    assert (gamma.verdict, gamma.variant, gamma.settings) == ("differs", "", "")
    assert gamma.detail.startswith("differs, and no known variant explains it (gradients: 0.4")
    assert verdicts[("delta", "PPO", "discrete")].detail.endswith(HOSTILE)
    assert verdicts[("alpha", "PPO", "discrete")].versions == "alpha-lib 1.2.3, torch 2.3.1"

    defaults = pd.read_csv(folder / "effective_defaults.csv", keep_default_na=False)
    values = {(r.adapter, r.family, r.key): r.value for r in defaults.itertuples()}
    assert values[("alpha", "PPO", "adam_eps")] == "1e-05" and values[("gamma", "PPO", "optimizer")] == "rmsprop"
    assert values[("alpha", "PPO", "action_squashing")] == "clip (continuous); none (discrete)"
    assert values[("alpha", "DQN", "target_update")] == "hard every 1000"

    schedule = pd.read_csv(folder / "schedule_differences.csv")
    sync = schedule[schedule["aspect"] == "target_sync_interval_env_steps"]
    assert sync[["workload", "adapter", "measured", "canonical"]].values.tolist() == [["dqn", "alpha", 10000.0,
                                                                                       1000.0]]
    assert sync["text"].tolist() == [alpha_sync_text]
    assert set(schedule["adapter"]) == {"alpha"}

    document = json.loads((probed / "rlcompare-report.json").read_text())
    assert document["matrix"]["parity"] == {"alpha": "verified", "beta": "verified", "gamma": "unexplained",
                                            "delta": "unverified"}
    tables = document["tables"]
    assert tables["parity"] == parity.to_dict("records")
    assert {(r["adapter"], r["family"], r["key"]): r["value"] for r in tables["effective_defaults"]} == values
    assert alpha_sync_text in [r["text"] for r in tables["schedule_differences"]]
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(document, json.loads((probed / "rlcompare-report.schema.json").read_text()))


def test_a_store_without_verdicts_says_the_runs_were_not_probed(tmp_path: Path) -> None:
    out = _write(synthetic_store(tmp_path / "store.db"), tmp_path / "out")
    text = (out / "rlcompare-report.md").read_text()
    parity = _section(text, "## Parity", "\n## ")
    assert "The runs were not probed: no run records parity verdicts" in parity
    assert "No run traced its schedule." in parity
    assert "| parity |" not in _section(text, "## Ranking", "\n## ") and "Parity standing orders the ranks" not in text
    page = (out / "rlcompare-report.html").read_text()
    assert "The runs were not probed: no run records parity verdicts" in page and "<th>parity</th>" not in page
    tex = (out / "rlcompare-report.tex").read_text()
    assert "The runs were not probed: no run records parity verdicts" in tex
    assert "\\begin{tabular}{rlllllrr}" in tex
    for table in ("parity", "effective_defaults", "schedule_differences"):
        assert pd.read_csv(out / "rlcompare-report-csv" / f"{table}.csv").empty, table
    assert "parity" not in json.loads((out / "rlcompare-report.json").read_text())["matrix"]
