"""SFTP failures as ``FileError`` codes, made as precise as ``LocalEnv``'s (R119).

OpenSSH's SFTP server speaks protocol version 3, whose status codes are coarse:
``ENOTDIR`` arrives as "no such file", and ``EEXIST``, ``ENOTEMPTY`` and
``EISDIR`` all arrive as "failure". So an error is classified in two steps:
``code_of`` maps the status code (version 5 and 6 codes are precise and kept),
and ``explain_missing`` turns a "no such file" into ``not_directory`` when an
ancestor of the path exists but is not a directory, which costs a few ``stat``
requests only on that error path. The callers that get "failure" look at the
path themselves (``_sftp_files``), since only they know what was attempted.

Losing the connection is ``FileError("unknown")`` naming the host, never an
asyncssh exception: tools turn a ``FileError`` into a message for the model.
"""

from __future__ import annotations

import posixpath
import stat

import asyncssh

from pi_durable_tui.env._errors import FileError, FileErrorCode

_CODES: dict[int, FileErrorCode] = {
    asyncssh.FX_NO_SUCH_FILE: "not_found",
    asyncssh.FX_NO_SUCH_PATH: "not_found",
    asyncssh.FX_PERMISSION_DENIED: "permission_denied",
    asyncssh.FX_WRITE_PROTECT: "permission_denied",
    asyncssh.FX_OP_UNSUPPORTED: "not_supported",
    asyncssh.FX_FILE_ALREADY_EXISTS: "already_exists",
    asyncssh.FX_DIR_NOT_EMPTY: "not_empty",
    asyncssh.FX_NOT_A_DIRECTORY: "not_directory",
    asyncssh.FX_FILE_IS_A_DIRECTORY: "is_directory",
    asyncssh.FX_LINK_LOOP: "invalid",
    asyncssh.FX_INVALID_FILENAME: "invalid",
    asyncssh.FX_INVALID_PARAMETER: "invalid",
}

_REASONS: dict[FileErrorCode, str] = {
    "not_found": "No such file or directory",
    "permission_denied": "Permission denied",
    "not_directory": "Not a directory",
    "is_directory": "Is a directory",
    "already_exists": "File exists",
    "not_empty": "Directory not empty",
    "not_supported": "Operation not supported by the SSH server",
}

TRANSPORT_ERRORS = (asyncssh.Error, OSError, EOFError)
"""What a lost or refused connection raises inside asyncssh calls."""


def code_of(error: asyncssh.SFTPError) -> FileErrorCode:
    """The ``FileError`` code of an SFTP status (``unknown`` for "failure")."""
    return _CODES.get(error.code, "unknown")


def file_error(code: FileErrorCode, path: str, action: str, detail: str = "") -> FileError:
    """``Could not <action> <path>: <reason>``, as ``LocalEnv`` words it."""
    reason = _REASONS.get(code) or detail or "Failure"
    return FileError(code, f"Could not {action} {path}: {reason}", path)


def lost(where: str, error: BaseException) -> FileError:
    """The error of an operation whose SSH connection failed."""
    reason = str(error) or type(error).__name__
    return FileError("unknown", f"The SSH connection to {where} failed: {reason}")


async def _ancestor_kind(sftp: asyncssh.SFTPClient, path: str) -> int | None:
    """The ``st_mode`` file type of the nearest existing ancestor of ``path`` (None: none)."""
    parent = posixpath.dirname(path)
    while parent and parent != path:
        try:
            attrs = await sftp.stat(parent)
        except asyncssh.SFTPNoSuchFile:
            path, parent = parent, posixpath.dirname(parent)
            continue
        return stat.S_IFMT(attrs.permissions or 0)
    return None


async def explain_missing(sftp: asyncssh.SFTPClient, path: str) -> FileErrorCode:
    """``not_directory`` when a file stands where a directory of ``path`` should be."""
    kind = await _ancestor_kind(sftp, path)
    if kind is not None and kind != stat.S_IFDIR:
        return "not_directory"
    return "not_found"


async def classify(
    sftp: asyncssh.SFTPClient, error: asyncssh.SFTPError, path: str, action: str
) -> FileError:
    """A ``FileError`` for an SFTP status, with a "no such file" explained."""
    code = code_of(error)
    if error.code == asyncssh.FX_NO_SUCH_FILE:
        code = await explain_missing(sftp, path)
    return file_error(code, path, action, error.reason)
