"""The storage benchmark: every backend beside raw sqlite3 and aiosqlite, in the same run.

``python -m pi_durable_tui.bench storage [--quick] [--json] [--dir PATH]``, or
``python -m pi_durable_tui.bench.storage``; ``_command`` says what each workload
key means. The parts, in the order a run uses them: ``_command`` (options, the
table or the JSON), ``_run`` (the phases), ``_seed`` (the stores),
``_workloads`` and ``_sustained`` (what is timed), ``_timing`` (interleaved
rounds, percentiles), ``_baselines`` (the raw sqlite3 and aiosqlite floors),
``_memory`` (one child process per backend) and ``_report`` (ratios, targets).
Imports run one way: ``_command`` -> ``_run`` -> ``_sustained`` ->
``_workloads`` -> ``_seed`` and ``_timing``; ``_report`` reads the results.
"""

from pi_durable_tui.bench.storage._command import main
from pi_durable_tui.bench.storage._report import evaluate_targets, render
from pi_durable_tui.bench.storage._run import PROFILES, run, workload_keys

__all__ = ["PROFILES", "evaluate_targets", "main", "render", "run", "workload_keys"]
