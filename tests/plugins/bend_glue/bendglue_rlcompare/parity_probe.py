"""The bendglue adapter's parity probe: its framework has no update to load the probe into, so it
says so, naming which copy of the framework it imported."""

from __future__ import annotations

from rlcompare.adapter import ParityOutcome, ParityProbe


def answer(probe: ParityProbe) -> ParityOutcome:
    """``unverifiable``, with where the framework was imported from (a shadowing copy raises)."""
    import bendglue_fw

    return ParityOutcome.unverifiable(f"bendglue_fw ({bendglue_fw.WHERE}, {bendglue_fw.PATH}) makes no "
                                      f"{probe.family} update")
