"""Built-in plugin registering the framework entries shipped in ``rlcompare/registry/frameworks/*.toml``.

It goes through the same hook as a third-party adapter bringing its own framework's entry, so the
registry a user sees is exactly what the plugins registered.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlcompare import hookimpl
from rlcompare.registry.entries import InvalidFrameworkEntryError
from rlcompare.registry.loading import builtin_framework_files, load_builtin_entry_tables, validated_entry

if TYPE_CHECKING:
    from rlcompare.plugins.register import Register


@hookimpl
def rlcompare_register_frameworks(register: Register) -> None:
    """Register every packaged entry; a broken file is reported after the valid ones are in."""
    problems: list[str] = []
    for item, table in load_builtin_entry_tables(builtin_framework_files()):
        try:
            register.add_framework(validated_entry(item, table))
        except InvalidFrameworkEntryError as error:
            problems.append(str(error))
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise InvalidFrameworkEntryError(problems[0] + more)
