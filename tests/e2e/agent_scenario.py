"""The scripted coding session the agent crash tests run (reliability.md 15: K1, K3, K4, S1, X1).

``build_scenario`` returns a session of 50 model turns as a faux script (the
``--faux-script`` format) together with what the verifier needs to know about
it: every tool call, which conversation makes it, whether it is replay-safe,
where its effect shows, and the final answer. ``Scenario.install`` lays out a
trial directory for it.

The session, about 50 steps (a model turn and its tool calls):

- 44 turns of the root conversation (``ROOT_TURNS``; the verifier's own tests
  use a shorter session) plus 3 turns in each of two foreground
  ``subagent`` children (their responses carry a ``match`` rule on the child's
  task text, so a child walks through its own turns by position);
- rounds of one to three calls mixing ``read`` (replay-safe) with ``write``,
  ``edit`` and ``bash`` (not replay-safe), parallel by default; a ``bash`` call
  writes ``.pidurable/settings.json`` with ``tool_execution: sequential`` at
  turn ``SEQUENTIAL_FROM`` and another puts ``parallel`` back at turn
  ``SEQUENTIAL_UNTIL``, so the rounds between run one call at a time (the
  settings are re-read at every decision, R33, R34);
- streamed text on every turn, four long texts, and thinking on every third
  turn, paced at ``TOKENS_PER_SECOND`` so kills land mid-stream;
- secrets (X1): a ``bash`` call echoes ``$OPENAI_API_KEY`` (the environment must
  have scrubbed it) and cats ``secret.txt``, which holds the canary key value;
  another cats it before 100 KB of ``seq`` output, so the canary is only in the
  full-output spill file.

Effects are counted exactly, outside the product (``agent_effects``):

- ``bash``: every command is ``sh ../effect.sh <call id> [effect]`` (the helper
  lives beside the workspace, so the script's commands stay short and cheap to
  stream). It prints ``start <call id>``, does its effect, appends ``<call id>
  <pid>`` to ``../ledger.txt``, syncs it and prints ``done <call id>``. With a
  marker file ``../slow/<call id>`` present it waits, after ``start``, until the
  runner saw that line acknowledged (``<call id>.acked``: the output is committed),
  and after its ledger line until the runner killed the agent
  (``<call id>.released``): the kill lands inside that window however slow the
  machine is (issue 12);
- ``write`` / ``edit``: each call owns one file, ``w/<id>.txt`` or ``e/<id>.txt``,
  replaced atomically (temp file and rename), so one rename onto it is one
  execution;
- ``read``: each call reads its own ``r/<id>.txt``; a process that opened it
  executed the call once.

Tool call IDs are explicit and unique in the session (``read-07``), so a call,
its files and its ledger line share one name.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

ToolName = Literal["read", "write", "edit", "bash", "subagent"]
SAFE_TOOLS: frozenset[str] = frozenset({"read", "subagent"})
"""Replay-safe tools: after a crash they run again (R95)."""

ROOT = "root"
"""The label of the root conversation."""
PROMPT = "Tidy the workspace: read every note, update the files and run the checks."
REQUEST_ID = "crash-session-prompt"
FINAL_TEXT = "All steps are done: the notes are read, the files updated and the checks run."
TOKENS_PER_SECOND = 600
ROOT_TURNS = 44
SEQUENTIAL_FROM = 16
SEQUENTIAL_UNTIL = 28
LONG_TEXT_TURNS = frozenset({3, 14, 25, 36})
SUBAGENT_TURNS = (5, 21)
SECRET_TURN = 9
SPILL_TURN = 33
SLOW_DIR = "slow"
ACKED = "acked"
"""Suffix of the file the runner creates once a slowed call's ``start`` line was acknowledged."""
RELEASED = "released"
"""Suffix of the file the runner creates once the agent of a slowed call was killed."""
LEDGER = "ledger.txt"
SECRET_FILE = "secret.txt"
CANARY_ENV = "OPENAI_API_KEY"
CANARY = "sk-canary-" + hashlib.sha256(b"pidurable crash canary").hexdigest()[:40]
"""The canary key value: in the agent's environment and in ``secret.txt``."""
SECRET_LINE = "the key is "
"""``secret.txt`` holds this and the canary; a ``bash`` call cats it."""
ENV_ECHO = "env:["
"""The ``bash`` call of the secrets step prints ``env:[$OPENAI_API_KEY]``."""
SHAPES: tuple[tuple[ToolName, ...], ...] = (
    ("read", "read"),
    ("bash",),
    ("write", "read"),
    ("edit", "bash", "read"),
    ("bash", "write"),
    ("read",),
    ("edit",),
    ("write", "edit", "bash"),
)
"""Round shapes, cycled through by the plain root turns."""


