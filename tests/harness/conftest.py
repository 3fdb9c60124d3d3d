"""Fixtures of the harness tests: ``open_rig`` opens a real harness (see ``run_support``)."""

from tests.harness.run_support import open_rig

__all__ = ["open_rig"]
