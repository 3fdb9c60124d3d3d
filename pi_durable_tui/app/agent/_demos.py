"""Offline demos: ``pidurable --demo`` (a coding session) and ``--demo planner``.

Each demo is a real session on the faux provider: a scripted model (a faux
script chosen by position, so a killed and continued demo gets the same next
answer), real tools in a real temporary workspace, a real SQLite store. The
session directory holds ``demo.json`` naming the demo, its workspace and its
pace, so ``pidurable --continue`` in the same directory reopens it with the same
script and tools, wherever the process was killed. The pace scales every wait
(streaming, the slow command, the slow sources): 1 for people, small for tests.

- ``coding``: the agent reads a small project, runs its tests (a slow ``bash``
  command printing progress), fixes the bug with ``edit``, runs them again and
  starts a background subagent that reviews the README; the review arrives later
  as a message. A test run a crash cut comes back ``interrupted`` after
  ``--continue``; the model then says it did not see the run finish, never that
  the tests failed or passed (``_cut_test_runs``).
- ``planner``: after Pi Durable's vacation planner: the agent hands the research
  for a weekend in Vienna to a background subagent that searches weather,
  museums and trains in parallel (a replay-safe ``search`` tool with slow, canned
  sources), keeps chatting meanwhile, and turns the report into a plan. Esc in
  the main conversation leaves the research running; a restart reruns only the
  searches that had not finished.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from pi_durable_tui.harness import (
    Extension,
    ToolApi,
    ToolResult,
    define_extension,
    define_tool,
)

MARKER = "demo.json"


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "tool_call", "name": name, "arguments": arguments}


def _slow_tests(pace: float) -> str:
    return (
        f'for i in 1 2 3 4 5 6; do echo "collecting tests... $i/6"; sleep {0.7 * pace:g}; done; '
        "python3 test_calc.py"
    )


def _script(description: str, pace: float, responses: list[dict[str, Any]]) -> dict[str, Any]:
    """A demo's faux script: 45 tokens a second at ``pace`` 1 (``0`` streams at once)."""
    return {
        "description": description,
        "tokens_per_second": 45 / pace if pace > 0 else 0,
        "when_exhausted": "repeat_last",
        "models": [{"id": "faux-1", "name": "Faux demo model", "context_window": 128000}],
        "responses": responses,
    }


CUT_RUN = "Tool bash was interrupted"
"""What the tool result of a test run a crash cut says (the harness's words, R95)."""


def _cut_test_runs() -> list[dict[str, Any]]:
    """The answers to a test run a crash cut: honest about the result they never saw.

    A ``tool_result`` rule fits at whatever position the cut run's result arrives,
    and among the fitting steps the request's position picks one (the last when
    fewer fit): a run cut at position 2 or below was the first (the bug is still
    there, so the fix goes ahead without claiming what the run showed), one at 3
    or later the second (after the fix: nothing is said to pass).
    """
    first = {
        "match": {"tool_result": CUT_RUN},
        "content": [
            _text(
                "The test run was cut off before it finished (pidurable stopped while it "
                "ran), so I have not seen its result. The code is clear enough, though: "
                "`add` subtracts. Fixing the operator:"
            ),
            _call(
                "edit",
                path="calc.py",
                edits=[{"oldText": "return a - b", "newText": "return a + b"}],
            ),
        ],
    }
    second = {
        "match": {"tool_result": CUT_RUN},
        "content": [
            _text(
                "The test run was cut off before it finished (pidurable stopped while it "
                "ran), so I cannot tell you the tests pass: I fixed `add` to return "
                "`a + b`, but no complete run has checked it yet. Run `python3 "
                "test_calc.py` in the workspace to see.\n\nThe reviewer keeps working in "
                "the background (see the task tree, Ctrl+T): it survives Esc and a "
                "restart, and its report will arrive here as a message."
            )
        ],
    }
    return [first, first, first, second]


CODING_FILES = {
    "calc.py": 'def add(a, b):\n    """Return the sum of a and b."""\n    return a - b\n',
    "test_calc.py": (
        "from calc import add\n\n"
        "cases = [((2, 3), 5), ((0, 0), 0), ((-1, 1), 0)]\n"
        "failed = [(args, want, add(*args)) for args, want in cases if add(*args) != want]\n"
        "for args, want, got in failed:\n"
        "    print(f'FAIL add{args}: expected {want}, got {got}')\n"
        "print(f'{len(cases) - len(failed)} passed, {len(failed)} failed')\n"
        "raise SystemExit(1 if failed else 0)\n"
    ),
    "README.md": "# calc\n\nA tiny calculator library. Run `python3 test_calc.py` to test it.\n",
}


