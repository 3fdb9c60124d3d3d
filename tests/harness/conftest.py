"""Fixtures of the harness tests (defined in ``harness_support`` and ``view_support``)."""

from tests.harness.harness_support import kit, sqlite_kit
from tests.harness.view_support import view_rig

__all__ = ["kit", "sqlite_kit", "view_rig"]
