"""The offline evidence checker, against real git repositories made for the test."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from rlcompare.registry.entries import framework_entry_from_dict
from rlcompare.registry.evidence import Mirrors, check_entries, main

GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.org", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull}
README = "# Tiny framework\n\nTiny is a   reinforcement-learning\nlibrary written in PyTorch.\n"
MISSING_COMMIT = "f" * 40


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def work_tree(tmp_path: Path) -> tuple[Path, str]:
    """A repository with one commit holding README.md and LICENSE, and the commit's id."""
    source = tmp_path / "source"
    source.mkdir()
    _git(source, "init", "-q", "-b", "main")
    (source / "README.md").write_text(README, encoding="utf-8")
    (source / "LICENSE").write_text("MIT License\n\nCopyright (c) 2026 Tiny\n", encoding="utf-8")
    _git(source, "add", ".")
    _git(source, "commit", "-q", "-m", "tiny")
    return source, _git(source, "rev-parse", "HEAD").strip()


def _fetched_layout(tmp_path: Path, source: Path) -> Path:
    """Mirrors laid out like the fetch tool's snapshots: DIR/owner+name/repo, a bare git directory."""
    mirrors = tmp_path / "mirrors"
    (mirrors / "Tiny-Org+tinyfw").mkdir(parents=True)
    _git(tmp_path, "clone", "-q", "--bare", str(source), str(mirrors / "Tiny-Org+tinyfw" / "repo"))
    return mirrors


def _entry(commit: str) -> dict[str, object]:
    def repo(path: str, excerpt: str, at: str = commit, name: str = "tiny-org/TinyFW") -> dict[str, str]:
        return {"repo": name, "commit": at, "path": path, "excerpt": excerpt}

    web = {"url": "https://pypi.org/pypi/tinyfw/json", "accessed": "2026-11-30", "excerpt": '"version": "1.0"'}
    unknown = {"value": "unknown", "searched": "README at the commit."}
    facts = {name: unknown for name in ("homepage", "institution", "first_release_year", "surveys", "algorithms",
                                         "synchronization", "docs", "type_hints", "tests", "coverage_reported", "ci",
                                         "multi_agent", "offline_rl", "evolutionary", "architecture",
                                         "simulation_parallelism", "computing_parallelism", "env_apis")}
    return {
        "schema_version": 2, "id": "tinyfw", "name": "Tiny", "domain": "control", "as_of": "2026-11-30", **facts,
        "repository": {"value": "https://github.com/Tiny-Org/tinyfw", "evidence": [
            repo("README.md", "Tiny is a reinforcement-learning library written in PyTorch."),  # whitespace differs
        ]},
        "licence": {"value": "MIT", "evidence": [repo("LICENSE", "MIT License"), repo("LICENSE", "Apache License")]},
        "backend": {"value": ["pytorch"], "evidence": [repo("setup.py", "torch"), repo("README.md", "PyTorch",
                                                                                        at=MISSING_COMMIT)]},
        "latest_release": {"value": {"version": "1.0", "date": "2026-01-02"}, "evidence": [
            web, repo("README.md", "Tiny", name="other/elsewhere")]},
    }


def test_each_repository_excerpt_is_verified_or_reported_with_its_reason(
    tmp_path: Path, work_tree: tuple[Path, str]
) -> None:
    source, commit = work_tree
    entry = framework_entry_from_dict(_entry(commit), "tinyfw.toml")
    reports, checks = check_entries([entry], Mirrors(_fetched_layout(tmp_path, source)))
    statuses = {(check.fact, check.evidence.path, check.evidence.excerpt): check.status for check in checks}
    assert statuses == {
        ("repository", "README.md", "Tiny is a reinforcement-learning library written in PyTorch."): "verified",
        ("licence", "LICENSE", "MIT License"): "verified",
        ("licence", "LICENSE", "Apache License"): "excerpt-not-found",
        ("backend", "setup.py", "torch"): "file-not-found",
        ("backend", "README.md", "PyTorch"): "commit-not-found",
        ("latest_release", "README.md", "Tiny"): "no-clone",
        ("latest_release", None, '"version": "1.0"'): "not-checkable",
    }
    [report] = reports
    assert (report.verified, report.not_found, report.no_clone, report.not_checkable) == (2, 3, 1, 1)


def test_a_plain_clone_under_owner_slash_name_is_found(tmp_path: Path, work_tree: tuple[Path, str]) -> None:
    source, commit = work_tree
    mirrors = tmp_path / "plain"
    (mirrors / "tiny-org").mkdir(parents=True)
    _git(tmp_path, "clone", "-q", str(source), str(mirrors / "tiny-org" / "TinyFW"))
    entry = framework_entry_from_dict(_entry(commit), "tinyfw.toml")
    [report], _ = check_entries([entry], Mirrors(mirrors))
    assert report.verified == 2
    assert Mirrors(tmp_path / "nowhere").clone("tiny-org/tinyfw") is None


def test_the_command_line_prints_the_figures_and_fails_on_anything_not_found(
    tmp_path: Path, work_tree: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    source, commit = work_tree
    mirrors = _fetched_layout(tmp_path, source)
    path = tmp_path / "tinyfw.toml"
    path.write_text(_toml(_entry(commit)), encoding="utf-8")
    assert main(["--mirrors", str(mirrors), str(path)]) == 1
    out = capsys.readouterr().out
    assert "tinyfw" in out and "tinyfw.licence: excerpt-not-found" in out
    assert "no local clone of: other/elsewhere" in out

    good = _entry(commit)
    good["licence"] = {"value": "MIT", "evidence": [good["licence"]["evidence"][0]]}  # type: ignore[index]
    good["backend"] = {"value": "unknown", "searched": "setup.py: none."}
    path.write_text(_toml(good), encoding="utf-8")
    assert main(["--mirrors", str(mirrors), "--json", str(path)]) == 0  # a missing clone is not a failure...
    figures = json.loads(capsys.readouterr().out)
    assert figures["entries"]["tinyfw"] == {"verified": 2, "not_found": 0, "no_clone": 1, "not_checkable": 1}
    assert figures["no_clone"] == ["other/elsewhere"]
    assert main(["--mirrors", str(mirrors), "--strict", str(path)]) == 1  # ...unless --strict
    capsys.readouterr()


def _toml(data: dict[str, object]) -> str:
    lines = [f"{key} = {json.dumps(value) if key != 'as_of' else value}" for key, value in data.items()
             if not isinstance(value, dict)]
    for name, fact in data.items():
        if not isinstance(fact, dict):
            continue
        lines.append(f"[{name}]")
        for key, value in fact.items():
            if key == "value" and isinstance(value, dict):
                lines.append(f'value = {{ version = "{value["version"]}", date = {value["date"]} }}')
            elif key != "evidence":
                lines.append(f"{key} = {json.dumps(value)}")
        for item in fact.get("evidence", []):
            lines.append(f"[[{name}.evidence]]")
            lines += [f"{k} = {v if k == 'accessed' else json.dumps(v)}" for k, v in item.items()]
    return "\n".join(lines) + "\n"
