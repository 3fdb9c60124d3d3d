"""Extension files defining ``EXTENSION = define_extension(...)``, and ``/reload`` (issue 16).

Each ``*.py`` file under ``$PIDURABLE_HOME/extensions/`` (and a project's
``.pidurable/extensions/``, once the user trusted the project's content) defines
``EXTENSION`` with the public harness API (tools, prompt sections, hooks,
wrappers, tasks). They are imported when the session opens and installed in the
registry after the built-in extensions.

``reload`` imports every file again and installs what it defines in the
session's registry while the agent runs: installing an extension whose name is
installed replaces it in place (R32), a tool call already running keeps the
implementation it resolved until it settles and the next call resolves the new
one (R33, R35), and a request resolves its tools from a fresh snapshot (R30).
A file that fails to import (or defines no ``Extension``) is one notice, its
traceback goes to the session's log, and the version installed before stays;
an extension whose file was removed is uninstalled.

REMINDER: the files run with the user's powers, inside pidurable: a project's
files are imported only after trust (``_live_settings``), never on the model's
word.
"""

from __future__ import annotations

import importlib.util
import itertools
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

from pi_durable_tui.app.files import EXTENSIONS_DIR, home
from pi_durable_tui.harness import Extension, Registry

_COUNTER = itertools.count(1)


class ExtensionFileError(Exception):
    """A file could not be imported or defines no ``EXTENSION``: one line."""


def extension_paths(directories: Sequence[Path]) -> list[Path]:
    """The extension files of ``directories``, in directory order, then by name."""
    paths: list[Path] = []
    for directory in directories:
        if directory.is_dir():
            paths.extend(sorted(p for p in directory.glob("*.py") if p.is_file()))
    return paths


def import_extension(path: Path) -> Extension:
    """Import ``path`` afresh (a new module each time) and return its ``EXTENSION``.

    Raises:
        ExtensionFileError: It failed to import, or its ``EXTENSION`` is missing or
            not an ``Extension`` (the cause is chained, for the traceback).
    """
    name = f"pidurable_extension_{next(_COUNTER)}_{path.stem.replace('-', '_')}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ExtensionFileError(f"{path}: not an importable Python file")
    module = importlib.util.module_from_spec(spec)
    # REMINDER: in sys.modules while it runs, so pydantic models and dataclasses
    # of the file resolve their annotations; a new name per import, so a reload
    # never reuses the old module.
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException as error:
        sys.modules.pop(name, None)
        if not isinstance(error, Exception):
            raise
        text = str(error).strip().splitlines()
        raise ExtensionFileError(
            f"{path}: {type(error).__name__}: {text[0] if text else ''}".rstrip(": ")
        ) from error
    extension = getattr(module, "EXTENSION", None)
    if not isinstance(extension, Extension):
        raise ExtensionFileError(f"{path}: defines no EXTENSION = define_extension(...)")
    return extension


def extension_directories(cwd: str, *, project_trusted: bool) -> list[Path]:
    """The user's extension directory, then the project's when its content is trusted."""
    directories = [home() / EXTENSIONS_DIR]
    if project_trusted:
        directories.append(Path(cwd) / ".pidurable" / EXTENSIONS_DIR)
    return directories


class ExtensionFiles:
    """The extension files of one session and what each installed.

    Args:
        directories: Where the files are, lowest precedence first.
        log_path: The session's log (tracebacks of files that failed).
    """

    def __init__(self, directories: Sequence[Path], log_path: Path | None = None) -> None:
        self.directories = list(directories)
        self._log_path = log_path
        self.installed: dict[Path, Extension] = {}
        """Each file and the extension of it that is installed."""

    def load(self) -> tuple[list[Extension], list[str]]:
        """Import every file (at open): the extensions, and one notice per failure."""
        notices = self._import_all()
        return list(self.installed.values()), notices

    def reload(self, registry: Registry) -> list[str]:
        """Import every file again and swap what changed into ``registry``.

        Returns:
            One notice per file that failed (its old version stays installed).
        """
        before = dict(self.installed)
        notices = self._import_all()
        gone = [ext for path, ext in before.items() if path not in self.installed]
        if gone:
            registry.uninstall(*gone)
        fresh = [ext for path, ext in self.installed.items() if before.get(path) is not ext]
        if fresh:
            try:
                registry.install(*fresh)
            except ValueError as error:
                self.installed = before
                return [*notices, f"Extensions not reloaded: {error}"]
        return notices

    def _import_all(self) -> list[str]:
        notices: list[str] = []
        found: dict[Path, Extension] = {}
        for path in extension_paths(self.directories):
            try:
                found[path] = import_extension(path)
            except ExtensionFileError as error:
                self._log(error)
                notices.append(f"{error} (the traceback is in the session log)")
                if path in self.installed:
                    found[path] = self.installed[path]  # the old version stays
        self.installed = found
        return notices

    def _log(self, error: ExtensionFileError) -> None:
        if self._log_path is None:
            return
        try:
            with self._log_path.open("a", encoding="utf-8") as log:
                log.write(f"extension file failed: {error}\n")
                log.write("".join(traceback.format_exception(error.__cause__ or error)))
        except OSError:
            pass
