"""The data formats: CSV (one tidy file per table), JSON (every table, the matrix and the citation,
with a JSON Schema) and the citation formats, BibTeX and CITATION.cff.

Numbers are written at full precision (Python's shortest round-trip ``repr``), so a number read
back from the CSV or the JSON is the number of the matrix, equal to ``rlcompare score --json``'s.
The JSON keeps every text exactly (written in ASCII: any other character as ``\\uXXXX``); a CSV
text cell that a spreadsheet would run as a formula starts with a single quote
(:mod:`rlcompare.reporting.escape`).
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

from rlcompare.reporting.escape import csv_cell
from rlcompare.reporting.model import TABLES, Report

if TYPE_CHECKING:
    import pandas as pd

JSON_SCHEMA_NAME = "rlcompare-report"
JSON_SCHEMA_VERSION = 1
CSV_DIRECTORY = "rlcompare-report-csv"


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as plain JSON data: NaN and missing values as null, numpy scalars as Python."""
    rows = frame.to_dict("records")
    return [{key: _plain(value) for key, value in row.items()} for row in rows]


def _plain(value: Any) -> Any:
    item = getattr(value, "item", None)
    if callable(item) and not isinstance(value, (str, bytes)):
        value = item()
    if value is None:
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    try:
        if value != value:  # pandas NA and NaT compare unequal or raise
            return None
    except (TypeError, ValueError):
        return None
    return value


def report_document(report: Report) -> dict[str, Any]:
    return {
        "schema": JSON_SCHEMA_NAME,
        "schema_version": JSON_SCHEMA_VERSION,
        "rlcompare_version": report.version,
        "generated": report.generated,
        "store": report.store,
        "digest": report.digest,
        "citation": report.citation.to_dict(),
        "commands": report.commands,
        "matrix": report.matrix.to_dict(),
        "tables": {name: records(report.table(name)) for name in TABLES},
    }


def json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the JSON report."""
    row = {"type": "object", "additionalProperties": {"type": ["string", "number", "integer", "boolean", "null"]}}
    estimate = {"type": ["object", "null"], "required": ["point", "low", "high", "n"],
                "properties": {k: {"type": ["number", "null"]} for k in ("point", "low", "high")}
                | {"n": {"type": "integer"}}}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"urn:rlcompare:{JSON_SCHEMA_NAME}:{JSON_SCHEMA_VERSION}",
        "title": "rlcompare report",
        "type": "object",
        "required": ["schema", "schema_version", "rlcompare_version", "digest", "citation", "matrix", "tables",
                     "commands"],
        "properties": {
            "schema": {"const": JSON_SCHEMA_NAME},
            "schema_version": {"const": JSON_SCHEMA_VERSION},
            "rlcompare_version": {"type": "string"},
            "generated": {"type": "string"},
            "store": {"type": "string"},
            "digest": {"type": "string", "pattern": "^sha256:[0-9a-f]{64}$"},
            "commands": {"type": "array", "items": {"type": "string"}},
            "citation": {"type": "object", "required": ["key", "title", "digest", "rlcompare_version", "date"],
                         "properties": {"digest": {"type": "string", "pattern": "^sha256:[0-9a-f]{64}$"}}},
            "matrix": {
                "type": "object",
                "required": ["profile", "options", "criteria", "adapters", "workloads", "cells", "scores",
                             "probability_of_improvement", "performance_profiles", "excluded_runs", "left_out",
                             "imputed"],
                "properties": {
                    "adapters": {"type": "array", "items": {
                        "type": "object", "required": ["adapter", "framework", "score", "rank", "tied", "tied_with",
                                                       "tier", "rank_note"],
                        "properties": {"score": estimate, "rank": {"type": ["integer", "null"]},
                                       "tied": {"type": "boolean"},
                                       "tied_with": {"type": "array", "items": {"type": "string"}},
                                       "tier": {"type": "string"}, "rank_note": {"type": ["string", "null"]}}}},
                    "cells": {"type": "array", "items": {
                        "type": "object", "required": ["criterion", "adapter", "workload", "point", "low", "high",
                                                       "n", "missing"]}},
                },
            },
            "tables": {"type": "object", "required": list(TABLES),
                       "properties": {name: {"type": "array", "items": row} for name in TABLES},
                       "additionalProperties": False},
        },
    }


def json_text(document: Any) -> str:
    """JSON of ``document`` in ASCII: every text exact, any other character (a control, a
    bidirectional override) spelled ``\\uXXXX``, so the file hides nothing from a reader."""
    return json.dumps(document, indent=1, sort_keys=False, allow_nan=False, ensure_ascii=True) + "\n"


def render_json(report: Report) -> dict[str, str]:
    return {"rlcompare-report.json": json_text(report_document(report)),
            "rlcompare-report.schema.json": json.dumps(json_schema(), indent=1) + "\n"}


def csv_text(frame: pd.DataFrame) -> str:
    """A table as CSV that a spreadsheet opens as data: every text cell through
    :func:`rlcompare.reporting.escape.csv_cell` (nothing hidden, no formula), numbers as they are."""
    import pandas as pd

    text_columns = [column for column in frame.columns
                    if frame[column].dtype == object or pd.api.types.is_string_dtype(frame[column].dtype)]
    if text_columns:
        frame = frame.copy()
        for column in text_columns:
            frame[column] = frame[column].map(csv_cell)
    return frame.to_csv(index=False)


def render_csv(report: Report) -> dict[str, str]:
    return {f"{CSV_DIRECTORY}/{name}.csv": csv_text(report.table(name)) for name in TABLES}


def render_bibtex(report: Report) -> str:
    return report.citation.bibtex()


def render_cff(report: Report) -> str:
    return report.citation.cff()