def coding_script(pace: float = 1.0) -> dict[str, Any]:
    """The coding demo's faux script; ``pace`` scales its waits (1 is the pace people see)."""
    return _script(
        "pidurable --demo: a scripted coding session",
        pace,
        [
            {
                "content": [
                    {"type": "thinking", "text": "I should look at the code and its tests first."},
                    _text("Let me look at the code first."),
                    _call("read", path="calc.py"),
                ]
            },
            {
                "content": [
                    _text(
                        "`add` subtracts. Let me run the tests to confirm (this takes a few "
                        "seconds; try killing the process now and running `pidurable --continue`)."
                    ),
                    _call("bash", command=_slow_tests(pace)),
                ]
            },
            {
                "content": [
                    _text("Two cases fail as expected. Fixing the operator:"),
                    _call(
                        "edit",
                        path="calc.py",
                        edits=[{"oldText": "return a - b", "newText": "return a + b"}],
                    ),
                ]
            },
            {
                "content": [
                    _text(
                        "Running the tests again, and asking a reviewer subagent to look at the "
                        "README in the background."
                    ),
                    _call("bash", command=_slow_tests(pace)),
                    _call(
                        "subagent",
                        background=True,
                        task="[reviewer] Read README.md of this project and suggest two concrete "
                        "improvements, in two short bullet points.",
                    ),
                ]
            },
            {
                "content": [
                    _text(
                        "All tests pass: `add` now returns `a + b`.\n\nThe reviewer keeps working "
                        "in the background (see the task tree, Ctrl+T): it survives Esc and a "
                        "restart, and its report will arrive here as a message."
                    )
                ]
            },
            {
                "content": [
                    _text(
                        "The reviewer's report is in. Both suggestions are small; say the word "
                        "and I will apply them."
                    )
                ]
            },
            *_cut_test_runs(),
            {
                "match": {"user": "[reviewer]"},
                "content": [_text("Reading the README."), _call("read", path="README.md")],
            },
            {
                "match": {"user": "[reviewer]"},
                "content": [
                    _text(
                        "- Add a usage example: `from calc import add; add(2, 3)`.\n"
                        "- Say which Python versions are supported."
                    )
                ],
            },
        ],
    )


class SearchArgs(BaseModel):
    """Arguments of the planner demo's ``search`` tool."""

    topic: str = Field(description="weather, museums or trains")
    city: str = Field(description="The city")


_RESULTS = {
    "weather": (3, ["Saturday: sunny, 24°C", "Sunday: light clouds, 21°C"]),
    "museums": (5, ["Kunsthistorisches Museum, 10:00-18:00", "Belvedere (Klimt), 9:00-18:00"]),
    "trains": (10, ["Railjet from Munich 07:25 -> 11:25, 49 EUR", "Return Sunday 18:30"]),
}


def search_extension(pace: float = 1.0) -> Extension:
    """The planner's ``search`` tool: slow canned sources, 2 s each at ``pace`` 1."""

    async def search(args: SearchArgs, api: ToolApi) -> ToolResult:
        sources, results = _RESULTS.get(args.topic, (2, [f"nothing found about {args.topic}"]))
        for index in range(1, sources + 1):
            api.output(f"searching {args.topic} in {args.city}: source {index}/{sources}\n")
            await asyncio.sleep(2.0 * pace)
        for line in results:
            api.output(f"- {line}\n")
        return ToolResult()

    return define_extension(
        "planner-search",
        tools=[
            define_tool(
                "search",
                description="Search travel sources about one topic in one city (slow).",
                parameters=SearchArgs,
                execute=search,
                replay="safe",
            )
        ],
    )


