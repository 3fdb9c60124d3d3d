r"""What runs on the remote host for each command: a POSIX ``sh`` wrapper and its guard.

Every command is one SSH session channel whose command line is always the same
text, ``COMMAND_LINE``: the login shell ``exec``s ``/bin/sh`` with ``_WRAPPER``.
Nothing the caller gives appears in it (the remote ``ps`` shows only the
wrapper): the working directory, the variables and the argv arrive on the
channel's stdin as a header (``encode_header``), one request per line, each
value written with ``\0ooo`` octal escapes that the wrapper decodes with
``printf %b``.

The wrapper (whose PID leads the session's process group: ``sshd`` makes every
session a new session) applies the header: it unsets inherited variables it is
told to (secrets, or everything without inheritance), exports the given ones,
``cd``s, checks the program or finds bash (``/bin/bash``, then ``bash`` or
``sh`` on PATH), forks the guard, prints the ready line
``\036pidurable ok PID`` on stdout and ``exec``s the command with stdin from
``/dev/null``. A failure prints ``\036pidurable no-dir`` (``no-shell``,
``no-program``, ``not-exec``) instead and runs nothing. The client drops
stdout before the ready line, so what a user's ``.bashrc`` prints never
reaches a tool.

The guard (the remote ``_orphan_guard``) reads the rest of the channel's stdin,
ignoring ``SIGTERM``, ``SIGINT`` and ``SIGHUP``:

- ``release``: the command ended and the client knows it; the guard exits;
- ``stop``: ``SIGTERM`` to the whole group, then, once the leader is gone or
  the grace has passed (counted in 10 ms sleeps), ``SIGKILL`` to the group;
- end of file (the client died, the connection dropped, the channel was
  closed): if the leader still runs, ``SIGKILL`` to every process carrying the
  command's mark (``PIDURABLE_RUN``, issue 13: what left the group by
  ``setsid``) and to the group, else exit.

So a command never outlives the pidurable process that started it, as a local
command does not. What is weaker than ``LocalEnv``: after ``SIGTERM`` the
group gets ``SIGKILL`` as soon as the leader has exited (a shell cannot see
the other members of its group without ``ps``), and a group is killed by its
PID number later (``kill_groups_script``), which another process may have
taken once the group emptied.
"""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence

READY_MARK = b"\x1epidurable "
"""The start of the wrapper's status line on stdout."""

READY_STATES = frozenset({"ok", "no-dir", "no-shell", "no-program", "not-exec"})

TICK_SECONDS = 0.01
"""One sleep of the guard's grace count."""

SHELL_ADDED_NAMES = ("PWD", "OLDPWD", "SHLVL", "_")
"""Variables a login shell adds on its own, unset too when nothing is inherited."""

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-./:@,+=%^~")

# REMINDER: this text is inside single quotes on the command line: no single quote
# in it. `command unset` keeps a failing unset from ending the shell (a special
# builtin's error would). Wrapper variables start with _pd_ and are unset before exec.
_WRAPPER = r"""while IFS= read -r _pd_l; do
_pd_k=${_pd_l%% *}; _pd_r=${_pd_l#* }
case $_pd_k in
u) command unset "$_pd_r" 2>/dev/null ;;
e) _pd_v=$(printf "%b_" "${_pd_r#* }"); export "${_pd_r%% *}=${_pd_v%_}" ;;
d) _pd_v=$(printf "%b_" "$_pd_r"); _pd_d=${_pd_v%_} ;;
s) _pd_v=$(printf "%b_" "$_pd_r"); _pd_s=${_pd_v%_}; _pd_shell=1 ;;
a) _pd_v=$(printf "%b_" "$_pd_r"); set -- "$@" "${_pd_v%_}" ;;
g) _pd_g=$_pd_r ;;
.) break ;;
esac
done
cd "$_pd_d" 2>/dev/null || { printf "\036pidurable no-dir\n"; exit 0; }
if [ -n "$_pd_shell" ]; then
  if [ -x /bin/bash ]; then _pd_p=/bin/bash
  else _pd_p=$(command -v bash || command -v sh) || { printf "\036pidurable no-shell\n"; exit 0; }
  fi
  set -- "$_pd_p" -c "$_pd_s"
else
  case $1 in
  */*) if [ ! -f "$1" ] || [ ! -x "$1" ]; then
         if [ -e "$1" ]; then _pd_f=not-exec; else _pd_f=no-program; fi
         printf "\036pidurable %s\n" "$_pd_f"
         exit 0
       fi ;;
  *) _pd_f=; _pd_i=$IFS; IFS=:; set -f
     for _pd_x in ${PATH-/bin:/usr/bin}; do
       if [ -f "${_pd_x:-.}/$1" ] && [ -x "${_pd_x:-.}/$1" ]; then _pd_f=1; break; fi
     done
     IFS=$_pd_i; set +f
     [ -n "$_pd_f" ] || { printf "\036pidurable no-program\n"; exit 0; } ;;
  esac
fi
_pd_leader=$$
exec 3<&0 </dev/null
( trap "" TERM INT HUP
  while IFS= read -r _pd_c <&3; do
    case $_pd_c in
    release) exit 0 ;;
    stop) kill -TERM 0; _pd_n=0
          while kill -0 "$_pd_leader" 2>/dev/null && [ "$_pd_n" -lt "$_pd_g" ]; do
            sleep 0.01 2>/dev/null || sleep 1; _pd_n=$((_pd_n + 1))
          done
          kill -KILL 0 ;;
    esac
  done
  if kill -0 "$_pd_leader" 2>/dev/null; then
    if [ -n "$PIDURABLE_RUN" ]; then
      read -r _pd_self _pd_c < /proc/self/stat 2>/dev/null
      for _pd_f in $(grep -lzx "PIDURABLE_RUN=$PIDURABLE_RUN" /proc/[0-9]*/environ 2>/dev/null); do
        _pd_x=${_pd_f#/proc/}; _pd_x=${_pd_x%/environ}
        [ "$_pd_x" = "$_pd_self" ] || kill -KILL "$_pd_x" 2>/dev/null
      done
    fi
    kill -KILL 0
  fi
  exit 0
) >/dev/null 2>&1 &
printf "\036pidurable ok %s\n" "$$"
command unset _pd_l _pd_k _pd_r _pd_v _pd_d _pd_s _pd_shell _pd_g _pd_p _pd_f _pd_i _pd_x _pd_leader
exec "$@" 3<&-
"""

