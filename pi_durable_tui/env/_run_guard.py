"""The run guard: a small process that ends what this run left when this process dies (issue 13).

Each command's own guard (``_orphan_guard``) kills its process group if this
process dies while it runs; but processes that left the group (``setsid cmd
&``) or outlived a command that already returned are in no group it knows. So
the first ``exec`` of a run starts one more process, the run guard: a Python
process (``-I -S``, no site, ~20 ms once) in a session of its own, that reads a
pipe only this process writes:

- ``keep <mark>``: a background job the user chose to leave running; its
  processes are spared;
- end of file (this process exited or was killed with ``SIGKILL``): every
  process whose mark belongs to this run (``_strays``), and every descendant of
  one (marked or not: ``env -i``), collected before anything is signalled, gets
  ``SIGTERM``, then after 0.5 s ``SIGKILL``; the run's spill directory is removed (every spill
  file of the run is in it); the guard exits.

On a normal exit the environments have already ended everything
(``cleanup()``), so the guard finds nothing; after a ``kill -9`` it is what
ends the run's processes. Each command's own guard waits a second before it
kills its group, so the run guard sees the command's process tree whole. A
process that cleared its environment and whose parent had already died when
this process was killed (an orphan of ours then, reparented to ``init`` now) is
the one thing it cannot find (documented in the README).

``spill_directory()`` is where this run's spill files go (``pi-run-<run>`` in
the temp directory, mode 0700), so a run whose guard was killed too leaves one
directory a later run can find and remove (``leftovers``).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import threading

from pi_durable_tui.env._strays import run_token

RUN_DIRECTORY_PREFIX = "pi-run-"
"""The name prefix of a run's spill directory in the temp directory."""

KEPT_LOG_PREFIX = "pi-kept-job-"
"""The name prefix of a kept job's log in the temp directory (outside any run's directory)."""

# REMINDER: the guard must never carry a mark (it would count itself); it is started
# with this process's environment minus the mark variable, and skips its own PID.
_SCRIPT = r"""
import os, shutil, signal, sys, time
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE):
    signal.signal(s, signal.SIG_IGN)
run, directory = sys.argv[1], sys.argv[2]
kept = set()
for line in sys.stdin.buffer:
    word, _, rest = line.strip().decode("ascii", "replace").partition(" ")
    if word == "keep":
        kept.add(rest)
    elif word == "unkeep":
        kept.discard(rest)
key = b"PIDURABLE_RUN="
def table():
    rows = {}
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            stat = open("/proc/" + name + "/stat", "rb").read()
            environ = open("/proc/" + name + "/environ", "rb").read()
        except OSError:
            continue
        fields = stat.rsplit(b")", 1)[1].split()
        mark = None
        for item in environ.split(b"\0"):
            if item.startswith(key):
                mark = item[len(key):].decode("ascii", "replace")
                break
        rows[int(name)] = (int(fields[1]), fields[0], mark)
    return rows
def ours(targets):
    rows = table()
    found = {pid for pid, (_, _, mark) in rows.items()
             if mark is not None and mark.startswith(run + ".") and mark not in kept}
    grown = True
    while grown:  # descendants of the run's processes, marked or not (env -i)
        grown = False
        for pid, (ppid, state, mark) in rows.items():
            if ppid in found and pid not in found and mark not in kept and state != b"Z":
                found.add(pid)
                grown = True
    targets |= found
    return {pid for pid in targets if pid in rows and rows[pid][1] != b"Z"}
targets = set()
for signum, wait in ((signal.SIGTERM, 0.5), (signal.SIGKILL, 1.0), (signal.SIGKILL, 0.0)):
    pids = ours(targets)
    if not pids:
        break
    for pid in pids:
        try:
            os.kill(pid, signum)
        except OSError:
            pass
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline and ours(targets):
        time.sleep(0.02)
shutil.rmtree(directory, ignore_errors=True)
"""


class RunGuard:
    """This process's end of the run guard's pipe (one per process, started on first use)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pid_of: int | None = None
        self._write: int | None = None
        self._guard_pid: int | None = None
        self._directory: str | None = None
        self._token = ""

    def _stale(self) -> bool:
        return self._pid_of != os.getpid()  # a forked child starts a run of its own

    @property
    def pid(self) -> int | None:
        """The guard's PID, once started."""
        return None if self._stale() else self._guard_pid

    def spill_directory(self) -> str:
        """This run's spill directory (created, mode 0700, on first use and when missing)."""
        self.start()
        assert self._directory is not None
        # REMINDER: recreated when missing: anything that removed it (a cleaner of the
        # temp directory, the guard of a run that shared the token) must not turn every
        # later spill of this run into "Could not create the full output file".
        os.makedirs(self._directory, mode=0o700, exist_ok=True)
        return self._directory

    def start(self) -> None:
        """Start the guard if it is not running for this process yet (best effort)."""
        with self._lock:
            if not self._stale():
                return
            self._pid_of = os.getpid()
            self._token = run_token()
            self._directory = os.path.join(
                tempfile.gettempdir(), f"{RUN_DIRECTORY_PREFIX}{self._token}"
            )
            os.makedirs(self._directory, mode=0o700, exist_ok=True)
            self._write = None
            self._guard_pid = None
            if not os.path.isdir("/proc"):
                return
            read_end, write_end = os.pipe()
            environ = {k: v for k, v in os.environ.items() if k != "PIDURABLE_RUN"}
            try:
                process = subprocess.Popen(
                    [sys.executable, "-I", "-S", "-c", _SCRIPT, self._token, self._directory],
                    stdin=read_end,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    env=environ,
                    start_new_session=True,
                    close_fds=True,
                )
            except OSError:
                os.close(write_end)
                return
            finally:
                os.close(read_end)
            # REMINDER: the guard outlives this process on purpose; marking the Popen
            # finished keeps its __del__ from warning or waiting for it.
            process.returncode = 0
            self._guard_pid = process.pid
            self._write = write_end

    def _send(self, line: str) -> None:
        if self._stale():
            self.start()
        if self._write is None:
            return
        with contextlib.suppress(OSError):
            os.write(self._write, (line + "\n").encode("ascii"))

    def keep(self, mark: str) -> None:
        """Spare the processes marked ``mark`` at the end of the run (a kept job)."""
        self._send(f"keep {mark}")


RUN_GUARD = RunGuard()
"""The run guard of this process."""
