"""The registry as tables, for reports and criteria (pandas is imported when a table is made)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from rlcompare.errors import UnknownNameError
from rlcompare.registry.entries import FrameworkEntry
from rlcompare.registry.fields import FEATURE_FIELDS, FIELDS, TAXONOMY_FIELDS
from rlcompare.registry.loading import load_builtin_entries

if TYPE_CHECKING:
    import pandas as pd

def feature_matrix(
    entries: Iterable[FrameworkEntry] | None = None,
    dimensions: Iterable[str] = tuple(TAXONOMY_FIELDS),
    include_features: bool = True,
) -> pd.DataFrame:
    """Frameworks x taxonomy as a DataFrame of nullable booleans.

    Rows are framework ids; columns are a MultiIndex ``(dimension, value)``, e.g.
    ``("synchronization", "asynchronous")``. ``dimensions`` may name any list axis (the survey's
    taxonomy by default, or LLM axes such as ``weight_sync``). A cell is True when the evidence
    lists the value, False when the fact is ``complete`` and does not list it, and <NA> otherwise:
    an unlisted value of an incomplete list is not evidence of absence, and an axis an entry does not
    state is unknown. With ``include_features``, the boolean facts (multi-agent, offline RL,
    evolutionary) follow as ``("features", name)`` columns.
    """
    import pandas as pd

    entries = list(load_builtin_entries() if entries is None else entries)
    dimensions = list(dimensions)
    matrix_axes = {name: spec.allowed for name, spec in FIELDS.items() if spec.kind == "choices"}
    for dimension in dimensions:
        if dimension not in matrix_axes:
            raise UnknownNameError("taxonomy dimension", dimension, matrix_axes)
    columns = [(dimension, value) for dimension in dimensions for value in matrix_axes[dimension]]
    if include_features:
        columns += [("features", name) for name in FEATURE_FIELDS]
    rows = []
    for entry in entries:
        row: list[bool | None] = []
        for dimension, value in columns:
            fact = entry.fact(value if dimension == "features" else dimension)
            if fact is None or fact.is_unknown:
                row.append(None)
            elif dimension == "features":
                row.append(fact.value)
            elif value in fact.value:
                row.append(True)
            else:
                row.append(False if fact.complete else None)
        rows.append(row)
    frame = pd.DataFrame(rows, index=pd.Index([e.id for e in entries], name="framework"),
                         columns=pd.MultiIndex.from_tuples(columns, names=["dimension", "value"]))
    return frame.astype("boolean")


def registry_frame(entries: Iterable[FrameworkEntry] | None = None) -> pd.DataFrame:
    """One row per framework, one column per fact value (lists as Python lists, a release as
    ``{version, date}``, ``None`` where the entry does not state the fact); for reports."""
    import pandas as pd

    entries = list(load_builtin_entries() if entries is None else entries)
    records = []
    for entry in entries:
        record: dict[str, Any] = {"id": entry.id, "name": entry.name, "domain": entry.domain}
        for name in FIELDS:
            fact = entry.fact(name)
            record[name] = None if fact is None else fact.json_value()
        records.append(record)
    return pd.DataFrame.from_records(records, columns=["id", "name", "domain", *FIELDS]).set_index("id")
