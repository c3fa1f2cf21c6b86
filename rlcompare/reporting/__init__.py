"""Reports and citations: one path from a results store to every output.

``store -> ScoringInputs -> ScoreMatrix -> Report -> formats``: a report is rendered from the
scoring engine's matrix (the numbers ``rlcompare score --json`` prints) and the store's runs and
curves; formats (md, html, latex, csv, json, bibtex, cff and any plugin's) are registered through
``rlcompare_register_report_formats``. What a matrix was computed from can be written to one
bundle file, whose content digest is what a citation names (:mod:`rlcompare.reporting.inputs`,
:mod:`rlcompare.reporting.bundle`).

Importing this package is light: numpy, pandas, matplotlib and jinja2 load inside the functions
that need them.
"""

from __future__ import annotations
