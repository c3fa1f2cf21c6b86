"""pytest plugin of the conformance kit (entry point ``pytest11``: ``rlcompare``).

``pytest --rlcompare-adapter ID`` (repeatable, comma-separated, or ``all``) adds one test per
contract rule and adapter, named ``rlcompare-conformance[ID-RULE]``; a failure's message says what
to fix. Without the option the plugin adds nothing and imports nothing beyond pytest: it is loaded
in every pytest session of an environment where rlcompare is installed.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest

#: The session's kit (a :class:`rlcompare.testing.conformance.Kit`), once the option asked for one.
_KIT = pytest.StashKey[Any]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rlcompare", "rlcompare adapter conformance kit")
    group.addoption("--rlcompare-adapter", action="append", default=[], metavar="ID",
                    help="check the adapter ID against every rule of the adapter contract "
                         "(repeat, comma-separate, or 'all')")
    group.addoption("--rlcompare-timeout", type=float, default=600.0, metavar="SECONDS",
                    help="timeout of each adapter's tiny training run (default 600)")
    group.addoption("--rlcompare-max-import-seconds", type=float, default=5.0, metavar="SECONDS",
                    help="longest accepted import of an adapter's plugin module (default 5, generous: a plugin module imports in well under a second; 0: report only)")


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    requested = config.getoption("--rlcompare-adapter")
    if not requested:
        return
    from rlcompare.testing.conformance import RULES, Kit

    limit = config.getoption("--rlcompare-max-import-seconds")
    factory = getattr(config, "_tmp_path_factory", None)  # pytest's tmp_path_factory, unless -p no:tmpdir
    workdir = factory.mktemp("rlcompare-conformance") if factory is not None \
        else Path(tempfile.mkdtemp(prefix="rlcompare-conformance-"))
    kit = Kit(workdir, timeout_seconds=config.getoption("--rlcompare-timeout"),
              max_import_seconds=limit if limit and limit > 0 else None)
    config.stash[_KIT] = kit
    for adapter_id in kit.adapter_ids(requested):
        for rule in RULES:
            items.append(ConformanceItem.from_parent(session, name=f"rlcompare-conformance[{adapter_id}-{rule.id}]",
                                                     adapter_id=adapter_id, rule_id=rule.id, summary=rule.summary))


class ConformanceItem(pytest.Item):
    """One rule checked against one adapter."""

    def __init__(self, *, adapter_id: str, rule_id: str, summary: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.adapter_id = adapter_id
        self.rule_id = rule_id
        self.summary = summary

    def runtest(self) -> None:
        self.config.stash[_KIT].check(self.adapter_id, self.rule_id)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        from rlcompare.testing.conformance import ConformanceFailure

        if isinstance(excinfo.value, ConformanceFailure):
            return f"adapter {self.adapter_id!r} breaks rule {self.rule_id} ({self.summary}):\n{excinfo.value}"
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"adapter {self.adapter_id}: {self.rule_id}"


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    kit = config.stash.get(_KIT, None)
    if kit is None or not kit.subjects:
        return
    from rlcompare.testing.conformance import describe_timings

    terminalreporter.section("rlcompare conformance")
    for line in describe_timings(list(kit.subjects.values())):
        terminalreporter.write_line(line)
