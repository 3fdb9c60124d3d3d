"""A throwaway PostgreSQL server on loopback, for the storage benchmark and the tests.

``PostgresServer.start()`` runs the machine's own PostgreSQL (Debian's
``postgresql`` package: ``initdb`` and ``pg_ctl`` under
``/usr/lib/postgresql/<version>/bin``, or whatever ``PIDURABLE_PG_BIN`` or
``PATH`` names) in a fresh temporary directory: the cluster, its log and its
Unix socket all live there, it listens on a free port of 127.0.0.1 only, and
``stop()`` (also the context manager's exit) shuts it down immediately and
deletes the directory. Nothing here is part of the product: a pidurable user
points ``PIDURABLE_DATABASE_URL`` at a server they run; this module exists so
that ``python -m pi_durable_tui.bench storage`` and the test fixture start the
same server the same way (it lives in ``bench``, layer 7, because nothing in
the product may depend on it, and tests may import any layer).

Why these choices:

- The server refuses to run as root, and tests run as root here: every server
  command then runs as the unprivileged ``postgres`` user that the package
  creates (``subprocess``'s ``user=``), and the directory is handed to it.
- Host connections need a password (SCRAM, a random one per server), so no other
  local user reaches the server by guessing the port, and the product's URL
  redaction is exercised by a real secret; the Unix socket is trusted (only the
  directory's owner can reach it).
- ``durable=False`` (the tests) turns ``fsync`` off: a crash test kills the
  *client*, never the server, so every committed transaction stays in the
  server's memory and files whatever ``fsync`` says, and commits cost no disk
  flush on a machine shared by several test runs. The benchmark keeps the
  server's defaults (``fsync`` and ``synchronous_commit`` on).
- Every command has a timeout, and a failure raises ``ServerUnavailable`` with
  the reason (and the log's tail), so a caller can skip with it instead of hanging.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

__all__ = ["PostgresServer", "ServerUnavailable", "find_bin_dir"]

BIN_ENV = "PIDURABLE_PG_BIN"
"""A directory holding ``initdb``, ``pg_ctl`` and ``postgres``, if not the default."""
SERVER_USER = "postgres"
"""The unprivileged account the server runs as when this process is root."""
ROLE = "pidurable"
COMMAND_TIMEOUT = 120.0
"""Seconds any server command (initdb, start) may take: generous, since a machine
shared by several test runs can be slow, yet bounded, so nothing waits forever."""


class ServerUnavailable(RuntimeError):
    """No PostgreSQL server could be started here; the message says why."""


def find_bin_dir() -> Path:
    """Return the directory of ``initdb`` and ``pg_ctl``.

    Raises:
        ServerUnavailable: No PostgreSQL server is installed.
    """
    named = os.environ.get(BIN_ENV)
    candidates = [Path(named)] if named else []
    versions = glob.glob("/usr/lib/postgresql/*/bin")
    candidates += sorted((Path(v) for v in versions), key=_version, reverse=True)
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(Path(on_path).parent)
    for candidate in candidates:
        if (candidate / "initdb").is_file() and (candidate / "pg_ctl").is_file():
            return candidate
    raise ServerUnavailable(
        "no PostgreSQL server is installed (no initdb in $PIDURABLE_PG_BIN, "
        "/usr/lib/postgresql/*/bin or PATH); install it with `apt-get install postgresql`"
    )


def _version(path: Path) -> tuple[int, ...]:
    digits = path.parent.name.split(".")
    return tuple(int(d) for d in digits if d.isdigit())


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class PostgresServer:
    """A running throwaway server; ``url`` reaches it. Use ``start`` to make one.

    Attributes:
        root: The temporary directory holding the cluster, the log and the socket.
        port: The loopback TCP port it listens on.
        password: The ``pidurable`` role's password (in ``url``).
    """

    root: Path
    port: int
    password: str
    bin_dir: Path
    _user: str | None = field(default=None, repr=False)
    _running: bool = field(default=True, repr=False)

    @property
    def url(self) -> str:
        """The TCP URL of the ``postgres`` database, as the role ``pidurable`` (with password)."""
        return f"postgresql://{ROLE}:{self.password}@127.0.0.1:{self.port}/postgres"

    @property
    def socket_url(self) -> str:
        """The same database through the Unix socket in ``root`` (trusted: no password).

        A connection costs half as much here (no TCP, no SCRAM exchange), which
        tests that open hundreds of stores notice.
        """
        return f"postgresql://{ROLE}@/postgres?host={self.root}&port={self.port}"

    @property
    def data(self) -> Path:
        """The cluster's data directory."""
        return self.root / "data"

    @property
    def log(self) -> Path:
        """The server's log file."""
        return self.root / "server.log"

    @classmethod
    def start(cls, *, durable: bool = False, attempts: int = 3) -> PostgresServer:
        """Create a cluster in a new temporary directory and start it on a free port.

        Args:
            durable: Keep ``fsync`` on (the benchmark); ``False`` turns it off (tests).
            attempts: Ports to try when another process takes the free one first.

        Returns:
            The running server; stop it with ``stop`` (or use it as a context manager).

        Raises:
            ServerUnavailable: The server is not installed, cannot run as this user,
                or did not start; the message says why.
        """
        bin_dir = find_bin_dir()
        user = _server_user()
        # REMINDER: under the system's temporary directory, not one a caller chose: the
        # server user must reach it, and a Unix socket path must stay short.
        base = "/tmp" if user is not None and os.path.isdir("/tmp") else None
        root = Path(tempfile.mkdtemp(prefix="pidurable-pg-", dir=base))
        server = cls(root, 0, secrets.token_urlsafe(18), bin_dir, user, False)
        try:
            server._init()
            for attempt in range(attempts):
                server.port = _free_port()
                try:
                    server._start(durable)
                    return server
                except ServerUnavailable:
                    if attempt == attempts - 1 or "could not bind" not in server._log_tail():
                        raise
        except BaseException:
            server.stop()
            raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _run(self, *command: str, timeout: float = COMMAND_TIMEOUT) -> None:
        what = Path(command[0]).name
        try:
            subprocess.run(
                command,
                cwd=self.root,
                user=self._user,
                check=True,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            raise ServerUnavailable(
                f"PostgreSQL {what} did not finish in {timeout:.0f} s{self._log_tail()}"
            ) from None
        except subprocess.CalledProcessError as error:
            output = (error.stderr or error.stdout or b"").decode(errors="replace").strip()
            raise ServerUnavailable(
                f"PostgreSQL {what} failed (exit {error.returncode}): {output[-800:]}"
                f"{self._log_tail()}"
            ) from None
        except OSError as error:
            raise ServerUnavailable(f"PostgreSQL {what} could not run: {error}") from None

    def _init(self) -> None:
        password_file = self.root / "password"
        password_file.write_text(self.password + "\n")
        password_file.chmod(0o600)
        self._hand_over(self.root, password_file)
        self._run(
            str(self.bin_dir / "initdb"),
            "--pgdata",
            str(self.data),
            "--username",
            ROLE,
            "--pwfile",
            str(password_file),
            "--auth-host=scram-sha-256",
            "--auth-local=trust",
            "--encoding=UTF8",
            "--locale=C",
            "--no-sync",
        )
        password_file.unlink()

    def _start(self, durable: bool) -> None:
        options = [
            "-c listen_addresses=127.0.0.1",
            f"-p {self.port}",
            f"-c unix_socket_directories='{self.root}'",
            "-c max_connections=100",
            "-c shared_buffers=64MB",
        ]
        if not durable:
            options += ["-c fsync=off", "-c full_page_writes=off"]
        self._run(
            str(self.bin_dir / "pg_ctl"),
            "--pgdata",
            str(self.data),
            "--log",
            str(self.log),
            "--wait",
            "--timeout",
            str(int(COMMAND_TIMEOUT - 10)),
            "--options",
            " ".join(options),
            "start",
        )
        self._running = True

    def _hand_over(self, *paths: Path) -> None:
        if self._user is None:
            return
        account = pwd.getpwnam(self._user)
        for path in paths:
            os.chown(path, account.pw_uid, account.pw_gid)

    def _log_tail(self) -> str:
        try:
            lines = self.log.read_text(errors="replace").splitlines()[-8:]
        except OSError:
            return ""
        return "; server log: " + " | ".join(lines) if lines else ""

    def stop(self) -> None:
        """Shut the server down at once and delete its directory; idempotent, never hangs."""
        if self._running:
            self._running = False
            try:
                self._run(
                    str(self.bin_dir / "pg_ctl"),
                    "--pgdata",
                    str(self.data),
                    "--mode",
                    "immediate",
                    "--wait",
                    "--timeout",
                    "20",
                    "stop",
                    timeout=30,
                )
            except ServerUnavailable:
                self._kill_postmaster()
        shutil.rmtree(self.root, ignore_errors=True)

    def _kill_postmaster(self) -> None:
        """Last resort when ``pg_ctl stop`` failed: SIGKILL the postmaster named in its pid file."""
        with contextlib.suppress(OSError, ValueError, IndexError):
            pid = int((self.data / "postmaster.pid").read_text().split()[0])
            os.kill(pid, signal.SIGKILL)

    def __enter__(self) -> PostgresServer:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()


def _server_user() -> str | None:
    """Return the account to run the server as (``None``: this one, when not root).

    Raises:
        ServerUnavailable: This process is root and the ``postgres`` account is missing.
    """
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(SERVER_USER)
    except KeyError:
        raise ServerUnavailable(
            f"PostgreSQL refuses to run as root and there is no {SERVER_USER!r} user to run "
            f"it as; create one (`useradd --system {SERVER_USER}`) or install the "
            "postgresql package, which does"
        ) from None
    return SERVER_USER
