"""Fixtures of the tool tests: a real harness (``open_rig``) and one tool call (``run_tool``)."""

from tests.harness.run_support import open_rig
from tests.tools.tool_run import run_tool, workdir

__all__ = ["open_rig", "run_tool", "workdir"]
