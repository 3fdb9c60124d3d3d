"""The one failure type of the environment layer: ``FileError`` (R119, R120).

The reference returns ``{ok: false, error}`` results; here every operation of an
``ExecutionEnv`` raises ``FileError`` instead. Python code handles failure with
``try``/``except``, so a result object would only add an ``if`` that a caller can
forget, and an exception keeps a traceback. One class with a ``code`` (not one
subclass per errno) keeps ``except FileError as error: if error.code == ...``
the single way to branch, which is what the tools do when they turn a failure
into a message for the model.

``code`` is one of ``FILE_ERROR_CODES``: the reference's file codes, plus
``already_exists`` (creating a directory that exists) and ``not_empty``
(removing a non-empty directory without ``recursive``), which have no better
home, plus the exec codes ``timeout``, ``aborted`` and ``shell_unavailable``.
"""

from __future__ import annotations

import errno
from typing import Literal, get_args

FileErrorCode = Literal[
    "not_found",
    "permission_denied",
    "not_directory",
    "is_directory",
    "already_exists",
    "not_empty",
    "invalid",
    "aborted",
    "not_supported",
    "timeout",
    "shell_unavailable",
    "unknown",
]
"""What went wrong, as a word a caller can branch on (R119, R120)."""
FILE_ERROR_CODES: tuple[FileErrorCode, ...] = get_args(FileErrorCode)
"""Every ``FileErrorCode``, in declaration order."""

_ERRNO_CODES: dict[int, FileErrorCode] = {
    errno.ENOENT: "not_found",
    errno.EACCES: "permission_denied",
    errno.EPERM: "permission_denied",
    errno.EROFS: "permission_denied",
    errno.ENOTDIR: "not_directory",
    errno.EISDIR: "is_directory",
    errno.EEXIST: "already_exists",
    errno.ENOTEMPTY: "not_empty",
    errno.ELOOP: "invalid",
    errno.ENAMETOOLONG: "invalid",
    errno.EINVAL: "invalid",
    errno.EXDEV: "not_supported",
    errno.ENOTSUP: "not_supported",
}


class FileError(Exception):
    """A failed environment operation: what went wrong, as a code, a message and a path.

    Args:
        code: One of ``FILE_ERROR_CODES``.
        message: A sentence for people (and for the model, through the tools).
        path: The absolute path the operation failed on, when there is one.
        spill_path: For a failed ``exec`` (timeout, abort): the file holding the
            complete output, when the output crossed the spill thresholds (R120).
    """

    def __init__(
        self,
        code: FileErrorCode,
        message: str,
        path: str | None = None,
        *,
        spill_path: str | None = None,
    ) -> None:
        super().__init__(message)
        self.code: FileErrorCode = code
        self.message = message
        self.path = path
        self.spill_path = spill_path

    def __repr__(self) -> str:
        return f"FileError({self.code!r}, {self.message!r}, {self.path!r})"


def file_error_from_os(error: OSError, path: str, action: str) -> FileError:
    """Translate an ``OSError`` into a ``FileError`` that names the path and the action.

    Args:
        error: The error the operating system raised.
        path: The absolute path of the operation.
        action: What was being done, as a verb phrase (``"read"``, ``"remove"``).

    Returns:
        A ``FileError`` whose message reads ``Could not <action> <path>: <reason>``.
    """
    code = _ERRNO_CODES.get(error.errno or 0, "unknown")
    reason = error.strerror or str(error)
    return FileError(code, f"Could not {action} {path}: {reason}", path)


def aborted(path: str | None = None) -> FileError:
    """The error of an operation given an abort signal that is already set (R119)."""
    return FileError("aborted", "Operation aborted", path)
