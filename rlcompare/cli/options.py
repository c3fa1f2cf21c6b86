"""What the command groups share: the store default, the one-line argument parser, and the
argument types and options that more than one command takes."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import NoReturn

from rlcompare.scoring.criteria import Criterion
from rlcompare.scoring.option_bounds import MAX_REPS, MIN_REPS, SEED_LIMIT
from rlcompare.scoring.profiles import DEFAULT_PROFILE, WeightProfile, get_profile, load_weights_file

DEFAULT_STORE = "rlcompare.db"
DEFAULT_TIMEOUT_SECONDS = 3600.0


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (no usage dump) and exit status 2."""

    def error(self, message: str) -> NoReturn:
        # one line, whatever the arguments held (a newline or a record separator in an argument)
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())}\n")


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text}")
    return value


def name_list(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError(f"expected comma-separated names, got {text!r}")
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise argparse.ArgumentTypeError(f"{repeated[0]!r} is listed twice")
    return names


_SIZE_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


def memory_size(text: str) -> int:
    """A memory size: bytes, or a number with K, M, G or T (binary units), e.g. 512M, 2G."""
    value, unit = text.strip().lower().rstrip("ib").rstrip(), ""
    if value and value[-1] in _SIZE_UNITS:
        value, unit = value[:-1], value[-1]
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a size such as 512M or 2G, got {text!r}") from None
    if not (number > 0 and number * _SIZE_UNITS[unit] < 2**50):
        raise argparse.ArgumentTypeError(f"expected a size such as 512M or 2G, got {text!r}")
    return int(number * _SIZE_UNITS[unit])


def repetitions(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of repetitions, got {text!r}") from None
    if not MIN_REPS <= value <= MAX_REPS:
        raise argparse.ArgumentTypeError(f"expected {MIN_REPS} to {MAX_REPS} repetitions, got {value}")
    return value


def bootstrap_seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number from 0 to 2**32-1, got {text!r}") from None
    if not 0 <= value < SEED_LIMIT:
        raise argparse.ArgumentTypeError(f"expected a whole number from 0 to 2**32-1, got {value}")
    return value


def resolve_profile(args: argparse.Namespace, criteria: Mapping[str, Criterion]) -> WeightProfile:
    """The weight profile the command line names (``--weights FILE`` or ``--profile NAME``)."""
    if getattr(args, "weights", None):
        return load_weights_file(args.weights, criteria)
    return get_profile(getattr(args, "profile", None) or DEFAULT_PROFILE)
