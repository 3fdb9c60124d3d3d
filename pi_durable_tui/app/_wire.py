"""The wire between a session's host and its clients: one message family (issue 15; R123-R126).

An open session has one host, the process holding the store (the single
writer, DESIGN.md section 8). Every client (a second terminal, the web page,
an editor) speaks this family of messages, one JSON object per message; on the
Unix socket each is one line of UTF-8 (newline-delimited JSON), on a WebSocket
one text frame. Why lines of JSON: every message is self-contained and
readable with ``socat``, the JSON mode and the web page parse it natively, and
a line bounds a message without a length prefix the other side must trust.

Host to client:

- ``welcome`` ``{v, client, clients, root, cwd, session, host_pid, windows, mode}``:
  the answer to ``hello`` (``windows``: each host model's context window, for
  footers; ``mode``: the permission mode in force, ``plan``, ``auto-edit``,
  ``ask`` or ``auto``).
- ``mode`` ``{mode}``: the permission mode in force changed (F4 in the host's
  terminal, an edited settings file); sent to every client at each change.
- ``snapshot`` ``{seq, conversation, entries, has_older, docs, tasks}``: the
  current view of one conversation at commit ``seq``: the NEWEST ``window``
  entries (oldest first), never the history (a late joiner of a 10,000-entry
  session costs what a 10-entry one does; older pages come by ``older``), the
  conversation's built-in documents whole, and the task tree.
- ``commit`` ``{seq, entries, docs, submissions}``: what commit ``seq`` changed
  in the followed conversation: its appended entries (records as stored), per
  document ``{kind, ops}`` (DESIGN.md section 4's operations; a created or
  retired document comes as a root ``set``), and its submissions' new states
  (``{id, status, reason, detail, answer}``, ``answer`` the answer's entry ID).
  A commit that touched nothing followed sends nothing. Sequence numbers only
  grow; a client keeps the last one it applied.
- ``permission_request`` ``{seq, conversation, call_id, tool, request}`` and
  ``permission_decision`` ``{seq, conversation, call_id, tool, decision}``
  (issue 13): a call of the followed conversation started waiting for the
  user's decision, or its decision was committed, in commit ``seq``; each
  follows that commit's ``commit`` message. They say in one message what the
  commit's ``pi.live`` operations hold (the call's ``approval`` slot), so a
  client that prints or notifies need not diff the document; a mirror needs
  nothing but the ``commit``.
- ``result`` ``{seq, submission, status, reason, detail, answer, text}``: the
  input a headless run (``--mode json``) settled, its last message: ``answer``
  the answer's entry ID and ``text`` its text (``None`` when unanswered).
- ``tasks`` ``{seq, tasks}``: the task tree changed (session-wide).
- ``clients`` ``{clients}``: who is attached changed.
- ``reply`` ``{id, ok, value | error}``: the answer to one ``call``.
- ``error`` ``{code, message}``: a message of this client was refused
  (``malformed``, ``oversized``, ``forbidden``, ``protocol``).
- ``stopped`` ``{notice}``: the host's store failed (a full disk, an I/O error;
  issue 12): nothing more is committed, so the client shows ``notice`` (what
  failed, what to do) and stops saying the agent works; a client that joins
  later gets it after ``welcome``. Intents are answered with one line then.
- ``bye`` ``{reason}``: the host closes this connection (``host closing``).

Client to host:

- ``hello`` ``{v, name, conversation?, since?, window?}``: first message.
  With ``since`` (the last seq applied) the host sends the ``commit`` frames
  after it when it still holds them (reconnect), else a fresh ``snapshot``.
- ``call`` ``{id, method, args}``: an intent (``METHODS``). Clients never open
  the store; every change goes through the host's harness.
- ``follow`` ``{conversation}``: show another conversation (a new snapshot).

Bounds (untrusted input on a socket or a WebSocket): a message longer than
``MAX_MESSAGE`` bytes is refused with ``oversized`` and the connection closed
(its framing can no longer be trusted); a line that is not a JSON object of a
known shape is refused with ``malformed`` and the connection stays. Neither
touches the host's session. A client that falls behind (more than
``MAX_PENDING`` undelivered frames) loses the undelivered suffix and gets one
fresh snapshot instead, as a watch collapses its backlog into one root
replacement (R124).

``Mirror`` is the client's half: it applies a snapshot and then commit frames,
holding the window of entries and the documents, so any client derives what it
shows from the same committed values the host's own screen derives from.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pi_durable_tui.storage.json_ops import InvalidOperation, apply_ops, check_ops, dumps, loads

PROTOCOL = 1
"""The version ``hello`` and ``welcome`` carry; a host refuses another one."""
MAX_MESSAGE = 1 << 20
"""Bytes of one message a client sends (a pasted file fits; a runaway client does not)."""
MAX_HOST_MESSAGE = 64 << 20
"""Bytes of one message a host sends: a snapshot of large entries is big, and the
host is the user's own process (same uid), so the bound only stops a runaway."""
WINDOW = 60
"""Entries a snapshot carries by default (the screen's first page)."""
MAX_WINDOW = 500
"""The largest ``window`` a client may ask for."""
MAX_PENDING = 100
"""Undelivered frames kept per client before its backlog becomes one snapshot (R124)."""

