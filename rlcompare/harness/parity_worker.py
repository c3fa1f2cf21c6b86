"""The process that answers one parity probe: ``python -m rlcompare.harness.parity_worker
ADAPTER_CLASS PROBE OUTCOME``. It runs in the adapter's own environment (as a run's worker does),
imports only the adapter's module, pins torch and BLAS to one thread, calls the adapter's
``parity_update`` and writes the outcome; an exception is written as ``OUTCOME.error.json``."""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path

from rlcompare.harness.parity import ParityProbe
from rlcompare.harness.worker import load_adapter_class

#: Thread pins of the probe: one, so that reductions run in one order, the same every time.
THREADS = "1"


def main(argv: list[str] | None = None) -> int:
    reference, probe_path, outcome_path = (sys.argv[1:] if argv is None else argv)[:3]
    error_path = Path(outcome_path + ".error.json")
    try:
        probe = ParityProbe.load(probe_path)
        adapter = load_adapter_class(reference)()
        torch = sys.modules.get("torch")
        if torch is not None:
            torch.set_num_threads(int(THREADS))
        adapter.parity_update(probe).save(outcome_path)
    except Exception as exc:  # noqa: BLE001 - the adapter's failure is the finding, with its traceback
        error_path.write_text(json.dumps({"error": f"{type(exc).__name__}: {exc}".splitlines()[0][:500],
                                          "traceback": traceback.format_exc()}), encoding="utf-8")
        return 1
    return 0


if __name__ == "__main__":
    for variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(variable, THREADS)
    raise SystemExit(main())
