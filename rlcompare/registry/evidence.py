"""Check the registry's repository evidence against local git clones, offline.

For every evidence item that cites a repository file (``repo``, ``commit``, ``path``), look for a
local clone of ``owner/name`` under a mirrors directory and check that ``git show COMMIT:PATH``
contains the excerpt, whitespace runs collapsed on both sides. Web pages and papers cannot be
checked without the network; they are counted, not checked.

    python -m rlcompare.registry.evidence --mirrors DIR [--json] [--strict] [FILE.toml ...]

A clone of ``owner/name`` is found as ``DIR/owner+name`` (the layout of a fetched snapshot, whose
git directory may sit one level down, e.g. ``DIR/owner+name/repo``), ``DIR/owner/name`` or
``DIR/name``, matched without regard to case. It also applies the rules across the facts of each
entry (:mod:`rlcompare.registry.consistency`), which need no clone. Exit status 1 when an excerpt,
file or commit is not found or an entry breaks a rule (with ``--strict``, also when a clone is
missing), else 0.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from rlcompare.registry.consistency import Violation
from rlcompare.registry.consistency import check_entries as check_consistency
from rlcompare.registry.entries import FrameworkEntry
from rlcompare.registry.facts import Absence, Evidence, normalize_whitespace
from rlcompare.registry.loading import load_builtin_entries, load_framework_file

Status = Literal["verified", "excerpt-not-found", "file-not-found", "commit-not-found", "no-clone", "not-checkable",
                 "absence-contradicted", "not-in-cited-files"]
#: How the per-status counts are grouped in the summary.
NOT_FOUND: tuple[Status, ...] = ("excerpt-not-found", "file-not-found", "commit-not-found", "absence-contradicted",
                                 "not-in-cited-files")
GIT_TIMEOUT_SECONDS = 60


@dataclass(frozen=True)
class Check:
    """The outcome for one evidence item of one fact."""

    entry: str
    fact: str
    evidence: Evidence | Absence
    status: Status
    detail: str = ""

    def line(self) -> str:
        where = f"{self.evidence.repo}@{(self.evidence.commit or '')[:12]}:{self.evidence.path}"
        return f"{self.entry}.{self.fact}: {self.status} ({where}){': ' + self.detail if self.detail else ''}"


@dataclass
class EntryReport:
    """Per-entry counts."""

    entry: str
    counts: Counter[str] = field(default_factory=Counter)

    @property
    def verified(self) -> int:
        return self.counts["verified"]

    @property
    def not_found(self) -> int:
        return sum(self.counts[status] for status in NOT_FOUND)

    @property
    def no_clone(self) -> int:
        return self.counts["no-clone"]

    @property
    def not_checkable(self) -> int:
        return self.counts["not-checkable"]


def _is_git_dir(path: Path) -> bool:
    return (path / "HEAD").is_file() and (path / "objects").is_dir()


def _git_dir_in(path: Path) -> Path | None:
    """The git directory of a clone at ``path``: itself (bare), ``path/.git``, or one level down."""
    if not path.is_dir():
        return None
    for candidate in (path, path / ".git"):
        if _is_git_dir(candidate):
            return candidate
    for child in sorted(path.iterdir()):
        if child.is_dir():
            for candidate in (child, child / ".git"):
                if _is_git_dir(candidate):
                    return candidate
    return None


class Mirrors:
    """Local clones under one directory, found by ``owner/name``; git output cached per file."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._names = {child.name.casefold(): child for child in root.iterdir()} if root.is_dir() else {}
        self._clones: dict[str, Path | None] = {}
        self._files: dict[tuple[Path, str, str], str | None] = {}
        self._commits: dict[tuple[Path, str], bool] = {}

    def clone(self, repo: str) -> Path | None:
        key = repo.casefold()
        if key not in self._clones:
            owner, _, name = key.partition("/")
            found = None
            for candidate in (self._names.get(f"{owner}+{name}"), self._child(owner, name), self._names.get(name)):
                if candidate is not None and (found := _git_dir_in(candidate)) is not None:
                    break
            self._clones[key] = found
        return self._clones[key]

    def _child(self, owner: str, name: str) -> Path | None:
        parent = self._names.get(owner)
        if parent is None or not parent.is_dir():
            return None
        return next((child for child in parent.iterdir() if child.name.casefold() == name), None)

    def has_commit(self, git_dir: Path, commit: str) -> bool:
        key = (git_dir, commit)
        if key not in self._commits:
            result = _git(git_dir, "cat-file", "-e", f"{commit}^{{commit}}")
            self._commits[key] = result.returncode == 0
        return self._commits[key]

    def file_text(self, git_dir: Path, commit: str, path: str) -> str | None:
        key = (git_dir, commit, path)
        if key not in self._files:
            result = _git(git_dir, "show", f"{commit}:{path}")
            self._files[key] = result.stdout.decode("utf-8", "replace") if result.returncode == 0 else None
        return self._files[key]