METHODS: dict[str, dict[str, type | tuple[type, ...]]] = {
    "submit": {"text": str, "follow_up": bool},
    "abort": {},
    "withdraw": {"submission_id": int},
    "decide": {"call_id": str, "choice": str, "message": (str, type(None))},
    "compact": {"instructions": (str, type(None))},
    "set_model": {"ref": str},
    "cycle_thinking": {},
    "older": {"before": int, "count": int},
    "history": {"after": int, "count": int},
    "stop_task": {"task_id": int},
    "background_command": {},
    "conversations": {},
    "session": {},
    "session_name": {},
    "name_session": {"name": str},
}
"""Each intent a client may call and its arguments' types (all optional but ``text``,
``submission_id``, ``call_id``, ``choice``, ``ref``, ``before``, ``after``, ``count``,
``task_id``, ``name``).

``session`` answers ``/session`` (the session's facts, the caller's followed
conversation's entries counted); ``session_name`` and ``name_session`` read and
commit the name ``/name`` gives the session.

``stop_task`` is ``/tasks stop N``; ``background_command`` is Ctrl+B (the running
command moves to the background); ``conversations`` lists the session's
conversations for the picker (``/agents``), the caller's followed one marked shown.

``older`` pages the window back (newest first, for a screen scrolling up);
``history`` reads forward from an entry ID (``after`` 0: the first page), oldest
first, ``{entries, has_newer}``: how an editor's ``session/load`` replays a
whole session one page at a time."""

REQUIRED: dict[str, tuple[str, ...]] = {
    "submit": ("text",),
    "withdraw": ("submission_id",),
    "decide": ("call_id", "choice"),
    "set_model": ("ref",),
    "older": ("before", "count"),
    "history": ("after", "count"),
    "stop_task": ("task_id",),
    "name_session": ("name",),
}


