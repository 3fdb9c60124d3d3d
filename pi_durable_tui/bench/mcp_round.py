"""Benchmark: an MCP tool round against a built-in tool round, in the same run (issue 16).

``python -m pi_durable_tui.bench mcp [--rounds N] [--json]``

Each round is a user input, a faux model calling one tool on a small file, and
its final answer, on a real SQLite store. The baseline calls the built-in
``read``; the MCP round calls ``mcp__bench__read_text``, the same read done by an
MCP server written with the ``mcp`` SDK and started over stdio (its start is
outside the timing: a session starts its servers once). Reported: p50 and p99 in
ms of each, and ``ratio`` = MCP p50 / built-in p50 (the cost of the server hop).
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pi_durable_tui.ai import Context, StreamOptions, faux_response, faux_tool_call
from pi_durable_tui.bench._agent_kit import open_agent, percentile, run_rounds_bench
from pi_durable_tui.harness import Input, McpConnection, mcp_extension, parse_mcp_servers
from pi_durable_tui.tools import CodingTools

SERVER = '''
from pathlib import Path
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("bench")

@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def read_text(path: str) -> str:
    """The text of a file."""
    return Path(path).read_text()

server.run()
'''


def _answer(tool: str, arguments: dict[str, Any]) -> Callable[..., Any]:
    def answer(context: Context, _options: StreamOptions, _index: int) -> Any:
        last = context.messages[-1] if context.messages else None
        if last is not None and last.role == "toolResult":
            return faux_response("The file says hello.")
        return faux_response(faux_tool_call(tool, arguments))

    return answer


async def _rounds(directory: Path, rounds: int, mcp: bool) -> list[float]:
    small = directory / "small.txt"
    small.write_text("hello\n" * 20)
    connections: list[McpConnection] = []
    extensions: tuple[Any, ...] = (CodingTools,)
    if mcp:
        (directory / "server.py").write_text(SERVER)
        declared = {"bench": {"command": sys.executable, "args": [str(directory / "server.py")]}}
        connections = [McpConnection(c, cwd=directory) for c in parse_mcp_servers(declared)]
        extension, notices = await mcp_extension(connections)
        if notices:
            raise RuntimeError(notices[0])
        extensions = (CodingTools, extension)
        factory = _answer("mcp__bench__read_text", {"path": str(small)})
    else:
        factory = _answer("read", {"path": "small.txt"})
    kit = await open_agent(directory, factory=factory, extensions=extensions)
    times: list[float] = []
    try:
        for index in range(rounds + 3):
            started = time.perf_counter()
            record = await (await kit.root.submit(Input(f"round {index}"))).wait()
            elapsed = (time.perf_counter() - started) * 1000
            if record.status != "done":
                raise RuntimeError(f"round {index} ended {record.status}: {record.detail}")
            if index >= 3:  # the first rounds warm caches
                times.append(elapsed)
    finally:
        await kit.close()
        for connection in connections:
            await connection.close()
    return times


async def measure(rounds: int) -> dict[str, Any]:
    """Run both workloads; return the report keyed by workload."""
    report: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="pidurable-bench-") as name:
        for workload, mcp in (("builtin", False), ("mcp", True)):
            directory = Path(name) / workload
            directory.mkdir()
            times = await _rounds(directory, rounds, mcp)
            report[workload] = {
                "p50_ms": round(percentile(times, 0.5), 3),
                "p99_ms": round(percentile(times, 0.99), 3),
                "rounds": rounds,
            }
    report["ratio"] = round(report["mcp"]["p50_ms"] / report["builtin"]["p50_ms"], 2)
    return report


def main(argv: list[str]) -> int:
    """Run the benchmark; returns the exit status."""
    report = run_rounds_bench(argv, "mcp", 50, measure)
    if report is None:
        return 0
    sys.stdout.write("One tool round (a small file read, faux model) on SQLite\n")
    for name, label in (("builtin", "built-in read"), ("mcp", "MCP read over stdio")):
        row = report[name]
        sys.stdout.write(f"  {label:<20} p50 {row['p50_ms']:.3f} ms  p99 {row['p99_ms']:.3f} ms\n")
    sys.stdout.write(f"  ratio MCP / built-in: {report['ratio']}\n")
    return 0
