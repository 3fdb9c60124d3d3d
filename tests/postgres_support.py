"""A real PostgreSQL server for the tests: one per test session, a fresh store per test.

``postgres_server`` (session scope) starts the machine's PostgreSQL through
``pi_durable_tui.bench.postgres_server`` (the benchmark starts its server the
same way) the first time a test asks for it, and stops it when the session
ends, on every path (the fixture's finalizer, and ``atexit`` for an interrupted
run). On a machine without a server, or where it cannot start, every test that
asks for it is skipped with the reason; a start never hangs (every server
command has a timeout). ``postgres_url`` reaches it through its Unix socket (a
connection costs half of one over TCP with a password, and the suites open
hundreds); ``postgres_tcp_url`` over loopback TCP with the password, for what is
about URLs, passwords and the network. ``store_name`` gives each test a name no
other test uses, so tests share the server and never each other's store.
"""

from __future__ import annotations

import atexit
import uuid
from collections.abc import Iterator

import pytest

from pi_durable_tui.bench.postgres_server import PostgresServer, ServerUnavailable


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """The session's PostgreSQL server (skips the test, with the reason, when there is none).

    pytest keeps a session fixture's skip for the whole session, so a server that
    cannot start is tried once.
    """
    try:
        server = PostgresServer.start()
    except ServerUnavailable as error:
        pytest.skip(f"PostgreSQL is not available: {error}")
    atexit.register(server.stop)  # an interrupted run still stops it
    try:
        yield server
    finally:
        server.stop()
        atexit.unregister(server.stop)


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> str:
    """The session's server through its Unix socket."""
    return postgres_server.socket_url


@pytest.fixture
def postgres_tcp_url(postgres_server: PostgresServer) -> str:
    """The session's server over loopback TCP, with its password in the URL."""
    return postgres_server.url


@pytest.fixture
def store_name(request: pytest.FixtureRequest) -> str:
    """A store name that no other test of this session uses."""
    return f"test/{request.node.name[:80]}/{uuid.uuid4().hex[:12]}"
