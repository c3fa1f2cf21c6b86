"""Reading studies: a TOML file or a plugin's table, validated into a :class:`Study`, or one line
naming the file and every failing field."""

from __future__ import annotations

import tomllib
from collections.abc import Iterator, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from rlcompare.errors import InvalidStudyError
from rlcompare.spec.files import read_text_file
from rlcompare.studies.model import Study

#: Where the built-in studies live (package data).
BUILTIN_PACKAGE = "rlcompare.studies.builtin"


def describe_problems(exc: ValidationError) -> str:
    """Every error on one line: the dotted field path and what was wrong (missing ones together)."""
    missing: list[str] = []
    problems: list[str] = []
    for error in exc.errors():
        field = ".".join(str(part) for part in error["loc"])
        if error["type"] == "missing":
            missing.append(f"'{field}'")
        elif error["type"] == "extra_forbidden":
            problems.append(f"field '{field}' is not a known setting")
        else:
            text = error["msg"].removeprefix("Value error, ")
            problems.append(f"field '{field}': {text}" if field else text)
    if missing:
        problems.insert(0, f"field{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
                           f"{'are' if len(missing) > 1 else 'is'} required")
    return "; ".join(problems)


def study_from_dict(data: Mapping[str, Any], source: str) -> Study:
    """A validated study, or :class:`InvalidStudyError` naming ``source`` and every failing field."""
    if not isinstance(data, Mapping):
        raise InvalidStudyError(f"{source}: a study is a table of settings")
    try:
        return Study.model_validate(dict(data))
    except ValidationError as exc:
        raise InvalidStudyError(f"{source}: {describe_problems(exc)}") from None


def read_study_file(path: Path) -> Study:
    """The study in a TOML file."""
    text = read_text_file(path, "a study file", InvalidStudyError)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidStudyError(f"{path}: not valid TOML ({exc})") from None
    study = study_from_dict(data, str(path))
    if path.stem != study.id:
        raise InvalidStudyError(f"{path}: the file name must be the study id ({study.id}.toml)")
    return study


def builtin_studies() -> Iterator[Study]:
    """The studies shipped with rlcompare, in file-name order."""
    folder = resources.files(BUILTIN_PACKAGE)
    for item in sorted(folder.iterdir(), key=lambda entry: entry.name):
        if item.name.endswith(".toml"):
            with resources.as_file(item) as path:
                yield read_study_file(Path(path))
