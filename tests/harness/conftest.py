"""Fixtures of the harness tests (defined in ``harness_support``)."""

from tests.harness.harness_support import kit, sqlite_kit

__all__ = ["kit", "sqlite_kit"]
