"""The real ``pidurable`` app in a real pseudo-terminal: tmux, keys, screens, ``kill -9``.

DESIGN.md section 6 ("the product end to end in a pseudo-terminal (tmux) that
types keys, reads the screen, kills the process with SIGKILL and runs
``--continue``"); reliability.md section 15 (K1 in the terminal).

``Terminal`` owns one private tmux server (``tmux -S <its own socket file>``, no
user configuration) with one pane of 120x40 cells (or the size a test asks for), in which it starts
``python -m pi_durable_tui`` with its own ``PIDURABLE_HOME`` and working
directory. The pane is started with ``exec``, so the pane's process *is* the
app and its PID is the one to SIGKILL; ``remain-on-exit`` keeps a dead pane
(and its last screen) so ``--continue`` respawns in the same terminal.

Waiting is polling the screen with ``capture-pane`` against a deadline, never a
fixed sleep; a wait that times out, or finds the app dead, fails with the last
screen, the exit status and the tail of the app's crash log.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

TMUX = "tmux"
WIDTH, HEIGHT = 120, 40
DEADLINE = 45.0
"""Seconds a wait may take (generous: several apps share two cores)."""
POLL = 0.04
"""Seconds between two screen captures while waiting."""

_CONFIG = (
    # Esc reaches the app at once (tmux otherwise waits for an escape sequence).
    "set -sg escape-time 0\n"
    # A dead pane keeps its screen, and --continue respawns in it.
    "set -g remain-on-exit on\n"
    "set -g status off\n"
)

ScreenTest = Callable[[str], bool]


class TerminalError(AssertionError):
    """A wait failed: what was awaited, and the screen and process state at the time."""


def require_tmux() -> None:
    """Skip the test without tmux, or fail it under CI, where tmux must be there."""
    if shutil.which(TMUX) is None:
        message = "tmux is not installed (apt-get install tmux)"
        pytest.fail(message) if os.environ.get("CI") else pytest.skip(message)


def flat(text: str) -> str:
    """Text with every run of whitespace as one space: a phrase the screen wrapped is whole."""
    return " ".join(text.split())


def contains(*texts: str) -> ScreenTest:
    """A screen test: every text is on the screen (wrapped over lines or not)."""
    return lambda screen: all(flat(text) in flat(screen) for text in texts)


class Terminal:
    """One tmux server with one pane running ``pidurable``.

    Args:
        root: A fresh directory: the tmux config, ``home`` (``PIDURABLE_HOME``) and
            ``work`` (the app's working directory) are made in it.
        script: The faux script every start serves (``--faux-script``).
        size: ``(columns, rows)`` of the pane (120x40 unless a test needs a small one).
    """

    def __init__(self, root: Path, script: Path, size: tuple[int, int] = (WIDTH, HEIGHT)) -> None:
        self.root = root
        self.width, self.height = size
        self.home = root / "home"
        self.work = root / "work"
        self.home.mkdir(parents=True, exist_ok=True)
        self.work.mkdir(parents=True, exist_ok=True)
        self.script = script
        # A socket file of its own (not -L, which leaves its file in the shared
        # /tmp/tmux-<uid>/ after kill-server).
        self.socket = root / "tmux.sock"
        self.config = root / "tmux.conf"
        self.config.write_text(_CONFIG)
        self.starts = 0
        self.environment: dict[str, str] = {}
        """Variables every start sets for the app (``PIDURABLE_DATABASE_URL``, say)."""
        self.screens: list[str] = []
        """Every distinct screen seen while waiting, in order."""

    # -- tmux --

    def tmux(self, *args: str) -> str:
        """Run a tmux command on this terminal's server and return its output."""
        command = [TMUX, "-S", str(self.socket), "-f", str(self.config), *args]
        done = subprocess.run(command, capture_output=True, text=True, timeout=20, check=False)
        if done.returncode != 0:
            raise TerminalError(f"{shlex.join(command)} failed: {done.stderr.strip()}")
        return done.stdout

    def _command(self, arguments: Sequence[str], *, replace_shell: bool = True) -> str:
        python = [sys.executable, "-m", "pi_durable_tui", "--faux-script", str(self.script)]
        if "--permission-mode" not in arguments:
            # The terminal tests' scripted commands run unasked, unless a test that is
            # about approvals names its mode (issue 13).
            python += ["--permission-mode", "auto"]
        # REMINDER: exec, so the pane's PID is the app's (the one kill() signals). The
        # app may write bytecode, as an installed one has it: each start then loads
        # its modules instead of compiling them again (0.7 s of a 2 s start here).
        words = ["exec"] if replace_shell else []
        words += ["env", "-u", "PYTHONDONTWRITEBYTECODE", f"PIDURABLE_HOME={self.home}"]
        # Textual asks shutil for the size, which reads these first: a start that
        # queried the new pty too early got 80x24 instead of the pane's size.
        words += [f"{name}={value}" for name, value in self.environment.items()]
        words += [f"COLUMNS={self.width}", f"LINES={self.height}", *python]
        return shlex.join([*words, *arguments])

    def start(self, *arguments: str, stderr: Path | None = None) -> None:
        """Start the app (the first time) or start it again in the dead pane.

        ``stderr``: a file standard error is redirected to (``2>FILE``).
        """
        command = self._command(arguments)
        if stderr is not None:
            command += f" 2>{shlex.quote(str(stderr))}"
        if self.starts == 0:
            size = ["-x", str(self.width), "-y", str(self.height)]
            self.tmux("new-session", "-d", "-s", "app", *size, "-c", str(self.work), command)
        else:
            self.tmux("respawn-pane", "-t", "app", "-c", str(self.work), command)
        self.starts += 1

    def start_in_shell(self, *arguments: str) -> None:
        """Start the app from an interactive shell with job control, as a user does.

        The pane's process is then the shell (``pid`` is the shell's), whose prompt
        is ``shell$``: a stopped app (Ctrl+Z) reports ``Stopped`` there and ``fg``
        brings it back. A process started with ``exec`` has no such shell: the
        kernel discards SIGTSTP for an orphaned process group.
        """
        shell = "env PS1='shell$ ' bash --norc --noprofile -i"
        size = ["-x", str(self.width), "-y", str(self.height)]
        self.tmux("new-session", "-d", "-s", "app", *size, "-c", str(self.work), shell)
        self.starts += 1
        self.wait_for(contains("shell$"), "the shell's prompt")
        self.tmux("send-keys", "-t", "app", self._command(arguments, replace_shell=False), "Enter")

    def close(self) -> None:
        """Kill the app if it still runs, then the tmux server (idempotent)."""
        if self.starts == 0:
            return
        try:
            if not self.dead():
                os.kill(self.pid(), signal.SIGKILL)
        except (TerminalError, ProcessLookupError):
            pass
        subprocess.run(
            [TMUX, "-S", str(self.socket), "kill-server"],
            capture_output=True,
            timeout=20,
            check=False,
        )
        self.starts = 0

    # -- the pane --

    def screen(self) -> str:
        """The visible screen, one line per row, trailing blanks removed."""
        lines = self.tmux("capture-pane", "-p", "-t", "app").splitlines()
        return "\n".join(line.rstrip() for line in lines).strip("\n")

    def history(self) -> str:
        """The screen with every line scrolled off it above (what a user scrolls back to).

        A dead pane's ``Pane is dead`` line scrolls the whole screen up in tmux 3.3,
        so what the app printed last before exiting is found here, not on ``screen``.
        """
        lines = self.tmux("capture-pane", "-p", "-S", "-", "-t", "app").splitlines()
        return "\n".join(line.rstrip() for line in lines).strip("\n")

    def _pane(self, field: str) -> str:
        return self.tmux("display-message", "-p", "-t", "app", f"#{{{field}}}").strip()

    def pid(self) -> int:
        """The app's process ID (the pane's process)."""
        return int(self._pane("pane_pid"))

    def dead(self) -> bool:
        """Whether the app has exited (the pane stays, dead)."""
        return self._pane("pane_dead") == "1"

    def exit_status(self) -> str:
        """How the app ended: ``status N`` or ``signal N`` (empty while it runs)."""
        status, kill = self._pane("pane_dead_status"), self._pane("pane_dead_signal")
        return f"signal {kill}" if kill else f"status {status}" if status else ""

    def type(self, text: str) -> None:
        """Type text literally, and wait until the editor shows it (as a person would)."""
        self.tmux("send-keys", "-t", "app", "-l", text)
        self.wait_for(contains(text.splitlines()[-1]), f"the typed text {text!r} in the editor")

    def press(self, *keys: str) -> None:
        """Press keys by tmux name (``Enter``, ``Escape``, ``C-d``)."""
        self.tmux("send-keys", "-t", "app", *keys)

    def paste(self, text: str) -> None:
        """Paste text as a terminal does: one bracketed paste (tmux ``paste-buffer -p``).

        Line breaks arrive as CR, as tmux (and xterm) send them.
        """
        self.tmux("set-buffer", "-b", "pasted", "--", text)
        self.tmux("paste-buffer", "-p", "-d", "-b", "pasted", "-t", "app")

    def submit(self, text: str, *, burst: bool = False) -> None:
        """Type a prompt and press Enter.

        Args:
            text: The prompt (one line).
            burst: Send the text and Enter at once, as a paste or a fast typist does,
                instead of waiting for the editor to show the text first (a text that
                is a tmux key name, such as ``Enter``, would be sent as that key).
        """
        if burst:
            # One send-keys: tmux writes the characters and the Enter together.
            self.tmux("send-keys", "-t", "app", text, "Enter")
            return
        self.type(text)
        self.press("Enter")

    # -- waiting --

    def wait_for(self, test: ScreenTest, what: str, deadline: float = DEADLINE) -> str:
        """Poll the screen until ``test`` holds; return that screen.

        Raises:
            TerminalError: The deadline passed, or the app died first; the message
                names ``what`` and shows the last screen.
        """
        end = time.monotonic() + deadline
        while True:
            screen = self.screen()
            if not self.screens or self.screens[-1] != screen:
                self.screens.append(screen)
            if test(screen):
                return screen
            if self.dead():
                self.fail(f"the app exited ({self.exit_status()}) while waiting for {what}")
            if time.monotonic() > end:
                self.fail(f"waited {deadline:.0f} s for {what}")
            time.sleep(POLL)

    def wait_dead(self, deadline: float = DEADLINE) -> str:
        """Wait until the app has exited; return how (``exit_status``)."""
        end = time.monotonic() + deadline
        nudge = time.monotonic() + 0.2
        while True:
            # REMINDER: tmux marks a pane dead when its terminal closes, before it has
            # reaped the process (tmux PR 4841); the status or signal comes later, and
            # never if tmux missed the SIGCHLD while libutempter's handler was installed
            # (tmux issue 311): a SIGCHLD sent to the server makes it reap then.
            dead = self.dead()
            status = self.exit_status() if dead else ""
            if status:
                return status
            if dead and time.monotonic() > nudge:
                os.kill(int(self._pane("pid")), signal.SIGCHLD)
                nudge = time.monotonic() + 0.2
            if time.monotonic() > end:
                self.fail(f"the app did not exit within {deadline:.0f} s")
            time.sleep(POLL)

    def kill(self) -> str:
        """Capture the screen, SIGKILL the app, wait for its death; return that screen.

        Everything on the returned screen was shown before the kill.
        """
        pid = self.pid()
        screen = self.screen()
        os.kill(pid, signal.SIGKILL)
        status = self.wait_dead()
        if status != f"signal {int(signal.SIGKILL)}":
            self.fail(f"the app ended with {status} before the SIGKILL landed")
        return screen

    def fail(self, message: str) -> None:
        """Raise ``TerminalError`` with the screen and the app's crash log."""
        logs = sorted(self.home.glob("sessions/*/*/pidurable.log"))
        tail = logs[-1].read_text(errors="replace")[-3000:] if logs else "(no crash log)"
        size = self._pane("window_width") + "x" + self._pane("window_height")
        raise TerminalError(
            f"{message}\n--- screen ({size}) ---\n{self.screen()}\n--- log ---\n{tail}"
        )

    # -- files the app wrote --

    def store(self) -> Path:
        """The one session store this terminal's app created."""
        stores = sorted(self.home.glob("sessions/*/*/session.sqlite"))
        if len(stores) != 1:
            raise TerminalError(f"expected one session store under {self.home}, found {stores}")
        return stores[0]


def scripted_terminal(
    tmp_path: Path, script: object, size: tuple[int, int] = (WIDTH, HEIGHT)
) -> Iterator[Terminal]:
    """A ``Terminal`` serving the faux ``script`` (JSON data), closed afterwards.

    For a test file's ``terminal`` fixture: ``yield from scripted_terminal(tmp_path, SCRIPT)``.
    """
    require_tmux()
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script))
    made = Terminal(tmp_path / "t", path, size=size)
    try:
        yield made
    finally:
        made.close()
