"""Built-in plugin registering the studies shipped in ``rlcompare/studies/builtin/*.toml``, through
the same hook an outside package would use."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlcompare import hookimpl
from rlcompare.studies.loading import builtin_studies

if TYPE_CHECKING:
    from rlcompare.plugins.register import Register


@hookimpl
def rlcompare_register_studies(register: Register) -> None:
    for study in builtin_studies():
        register.add_study(study)
