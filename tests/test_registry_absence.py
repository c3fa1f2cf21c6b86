"""Absence claims made checkable: a fact's ``absent`` items say what is *not* in a repository at a
commit, and the evidence checker re-reads the file there, failing on a claim the file contradicts (the
class of error of a note saying pyproject.toml configures no coverage tool when it does)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from rlcompare.registry.entries import FrameworkEntry
from rlcompare.registry.evidence import Mirrors, check_absence, check_entries, unlisted_algorithms
from rlcompare.registry.facts import Absence
from rlcompare.registry.loading import load_builtin_entries


def bare_mirror(work: Path, root: Path, files: dict[str, str]) -> str:
    """A repository of ``files`` (one commit) cloned bare as ROOT/owner+tool/repo, the layout of a fetched
    snapshot; its commit."""
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(work)]
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    for name, text in files.items():
        (work / name).write_text(text)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "c"], check=True)
    commit = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(root / "owner+tool" / "repo")], check=True)
    return commit


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """owner/tool with a pyproject.toml that configures coverage."""
    root = tmp_path_factory.mktemp("mirrors")
    commit = bare_mirror(tmp_path_factory.mktemp("tool"), root, {
        "pyproject.toml": '[project]\nname = "tool"\n\n[tool.coverage.run]\nsource = ["tool"]\n'})
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


def test_a_complete_algorithms_list_must_be_spelled_out_by_its_cited_files_or_note(tmp_path: Path) -> None:
    """The list rule needs the whole cited file, so it lives in the checker: each listed name is found
    in the files at their commits (letters and digits only, '+' also as 'plus') or explained in the note."""
    commit = bare_mirror(tmp_path / "work", tmp_path / "m",
                         {"README.md": "- Deep Q-Network (DQN)\n- TD3PlusBC\n- Sampled Alpha/Mu-Zero\n"})
    sb3 = next(entry for entry in load_builtin_entries() if entry.id == "stable-baselines3")

    def entry(names: list[str], note: str = "") -> FrameworkEntry:
        data = sb3.model_dump()
        data["algorithms"] = {"value": names, "complete": True, "note": note, "as_of": sb3.algorithms.as_of,
                              "evidence": [{"repo": "owner/tool", "commit": commit, "path": "README.md",
                                            "excerpt": "- Deep Q-Network (DQN)"}]}
        return FrameworkEntry.model_validate(data)

    mirrors = Mirrors(tmp_path / "m")
    assert unlisted_algorithms(entry(["DQN", "TD3+BC"]), mirrors) == []
    assert unlisted_algorithms(entry(["DQN", "SAC", "SAMPLED-MUZERO"]), mirrors) == ["SAC", "SAMPLED-MUZERO"]
    assert unlisted_algorithms(entry(["DQN", "SAMPLED-MUZERO"], "Sampled MuZero is 'Sampled Alpha/Mu-Zero'"),
                               mirrors) == []
    _, checks = check_entries([entry(["DQN", "SAC"])], mirrors)
    assert [c.status for c in checks if c.fact == "algorithms"][-1] == "not-in-cited-files"
    assert unlisted_algorithms(entry(["DQN", "SAC"]), Mirrors(tmp_path / "none")) is None  # no clone: unchecked