def _git(git_dir: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], capture_output=True, timeout=GIT_TIMEOUT_SECONDS,
                          check=False)


def _file_at(mirrors: Mirrors, repo: str, commit: str, path: str) -> tuple[str | None, tuple[Status, str] | None]:
    """``path`` at ``commit`` of the local clone of ``repo`` (None: no such file), or why it cannot be read."""
    git_dir = mirrors.clone(repo)
    if git_dir is None:
        return None, ("no-clone", f"no clone of {repo} under {mirrors.root}")
    if not mirrors.has_commit(git_dir, commit):
        return None, ("commit-not-found", f"{git_dir} has no commit {commit}")
    return mirrors.file_text(git_dir, commit, path), None


def check_evidence(mirrors: Mirrors, evidence: Evidence) -> tuple[Status, str]:
    """The status of one evidence item, and a detail line for the not-found ones."""
    if evidence.kind != "repository":
        return "not-checkable", ""
    assert evidence.repo and evidence.commit and evidence.path
    text, failure = _file_at(mirrors, evidence.repo, evidence.commit, evidence.path)
    if failure is not None:
        return failure
    if text is None:
        return "file-not-found", f"no file {evidence.path} at {evidence.commit[:12]}"
    if normalize_whitespace(evidence.excerpt) in normalize_whitespace(text):
        return "verified", ""
    return "excerpt-not-found", f"excerpt {evidence.excerpt[:60]!r} is not in the file"


def check_absence(mirrors: Mirrors, absence: Absence) -> tuple[Status, str]:
    """Re-read what an absence claim is about: ``verified`` when the text (or the file) is indeed not there."""
    text, failure = _file_at(mirrors, absence.repo, absence.commit, absence.path)
    if failure is not None:
        return failure
    if absence.text is None:
        return ("verified", "") if text is None else ("absence-contradicted", f"{absence.path} exists")
    if text is None:  # a claim about a file that is not there says nothing: the path is probably wrong
        return "file-not-found", f"no file {absence.path} at {absence.commit[:12]}"
    if normalize_whitespace(absence.text).casefold() in normalize_whitespace(text).casefold():
        return "absence-contradicted", f"{absence.text[:60]!r} is in the file"
    return "verified", ""


def _spellings(name: str) -> tuple[str, ...]:
    """How an algorithm's name may be written in a file, letters and digits only ('TD3+BC': td3bc, td3plusbc)."""
    plain = re.sub(r"[^a-z0-9]", "", name.lower())
    plus = re.sub(r"[^a-z0-9]", "", name.lower().replace("+", "plus"))
    return tuple(dict.fromkeys((plain, plus)))


def unlisted_algorithms(entry: FrameworkEntry, mirrors: Mirrors) -> list[str] | None:
    """For an algorithms list marked complete: the listed names that neither the cited files (whole, at
    their commits) nor the fact's note spell out, so the list says more than its sources; None when no
    cited file has a local clone (nothing to check against)."""
    fact = entry.algorithms
    if fact is None or not fact.complete or not isinstance(fact.value, tuple):
        return None
    texts = []
    for item in fact.evidence:
        git_dir = mirrors.clone(item.repo) if item.kind == "repository" and item.repo else None
        if git_dir is not None and item.commit and item.path:
            texts.append(mirrors.file_text(git_dir, item.commit, item.path) or "")
    if not texts:
        return None
    written = re.sub(r"[^a-z0-9]", "", " ".join([*texts, fact.note]).lower())
    return [name for name in fact.value if not any(spelling in written for spelling in _spellings(str(name)))]


