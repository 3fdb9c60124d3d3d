"""Fixtures of the tool tests: ``open_rig`` opens a real harness (``tests.harness.run_support``)."""

from tests.harness.run_support import open_rig

__all__ = ["open_rig"]
