"""A plugin module that imports its framework at import time: the breach of the light-import rule
(tests of the conformance kit only)."""

from __future__ import annotations

from typing import Any

import brokenkit_fw  # noqa: F401 - the breach under test

from brokenkit_rlcompare import Stepper
from rlcompare import hookimpl


class HeavyImport(Stepper):
    id = "heavy"
    summary = "its plugin module imports the framework"


@hookimpl
def rlcompare_register_adapters(register: Any) -> None:
    register.add_adapter(HeavyImport)
