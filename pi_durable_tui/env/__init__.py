"""The execution environment: files and processes as tools see them (layer 2, R118-R122).

``ExecutionEnv`` is the protocol the harness hands to tools as ``api.env``;
``LocalEnv`` implements it on this machine. Failures raise ``FileError`` with a
``code``. ``exec`` runs a string through bash (an argv without a shell) in its
own process group, tags output ``stdout``/``stderr``, kills the whole group on
timeout, abort or cancellation, spills large output to a file
(``SpillPolicy``) and skips output a tail-retaining tool cannot keep
(``OutputWindow``, ``SkippedOutput``). Children never inherit variables that look
like secrets (``is_secret_name``, ``scrub_environment``) unless allow-listed;
``SecretRedactor`` is the one redactor of their values, wherever text is
committed, written or printed.
Every command carries a mark (``MARK_NAME``) naming this process's run
(``run_token``), so what it leaves behind can be found and ended
(``processes_of_run``, ``end_processes``; issue 13).
``LocalEnv.start_job`` starts a background job (``RunningJob``: its output
redacted into a log file as it is written, stopped or kept past this process;
``KeptJob`` for one an earlier run kept).
``FileMutationQueue`` serializes ``edit``/``write`` of one file (R121); the
conformance suite for any environment is ``pi_durable_tui.env.conformance``
(R122).

This package imports nothing from the rest of ``pi_durable_tui``.
"""

from __future__ import annotations

from pi_durable_tui.env._errors import FILE_ERROR_CODES, FileError, FileErrorCode
from pi_durable_tui.env._jobs import JobProcess, KeptJob
from pi_durable_tui.env._local import MAX_TIMEOUT_SECONDS, LocalEnv
from pi_durable_tui.env._mark import MARK_NAME
from pi_durable_tui.env._mutation_queue import FileMutationQueue
from pi_durable_tui.env._protocol import BinaryReader, DirReader, ExecutionEnv, TextErrors
from pi_durable_tui.env._readers import scan_bytes
from pi_durable_tui.env._redaction import REDACTED, SecretRedactor
from pi_durable_tui.env._run_guard import KEPT_LOG_PREFIX, RUN_DIRECTORY_PREFIX
from pi_durable_tui.env._running_job import RunningJob
from pi_durable_tui.env._secrets import (
    SECRET_NAME_PATTERNS,
    SECRET_NAMES,
    is_secret_name,
    scrub_environment,
)
from pi_durable_tui.env._spill import SPILL_PREFIX
from pi_durable_tui.env._strays import (
    ProcessInfo,
    call_mark,
    end_processes,
    processes_of_run,
    run_token,
    started_by_a_command,
)
from pi_durable_tui.env._types import (
    DirEntry,
    ExecResult,
    FileInfo,
    FileKind,
    LineScan,
    OutputCallback,
    OutputStream,
    OutputWindow,
    SkippedOutput,
    SpillPolicy,
)

__all__ = [
    "FILE_ERROR_CODES",
    "KEPT_LOG_PREFIX",
    "MARK_NAME",
    "MAX_TIMEOUT_SECONDS",
    "REDACTED",
    "RUN_DIRECTORY_PREFIX",
    "SECRET_NAMES",
    "SECRET_NAME_PATTERNS",
    "SPILL_PREFIX",
    "BinaryReader",
    "DirEntry",
    "DirReader",
    "ExecResult",
    "ExecutionEnv",
    "FileError",
    "FileErrorCode",
    "FileInfo",
    "FileKind",
    "FileMutationQueue",
    "JobProcess",
    "KeptJob",
    "LineScan",
    "LocalEnv",
    "OutputCallback",
    "OutputStream",
    "OutputWindow",
    "ProcessInfo",
    "RunningJob",
    "SecretRedactor",
    "SkippedOutput",
    "SpillPolicy",
    "TextErrors",
    "call_mark",
    "end_processes",
    "is_secret_name",
    "processes_of_run",
    "run_token",
    "scan_bytes",
    "scrub_environment",
    "started_by_a_command",
]
