"""jianmu_bt's benchmark suite: `python -m benchmarks` measures every area next to its anchor.

Each area lives in a `bench_*.py` script that also runs on its own; `harness.py` holds the shared
timing and table code, `suite.py` the command line and the JSON output.
"""
