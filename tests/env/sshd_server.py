"""A real OpenSSH server on loopback for the SSH environment tests (issue 17).

``start_sshd`` makes a temporary directory holding everything the server and
its client need: a host key, a client key and its ``authorized_keys``, an
``sshd_config`` of its own (no PAM, public keys only, ``StrictModes no``
because the tests may run as root, root allowed by key only, the internal
SFTP server, OpenSSH's default of 10 sessions per connection, and a
secret-looking variable in every session's environment), and a client
``HOME`` whose ``.ssh/known_hosts`` trusts the host key and whose
``.ssh/id_ed25519`` is the client key. It starts Debian's ``/usr/sbin/sshd``
in the foreground on a free loopback port and waits for its banner.

``sshd`` runs under a small reaper (``sshd_reaper.py``): a Linux child
subreaper that collects every orphan of the server's sessions, as ``init`` does
on a real host. Without it a background process killed on the "remote" side
would stay a zombie of the test process (which ``LocalEnv`` makes a subreaper)
and ``kill -0`` would still find it.

``SSHD_MISSING`` says why the tests skip on a machine without the server.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

SSHD = "/usr/sbin/sshd"
SSH_KEYGEN = shutil.which("ssh-keygen") or "/usr/bin/ssh-keygen"
PRIVSEP_DIR = "/run/sshd"
REAPER = Path(__file__).with_name("sshd_reaper.py")
START_DEADLINE_S = 15.0
REMOTE_SECRET_NAME = "PIDURABLE_REMOTE_API_KEY"
REMOTE_SECRET_VALUE = "remote-secret-0123456789"
"""A secret-looking variable every remote command would inherit but for the scrub."""


def _missing() -> str | None:
    if not os.access(SSHD, os.X_OK):
        return f"{SSHD} is missing: install Debian's openssh-server (.ci/run does)"
    if not os.access(SSH_KEYGEN, os.X_OK):
        return "ssh-keygen is missing: install Debian's openssh-client"
    return None


SSHD_MISSING = _missing()
"""Why the SSH tests cannot run here, or None when they can."""


@dataclass(frozen=True, slots=True)
class Sshd:
    """A running test server and the client side that trusts it.

    Attributes:
        port: The loopback port it listens on.
        user: The login name (the user running the tests).
        home: The client ``HOME``: ``.ssh/known_hosts`` and ``.ssh/id_ed25519``.
        directory: The server's files (config, keys, log).
        process: The reaper process (sshd is its child).
    """

    port: int
    user: str
    home: Path
    directory: Path
    process: subprocess.Popen[bytes]

    def url(self, path: str) -> str:
        """The ``ssh://`` URL of ``path`` on this server."""
        return f"ssh://{self.user}@127.0.0.1:{self.port}{path}"

    @property
    def log(self) -> str:
        """What the server wrote to its log so far."""
        log = self.directory / "sshd.log"
        return log.read_text(errors="replace") if log.exists() else ""


def keygen(path: Path) -> str:
    """Make an ed25519 key pair at ``path`` (no passphrase); return the public key line."""
    subprocess.run(
        [SSH_KEYGEN, "-q", "-t", "ed25519", "-N", "", "-C", "pidurable-test", "-f", str(path)],
        check=True,
        stdin=subprocess.DEVNULL,
    )
    return path.with_suffix(".pub").read_text().strip()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _config(directory: Path, port: int, user: str) -> str:
    return "\n".join(
        [
            f"Port {port}",
            "ListenAddress 127.0.0.1",
            f"HostKey {directory / 'host_ed25519'}",
            f"AuthorizedKeysFile {directory / 'authorized_keys'}",
            f"PidFile {directory / 'sshd.pid'}",
            f"AllowUsers {user}",
            "UsePAM no",
            "StrictModes no",
            "PermitRootLogin prohibit-password",
            "PubkeyAuthentication yes",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "AllowAgentForwarding no",
            "AllowTcpForwarding no",
            "X11Forwarding no",
            "PrintMotd no",
            # SHLVL=1 keeps Debian's bash from sourcing ~/.bashrc for each command (it does
            # when run by sshd at level 1): this machine's root .bashrc takes 0.3 s.
            f"SetEnv SHLVL=1 {REMOTE_SECRET_NAME}={REMOTE_SECRET_VALUE}",
            "MaxStartups 200:30:400",
            "Subsystem sftp internal-sftp",
            "LogLevel ERROR",
            "",
        ]
    )


def _banner(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1) as sock:
        sock.settimeout(1)
        return sock.recv(64).startswith(b"SSH-")
    return False


def start_sshd(directory: Path) -> Sshd:
    """Start a test server with its files in ``directory`` (empty, owned by the caller).

    Raises:
        RuntimeError: When the server does not answer in time (its log is in the message).
    """
    user = getpass.getuser()
    home = directory / "home"
    (home / ".ssh").mkdir(parents=True, mode=0o700)
    host_public = keygen(directory / "host_ed25519")
    (directory / "authorized_keys").write_text(keygen(home / ".ssh" / "id_ed25519") + "\n")
    if os.geteuid() == 0:
        os.makedirs(PRIVSEP_DIR, mode=0o755, exist_ok=True)  # as the package's service would
    for _ in range(5):
        port = _free_port()
        (directory / "sshd_config").write_text(_config(directory, port, user))
        (home / ".ssh" / "known_hosts").write_text(f"[127.0.0.1]:{port} {host_public}\n")
        with open(directory / "sshd.log", "ab") as log:
            process = subprocess.Popen(
                [
                    sys.executable,
                    str(REAPER),
                    SSHD,
                    "-D",
                    "-e",
                    "-f",
                    str(directory / "sshd_config"),
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
        deadline = time.monotonic() + START_DEADLINE_S
        while time.monotonic() < deadline and process.poll() is None:
            if _banner(port):
                return Sshd(port, user, home, directory, process)
            time.sleep(0.05)
        stop_sshd_process(process)
    log_text = (directory / "sshd.log").read_text(errors="replace")
    raise RuntimeError(f"sshd did not start; its log:\n{log_text}")


def stop_sshd_process(process: subprocess.Popen[bytes]) -> None:
    """Stop the reaper (it stops sshd and every session's process) and wait for it."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