def planner_script(pace: float = 1.0) -> dict[str, Any]:
    """The planner demo's faux script; ``pace`` scales its waits."""
    return _script(
        "pidurable --demo planner: research in background subagents",
        pace,
        [
            {
                "content": [
                    _text(
                        "Happy to plan it. I'm handing the research to a subagent that works in "
                        "the background."
                    ),
                    _call(
                        "subagent",
                        background=True,
                        task="[research] Find the weather, museums and trains for a weekend in "
                        "Vienna for two. Search the three topics in parallel in one step, "
                        "then report a few bullet points.",
                    ),
                ]
            },
            {
                "content": [
                    _text(
                        "The research is running in the background (the task tree: Ctrl+T). Press "
                        "Esc, or even kill this process and run `pidurable --continue`: it "
                        "carries on. Meanwhile, any preferences: museums, food, budget?"
                    )
                ]
            },
            {"content": [_text("Noted. I'll fold that into the plan when the research is in.")]},
            {
                "match": {"user": "report]"},
                "content": [
                    _text(
                        "Here is your weekend:\n\n**Saturday**: Railjet from Munich at 07:25, "
                        "hotel check-in, Kunsthistorisches Museum in the afternoon (sunny, "
                        "24°C).\n\n**Sunday**: Belvedere for the Klimts in the morning, a long "
                        "lunch, train back at 18:30."
                    )
                ],
            },
            {
                "match": {"user": "[research]"},
                "content": [
                    _text("Searching the three topics at once."),
                    _call("search", topic="weather", city="Vienna"),
                    _call("search", topic="museums", city="Vienna"),
                    _call("search", topic="trains", city="Vienna"),
                ],
            },
            {
                "match": {"user": "[research]"},
                "content": [
                    _text(
                        "- Weather: sunny Saturday (24°C), light clouds Sunday (21°C).\n"
                        "- Museums: Kunsthistorisches Museum and the Belvedere, 9/10-18.\n"
                        "- Trains: Railjet from Munich 07:25 -> 11:25 (49 EUR), back 18:30."
                    )
                ],
            },
        ],
    )


def _no_extensions(pace: float) -> tuple[Extension, ...]:
    return ()


@dataclass(frozen=True, slots=True)
class Demo:
    """One offline demo.

    Attributes:
        name: ``coding`` or ``planner``.
        prompt: The first message, sent when the demo session is created.
        build_script: The faux script at a pace.
        files: The workspace's files.
        build_extensions: The demo's own extensions at a pace.
        pace: Scales every wait (streaming, slow commands, slow sources): 1 is the
            pace a person watches, a small value runs the demo in tests quickly,
            ``0`` does not wait at all.
    """

    name: str
    prompt: str
    build_script: Callable[[float], dict[str, Any]]
    files: dict[str, str] = field(default_factory=dict)
    build_extensions: Callable[[float], tuple[Extension, ...]] = _no_extensions
    pace: float = 1.0

    @property
    def script(self) -> dict[str, Any]:
        """The faux script at this demo's pace."""
        return self.build_script(self.pace)

    @property
    def extensions(self) -> tuple[Extension, ...]:
        """The demo's extensions at its pace."""
        return self.build_extensions(self.pace)

    def paced(self, pace: float) -> Demo:
        """This demo at another pace.

        Raises:
            ValueError: A negative pace.
        """
        if pace < 0:
            raise ValueError(f"A demo pace must be 0 or more, got {pace}")
        return replace(self, pace=pace)


DEMOS = {
    "coding": Demo(
        "coding",
        "Have a look at this project and fix the failing test.",
        coding_script,
        CODING_FILES,
    ),
    "planner": Demo(
        "planner",
        "Plan a weekend in Vienna for two. Hand the research to a subagent.",
        planner_script,
        {},
        lambda pace: (search_extension(pace),),
    ),
}
"""The demos by name."""


@dataclass(frozen=True, slots=True)
class DemoMarker:
    """What ``demo.json`` in a session directory says."""

    name: str
    workspace: str
    pace: float = 1.0

    @property
    def demo(self) -> Demo:
        """The demo, at the pace it was started with."""
        return DEMOS[self.name].paced(self.pace)


def create_workspace(demo: Demo, home: Path) -> Path:
    """Create a fresh workspace for a demo under ``home/demos`` and fill it."""
    workspace = home / "demos" / f"{demo.name}-{int(time.time() * 1000)}"
    workspace.mkdir(parents=True)
    for name, text in demo.files.items():
        (workspace / name).write_text(text, "utf-8")
    return workspace


def write_marker(store: Path, demo: Demo, workspace: Path) -> None:
    """Record in the session directory that it runs a demo (and at which pace)."""
    data = {"name": demo.name, "workspace": str(workspace), "pace": demo.pace}
    (store.parent / MARKER).write_text(json.dumps(data) + "\n", "utf-8")


def read_marker(store: Path) -> DemoMarker | None:
    """The demo a session runs, if any."""
    try:
        data = json.loads((store.parent / MARKER).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("name") not in DEMOS:
        return None
    pace = data.get("pace", 1.0)
    if not isinstance(pace, (int, float)) or pace < 0:
        pace = 1.0
    return DemoMarker(str(data["name"]), str(data.get("workspace", "")), float(pace))


def script_text(demo: Demo) -> str:
    """The demo's faux script as JSON text."""
    return json.dumps(demo.script)
