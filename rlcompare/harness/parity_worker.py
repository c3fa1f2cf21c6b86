"""The process that answers parity probes: ``python -m rlcompare.harness.parity_worker
ADAPTER_CLASS PROBE OUTCOME`` for one, or ``... ADAPTER_CLASS --batch MANIFEST`` for several (a
JSON list of ``[probe, outcome]`` paths) in one interpreter, so that the framework is imported once.
It runs in the adapter's own environment (as a run's worker does), imports only the adapter's
module, pins torch and BLAS to one thread, calls the adapter's ``parity_update`` on each probe and
writes the outcome, with the seconds it took in ``OUTCOME.seconds``; an exception is written as
``OUTCOME.error.json`` and the next probe is answered all the same."""

from __future__ import annotations

# ruff: noqa: E402 - run as ``python -m``, the current directory leaves the import path first of all
from rlcompare.harness.import_path import drop_current_directory

if __name__ == "__main__":
    drop_current_directory()  # before numpy, torch, the adapter and its framework are imported

import json
import os
import sys
import time
import traceback
from pathlib import Path

from rlcompare.harness.parity import ParityProbe
from rlcompare.harness.worker import load_adapter_class

#: Thread pins of the probe: one, so that reductions run in one order, the same every time.
THREADS = "1"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    reference = args[0]
    if args[1] == "--batch":
        pairs = [(str(probe), str(outcome)) for probe, outcome in json.loads(Path(args[2]).read_text("utf-8"))]
    else:
        pairs = [(args[1], args[2])]
    failures = 0
    adapter = None
    for probe_path, outcome_path in pairs:
        started = time.process_time()
        try:
            probe = ParityProbe.load(probe_path)
            if adapter is None:
                adapter = load_adapter_class(reference)()
            torch = sys.modules.get("torch")
            if torch is not None:
                torch.set_num_threads(int(THREADS))
            adapter.parity_update(probe).save(outcome_path)
            Path(outcome_path + ".seconds").write_text(f"{time.process_time() - started:.3f}", encoding="utf-8")
        except Exception as exc:  # noqa: BLE001 - the adapter's failure is the finding, with its traceback
            Path(outcome_path + ".error.json").write_text(
                json.dumps({"error": f"{type(exc).__name__}: {exc}".splitlines()[0][:500],
                            "traceback": traceback.format_exc()}), encoding="utf-8")
            failures += 1
    return 1 if failures else 0


if __name__ == "__main__":
    for variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(variable, THREADS)
    raise SystemExit(main())
