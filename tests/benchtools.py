"""Helpers for the tests of the benchmark scripts."""

from __future__ import annotations


def load_benchmark(script: str):
    """Import ``benchmarks/<script>`` as a module (the scripts import each other by name)."""
    import importlib.util
    import sys
    from pathlib import Path

    bench = Path(__file__).resolve().parents[1] / "benchmarks"
    sys.path.insert(0, str(bench))
    try:
        spec = importlib.util.spec_from_file_location(f"_bench_{Path(script).stem}",
                                                      bench / script)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(bench))
    return mod
