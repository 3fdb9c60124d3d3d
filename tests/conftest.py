"""Project-wide test configuration.

- ``_no_network`` (autouse) makes the rule "tests never touch the network"
  mechanical (DESIGN.md section 6): any socket connection to an address other
  than loopback or a Unix socket raises ``NetworkBlocked`` at once.
- ``_isolated_home`` (autouse, once per run) points ``PIDURABLE_HOME`` at a
  temporary directory, so no test (or subprocess it starts) writes to the
  user's ``~/.pidurable``.
- ``_no_model_keys`` (autouse, once per run) removes the runner's own model
  keys and base URL (``ANTHROPIC_API_KEY``, ``OPENAI_API_KEY``, ``OPENAI_BASE_URL``)
  from the environment: with a key set, a session opened without ``--model``
  starts on that provider's default model, so a test would depend on the machine
  it runs on. A test that wants a key sets it with ``monkeypatch``.
- ``open_rig`` (from ``tests.harness.run_support``) opens a real harness over
  the faux provider for the harness and tool tests; ``open_screen`` (from
  ``tests.app.screen_support``) starts the screen's view model and controller on
  a real session, for the app and TUI tests.
- ``sshd`` and ``ssh_client`` (from ``tests.env.sshd_fixtures``) run a real
  OpenSSH server on loopback for the SSH environment's tests.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Iterator
from typing import Any

import pytest

pytest_plugins = [
    "tests.harness.run_support",
    "tests.app.screen_support",
    "tests.postgres_support",
    "tests.env.sshd_fixtures",
]


class NetworkBlocked(RuntimeError):
    """Raised when a test tries to reach a non-loopback address."""


def _is_loopback(address: Any) -> bool:
    if isinstance(address, (str, bytes)):  # AF_UNIX path
        return True
    host = address[0]
    if isinstance(host, bytes):
        host = host.decode()
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


@pytest.fixture(autouse=True, scope="session")
def _isolated_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    previous = os.environ.get("PIDURABLE_HOME")
    os.environ["PIDURABLE_HOME"] = str(tmp_path_factory.mktemp("pidurable-home"))
    yield
    if previous is None:
        os.environ.pop("PIDURABLE_HOME", None)
    else:
        os.environ["PIDURABLE_HOME"] = previous


MODEL_KEY_VARIABLES = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL")
"""What the app reads from the environment to choose a provider (``ai/_models.py``)."""


@pytest.fixture(autouse=True, scope="session")
def _no_model_keys() -> Iterator[None]:
    previous = {name: os.environ.pop(name) for name in MODEL_KEY_VARIABLES if name in os.environ}
    yield
    os.environ.update(previous)


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    real_getaddrinfo = socket.getaddrinfo

    def guarded_connect(self: socket.socket, address: Any) -> Any:
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _is_loopback(address):
            raise NetworkBlocked(f"tests may not reach the network: connect to {address!r}")
        return real_connect(self, address)

    def guarded_connect_ex(self: socket.socket, address: Any) -> Any:
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _is_loopback(address):
            raise NetworkBlocked(f"tests may not reach the network: connect to {address!r}")
        return real_connect_ex(self, address)

    def guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host is not None and not _is_loopback((host, 0)):
            raise NetworkBlocked(f"tests may not reach the network: resolve {host!r}")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", guarded_connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", guarded_getaddrinfo)