COMMAND_LINE = f"exec /bin/sh -c '{_WRAPPER}' pidurable"
"""The command line of every command channel (the same text each time)."""

PROBE_LINE = "exec /bin/sh -c 'uname -sm 2>/dev/null; echo; export -p'"
"""The command line that shows the remote platform, then the environment a command
inherits there (``parse_probe``)."""

# REMINDER: arguments are groups (numbers) and marks (m:<mark>); a mark finds every
# process carrying PIDURABLE_RUN=<mark> in its environment, wherever its group
# (setsid, nohup, daemons: issue 13), by one GNU grep over /proc.
_KILL_GROUPS = r"""_pd_t=
for _pd_a in "$@"; do
  case $_pd_a in
  m:*) for _pd_f in $(grep -lzx "PIDURABLE_RUN=${_pd_a#m:}" /proc/[0-9]*/environ 2>/dev/null); do
         _pd_x=${_pd_f#/proc/}; _pd_t="$_pd_t ${_pd_x%/environ}"
       done ;;
  *) _pd_t="$_pd_t -$_pd_a" ;;
  esac
done
for _pd_p in $_pd_t; do kill -s TERM -- "$_pd_p" 2>/dev/null; done
_pd_n=0
while [ "$_pd_n" -lt "$_pd_g" ]; do
  _pd_alive=
  for _pd_p in $_pd_t; do kill -s 0 -- "$_pd_p" 2>/dev/null && _pd_alive=1; done
  [ -z "$_pd_alive" ] && exit 0
  sleep 0.01 2>/dev/null || sleep 1; _pd_n=$((_pd_n + 1))
done
for _pd_p in $_pd_t; do kill -s KILL -- "$_pd_p" 2>/dev/null; done
exit 0
"""


def is_shell_name(name: str) -> bool:
    """Whether ``name`` can be a shell variable (others cannot be passed by the wrapper)."""
    return _NAME.match(name) is not None


def encode_value(value: str) -> str:
    r"""``value`` with every byte outside a safe set as ``\0ooo``, for ``printf %b``."""
    data = value.encode("utf-8", "surrogateescape")
    return "".join(chr(byte) if byte in _SAFE else f"\\0{byte:03o}" for byte in data)


def grace_ticks(grace: float) -> int:
    """The guard's grace as a count of ``TICK_SECONDS`` sleeps (at least one)."""
    return max(1, math.ceil(grace / TICK_SECONDS))


def encode_header(
    *,
    cwd: str,
    argv: Sequence[str] | None,
    shell_command: str | None,
    unset: Iterable[str],
    export: Mapping[str, str],
    grace: float,
) -> bytes:
    """The stdin header of one command (see the module docstring).

    Args:
        cwd: The absolute working directory.
        argv: The program and arguments, or None for ``shell_command``.
        shell_command: A string for bash (``sh`` without bash), or None.
        unset: Inherited names to remove (valid shell names only).
        export: Variables to set (valid shell names only).
        grace: Seconds between ``SIGTERM`` and ``SIGKILL`` on ``stop``.
    """
    lines = [f"u {name}" for name in unset]
    lines += [f"e {name} {encode_value(value)}" for name, value in export.items()]
    lines.append(f"d {encode_value(cwd)}")
    if shell_command is not None:
        lines.append(f"s {encode_value(shell_command)}")
    for arg in argv or ():
        lines.append(f"a {encode_value(arg)}")
    lines.append(f"g {grace_ticks(grace)}")
    lines.append(".")
    return ("\n".join(lines) + "\n").encode("ascii")


def kill_groups_line(groups: Iterable[int], grace: float, marks: Iterable[str] = ()) -> str:
    """A command line that kills whole process groups and marked processes.

    ``SIGTERM``, up to ``grace``, ``SIGKILL``. A mark names every process whose
    environment holds ``PIDURABLE_RUN=<mark>`` (found through ``/proc``, so on
    a Linux host with GNU grep; elsewhere only the groups are killed).
    """
    ids = " ".join(
        [str(int(group)) for group in groups] + [shlex.quote(f"m:{mark}") for mark in marks]
    )
    script = _KILL_GROUPS.replace('"$_pd_g"', str(grace_ticks(grace)))
    return f"exec /bin/sh -c {shlex.quote(script)} pidurable {ids}"


def parse_probe(text: str) -> tuple[str, dict[str, str]]:
    """The platform line and the variables of ``PROBE_LINE``'s output."""
    platform, _, exported = text.partition("\n")
    return platform.strip(), parse_exported(exported)


def parse_exported(text: str) -> dict[str, str]:
    """The variables of ``export -p`` output (``export NAME='value'`` lines, as dash prints).

    A variable exported without a value is left out; bash's ``declare -x`` form
    parses too.
    """
    variables: dict[str, str] = {}
    try:
        tokens = shlex.split(text, posix=True)
    except ValueError:
        return variables
    for token in tokens:
        name, equals, value = token.partition("=")
        if equals and is_shell_name(name):
            variables[name] = value
    return variables
