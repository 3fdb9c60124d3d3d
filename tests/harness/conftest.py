"""Fixtures of the harness tests (defined in ``view_support``)."""

from tests.harness.view_support import view_rig

__all__ = ["view_rig"]