@dataclass(frozen=True, slots=True)
class Call:
    """One scripted tool call.

    Attributes:
        call_id: Unique in the session; also names the call's files and ledger line.
        tool: The tool's name.
        arguments: The arguments the model sends.
        conversation: ``ROOT`` or the task marker of the subagent child making it.
        turn: The index of the model turn (in its conversation) that makes it.
        root_turn: The root turn during which it runs (a child's: its subagent call's).
    """

    call_id: str
    tool: ToolName
    arguments: dict[str, Any]
    conversation: str
    turn: int
    root_turn: int

    @property
    def safe(self) -> bool:
        return self.tool in SAFE_TOOLS


@dataclass(frozen=True, slots=True)
class Turn:
    """One scripted model turn."""

    conversation: str
    thinking: str | None
    text: str
    calls: tuple[Call, ...]


@dataclass(frozen=True, slots=True)
class Scenario:
    """The scripted session and what the verifier needs to know about it."""

    turns: tuple[Turn, ...]

    @property
    def calls(self) -> tuple[Call, ...]:
        return tuple(call for turn in self.turns for call in turn.calls)

    def call(self, call_id: str) -> Call:
        return next(call for call in self.calls if call.call_id == call_id)

    def root_call_ids(self) -> list[str]:
        """The call IDs of the root conversation, in the order its answers make them."""
        return [call.call_id for call in self.calls if call.conversation == ROOT]

    @property
    def steps(self) -> int:
        """Model turns (each with its tool calls): the scenario's step count."""
        return len(self.turns)

    def faux_script(self) -> dict[str, Any]:
        """The ``--faux-script`` JSON of the session."""
        responses = []
        for turn in self.turns:
            content: list[dict[str, Any]] = []
            if turn.thinking:
                content.append({"type": "thinking", "text": turn.thinking})
            content.append({"type": "text", "text": turn.text})
            for call in turn.calls:
                content.append(
                    {
                        "type": "tool_call",
                        "name": call.tool,
                        "arguments": call.arguments,
                        "id": call.call_id,
                    }
                )
            response: dict[str, Any] = {"content": content}
            if turn.conversation != ROOT:
                response["match"] = {"user": turn.conversation}
            responses.append(response)
        return {
            "description": "The agent crash tests' scripted session (tests/e2e/agent_scenario.py).",
            "tokens_per_second": TOKENS_PER_SECOND,
            "when_exhausted": "error",
            "models": [{"id": "faux-1", "reasoning": True, "context_window": 1_000_000}],
            "responses": responses,
        }

    def install(self, workspace: Path, script: Path) -> None:
        """Write the workspace files the calls need and the faux script.

        The workspace holds ``r/<id>.txt`` for every read, ``e/<id>.txt`` for
        every edit, an empty ``w/`` and ``secret.txt``; its parent holds
        ``effect.sh`` and ``slow/`` (the markers that slow a ``bash`` call down).
        """
        for name in ("r", "w", "e"):
            (workspace / name).mkdir(parents=True, exist_ok=True)
        (workspace.parent / SLOW_DIR).mkdir(exist_ok=True)
        for call in self.calls:
            if call.tool == "read":
                lines = [f"note {n} of {call.call_id}" for n in range(1, 6)]
                (workspace / "r" / f"{call.call_id}.txt").write_text("\n".join(lines) + "\n")
            elif call.tool == "edit":
                text = f"name = {call.call_id}\nvalue = 0\n"
                (workspace / "e" / f"{call.call_id}.txt").write_text(text)
        (workspace / SECRET_FILE).write_text(f"{SECRET_LINE}{CANARY}\n")
        (workspace.parent / EFFECT_SCRIPT).write_text(_EFFECT_SH)
        script.write_text(json.dumps(self.faux_script(), indent=1))


EFFECT_SCRIPT = "effect.sh"
"""The helper every ``bash`` call runs, in the trial directory (the workspace's parent)."""
_EFFECT_SH = f"""#!/bin/sh
# sh ../{EFFECT_SCRIPT} CALL_ID [sequential|parallel|secret|spill]: one counted bash effect.
id=$1
slow=../{SLOW_DIR}/$id
wait_for() {{  # a file the runner creates; at most about 60 s
  n=0
  while [ -e "$slow" ] && [ ! -e "$1" ] && [ $n -lt 1200 ]; do sleep 0.05; n=$((n+1)); done
}}
echo "start $id"
wait_for "$slow.{ACKED}"
case "$2" in
  sequential|parallel)
    mkdir -p .pidurable && printf '{{"tool_execution": "%s"}}\\n' "$2" > .pidurable/settings.json ;;
  secret) echo "{ENV_ECHO}${CANARY_ENV}]"; cat {SECRET_FILE} ;;
  spill) cat {SECRET_FILE}; seq 1 20000 ;;
esac
echo "$id $$" >> ../{LEDGER}
sync ../{LEDGER}
wait_for "$slow.{RELEASED}"
echo "done $id"
"""


