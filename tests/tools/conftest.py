"""Fixtures of the tool tests: one tool call through a real harness (``run_tool``, ``workdir``)."""

from tests.tools.tool_run import run_tool, workdir

__all__ = ["run_tool", "workdir"]
