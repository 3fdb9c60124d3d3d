"""Benchmarks that print ratios against a baseline measured in the same run.

``python -m pi_durable_tui.bench <name> [options]``; each benchmark module exposes
``main(argv) -> int``. Figures are never asserted by tests (DESIGN.md section 6).
"""
