"""The built-in list of read-only commands, checked over a parsed line (issue 13).

A line is read-only when the reader followed all of it (no substitution, no
subshell, no background job, no expansion that could turn into a flag, no
output redirection except to ``/dev/null``) and every simple command is one of
the commands below with arguments that keep it read-only: ``find`` without
``-exec``/``-delete``/``-fprint``..., ``sort`` without ``-o``, ``rg`` without
``--pre``, ``git`` with a reading subcommand (``status``, ``diff``, ``log``,
``show``, ``branch`` listing...) and no ``-c`` or ``--output``. Leading variable
assignments (``GIT_EXTERNAL_DIFF=x git diff``) make a command not read-only.
"""

from __future__ import annotations

from pi_durable_tui.harness.permissions._shell import ShellLine, parse_shell

_PLAIN = frozenset(
    {
        "ls",
        "cat",
        "head",
        "tail",
        "wc",
        "grep",
        "egrep",
        "fgrep",
        "pwd",
        "echo",
        "which",
        "file",
        "stat",
        "du",
        "df",
        "basename",
        "dirname",
        "realpath",
        "readlink",
        "diff",
        "cmp",
        "true",
        "false",
        "whoami",
        "uname",
        "cut",
        "tr",
        "nl",
        "tac",
        "cd",
        "test",
        "[",
        "id",
        "hostname",
    }
)
"""Commands that only read, whatever their arguments."""
_GLOB_SAFE = frozenset(
    {"ls", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "file", "stat", "du"}
)
"""Commands for which a file name turned flag by a glob still only reads."""
_FIND_WRITES = (
    "-exec",
    "-execdir",
    "-ok",
    "-okdir",
    "-delete",
    "-fprint",
    "-fprint0",
    "-fprintf",
    "-fls",
)
_GIT_READS = frozenset(
    {
        "status",
        "diff",
        "log",
        "show",
        "blame",
        "ls-files",
        "rev-parse",
        "describe",
        "shortlog",
        "grep",
        "ls-tree",
        "cat-file",
    }
)
_GIT_LISTS = {
    "branch": (
        "-a",
        "-r",
        "-v",
        "-vv",
        "--all",
        "--remotes",
        "--list",
        "--show-current",
        "--no-color",
        "--color",
        "--merged",
        "--no-merged",
        "--contains",
    ),
    "tag": ("-l", "--list", "-n"),
    "remote": ("-v", "--verbose"),
    "stash": ("list",),
}
"""Subcommands that read only when every argument is one of these flags."""


def _is_assignment(word: str) -> bool:
    name, sep, _value = word.partition("=")
    return bool(sep) and name.isidentifier()


def _git_reads(args: list[str]) -> bool:
    index = 0
    while index < len(args) and args[index].startswith("-"):
        flag = args[index]
        if flag == "-C" and index + 1 < len(args):
            index += 2
        elif flag in ("--no-pager", "--no-optional-locks"):
            index += 1
        else:
            return False  # -c, --exec-path, --git-dir ...: could run or redirect anything
    if index >= len(args):
        return False
    sub, rest = args[index], args[index + 1 :]
    if any(a.startswith(("--output", "--ext-diff", "--textconv", "--exec")) for a in rest):
        return False
    if sub in _GIT_READS:
        return True
    allowed = _GIT_LISTS.get(sub)
    if allowed is None:
        return False
    return all(a in allowed for a in rest) or (sub == "stash" and rest == ["list"])


def command_reads(words: list[str]) -> bool:
    if not words or _is_assignment(words[0]):
        return False
    name, args = words[0], words[1:]
    if name in _PLAIN:
        return True
    if name == "find":
        return not any(a in _FIND_WRITES for a in args)
    if name == "sort":
        return not any(a.startswith(("-o", "--output", "--compress")) for a in args)
    if name == "rg":
        return not any(a.startswith("--pre") for a in args)
    if name == "tree":
        return "-o" not in args
    if name == "date":
        return not any(a.startswith(("-s", "--set")) for a in args)
    if name == "git":
        return _git_reads(args)
    return False


def line_reads_only(line: ShellLine) -> bool:
    """Whether a parsed line only reads (see the module docstring)."""
    if not line.transparent or line.writes or line.variables or not line.commands:
        return False
    if line.globs and not all(words[0] in _GLOB_SAFE for words in line.commands):
        return False
    return all(command_reads(words) for words in line.commands)


def is_read_only_command(command: str) -> bool:
    """Whether a bash command line only reads (``ls; rm -rf x`` does not).

    Args:
        command: The command as the model sent it.
    """
    return line_reads_only(parse_shell(command))
