"""``AgentApp``: the coding agent product without a screen, opened on one session.

It owns everything a front end (print mode, JSON mode, the TUI) shares:

- the session store (``SqliteStorage`` with its single-writer lock, or a
  ``PostgresStorage`` when sessions live in a database: ``_sessions``): a new
  session for the working directory, the newest one (``--continue``), or a given
  one (``--session``);
- the settings files (re-read when they change), the models (environment keys,
  custom providers from settings, ``--base-url``, a faux script), the registry
  (``coding-tools``, the system prompt sections, subagents), one ``LocalEnv`` per
  working directory with the settings' allow list, or, with ``--env ssh://...``
  (or the user's ``env`` setting), one ``SshEnv`` connected at opening, closed
  at closing, whose remote directory is the session's working directory and
  whose URL files its sessions (``_location``);
- the ``Harness`` and the root conversation, configured on creation with the cwd,
  the model and the thinking level; ``--model`` on a continued session switches it.

``close()`` closes the harness and the store on every path; it is idempotent.
Before the harness closes it commits the stop marker (``_stop_marker``): which
live tasks this orderly close stops, and why, for the next recovery report.
Opening and closing run to their end even when the caller is cancelled
(``_uncancelled``), so Ctrl-C or SIGTERM at any moment leaves the store closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import sqlite3
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, TypeGuard

from pi_durable_tui.ai import FauxProvider, ModelRef, Models, ThinkingLevel
from pi_durable_tui.ai.faux import parse_faux_script
from pi_durable_tui.app._location import Location, open_remote_env, resolve_location
from pi_durable_tui.app.agent._config import AppSettings
from pi_durable_tui.app.agent._demos import (
    DEMOS,
    Demo,
    DemoMarker,
    create_workspace,
    read_marker,
    script_text,
    write_marker,
)
from pi_durable_tui.app.agent._earlier_runs import end_earlier_runs
from pi_durable_tui.app.agent._extension_files import ExtensionFiles, extension_directories
from pi_durable_tui.app.agent._job_exit import end_jobs, keep_jobs, reopened_jobs
from pi_durable_tui.app.agent._live_settings import SettingsFiles
from pi_durable_tui.app.agent._mcp_servers import McpServers, open_mcp_servers
from pi_durable_tui.app.agent._model_setup import (
    ModelChoiceError,
    ModelSelection,
    build_models,
    choose_model,
)
from pi_durable_tui.app.agent._permissions import PermissionChoices, check_rules
from pi_durable_tui.app.agent._prompt_sections import CODING_PROMPT
from pi_durable_tui.app.agent._stop_marker import CLOSED, commit_stop_marker, take_stop_marker
from pi_durable_tui.app.agent._subagent import SUBAGENTS
from pi_durable_tui.app.agent._uncancelled import complete
from pi_durable_tui.app.files import (
    SessionUnavailable,
    database_url,
    describe_store,
    discard_new_session,
    home,
    new_session_path,
    newest_session,
    open_store,
    remember_env,
    remember_faux_script,
    remember_title,
    remembered_env,
    remembered_faux_script,
    resolve_session,
    settings_sources,
)
from pi_durable_tui.env import ExecutionEnv, LocalEnv
from pi_durable_tui.harness import (
    AGENT_DOC,
    AgentChange,
    Conversation,
    EnvTarget,
    Harness,
    create_registry,
    parse_mcp_servers,
    stored_model,
)
from pi_durable_tui.kernel import Clock, Report
from pi_durable_tui.storage import StorageError
from pi_durable_tui.tools import coding_tools
from pi_durable_tui.tools.search import FileSearchTools

if TYPE_CHECKING:
    from pi_durable_tui.env.ssh import SshEnv


@dataclass(frozen=True, slots=True)
class AppOptions:
    """What the command line chose.

    Args:
        cwd: The working directory.
        session: An explicit store path (``--session``).
        continue_session: Open the newest session of ``cwd`` (``--continue``).
        model: ``provider/model-id[:thinking]`` (``--model``).
        base_url: An OpenAI-compatible server for unknown model IDs (``--base-url``).
        faux_script: A faux script file serving provider ``faux`` (``--faux-script``).
        demo: Start an offline demo (``--demo``): ``coding`` or ``planner``.
        demo_pace: Scale the new demo's waits (1 for people; tests use a small value).
            A continued demo keeps the pace it was started with.
        env: ``--env``: an ``ssh://`` URL where the tools run (None: the user's
            ``env`` setting, else this machine).
        permissions: ``--permission-mode``, ``--allow``, ``--deny``, and whether a
            screen can ask (issue 13).
    """

    cwd: str
    session: str | None = None
    continue_session: bool = False
    model: str | None = None
    base_url: str | None = None
    faux_script: str | None = None
    demo: str | None = None
    demo_pace: float = 1.0
    env: str | None = None
    permissions: PermissionChoices = field(default_factory=PermissionChoices)


@dataclass(eq=False)
class AgentApp:
    """An open session of the coding agent (see the module docstring)."""

    harness: Harness
    root: Conversation
    store: Path
    settings: SettingsFiles
    models: Models
    cwd: str
    reports: list[Report] = field(default_factory=list)
    created: bool = False
    """Whether this open created the session (a new store)."""
    demo: Demo | None = None
    """The demo this session runs, if any."""
    options: AppOptions | None = None
    """The options it was opened with."""
    location: Location | None = None
    """Where the tools work (None: ``cwd`` on this machine)."""
    remote: ExecutionEnv | None = None
    """The SSH environment of a remote location, closed with the app."""
    mcp_servers: McpServers = field(default_factory=McpServers)
    """The MCP servers of this session (issue 16), stopped with the app."""
    extension_files: ExtensionFiles = field(default_factory=lambda: ExtensionFiles([]))
    """The extension files installed (issue 16), re-imported by ``reload_extensions``."""
    notices: list[str] = field(default_factory=list)
    """One line per thing that could not be set up (an MCP server that did not start)."""
    leftovers: str | None = None
    """The notice naming processes earlier runs left running, ended at this opening."""
    job_report: list[str] = field(default_factory=list)
    """What became of each job an earlier run left live (the recovery report's lines)."""
    leave_jobs_running: bool = False
    """Whether closing leaves the background jobs running (issue 13); else they end."""
    stopped_by: str | None = None
    """The stop signal ending this run (``SIGTERM``, ``SIGINT``, ``SIGHUP``), once one came.

    Set by the front end (``stop_by``) the moment the signal arrives: JSON mode's
    last line names it, and ``close`` records it in the stop marker."""
    earlier_stops: dict[int, str] = field(default_factory=dict)
    """The tasks the previous run's orderly close stopped, and why (``_stop_marker``).

    Read at opening, for the recovery report: a task absent from it was cut by a crash."""
    _reopen: Callable[[AppOptions, DemoMarker | None], Awaitable[AgentApp]] | None = None
    _closing: asyncio.Future[None] | None = None
    _titled: bool = False

    @classmethod
    async def open(
        cls,
        options: AppOptions,
        *,
        on_report: Callable[[Report], None] | None = None,
        faux: FauxProvider | None = None,
        clock: Clock | None = None,
    ) -> AgentApp:
        """Open the session the options name and the harness on it (dispatching nothing).

        A cancellation (Ctrl-C, SIGTERM) while it opens waits for the open to end,
        closes what it opened, and then propagates: nothing is left half open.

        Args:
            options: What the command line chose.
            on_report: Called with each report of the harness (besides ``reports``).
            faux: Serve provider ``faux`` from this provider (embedding, tests);
                it wins over ``--faux-script`` and a demo's script.
            clock: The harness clock (retries, task sleeps); the wall clock by default.

        Raises:
            SettingsError: A settings file is malformed.
            NoSession: ``--continue`` found no session for this directory.
            SessionUnavailable: The store is locked by another process or damaged.
            ModelChoiceError: A malformed or unknown ``--model``, a bad ``--base-url``.
            FauxScriptError: A malformed faux script.
        """
        return await cls._open_completely(options, on_report, faux, clock, None)

    @classmethod
    async def _open_completely(
        cls,
        options: AppOptions,
        on_report: Callable[[Report], None] | None,
        faux: FauxProvider | None,
        clock: Clock | None,
        demo: DemoMarker | None,
    ) -> AgentApp:
        opening = cls._open(options, on_report, faux, clock, demo)
        return await complete(opening, undo=lambda app: app.close())

    @classmethod
    async def _open(
        cls,
        options: AppOptions,
        on_report: Callable[[Report], None] | None,
        faux: FauxProvider | None,
        clock: Clock | None,
        inherited_demo: DemoMarker | None,
    ) -> AgentApp:
        cwd = os.path.realpath(options.cwd)
        check_rules(options.permissions)
        settings = SettingsFiles(cwd, options.permissions)
        app_settings = settings.current()
        location = resolve_location(cwd, options.env)
        if options.session:
            store = resolve_session(options.session, location.key)
            store.parent.mkdir(parents=True, exist_ok=True)
            remembered = remembered_env(store)
            if options.env is None and remembered is not None:
                location = resolve_location(cwd, remembered)
        elif options.continue_session:
            store = newest_session(location.key)
        else:
            store = new_session_path(location.key)
        if database_url() is not None and describe_store(store) != str(store):
            created = not (options.session or options.continue_session)
        else:
            created = not store.exists()
        try:
            _refuse_read_only(store)
            if options.demo is not None and created:
                demo = DEMOS[options.demo].paced(options.demo_pace)
                write_marker(store, demo, create_workspace(demo, home()))
            elif inherited_demo is not None and created:
                # /new in a demo: the same scripted model, tools and workspace.
                demo = inherited_demo.demo
                write_marker(store, demo, Path(inherited_demo.workspace))
            marker = read_marker(store)
            if marker is not None and options.permissions.mode is None:
                # A demo's model is our own script in a temporary workspace.
                settings.choose_permissions(mode="auto")
            provider = faux
            workspace = cwd
            model_option = options.model
            if marker is not None:
                if provider is None:
                    script = script_text(marker.demo)
                    provider = parse_faux_script(script, f"demo {marker.name}").provider()
                workspace = marker.workspace
                model_option = model_option or "faux/faux-1"
            faux_script = options.faux_script
            if faux_script is None and provider is None:
                faux_script = remembered_faux_script(store)
            models = build_models(
                app_settings,
                faux_script=None if provider is not None else faux_script,
                faux=provider,
                base_url=options.base_url,
            )
            try:
                choice = choose_model(models, model_option, app_settings, base_url=options.base_url)
            except ModelChoiceError as error:
                raise ModelChoiceError(f"{error}{_unconfirmed_providers(settings, cwd)}") from None
            remote = None
            if location.remote and marker is None:
                remote = await open_remote_env(location, tuple(app_settings.env_allow))
                workspace = remote.cwd
            try:
                storage = await open_store(store)
            except BaseException:
                if remote is not None:
                    await remote.close()
                raise
            # REMINDER: written once the store opened, so a refused start (a bad
            # script, a damaged store, a full disk) leaves nothing beside the store.
            try:
                if options.faux_script is not None:
                    remember_faux_script(store, options.faux_script)
                if remote is not None:
                    remember_env(store, location.key)
            except BaseException:
                await storage.close()
                if remote is not None:
                    await remote.close()
                raise
        except BaseException as error:
            if not options.session and not options.continue_session:
                # A session that never started leaves no empty directory behind.
                discard_new_session(store)
            if _store_failure(error):
                raise SessionUnavailable(store, error, describe_store(store)) from error
            raise
        reports: list[Report] = []

        def report(item: Report) -> None:
            reports.append(item)
            if on_report is not None:
                on_report(item)

        # Issue 16: MCP servers (lazily, or with the session); one that fails is a notice.
        mcp_servers = await open_mcp_servers(
            parse_mcp_servers(app_settings.mcpServers),
            app_settings.mcp_start,
            log_path=store.parent / "pidurable.log",
            cwd=Path(workspace),
        )
        mcp_tools = [mcp_servers.extension()] if mcp_servers.connections else []
        extension_files = ExtensionFiles(
            extension_directories(cwd, project_trusted=settings.trusted_extension_files()),
            store.parent / "pidurable.log",
        )
        file_extensions, extension_notices = extension_files.load()
        try:
            harness = await Harness.open(
                storage,
                models=models,
                registry=create_registry(
                    CODING_PROMPT,
                    coding_tools(allow_outside_cwd=lambda: settings.current().allow_outside_cwd),
                    FileSearchTools,
                    SUBAGENTS,
                    *(marker.demo.extensions if marker is not None else ()),
                    *mcp_tools,
                    *file_extensions,
                ),
                settings=settings.harness,
                env=_env_factory(settings) if remote is None else _remote_factory(remote),
                on_report=report,
                clock=clock,
            )
        except BaseException as error:
            await storage.close()
            await mcp_servers.close()
            if remote is not None:
                await remote.close()
            if _store_failure(error):
                raise SessionUnavailable(store, error, describe_store(store)) from error
            raise
        app = cls(harness, harness.conversation(1), store, settings, models, cwd, reports, created)
        app.mcp_servers = mcp_servers
        app.notices = [*mcp_servers.notices, *extension_notices]
        app.extension_files = extension_files
        app.demo = marker.demo if marker is not None else None
        app.options = options
        app.location = location if remote is not None else None
        app.remote = remote
        app._reopen = lambda other, demo: cls._open_completely(other, on_report, faux, clock, demo)
        try:
            app.earlier_stops = await take_stop_marker(harness)  # before scheduling (R23)
            app.job_report = await reopened_jobs(harness)  # issue 13: before scheduling
            app.leftovers = await end_earlier_runs(store)  # issue 13
            app.root = await harness.root(agent=_initial_agent(choice, workspace))
            if options.model is not None and not created:
                await app.root.configure(_model_change(choice))
            elif options.base_url and not created:
                # A continued session's own model is served from --base-url too,
                # as it was when the session started there.
                stored = stored_model(await app.root.snapshot(AGENT_DOC) or {})
                if stored is not None:
                    models.use_base_url(stored, options.base_url)
        except BaseException:
            await app.close()
            raise
        return app

    async def open_another(self, session: str | None, *, model: str | None = None) -> AgentApp:
        """Open another session of this directory with the same providers, options and hooks.

        A new session keeps what serves this one's model (issue 12: ``/new`` in a
        faux session failed with "no provider 'faux'"): the faux script it was
        started with or remembered, and a demo's scripted model, tools and workspace.

        Args:
            session: A stored session's path, or ``None`` for a new session.
            model: ``provider/id[:thinking]`` for a new session (a stored one keeps its own).

        Returns:
            The open session; this one stays open (the caller closes it).

        Raises:
            RuntimeError: This session was built by hand, not by ``open``.
        """
        if self.options is None or self._reopen is None:
            raise RuntimeError("Only a session opened with AgentApp.open can open another one")
        inherited = remembered_faux_script(self.store) if session is None else None
        options = replace(
            self.options,
            session=session,
            continue_session=False,
            demo=None,
            model=model if session is None else None,
            faux_script=self.options.faux_script or inherited,
        )
        return await self._reopen(options, read_marker(self.store) if session is None else None)

    async def close(self) -> None:
        """Close the harness and the store; idempotent, never raises for a closed store.

        A cancellation while it closes waits for the close to end, then propagates.
        """
        if self._closing is None:
            self._closing = asyncio.ensure_future(self._close_harness())
        await complete(self._closing)

    async def _close_harness(self) -> None:
        with contextlib.suppress(Exception):  # issue 13: jobs end at exit unless left running
            if self.leave_jobs_running:
                await keep_jobs(self.harness, self.store)
            else:
                await end_jobs(self.harness)
        # REMINDER: before the seal, or the marker cannot be committed; a failed
        # store commits nothing, and the next report says crash (as after SIGKILL).
        with contextlib.suppress(Exception):
            await commit_stop_marker(self.harness, self.stopped_by or CLOSED, self.earlier_stops)
        with contextlib.suppress(Exception):
            await self.harness.close()
        await self.mcp_servers.close()
        closing = getattr(self.remote, "close", None)
        if closing is not None:
            with contextlib.suppress(Exception):
                await closing()

    def stop_by(self, signal_name: str) -> None:
        """A stop signal ends this run: say so in its last JSON line and its stop marker."""
        if self.stopped_by is None:
            self.stopped_by = signal_name

    @property
    def session_key(self) -> str:
        """What this app's sessions are filed under: ``cwd``, or the ``ssh://`` URL."""
        return self.cwd if self.location is None else self.location.key

    @property
    def workspace(self) -> str:
        """The working directory of the tools (on the remote host for ``--env ssh://``)."""
        return self.cwd if self.remote is None else self.remote.cwd

    def where(self, path: str) -> str:
        """A working directory as the user reads it: ``user@host:/path`` when remote."""
        return path if self.location is None else self.location.show(path)

    @property
    def session_id(self) -> str:
        """How ``--session`` names this session: its name in the database, or its file."""
        return describe_store(self.store)

    async def remember_title(self, text: str) -> None:
        """Remember the session's first user message for the ``--resume`` picker (once)."""
        if not self._titled:
            await remember_title(self.store, self.harness.session.storage, text)
            self._titled = True

    def demo_banner(self) -> str:
        """What a demo session tells the user about killing and continuing it."""
        cwd = self.cwd
        return (
            f"Demo: a scripted model drives real tools in a temporary workspace. Kill the "
            f"terminal or the process at any moment (kill -9 {os.getpid()}), then run "
            f"`pidurable --continue` in {cwd}: nothing committed is lost."
        )

    @property
    def settings_home(self) -> str:
        """The user's own settings file (where widening keys apply unconfirmed)."""
        return str(settings_sources(self.cwd)[0])

    def reload_extensions(self) -> list[str]:
        """``/reload``: import the extension files again and swap them in while the agent runs.

        A project's files count only while its content is trusted. Returns one
        notice per file that failed (its old version stays installed).
        """
        self.extension_files.directories = extension_directories(
            self.cwd, project_trusted=self.settings.trusted_extension_files()
        )
        return self.extension_files.reload(self.harness.registry)

    def settings_now(self) -> AppSettings:
        """The settings as they are now."""
        return self.settings.current()


def _refuse_read_only(store: Path) -> None:
    """Refuse a session whose store file this process may not write.

    SQLite opens such a file (mode 0444, another user's) for reading without a
    word, so the session would open and its first commit fail: the screen would
    show the transcript, then stop at the first prompt. ``export`` still reads it.

    Raises:
        PermissionError: The file exists and is not writable (``EACCES``).
    """
    if store.is_file() and not os.access(store, os.W_OK):
        raise PermissionError(errno.EACCES, "the session store is read-only", str(store))


def _store_failure(error: BaseException) -> TypeGuard[Exception]:
    """Whether opening failed at the store or its disk (not a bug, nor a bad option)."""
    if isinstance(error, (StorageError, sqlite3.Error)):
        return True
    # A file of the session (its directory, faux-script.txt) that cannot be written;
    # a write cut by a full disk may fail at its close, naming no file.
    return isinstance(error, OSError) and (error.filename is not None or error.errno in _DISK)


_DISK = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES, errno.EPERM, errno.EIO}
"""The errors of a disk that refuses writes (full, read-only, no permission, failing)."""


