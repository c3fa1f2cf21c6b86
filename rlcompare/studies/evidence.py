"""Check every repository excerpt of the studies against local clones, as the registry's evidence
checker does for framework entries: ``python -m rlcompare.studies.evidence --mirrors DIR [FILE ...]``.

Each excerpt must be found, whitespace collapsed, in the file at the commit it names. Exit status 1
when one is not found (or, with ``--strict``, when a repository has no local clone)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from rlcompare.errors import RLCompareError
from rlcompare.registry.evidence import NOT_FOUND, Check, Mirrors, check_evidence, exit_status
from rlcompare.studies.loading import builtin_studies, read_study_file
from rlcompare.studies.model import Study


def check_studies(studies: Iterable[Study], mirrors: Mirrors) -> list[Check]:
    """One check per evidence item: the publication's, then each published row's."""
    checks: list[Check] = []
    for study in studies:
        items = [("publication", evidence) for evidence in study.publication.evidence]
        items += [(f"published.{index} ({row.label})", evidence)
                  for index, row in enumerate(study.published) for evidence in row.evidence]
        for where, evidence in items:
            status, detail = check_evidence(mirrors, evidence)
            checks.append(Check(study.id, where, evidence, status, detail))
    return checks


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlcompare.studies.evidence", description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirrors", type=Path, required=True, help="directory holding local git clones")
    parser.add_argument("--strict", action="store_true", help="also fail when a repository has no local clone")
    parser.add_argument("files", nargs="*", type=Path, help="study files (default: every built-in study)")
    args = parser.parse_args(argv)
    if not args.mirrors.is_dir():
        print(f"rlcompare: error: --mirrors {args.mirrors} is not a folder", file=sys.stderr)
        return 2
    try:
        studies = [read_study_file(path) for path in args.files] if args.files else list(builtin_studies())
    except RLCompareError as error:
        print(f"rlcompare: error: {error}", file=sys.stderr)
        return 2
    checks = check_studies(studies, Mirrors(args.mirrors))
    counts: dict[str, int] = {}
    for check in checks:
        counts[check.status] = counts.get(check.status, 0) + 1
    print(", ".join(f"{n} {status}" for status, n in sorted(counts.items())))
    for check in checks:
        if check.status in NOT_FOUND or (args.strict and check.status == "no-clone"):
            print(check.line())
    return exit_status(checks, args.strict)


if __name__ == "__main__":
    sys.exit(main())
