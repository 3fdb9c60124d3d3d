"""Fixtures of the attached-screen tests: the host tests' served sessions."""

from tests.app.host.conftest import serve

__all__ = ["serve"]
