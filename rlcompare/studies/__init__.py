"""Studies: a published comparison table as data beside rlcompare's own measurement of it.

- :mod:`rlcompare.studies.model`: the study file (its publication, the cells rlcompare runs, the
  published rows with their source, hardware and statistic), validated with pydantic;
- :mod:`rlcompare.studies.loading`: reading study files and the built-in ones;
- :mod:`rlcompare.studies.verdicts`: published against measured, a verdict per claim.
"""
