"""``SessionHost``: the process that holds the store serves its session to clients (issue 15).

DESIGN.md section 8: an open session has exactly one host, the single writer.
The host listens on ``<store>.sock`` (``app._socket``: mode 0600, peers of
another uid refused by ``SO_PEERCRED``, and so are processes started by a
command an agent ran: ``env.started_by_a_command``) and speaks the message family of
``app._wire``:

1. a client says ``hello`` (optionally ``since`` its last applied seq);
2. ON THE LINE (a commit callback that writes nothing) the host either puts
   the frames after ``since`` it still holds in the client's outbox (a
   reconnect costs what it missed) or reads a snapshot (the newest window of
   entries, the documents, the task tree), and registers the client as a
   follower in the same callback, so no commit falls between the two (R123);
3. one commit listener, for the whole host, builds each followed
   conversation's frame once, encodes it once, keeps it in that
   conversation's ring (``RING`` frames, for reconnects) and hands the same
   bytes to every follower's bounded outbox (``_connection``);
4. a client's ``call`` runs through the host's harness (``_intents``): the
   caller gets a ``reply``, everyone gets the commits.

A store that fails under the host (issue 12) is said to every client once
(``stopped``, with the line the host's own screen shows); intents are then
answered with ``StoreStopped``'s line, and a client that joins later gets
``welcome`` and ``stopped`` and is let go (nothing can be read on the line).

The permission mode in force is in ``welcome`` and, on every change (F4 in the
host, an edited settings file: a commit to ``pi.permissions``, a re-read of the
files), a ``mode`` message goes to every client, so each footer follows at once.

Presence: every join and leave sends ``clients`` to all (the host's own
screen, if any, is listed first as ``host``). ``alone()`` resolves when the
last client left, which is how a quitting terminal keeps serving until then.
A malformed message is refused with an ``error`` and the connection goes on;
an oversized one, or a broken handshake, closes that connection only. Nothing
a client sends can reach the session except through an intent.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pi_durable_tui.app._socket import bind_socket, peer_of, socket_path
from pi_durable_tui.app._wire import (
    MAX_MESSAGE,
    PROTOCOL,
    WINDOW,
    WireError,
    check_call,
    check_hello,
    decode,
    encode,
)
from pi_durable_tui.app.host._connection import Connection
from pi_durable_tui.app.host._frames import (
    Approvals,
    approval_messages,
    approvals_of,
    commit_frame,
    snapshot,
    tasks_json,
)
from pi_durable_tui.app.host._intents import IntentRefused, perform
from pi_durable_tui.app.host._transport import StreamTransport, Transport
from pi_durable_tui.app.screen import StoreStopped, TaskTree, watch_store_failure
from pi_durable_tui.env import started_by_a_command
from pi_durable_tui.harness import LIVE_DOC, PERMISSIONS_DOC
from pi_durable_tui.kernel import CommitInfo, SessionFailed, Tx

if TYPE_CHECKING:
    from pi_durable_tui.app.agent import AgentApp

RING = 256
"""Frames kept per followed conversation, for clients that reconnect."""
SETTINGS_POLL = 1.0
"""Seconds between two checks of the settings files while clients are attached."""


class _Ring:
    """The newest frames of one conversation; every frame after ``covered_from`` is held.

    ``approvals`` is what its tool slots hold of approvals, so each commit's
    ``permission_*`` messages say only what is new.
    """

    def __init__(self, covered_from: int, approvals: Approvals) -> None:
        self.covered_from = covered_from
        self.approvals = approvals
        self.frames: deque[tuple[int, bytes]] = deque()

    def add(self, seq: int, data: bytes) -> None:
        if len(self.frames) >= RING:
            self.covered_from = self.frames.popleft()[0]
        self.frames.append((seq, data))

    def after(self, since: int) -> list[bytes] | None:
        """The frames after ``since``, or ``None`` when some of them are gone."""
        if since < self.covered_from:
            return None
        return [data for seq, data in self.frames if seq > since]


class SessionHost:
    """Serves one open ``AgentApp`` on the socket beside its store.

    Args:
        app: The open session (the host never closes it).
        name: What the host's own screen is called in ``clients`` (``None``
            when it has none, as ``pidurable serve``).
        path: The socket (``<store>.sock`` by default).
    """

    def __init__(self, app: AgentApp, *, name: str | None = "terminal", path: Path | None = None):
        self.app = app
        self.name = name
        self.path = path if path is not None else socket_path(app.store)
        self._server: asyncio.base_events.Server | None = None
        self._connections: dict[int, Connection] = {}
        self._next_id = 1
        self._rings: dict[int, _Ring] = {}
        self._listeners: list[Callable[[list[dict[str, Any]]], None]] = []
        self._alone = asyncio.Event()
        self._alone.set()
        self._unsubscribe: Callable[[], None] | None = None
        self._tree = TaskTree(app.harness.session, app.root.id, self._tasks_changed)
        self._serving: set[asyncio.Task[None]] = set()
        self._inode: int | None = None
        self._stopped: dict[str, Any] | None = None
        """The ``stopped`` message once the store failed (issue 12), for every client."""
        self._unwatch_store: Callable[[], None] = lambda: None
        self._mode: str | None = None
        """The permission mode in force, as every client was last told (``mode``)."""
        self._mode_check: asyncio.Task[None] | None = None
        self._mode_again = False
        self._unwatch_settings: Callable[[], None] = lambda: None
        self._settings_poll: asyncio.Task[None] | None = None

    # -- lifecycle --

    async def start(self, *, listen: bool = True) -> None:
        """Bind the socket and follow commits (the caller holds the store's lock).

        Args:
            listen: ``False`` serves only the clients handed to ``serve_client``
                (``--mode json``'s standard output), with no socket.
        """
        sock = bind_socket(self.path) if listen else None
        if sock is not None:
            self._inode = os.stat(self.path).st_ino
        self._mode = await self._mode_now()
        self._unsubscribe = self.app.harness.session.subscribe(self._on_commit)
        self._unwatch_store = watch_store_failure(self.app, self._store_failed)
        self._unwatch_settings = self.app.settings.on_change(self._mode_may_have_changed)
        self._settings_poll = asyncio.ensure_future(self._poll_settings())
        self._tree.schedule()
        if sock is not None:
            self._server = await asyncio.start_unix_server(
                self._accept, sock=sock, limit=MAX_MESSAGE + 2
            )

    async def close(self) -> None:
        """Say ``bye`` to every client, stop listening and remove the socket; idempotent."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        self._unwatch_store()
        self._unwatch_settings()
        self._unwatch_settings = lambda: None
        for task in (self._mode_check, self._settings_poll):
            if task is not None:
                task.cancel()
        server, self._server = self._server, None
        if server is not None:
            server.close()
        for connection in list(self._connections.values()):
            await connection.close({"t": "bye", "reason": "host closing"})
        for task in list(self._serving):
            task.cancel()
        for task in list(self._serving):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self._tree.close()
        with contextlib.suppress(OSError):
            if self._inode is not None and os.stat(self.path).st_ino == self._inode:
                self.path.unlink()

    # -- presence --

    @property
    def clients(self) -> list[dict[str, Any]]:
        """Who is attached: the host's own screen first (if any), then each client."""
        own = [{"id": 0, "name": self.name, "pid": os.getpid(), "host": True}] if self.name else []
        return own + [c.describe() for c in self._connections.values()]

    def on_clients(self, listener: Callable[[list[dict[str, Any]]], None]) -> Callable[[], None]:
        """Call ``listener(clients)`` after each join and leave; returns unsubscribe."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    @property
    def attached(self) -> int:
        """How many clients are attached (the host's own screen not counted)."""
        return len(self._connections)

    def screen_left(self) -> None:
        """The host's own screen is gone (it quit while others stay): say so to them."""
        self.name = None
        self._presence_changed()

    async def alone(self) -> None:
        """Wait until no client is attached."""
        await self._alone.wait()

    def _presence_changed(self) -> None:
        clients = self.clients
        message = {"t": "clients", "clients": clients}
        for connection in self._connections.values():
            connection.send(message)
        for listener in list(self._listeners):
            with contextlib.suppress(Exception):
                listener(clients)
        if self._connections:
            self._alone.clear()
        else:
            self._alone.set()

    def _store_failed(self, notice: str) -> None:
        """Tell every client that the store failed: the host's screen's line, once."""
        self._stopped = {"t": "stopped", "notice": notice}
        for connection in self._connections.values():
            connection.send(self._stopped)

    # -- the permission mode --

    async def _mode_now(self) -> str | None:
        """The mode in force: the session's choice (F4), else the settings' (issue 13)."""
        try:
            return (await self.app.harness.permission_policy()).mode
        except Exception:  # closed, or its store failed: clients keep the last one said
            return self._mode

    def _mode_may_have_changed(self) -> None:
        """A settings file was re-read, or a commit wrote ``pi.permissions``: check, tell."""
        if self._mode_check is not None and not self._mode_check.done():
            self._mode_again = True  # the running check reads once more when it is done
            return
        self._mode_check = asyncio.ensure_future(self._check_mode())

    async def _poll_settings(self) -> None:
        # A host without a screen (``pidurable serve``) re-reads the files only at
        # decisions; an edit made while idle must still reach the attached footers.
        while True:
            await asyncio.sleep(SETTINGS_POLL)
            if self._connections:
                with contextlib.suppress(Exception):  # a malformed edit is reported there
                    self.app.settings.current()

    async def _check_mode(self) -> None:
        while True:
            self._mode_again = False
            mode = await self._mode_now()
            if mode != self._mode:
                self._mode = mode
                for connection in self._connections.values():
                    connection.send({"t": "mode", "mode": mode})
            if not self._mode_again:
                return

    # -- following commits --

    def _on_commit(self, info: CommitInfo) -> None:
        # REMINDER: runs on the line for every commit: encode once per conversation, queue, return.
        followed: dict[int, list[Connection]] = {}
        for connection in self._connections.values():
            if connection.conversation is not None:
                followed.setdefault(connection.conversation, []).append(connection)
        for conversation, ring in self._rings.items():
            frame = commit_frame(info, conversation)
            if frame is None:
                continue
            for message in [frame, *approval_messages(info, conversation, ring.approvals)]:
                data = encode(message)
                ring.add(info.seq, data)
                for connection in followed.get(conversation, ()):
                    connection.deliver(data)
        if info.tasks:
            self._tree.schedule()
        if any(change.address.kind == PERMISSIONS_DOC.kind for change in info.documents):
            self._mode_may_have_changed()

    def _tasks_changed(self) -> None:
        message = {
            "t": "tasks",
            "seq": self.app.harness.session.published_seq,
            "tasks": tasks_json(self._tree.nodes),
        }
        for connection in self._connections.values():
            connection.send(message)

    async def _follow(self, connection: Connection, conversation: int, since: int | None) -> None:
        """Start ``connection`` on ``conversation``: replayed frames or a snapshot, on the line.

        Raises:
            ValueError: The conversation does not exist.
        """
        session = self.app.harness.session

        async def mount(tx: Tx) -> None:
            ring = self._rings.get(conversation)
            replay = ring.after(since) if ring is not None and since is not None else None
            found: dict[str, Any] | None = None
            if replay is not None and since is not None and since <= session.storage.last_seq:
                messages = replay
            else:
                found = await snapshot(
                    session, tx, conversation, connection.window, tasks_json(self._tree.nodes)
                )
                messages = [encode(found)]
            # REMINDER: nothing awaits from here on: registration and the outbox change
            # together while this commit holds the line.
            if conversation not in self._rings:  # then ``found`` was read just now
                live = found["docs"].get(LIVE_DOC.kind) if found is not None else None
                self._rings[conversation] = _Ring(session.storage.last_seq, approvals_of(live))
            connection.conversation = conversation
            connection.restart(messages)

        await session.commit(mount)

    async def _resnapshot(self, connection: Connection) -> None:
        """A stale client's fresh start on what it follows (its backlog is gone)."""
        if connection.conversation is not None:
            with contextlib.suppress(ValueError):
                await self._follow(connection, connection.conversation, None)

    # -- one client --

    def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.ensure_future(self._serve_socket(reader, writer))
        self._serving.add(task)
        task.add_done_callback(self._serving.discard)

    async def _serve_socket(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        peer = peer_of(writer.get_extra_info("socket"))
        transport = StreamTransport(reader, writer, peer)
        if peer.uid != os.getuid():
            await _refuse(transport, "forbidden", "This session belongs to another user")
            return
        if started_by_a_command(peer.pid):
            # A command the agent ran must not steer or approve its own session.
            await _refuse(transport, "forbidden", "A command run by an agent may not attach")
            return
        await self._serve(transport)

    async def serve_client(self, transport: Transport) -> None:
        """Serve one client over ``transport`` until it leaves or the host closes.

        The one code path of every transport (the Unix socket, the web page's
        WebSocket): the caller has admitted the peer (credentials, token).
        """
        task = asyncio.ensure_future(self._serve(transport))
        self._serving.add(task)
        task.add_done_callback(self._serving.discard)
        await task

    async def _serve(self, transport: Transport) -> None:
        try:
            hello = decode(await transport.receive())
            check_hello(hello)
        except WireError as error:
            await _refuse(transport, error.code, str(error))
            return
        except (ConnectionError, OSError):
            await transport.close()
            return
        connection = Connection(
            self._next_id, str(hello.get("name") or "client"), transport, self._resnapshot
        )
        self._next_id += 1
        connection.window = int(hello.get("window") or WINDOW)
        conversation = int(hello.get("conversation") or self.app.root.id)
        welcome = self._welcome(connection)
        connection.send(welcome)
        if self._stopped is not None:
            # Nothing can be read on the line of a failed session: say why, and part.
            await connection.close(self._stopped)
            return
        try:
            await self._follow(connection, conversation, hello.get("since"))
        except ValueError as error:
            await connection.close({"t": "error", "code": "not_found", "message": str(error)})
            return
        self._connections[connection.client_id] = connection
        if self._mode != welcome["mode"]:  # changed while this client was being mounted
            connection.send({"t": "mode", "mode": self._mode})
        try:
            self._presence_changed()
            await self._read_loop(transport, connection)
        finally:
            self._connections.pop(connection.client_id, None)
            self._presence_changed()
            await connection.close()

    def _welcome(self, connection: Connection) -> dict[str, Any]:
        app = self.app
        return {
            "t": "welcome",
            "v": PROTOCOL,
            "client": connection.client_id,
            "clients": [*self.clients, connection.describe()],
            "root": app.root.id,
            "cwd": app.where(app.workspace),
            "session": app.session_id,
            "host_pid": os.getpid(),
            # The footer's context window of each model the host can use (a client
            # has no provider configuration of its own).
            "windows": {f"{m.provider}/{m.id}": m.context_window for m in app.models.list()},
            "mode": self._mode,  # the permission mode in force, for footers; then ``mode``
        }

    async def _read_loop(self, transport: Transport, connection: Connection) -> None:
        calls: set[asyncio.Task[None]] = set()
        order = asyncio.Lock()  # intents run in the order sent, except abort (reference 5.2)
        try:
            while True:
                try:
                    line = await transport.receive()
                    if not line:
                        return
                    message = decode(line)
                    kind = message["t"]
                    if kind == "call":
                        call = check_call(message)
                        task = asyncio.ensure_future(self._call(connection, call, order))
                        calls.add(task)
                        task.add_done_callback(calls.discard)
                    elif kind == "follow":
                        await self._follow_request(connection, message)
                    elif kind != "bye":
                        raise WireError("malformed", f"Unknown message type {kind!r}")
                    else:
                        return
                except WireError as error:
                    connection.send({"t": "error", "code": error.code, "message": str(error)})
                    if error.code == "oversized":
                        return  # REMINDER: the rest of that line cannot be framed: close.
                except (ConnectionError, OSError):
                    return  # the client went away mid-message
        finally:
            for task in calls:
                task.cancel()

    async def _follow_request(self, connection: Connection, message: dict[str, Any]) -> None:
        conversation = message.get("conversation")
        if not isinstance(conversation, int) or isinstance(conversation, bool):
            raise WireError("malformed", "follow.conversation must be an integer")
        try:
            await self._follow(connection, conversation, None)
        except ValueError as error:
            connection.send({"t": "error", "code": "not_found", "message": str(error)})

    async def _call(
        self, connection: Connection, call: tuple[int, str, dict[str, Any]], order: asyncio.Lock
    ) -> None:
        call_id, method, args = call
        conversation = connection.conversation or self.app.root.id
        reply: dict[str, Any] = {"t": "reply", "id": call_id}
        try:
            if method == "abort":
                value = await perform(self.app, conversation, method, args)
            else:
                async with order:
                    value = await perform(self.app, conversation, method, args)
            reply.update(ok=True, value=value)
        except asyncio.CancelledError:
            raise
        except IntentRefused as error:
            reply.update(ok=False, error=str(error))
        except SessionFailed:  # the store failed: the words of the host's own screen
            reply.update(ok=False, error=str(StoreStopped()))
        except Exception as error:  # the harness's words (busy, closed, ...): the host goes on
            reply.update(ok=False, error=str(error) or type(error).__name__)
        connection.send(reply)


async def _refuse(transport: Transport, code: str, message: str) -> None:
    with contextlib.suppress(ConnectionError, OSError):
        await transport.send(encode({"t": "error", "code": code, "message": message}))
    await transport.close()
