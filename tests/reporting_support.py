"""Synthetic stores and plugin sets for the reporting tests (no training: runs written directly)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlcompare.plugins.manager import Plugins, build_plugin_manager
from rlcompare.store.records import RunRecord
from tests.test_criteria_support import TEST_BUILTINS, curve, run_record, workload_spec, write_store

#: What the reporting tests load: the scoring test plugins, the registry and the report formats.
REPORT_BUILTINS = (*TEST_BUILTINS, "rlcompare.builtins.frameworks", "rlcompare.builtins.report_formats")
HOSTILE = "<script>alert(1)</script> & 100% _x_ $y$ #z {b} \\c ~^|"
HOST = {"fingerprint": "abc123", "cpu_model": "Test CPU", "logical_cpus": 4, "usable_cpus": 2,
        "memory_bytes": 8 * 2**30, "machine": "x86_64", "system": "Linux 6", "python": "3.11.7", "gpu": None}


def report_plugins(autoload: bool = False) -> Plugins:
    return build_plugin_manager(builtins=REPORT_BUILTINS, autoload=autoload)


def _decorate(record: RunRecord, adapter: str, workers: int = 1) -> RunRecord:
    record.fidelity_json = [
        {"setting": "hyperparameters.learning_rate", "value": 3e-4, "status": "exact",
         "native_name": "lr", "native_value": 3e-4, "note": None},
        {"setting": "hyperparameters.gae_lambda", "value": 0.95, "status": "approximate" if adapter == "beta" else "exact",
         "native_name": "lambda_", "native_value": 0.95, "note": "per batch, not per minibatch"},
    ]
    record.versions_json = {"python": "3.11.7", "rlcompare": "0.1.0", f"{adapter}-lib": "1.2.3"}
    record.host_json = HOST
    record.host_fingerprint = HOST["fingerprint"]
    if record.workload_json.get("env", "").startswith("rlcompare/Calibrated"):
        record.ideal_throughput = 1000.0 * workers
    return record


def synthetic_runs(hostile: bool = False) -> list[tuple[RunRecord, list[dict[str, Any]]]]:
    """Two adapters on a CartPole workload (3 seeds, curves, one failed seed of beta) and a pair of
    scaling workloads (1 and 2 workers, ideal throughput recorded); beta is refused a third workload.
    With ``hostile``, workload, adapter and framework names and texts carry markup of every language."""
    beta = "beta" if not hostile else "be<script>ta&%_$#{}\\"
    cart_id = "cart" if not hostile else "cart&<b>%_$#{x}\\y"
    cart = workload_spec(cart_id, threshold=100.0)
    cart["description"] = "CartPole quick" if not hostile else "line one\n# Injected heading\n| a | b |\n" + HOSTILE
    scaling = []
    for workers in (1, 2):
        spec = workload_spec(f"calib-w{workers}", env="rlcompare/CalibratedCartPole-v0", workers=workers)
        scaling.append((workers, spec))
    pend = workload_spec("pend", env="Pendulum-v1", algorithm="SAC")
    runs = []
    for adapter, speed in (("alpha", 1.0), (beta, 2.0)):
        framework = None if not hostile or adapter == "alpha" else HOSTILE
        for seed in range(3):
            if adapter == beta and seed == 2:
                record = run_record(cart, adapter, seed, status="failed", framework=framework,
                                    error="RuntimeError: diverged " + (HOSTILE if hostile else ""))
                runs.append((_decorate(record, "beta"), []))
                continue
            record = run_record(cart, adapter, seed, framework=framework, final_return=90.0 + 5 * seed * speed,
                                throughput=1000.0 * speed + 10 * seed, startup=2.0 / speed + 0.1 * seed,
                                training=10.0 / speed, peak_rss=2**27 + seed * 2**20)
            points = curve([(0, 0.0, 10.0), (500, 1.0 / speed, 60.0 * speed + seed), (1000, 2.0 / speed, 100.0 + seed)])
            runs.append((_decorate(record, "beta" if adapter == beta else adapter), points))
            for workers, spec in scaling:
                record = run_record(spec, adapter, seed, framework=framework, final_return=50.0 + seed,
                                    throughput=900.0 * workers * speed / (1 + 0.2 * (workers - 1)) + seed,
                                    startup=1.0 + seed * 0.1, training=5.0, peak_rss=2**26 * workers)
                runs.append((_decorate(record, "beta" if adapter == beta else adapter, workers),
                             curve([(0, 0.0, 9.0), (1000, 1.0, 40.0 + seed)])))
    runs.append((run_record(pend, "alpha", 0, final_return=-300.0, throughput=400.0, startup=1.0), []))
    runs.append((run_record(pend, beta, -1, status="unsupported",
                            error="algorithm SAC is not offered" + (" " + HOSTILE if hostile else "")), []))
    return runs


def synthetic_store(path: Path, hostile: bool = False) -> Path:
    return write_store(path, synthetic_runs(hostile))