def bash_command(call_id: str, effect: str = "") -> str:
    """The command of a ``bash`` call (see ``_EFFECT_SH`` and the module docstring)."""
    return f"sh ../{EFFECT_SCRIPT} {call_id} {effect}".rstrip()


class _Builder:
    def __init__(self) -> None:
        self.turns: list[Turn] = []
        self.number = 0
        self.shape = 0

    def call(
        self,
        tool: ToolName,
        conversation: str,
        turn: int,
        effect: str = "",
        task: str = "",
        root_turn: int | None = None,
    ) -> Call:
        self.number += 1
        call_id = f"{tool}-{self.number:02d}"
        arguments: dict[str, Any]
        if tool == "read":
            arguments = {"path": f"r/{call_id}.txt"}
        elif tool == "write":
            arguments = {"path": f"w/{call_id}.txt", "content": f"written by {call_id}\n"}
        elif tool == "edit":
            edit = {"oldText": "value = 0", "newText": f"value = {self.number}"}
            arguments = {"path": f"e/{call_id}.txt", "edits": [edit]}
        elif tool == "bash":
            arguments = {"command": bash_command(call_id, effect)}
        else:
            arguments = {"task": task}
        root = turn if root_turn is None else root_turn
        return Call(call_id, tool, arguments, conversation, turn, root)

    def text(self, conversation: str, turn: int) -> str:
        where = "the main task" if conversation == ROOT else conversation
        text = f"Step {turn + 1} of {where}: on it."
        if conversation == ROOT and turn in LONG_TEXT_TURNS:
            words = " ".join(f"word{n}" for n in range(60))
            text += f" Here is a longer explanation, streamed slowly: {words}."
        return text

    def turn(self, conversation: str, index: int, calls: list[Call]) -> None:
        thinking = None
        if index % 3 == 0:
            thinking = f"Turn {index} of {conversation}: decide what to do next, then do it."
        self.turns.append(
            Turn(conversation, thinking, self.text(conversation, index), tuple(calls))
        )

    def child(self, marker: str, index: int) -> Call:
        """A foreground subagent call at root turn ``index`` and the three turns of its child."""
        call = self.call("subagent", ROOT, index, task=f"{marker}: check two files.")
        child_turns = [
            [
                self.call("read", marker, 0, root_turn=index),
                self.call("bash", marker, 0, root_turn=index),
            ],
            [self.call("write", marker, 1, root_turn=index)],
            [],
        ]
        for turn, calls in enumerate(child_turns):
            self.turn(marker, turn, calls)
        return call

    def root_calls(self, index: int) -> list[Call]:
        if index == SUBAGENT_TURNS[0]:  # in a parallel round, beside a read
            return [self.child("SUBTASK-A", index), self.call("read", ROOT, index)]
        if index == SUBAGENT_TURNS[1]:  # in a sequential round
            return [self.child("SUBTASK-B", index)]
        if index == SEQUENTIAL_FROM:
            return [self.call("bash", ROOT, index, "sequential")]
        if index == SEQUENTIAL_UNTIL:
            return [self.call("bash", ROOT, index, "parallel")]
        if index == SECRET_TURN:
            return [self.call("bash", ROOT, index, "secret"), self.call("read", ROOT, index)]
        if index == SPILL_TURN:
            return [self.call("bash", ROOT, index, "spill")]
        shape = SHAPES[self.shape % len(SHAPES)]
        self.shape += 1
        return [self.call(tool, ROOT, index) for tool in shape]


def build_scenario(root_turns: int = ROOT_TURNS) -> Scenario:
    """Return the scripted session (deterministic; see the module docstring).

    Args:
        root_turns: Turns of the root conversation; a shorter session (the
            verifier's own tests use one) keeps the first turns and ends with
            the final answer.
    """
    builder = _Builder()
    for index in range(root_turns - 1):
        builder.turn(ROOT, index, builder.root_calls(index))
    builder.turn(ROOT, root_turns - 1, [])
    last = builder.turns[-1]
    builder.turns[-1] = Turn(ROOT, last.thinking, FINAL_TEXT, ())
    return Scenario(tuple(builder.turns))