def check_entries(entries: Iterable[FrameworkEntry], mirrors: Mirrors) -> tuple[list[EntryReport], list[Check]]:
    """Check every evidence item of every entry; per-entry counts and every check."""
    reports: list[EntryReport] = []
    checks: list[Check] = []
    for entry in entries:
        report = EntryReport(entry.id)
        for name, fact in entry.facts().items():
            for evidence in fact.evidence:
                status, detail = check_evidence(mirrors, evidence)
                report.counts[status] += 1
                checks.append(Check(entry.id, name, evidence, status, detail))
            for absence in fact.absent:
                status, detail = check_absence(mirrors, absence)
                report.counts[status] += 1
                checks.append(Check(entry.id, name, absence, status, detail))
        for algorithm in unlisted_algorithms(entry, mirrors) or ():
            report.counts["not-in-cited-files"] += 1
            cited = next(item for item in entry.algorithms.evidence if item.kind == "repository")  # type: ignore[union-attr]
            checks.append(Check(entry.id, "algorithms", cited, "not-in-cited-files",
                                f"{algorithm} is in a list marked complete, but neither its cited files nor its "
                                "note name it (say in the note how the source writes it)"))
        reports.append(report)
    return reports, checks


def summary_lines(reports: Sequence[EntryReport], checks: Sequence[Check]) -> list[str]:
    lines = [f"{'entry':<22} {'verified':>8} {'not found':>9} {'no clone':>8} {'web/paper':>9}"]
    for report in reports:
        lines.append(f"{report.entry:<22} {report.verified:>8} {report.not_found:>9} {report.no_clone:>8} "
                     f"{report.not_checkable:>9}")
    total = EntryReport("total")
    for report in reports:
        total.counts.update(report.counts)
    lines.append(f"{'total':<22} {total.verified:>8} {total.not_found:>9} {total.no_clone:>8} "
                 f"{total.not_checkable:>9}")
    lines += [check.line() for check in checks if check.status in NOT_FOUND]
    missing = sorted({str(check.evidence.repo) for check in checks if check.status == "no-clone"})
    if missing:
        lines.append("no local clone of: " + ", ".join(missing))
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlcompare.registry.evidence", description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirrors", type=Path, required=True, help="directory holding local git clones")
    parser.add_argument("--json", action="store_true", help="one JSON object: per-entry counts and every failure")
    parser.add_argument("--strict", action="store_true", help="also fail when a repository has no local clone")
    parser.add_argument("files", nargs="*", type=Path, help="entry files (default: every built-in entry)")
    args = parser.parse_args(argv)
    entries = [load_framework_file(path) for path in args.files] if args.files else list(load_builtin_entries())
    reports, checks = check_entries(entries, Mirrors(args.mirrors))
    violations = check_consistency(entries)
    if args.json:
        print(json.dumps({
            "entries": {r.entry: {"verified": r.verified, "not_found": r.not_found, "no_clone": r.no_clone,
                                  "not_checkable": r.not_checkable} for r in reports},
            "failures": [check.line() for check in checks if check.status in NOT_FOUND],
            "no_clone": sorted({str(c.evidence.repo) for c in checks if c.status == "no-clone"}),
            "rules_broken": [violation.line() for violation in violations],
        }, indent=2))
    else:
        print("\n".join(summary_lines(reports, checks)))
        print(f"consistency rules: {len(violations)} broken" + "".join(f"\n{v.line()}" for v in violations))
    return exit_status(checks, args.strict, violations)


def exit_status(checks: Sequence[Check], strict: bool, violations: Sequence[Violation] = ()) -> int:
    """1 when an excerpt was not found or an entry breaks a consistency rule (or, ``strict``, a repository
    has no local clone), else 0."""
    failed = any(check.status in NOT_FOUND for check in checks) or bool(violations)
    if strict:
        failed = failed or any(check.status == "no-clone" for check in checks)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
