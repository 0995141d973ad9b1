"""The benches behind `ludo bench ...` (docs/benchmarks.md). Not in the wheel: a checkout's
editable install maps this package (setup.py), which also runs as `python -m benchmarks`."""
