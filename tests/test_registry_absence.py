"""Absence claims made checkable: a fact's ``absent`` items say what is *not* in a repository at a
commit, and the evidence checker re-reads the file there, failing on a claim the file contradicts (the
class of error of a note saying pyproject.toml configures no coverage tool when it does)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from rlcompare.registry.entries import FrameworkEntry
from rlcompare.registry.evidence import Mirrors, check_absence, check_entries
from rlcompare.registry.facts import Absence
from rlcompare.registry.loading import load_builtin_entries


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A bare clone of owner/tool with a pyproject.toml that configures coverage, as DIR/owner+tool/repo."""
    work = tmp_path_factory.mktemp("tool")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(work)]
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    (work / "pyproject.toml").write_text('[project]\nname = "tool"\n\n[tool.coverage.run]\nsource = ["tool"]\n')
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "c"], check=True)
    commit = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    root = tmp_path_factory.mktemp("mirrors")
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(root / "owner+tool" / "repo")], check=True)
    return root, commit


def _absence(commit: str, path: str, text: str | None) -> Absence:
    return Absence(repo="owner/tool", commit=commit, path=path, text=text)


def test_a_true_absence_is_verified_and_a_false_one_contradicted(mirror: tuple[Path, str]) -> None:
    root, commit = mirror
    mirrors = Mirrors(root)
    assert check_absence(mirrors, _absence(commit, "pyproject.toml", "pytest-cov"))[0] == "verified"
    assert check_absence(mirrors, _absence(commit, "LICENSE", None))[0] == "verified"
    status, detail = check_absence(mirrors, _absence(commit, "pyproject.toml", "[TOOL.COVERAGE.run]"))
    assert status == "absence-contradicted" and "is in the file" in detail  # case and spacing do not hide it
    assert check_absence(mirrors, _absence(commit, "pyproject.toml", None))[0] == "absence-contradicted"
    assert check_absence(mirrors, _absence(commit, "setup.cfg", "coverage"))[0] == "file-not-found"
    assert check_absence(mirrors, _absence("0" * 40, "pyproject.toml", "x"))[0] == "commit-not-found"
    assert check_absence(Mirrors(root / "none"), _absence(commit, "pyproject.toml", "x"))[0] == "no-clone"


def test_an_entry_whose_searched_note_is_contradicted_fails_the_checker(mirror: tuple[Path, str]) -> None:
    root, commit = mirror
    sb3 = next(entry for entry in load_builtin_entries() if entry.id == "stable-baselines3")
    data = sb3.model_dump()
    data["coverage_reported"] = {
        "value": "unknown", "as_of": sb3.coverage_reported.as_of,
        "searched": "pyproject.toml configures no coverage tool",
        "absent": [{"repo": "owner/tool", "commit": commit, "path": "pyproject.toml", "text": "tool.coverage"}]}
    entry = FrameworkEntry.model_validate(data)
    _, checks = check_entries([entry], Mirrors(root))
    [absence] = [check for check in checks if check.fact == "coverage_reported"]
    assert absence.status == "absence-contradicted"
    assert "'tool.coverage' is in the file" in absence.line()
    assert entry.to_json_dict()["absent"]["coverage_reported"] == [f"'tool.coverage' not in owner/tool@{commit[:12]}"
                                                                  ":pyproject.toml"]
