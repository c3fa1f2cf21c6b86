"""What the report model holds for its figures: a rendered figure, how adapters are told apart in
every figure (colour, marker, line style, hatch), and which workloads the scaling figure draws
together. No drawing happens here (that is :mod:`rlcompare.reporting.plots`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

@dataclass(frozen=True)
class RenderedFigure:
    """One rendered figure: its id, title, caption and the file in the format asked for."""

    id: str
    title: str
    caption: str
    data: bytes

    @property
    def svg(self) -> str:
        return self.data.decode("utf-8")


MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")
LINESTYLES = ("-", "--", "-.", ":")
HATCHES = ("", "//", "\\\\", "xx", "..", "++", "oo", "--", "||", "**")
COLORMAP = "cividis"

def adapter_styles(adapters: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Colour, marker, line style and hatch of each adapter, the same in every figure."""
    from matplotlib import colormaps

    cmap = colormaps[COLORMAP]
    n = max(1, len(adapters))
    styles = {}
    for i, adapter in enumerate(adapters):
        # cividis from dark blue to yellow, stopping short of the palest end (poor on white)
        styles[adapter] = {"color": cmap(0.05 + 0.8 * i / max(1, n - 1)) if n > 1 else cmap(0.2),
                           "marker": MARKERS[i % len(MARKERS)], "linestyle": LINESTYLES[i % len(LINESTYLES)],
                           "hatch": HATCHES[i % len(HATCHES)]}
    return styles


def scaling_groups(runs: pd.DataFrame) -> list[tuple[str, list[tuple[int, str]]]]:
    """Workloads that differ only in their number of rollout workers: (title, [(workers, workload)])."""
    families: dict[str, dict[int, str]] = {}
    for text in runs.drop_duplicates("workload_id", keep="last")["workload_json"]:
        try:
            spec = json.loads(text)
        except (TypeError, ValueError):
            continue
        parallelism = dict(spec.get("parallelism") or {})
        workers = int(parallelism.pop("workers", 1) or 1)
        key = {k: v for k, v in spec.items() if k not in ("id", "description", "parallelism", "hyperparameters")}
        key["parallelism"] = parallelism
        title = f"{spec.get('algorithm')} on {spec.get('env')}"
        families.setdefault(json.dumps([title, key], sort_keys=True, default=str), {})[workers] = str(spec.get("id"))
    groups = []
    for key, members in sorted(families.items()):
        if len(members) > 1:
            groups.append((json.loads(key)[0], sorted(members.items())))
    return groups