def _unconfirmed_providers(settings: SettingsFiles, cwd: str) -> str:
    """Why a provider the project declares is unknown: its file is not confirmed yet."""
    request = settings.pending()
    if request is None or "providers" not in request.widening:
        return ""
    return (
        f" ({request.where} declares providers, which apply only once you trust that file: "
        f"run pidurable in {request.project} without --model and answer y, or declare them "
        f"in {settings_sources(cwd)[0]})"
    )


def _initial_agent(choice: ModelSelection | None, cwd: str) -> AgentChange:
    change = _model_change(choice)
    return AgentChange(model=change.model, thinking_level=change.thinking_level, cwd=cwd)


def _model_change(choice: ModelSelection | None) -> AgentChange:
    if choice is None:
        return AgentChange()
    thinking: ThinkingLevel | None = choice.thinking_level
    return AgentChange(
        model=ModelRef(choice.model.provider, choice.model.id), thinking_level=thinking
    )


def _remote_factory(remote: SshEnv) -> Callable[[EnvTarget], ExecutionEnv]:
    """Every conversation's tools on the one SSH connection (at its own directory)."""
    views: dict[str, SshEnv] = {remote.cwd: remote}

    def build(target: EnvTarget) -> ExecutionEnv:
        cwd = remote.absolute_path(target.cwd or remote.cwd)
        env = views.get(cwd)
        if env is None:
            env = views[cwd] = remote.at(cwd)
        return env

    return build


def _env_factory(settings: SettingsFiles) -> Callable[[EnvTarget], ExecutionEnv]:
    cache: dict[tuple[str, tuple[str, ...], tuple[str, ...]], LocalEnv] = {}

    def build(target: EnvTarget) -> ExecutionEnv:
        cwd = target.cwd or os.getcwd()
        current = settings.current()
        allow = tuple(current.env_allow)
        # The providers' key variables are secrets whatever their names (LLAMA_KEY):
        # commands never see them, spill files and job logs never hold their values.
        keys = tuple(sorted({p.api_key_env for p in current.providers if p.api_key_env}))
        env = cache.get((cwd, allow, keys))
        if env is None:
            env = cache[(cwd, allow, keys)] = LocalEnv(cwd, allow_env=allow, secret_names=keys)
        return env

    return build
