"""A real ``sshd`` for the tests of the SSH environment (issue 17), as pytest fixtures.

``sshd`` starts one OpenSSH server per test session (``sshd_server``) and skips,
saying why, where Debian's ``openssh-server`` is not installed. ``ssh_client``
points ``HOME`` at the server's client home for one test, so asyncssh reads
the test's ``known_hosts`` and key from ``~/.ssh`` as it would for a user, and
clears ``SSH_AUTH_SOCK`` so no agent of the machine takes part.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.env.sshd_server import SSHD_MISSING, Sshd, start_sshd, stop_sshd_process


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    """A running test server for the whole session."""
    if SSHD_MISSING is not None:
        pytest.skip(SSHD_MISSING)
    server = start_sshd(tmp_path_factory.mktemp("sshd"))
    try:
        yield server
    finally:
        stop_sshd_process(server.process)


@pytest.fixture
def ssh_client(sshd: Sshd, monkeypatch: pytest.MonkeyPatch) -> Sshd:
    """The server, with this test's ``HOME`` set to the client side that trusts it."""
    monkeypatch.setenv("HOME", str(sshd.home))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    return sshd
