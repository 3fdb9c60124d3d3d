"""The coding agent's system prompt, as harness sections (reference 5.4).

Sections render before every request (R77), and the harness appends a
``pi.system`` entry only when one changed, so stable text keeps the provider's
prompt cache warm. The extension ``coding-prompt`` holds:

- ``role``: who the agent is and how it works (fixed text);
- ``tools``: how to use the coding tools well (fixed text);
- ``skills``: the skills of the project and the user, each with its name,
  description and ``SKILL.md`` path (``files._skills``), on this machine only;
- ``context``: the project's ``AGENTS.md`` / ``CLAUDE.md`` files (``_context_files``);
  on another host (``--env ssh://...``), that host's, read through the environment;
- ``environment``: the working directory, the platform and today's date; on
  another host, ``user@host:/path`` and that host's platform.
"""

from __future__ import annotations

import datetime
import os
import platform
from typing import Any

from pi_durable_tui.app.agent._remote_context import remote_context_files
from pi_durable_tui.app.files import (
    discover_context_files,
    discover_skills,
    global_context_file,
    skills_prompt,
)
from pi_durable_tui.env import LocalEnv
from pi_durable_tui.harness import Extension, SectionInput, define_extension, section

ROLE = """\
You are pidurable, a coding agent that works in the user's terminal on their project.
You read, write and edit files and run shell commands with your tools, and you answer
in concise Markdown. Work step by step: look before you change, keep changes minimal
and focused, run the project's tests or commands to check your work, and say plainly
what you did and what is left. Ask when a request is ambiguous instead of guessing.
Never print secrets. Every step you take is saved: if the session is interrupted, it
resumes where it stopped, and a tool call that was cut short is reported to you as
interrupted so you can check its effect before repeating it."""

TOOLS = """\
- read: read a file (use offset and limit for long files; images come back as images).
- edit: replace exact, unique text in a file; read the file first and copy the old text
  exactly, including whitespace. Several edits to one file go in one call.
- write: create a file or replace a whole file; prefer edit for changes to existing files.
- bash: run a shell command in the working directory; output is cut to its last 2000
  lines or 50 KB, with the full output saved to a file when cut. Avoid interactive
  commands; use a timeout for commands that may hang.
- grep, find, ls: search file contents by regex, find files by glob, list a directory;
  they respect .gitignore. Prefer them to bash for searching.
Paths are relative to the working directory unless absolute."""


def _role(_input: SectionInput) -> str:
    return ROLE


def _tools(_input: SectionInput) -> str:
    return TOOLS


def _skills(input: SectionInput) -> str | None:
    # REMINDER: skills are files on this machine; over SSH the model's read would
    # look for them on the other host, so none are listed there.
    if _remote(input) is not None:
        return None
    cwd = input.agent.cwd or os.getcwd()
    return skills_prompt(discover_skills(cwd).skills, cwd)


def _remote(input: SectionInput) -> Any:
    """The environment when it is not this machine's (it has ``show``), else None."""
    env = input.env
    if env is None or isinstance(env, LocalEnv) or not hasattr(env, "show"):
        return None
    return env


async def _context(input: SectionInput) -> str | None:
    remote = _remote(input)
    if remote is None:
        files = [(str(f.path), f) for f in discover_context_files(input.agent.cwd or os.getcwd())]
    else:
        mine = global_context_file()
        files = [] if mine is None else [(str(mine.path), mine)]
        files += [(remote.show(str(f.path)), f) for f in await remote_context_files(remote)]
    if not files:
        return None
    parts = [f"Instructions from {where}:\n\n{f.text.strip()}" for where, f in files]
    return "\n\n".join(parts)


def _environment(input: SectionInput) -> str:
    today = datetime.date.today().isoformat()
    remote = _remote(input)
    if remote is not None:
        system = f"{remote.platform or 'unknown'} (over SSH)"
        return f"Working directory: {remote.display}\nPlatform: {system}\nToday: {today}"
    cwd = input.agent.cwd or os.getcwd()
    system = f"{platform.system()} {platform.machine()}"
    return f"Working directory: {cwd}\nPlatform: {system}\nToday: {today}"


CODING_PROMPT: Extension = define_extension(
    "coding-prompt",
    sections=[
        section("role", _role),
        section("tools", _tools),
        section("skills", _skills),
        section("context", _context),
        section("environment", _environment),
    ],
)
"""The system prompt of the coding agent, as sections."""
