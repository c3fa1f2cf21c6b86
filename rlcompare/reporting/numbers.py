"""How numbers are written in the terminal tables and every report format."""

from __future__ import annotations

import math


def format_number(value: float | None) -> str:
    """Three significant figures, without exponents for the magnitudes the criteria produce."""
    if value is None or not math.isfinite(value):
        return "-"
    magnitude = abs(value)
    if magnitude >= 100:
        return f"{value:,.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    if magnitude >= 1 or magnitude == 0:
        return f"{value:.2f}"
    return f"{value:.3g}"
