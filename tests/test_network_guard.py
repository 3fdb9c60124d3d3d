"""The network guard: tests can reach loopback and nothing else."""

from __future__ import annotations

import socket

import pytest

from tests.conftest import NetworkBlocked


def test_a_connection_to_a_public_address_is_refused_before_any_packet_is_sent() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s, pytest.raises(NetworkBlocked):
        s.connect(("93.184.216.34", 80))


def test_resolving_a_public_host_name_is_refused() -> None:
    with pytest.raises(NetworkBlocked):
        socket.getaddrinfo("example.com", 443)


def test_loopback_connections_still_work() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        with socket.create_connection(server.getsockname(), timeout=5) as client:
            conn, _ = server.accept()
            client.sendall(b"ping")
            assert conn.recv(4) == b"ping"
            conn.close()
