"""Dispatch ``python -m pi_durable_tui.bench <name>`` to a benchmark module."""

from __future__ import annotations

import importlib
import sys

BENCHMARKS = {
    "storage": ("pi_durable_tui.bench.storage", "storage backends against raw sqlite3"),
    "sse": ("pi_durable_tui.bench.sse", "SSE parsing against iterating raw bytes"),
    "tool-engines": ("pi_durable_tui.bench.tool_engines", "edit, diff and read engines vs stdlib"),
    "output": ("pi_durable_tui.bench.output", "tool output buffer against counting the bytes"),
    "mcp": ("pi_durable_tui.bench.mcp_round", "an MCP tool round against a built-in tool round"),
    "turn": ("pi_durable_tui.bench.agent_turn", "one tool round against one Session commit"),
    "rounds": (
        "pi_durable_tui.bench.agent_rounds",
        "200 read rounds on SQLite and in memory vs an aiosqlite commit; resume after kill",
    ),
    "stream": ("pi_durable_tui.bench.agent_stream", "a streamed answer through the harness vs raw"),
    "large-message": (
        "pi_durable_tui.bench.large_message",
        "1 and 4 MB answers and tool arguments through print mode: growth ratios",
    ),
    "tool-output": (
        "pi_durable_tui.bench.agent_tool_output",
        "1 GiB of bash output through the harness vs cat",
    ),
    "exec": ("pi_durable_tui.bench.exec_output", "command output through LocalEnv against cat"),
    "leftovers": (
        "pi_durable_tui.bench.leftover_processes",
        "a hostile script's background processes through the product: how many are left",
    ),
    "hostile": (
        "pi_durable_tui.bench.hostile_routes",
        "every hostile-model route once: escapes, leaked keys, escape sequences, processes left",
    ),
    "tui": ("pi_durable_tui.bench.tui", "the screen's paint, streaming and typing against floors"),
    "clients": (
        "pi_durable_tui.bench.clients",
        "attached clients: attach on 10,000 vs 10 entries, wire bytes, 1/5/20 followers",
    ),
}


def main(argv: list[str]) -> int:
    """Run the benchmark named by ``argv[0]`` with the rest of ``argv``.

    Args:
        argv: Command-line arguments without the program name.

    Returns:
        The benchmark's exit status, or 2 for an unknown name.
    """
    if not argv or argv[0] not in BENCHMARKS:
        lines = [f"  {name:<10} {text}" for name, (_, text) in BENCHMARKS.items()]
        sys.stderr.write("usage: python -m pi_durable_tui.bench NAME [options]\n")
        sys.stderr.write("\n".join(lines) + "\n")
        return 2
    module = importlib.import_module(BENCHMARKS[argv[0]][0])
    return int(module.main(argv[1:]))


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