class WireError(ValueError):
    """A message that is not one of this family; ``code`` says how (see the module)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


_RAW_CONTROL = re.compile("[\x7f-\x9f]")
"""The control characters JSON leaves raw (DEL and C1); C0 ones are always escaped."""


def encode(message: Mapping[str, Any]) -> bytes:
    """One message as a line of UTF-8 JSON.

    Lone surrogates are escaped, as storage writes them, and so are DEL and the
    C1 controls, which JSON allows raw: ``--mode json`` prints these lines, and
    a pipe ends in a terminal often enough (issue 13). No line holds a raw
    control character.
    """
    text = dumps(dict(message))
    if "\x7f" in text or not text.isascii():
        text = _RAW_CONTROL.sub(_escaped, text)
    return text.encode("utf-8") + b"\n"


def _escaped(found: re.Match[str]) -> str:
    return f"\\u{ord(found.group()):04x}"


def decode(line: bytes | str, limit: int = MAX_MESSAGE) -> dict[str, Any]:
    """Parse one message.

    Raises:
        WireError: ``oversized`` past ``limit`` bytes; ``malformed`` when it is
            not a JSON object with a string ``t``.
    """
    if len(line) > limit:
        raise WireError("oversized", f"Message longer than {limit} bytes")
    try:
        message = loads(line)
    except (ValueError, UnicodeDecodeError) as error:
        raise WireError("malformed", f"Not JSON: {error}") from None
    if not isinstance(message, dict) or not isinstance(message.get("t"), str):
        raise WireError("malformed", 'A message is a JSON object with a string "t"')
    return message


def check_hello(message: Mapping[str, Any]) -> None:
    """Check a client's first message.

    Raises:
        WireError: ``protocol`` for another message or version, ``malformed``
            for a field of the wrong type.
    """
    if message.get("t") != "hello":
        raise WireError("protocol", 'The first message must be "hello"')
    if message.get("v") != PROTOCOL:
        version = message.get("v")
        raise WireError("protocol", f"Protocol version {version!r} (host speaks {PROTOCOL})")
    _typed(message, {"name": str, "conversation": int, "since": int, "window": int}, "hello")
    window = message.get("window")
    if window is not None and not 1 <= window <= MAX_WINDOW:
        raise WireError("malformed", f"hello.window must be 1..{MAX_WINDOW}")


def check_call(message: Mapping[str, Any]) -> tuple[int, str, dict[str, Any]]:
    """Check a ``call``; returns ``(id, method, args)``.

    Raises:
        WireError: ``malformed``: an unknown method, a missing or mistyped argument.
    """
    call_id, method, args = message.get("id"), message.get("method"), message.get("args", {})
    if not _is_int(call_id):
        raise WireError("malformed", "call.id must be an integer")
    if not isinstance(method, str) or method not in METHODS:
        raise WireError("malformed", f"Unknown method {method!r}; known: {', '.join(METHODS)}")
    if not isinstance(args, dict):
        raise WireError("malformed", "call.args must be an object")
    unknown = set(args) - set(METHODS[method])
    if unknown:
        raise WireError("malformed", f"{method}: unknown argument {sorted(unknown)[0]!r}")
    missing = [name for name in REQUIRED.get(method, ()) if name not in args]
    if missing:
        raise WireError("malformed", f"{method}: missing argument {missing[0]!r}")
    _typed(args, METHODS[method], method)
    assert isinstance(call_id, int)
    return call_id, method, dict(args)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _typed(values: Mapping[str, Any], types: Mapping[str, Any], where: str) -> None:
    for name, kind in types.items():
        if name not in values:
            continue
        value = values[name]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if int in kinds and isinstance(value, bool):
            raise WireError("malformed", f"{where}.{name} must be an integer")
        if not isinstance(value, kinds):
            raise WireError("malformed", f"{where}.{name} has the wrong type")


@dataclass
class Mirror:
    """A client's copy of one followed conversation, from a snapshot and commit frames.

    Attributes:
        seq: The last commit applied (the ``since`` of a reconnect).
        conversation: The followed conversation.
        entries: The window of entries, oldest first (records as JSON).
        has_older: Whether entries exist before ``entries[0]``.
        docs: The conversation's documents by kind.
        tasks: The task tree as the host sent it.
        title: What names the conversation on screen (its first message; empty for
            the main one).
    """

    seq: int = 0
    conversation: int = 0
    entries: list[dict[str, Any]] = field(default_factory=list)
    has_older: bool = False
    docs: dict[str, Any] = field(default_factory=dict)
    tasks: list[Any] = field(default_factory=list)
    title: str = ""

    def apply(self, message: Mapping[str, Any]) -> bool:
        """Apply a ``snapshot``, ``commit`` or ``tasks`` message; others are ignored.

        Returns:
            Whether it changed the mirror (a stale commit, ``seq`` not past the
            last applied one, changes nothing).

        Raises:
            WireError: ``malformed``: operations that do not apply to the mirror.
        """
        kind = message.get("t")
        if kind == "snapshot":
            self.seq = int(message["seq"])
            self.conversation = int(message["conversation"])
            self.entries = list(message.get("entries") or [])
            self.has_older = bool(message.get("has_older"))
            self.docs = dict(message.get("docs") or {})
            self.tasks = list(message.get("tasks") or [])
            self.title = str(message.get("title") or "")
            return True
        if kind == "tasks":
            self.tasks = list(message.get("tasks") or [])
            return True
        if kind != "commit" or int(message["seq"]) <= self.seq:
            return False
        for change in message.get("docs") or []:
            ops = change.get("ops")
            try:
                check_ops(ops)
                value = apply_ops(self.docs.get(change["kind"]), ops)
            except (InvalidOperation, KeyError, TypeError) as error:
                raise WireError("malformed", f"Operations do not apply: {error}") from None
            if change.get("retired"):
                self.docs.pop(change["kind"], None)
            else:
                self.docs[change["kind"]] = value
        self.entries.extend(message.get("entries") or [])
        self.seq = int(message["seq"])
        return True

    def prepend(self, older: list[dict[str, Any]], has_older: bool) -> None:
        """Put an ``older`` page (oldest first) before the window."""
        self.entries[:0] = older
        self.has_older = has_older
