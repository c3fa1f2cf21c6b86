"""Every script in benchmarks/ runs with no options: its command line parses with nothing given.

What each measures with its defaults is the script's own business (minutes of real training); here
each script's ``main`` is entered with no arguments and stopped right after its options are parsed,
so a required option or positional argument, or a default its own parser rejects, fails here.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT

SCRIPTS = sorted(path for path in (ROOT / "benchmarks").glob("*.py")
                 if 'if __name__ == "__main__":' in path.read_text(encoding="utf-8"))


class Parsed(Exception):
    """Raised in place of running the benchmark once its options are parsed."""

    def __init__(self, namespace: argparse.Namespace) -> None:
        super().__init__("parsed")
        self.namespace = namespace


def test_the_scripts_are_found() -> None:
    assert {"overhead.py", "learning_check.py", "steps_to_threshold.py"} <= {path.name for path in SCRIPTS}


@pytest.mark.parametrize("script", SCRIPTS, ids=[path.stem for path in SCRIPTS])
def test_a_benchmark_parses_with_no_options(script: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    original = argparse.ArgumentParser.parse_args

    def parse_then_stop(self: argparse.ArgumentParser, args: Any = None, namespace: Any = None) -> Any:
        raise Parsed(original(self, args, namespace))

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parse_then_stop)
    monkeypatch.setattr(sys, "argv", [str(script)])
    monkeypatch.syspath_prepend(str(script.parent))
    spec = importlib.util.spec_from_file_location(f"benchmark_{script.stem}", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(Parsed) as parsed:
        module.main()
    assert isinstance(parsed.value.namespace, argparse.Namespace)
