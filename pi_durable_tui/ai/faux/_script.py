"""Faux script files: JSON files of scripted responses for the faux provider.

Owns the file format behind ``--faux-script FILE``, its strict validation
(``FauxScriptError`` names the file, the JSON path and what was expected), the
loaded form ``FauxScript`` and the packaged demo script
(``ai/data/demo-script.json``). Implements the scripting of model-layer.md 1.6
as a file, for DESIGN.md section 5 ("the faux provider is a first-class
provider").

Format (every key not listed is rejected, naming it)::

    {
      "description": "optional free text",
      "tokens_per_second": 0,            # pacing, >= 0; 0 streams at once
      "when_exhausted": "error",         # "error" | "repeat_last" | "echo"
      "models": ["faux-1", {"id": "big", "context_window": 200000,
                            "max_tokens": 8192, "reasoning": true,
                            "thinking_levels": ["off", "high"],
                            "input": ["text"], "name": "Big",
                            "cost": {"input": 3, "output": 15,
                                     "cache_read": 0.3, "cache_write": 3.75}}],
      "responses": [
        {"content": [{"type": "thinking", "text": "..."},
                     {"type": "text", "text": "..."},
                     {"type": "tool_call", "name": "read",
                      "arguments": {"path": "README.md"}, "id": "optional"}],
         "stop_reason": "stop" | "length" | "toolUse" | "error" | "aborted",
         "usage": {"input": 10, "output": 5, "cache_read": 0, "cache_write": 0},
         "match": "text" | {"user": "...", "system": "...", "tool_result": "...",
                            "history": "..."},
         "error": {"message": "...", "status": 529, "retryable": true,
                   "retry_after_ms": 1000}}
      ]
    }

``responses`` is required (it may be empty with ``when_exhausted: "echo"``);
everything else is optional. A response needs content unless it has an
``error``. ``models`` lists the faux models served (``faux-1`` when absent);
each is an id or an object.

Which response answers a request (its *position* decides, so a process killed
and restarted gives the same next response for the same context):

- A request whose context holds ``k`` assistant messages gets response ``k+1``
  of those without a ``match`` rule (index ``k``, counting from 0). In a script
  without ``match`` rules that is simply the ``k``-th response of the file: the
  first request of a conversation gets the first response, the request after
  one answer (and its tool results) the second, and so on.
- Unless ``match`` rules fit the request: then the ``k``-th response among the
  responses whose rule fits answers, or the last of them when fewer fit. A
  subagent's conversation (its own context, its own ``k``) walks through the
  responses matching its task or system prompt; a ``tool_result`` rule reacts
  at whatever position the tool result arrives; a ``history`` rule to what any
  user message or tool result of the context holds (an earlier turn's, a shell
  command the user ran).
- Nothing is used up: a retry of the same context (failed responses never enter
  a context) gets the same response, so a scripted error repeats on every retry.
- Tool calls without an ``id`` get ``call_<k>_<i>`` (``i`` is the block's index
  in the response), and the response id is ``faux-<k>``.
- ``when_exhausted`` decides what a request past the last position gets:
  ``error`` ends it with an error event, ``repeat_last`` replays the last
  response without a ``match`` rule, ``echo`` answers with the newest user text.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any, NoReturn, cast

from pi_durable_tui.ai._types import (
    THINKING_LEVELS,
    AssistantContent,
    InputKind,
    Model,
    ModelCost,
    StopReason,
    ThinkingLevel,
    ToolCall,
)
from pi_durable_tui.ai.faux._provider import FauxProvider, Sleep
from pi_durable_tui.ai.faux._selection import WHEN_EXHAUSTED, WhenExhausted
from pi_durable_tui.ai.faux._steps import (
    FauxError,
    FauxMatch,
    FauxResponse,
    FauxUsage,
    faux_model,
    faux_text,
    faux_thinking,
    faux_tool_call,
)

DEMO_SCRIPT = "data/demo-script.json"
"""The packaged demo script, relative to the ``pi_durable_tui.ai`` package."""

_TOP_KEYS = ("description", "tokens_per_second", "when_exhausted", "models", "responses")
_RESPONSE_KEYS = ("content", "stop_reason", "usage", "match", "error")
_BLOCK_KEYS = {
    "text": ("type", "text"),
    "thinking": ("type", "text"),
    "tool_call": ("type", "name", "arguments", "id"),
}
_STOP_REASONS: tuple[StopReason, ...] = ("stop", "length", "toolUse", "error", "aborted")
_USAGE_KEYS = ("input", "output", "cache_read", "cache_write")
_MATCH_KEYS = ("user", "system", "tool_result", "history")
_ERROR_KEYS = ("message", "status", "retryable", "retry_after_ms")
_MODEL_KEYS = (
    "id",
    "name",
    "context_window",
    "max_tokens",
    "reasoning",
    "thinking_levels",
    "input",
    "cost",
)
_INPUT_KINDS: tuple[InputKind, ...] = ("text", "image")
_LEVELS: tuple[str, ...] = THINKING_LEVELS


class FauxScriptError(ValueError):
    """A faux script file that cannot be used.

    The message reads ``<file>: <where>: <problem>``, for example
    ``demo.json: responses[2].content[0].type: expected one of text, thinking,
    tool_call, got string "image"``.

    Attributes:
        source: The file (or the label given for text).
        where: The JSON path (``responses[2].content[0].type``), ``top level``,
            or ``line L, column C`` for invalid JSON.
        problem: What was expected, and what was found.
    """

    def __init__(self, source: str, where: str, problem: str) -> None:
        super().__init__(f"{source}: {where}: {problem}")
        self.source = source
        self.where = where
        self.problem = problem


@dataclass(frozen=True, slots=True)
class FauxScript:
    """A validated faux script.

    Attributes:
        responses: The scripted responses, in order.
        tokens_per_second: Pacing; 0 streams at once.
        when_exhausted: What a request gets when no response fits.
        models: The faux models served; empty means the default ``faux-1``.
        source: Where the script came from, for messages.
    """

    responses: tuple[FauxResponse, ...]
    tokens_per_second: float = 0.0
    when_exhausted: WhenExhausted = "error"
    models: tuple[Model, ...] = ()
    source: str = "<script>"

    def provider(
        self, *, sleep: Sleep = asyncio.sleep, clock: Callable[[], float] | None = None
    ) -> FauxProvider:
        """Build a faux provider serving this script by position (see the module docs).

        Args:
            sleep: The pacing sleep (inject a fake one in tests).
            clock: Seconds since the epoch, for timestamps; real time when omitted.

        Returns:
            A new provider answering each request by its position.
        """
        return FauxProvider(
            self.responses,
            models=self.models or None,
            choose_by="position",
            tokens_per_second=self.tokens_per_second,
            when_exhausted=self.when_exhausted,
            sleep=sleep,
            clock=clock or time.time,
        )


def load_faux_script(path: str | os.PathLike[str]) -> FauxScript:
    """Read and validate a faux script file.

    Args:
        path: The JSON file.

    Returns:
        The script.

    Raises:
        FauxScriptError: When the file cannot be read, is not JSON, or breaks
            the format; the message names the file, the JSON path and the
            expectation.
    """
    source = os.fspath(path)
    try:
        with open(source, encoding="utf-8") as file:
            text = file.read()
    except UnicodeDecodeError:
        raise FauxScriptError(source, "file", "expected UTF-8 text") from None
    except OSError as error:
        raise FauxScriptError(source, "file", f"cannot read it ({error.strerror})") from None
    return parse_faux_script(text, source)


def load_demo_script() -> FauxScript:
    """Load the packaged demo script (``ai/data/demo-script.json``).

    Returns:
        The script.
    """
    resource = resources.files("pi_durable_tui.ai").joinpath(DEMO_SCRIPT)
    return parse_faux_script(resource.read_text("utf-8"), DEMO_SCRIPT)


def parse_faux_script(text: str, source: str = "<script>") -> FauxScript:
    """Validate the JSON text of a faux script.

    Args:
        text: The JSON text.
        source: The name to use in error messages.

    Returns:
        The script.

    Raises:
        FauxScriptError: On invalid JSON (with line and column) or a format error.
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        where = f"line {error.lineno}, column {error.colno}"
        raise FauxScriptError(source, where, f"invalid JSON ({error.msg})") from None
    return faux_script_from_data(data, source)


def faux_script_from_data(data: object, source: str = "<script>") -> FauxScript:
    """Validate an already-parsed faux script.

    Args:
        data: The parsed JSON value.
        source: The name to use in error messages.

    Returns:
        The script.

    Raises:
        FauxScriptError: When the value breaks the format.
    """
    return _ScriptReader(source).script(data)


def _describe(value: object) -> str:
    # REMINDER: ai stands on nothing of the package (storage's describe_json is out of
    # reach); json.dumps with its default ensure_ascii escapes every control
    # character, so a script's value never writes a sequence to the terminal.
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, int | float):
        return f"number {value}"
    if isinstance(value, str):
        return f"string {json.dumps(value if len(value) <= 40 else value[:37] + '...')}"
    return "an array" if isinstance(value, list) else "an object"


class _ScriptReader:
    """Walks a parsed script, failing at the first problem with its JSON path."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, path: str, problem: str) -> NoReturn:
        raise FauxScriptError(self.source, path or "top level", problem)

    def expect(self, path: str, expected: str, value: object) -> NoReturn:
        self.fail(path, f"expected {expected}, got {_describe(value)}")

    def mapping(
        self, value: object, path: str, allowed: Sequence[str], required: Sequence[str] = ()
    ) -> dict[str, Any]:
        if not isinstance(value, dict):
            self.expect(path, "an object", value)
        unknown = [key for key in value if key not in allowed]
        if unknown:
            names = ", ".join(json.dumps(key) for key in unknown)
            self.fail(path, f"unknown key {names} (expected keys: {', '.join(allowed)})")
        for key in required:
            if key not in value:
                self.fail(path, f"missing key {json.dumps(key)} (required)")
        return cast(dict[str, Any], value)

    def string(self, value: object, path: str, *, what: str = "a non-empty string") -> str:
        if not isinstance(value, str) or (not value and "non-empty" in what):
            self.expect(path, what, value)
        return value

    def integer(self, value: object, path: str, *, low: int = 0, high: int | None = None) -> int:
        bounds = f"from {low} to {high}" if high is not None else f">= {low}"
        if not isinstance(value, int) or isinstance(value, bool):
            self.expect(path, f"an integer {bounds}", value)
        if value < low or (high is not None and value > high):
            self.expect(path, f"an integer {bounds}", value)
        return value

    def number(self, value: object, path: str) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.expect(path, "a number >= 0", value)
        if not math.isfinite(value) or value < 0:
            self.expect(path, "a number >= 0", value)
        return float(value)

    def boolean(self, value: object, path: str) -> bool:
        if not isinstance(value, bool):
            self.expect(path, "true or false", value)
        return value

    def choice(self, value: object, path: str, options: Sequence[str]) -> str:
        if not isinstance(value, str) or value not in options:
            self.expect(path, f"one of {', '.join(options)}", value)
        return value

    def array(self, value: object, path: str) -> list[Any]:
        if not isinstance(value, list):
            self.expect(path, "an array", value)
        return value

    def script(self, data: object) -> FauxScript:
        top = self.mapping(data, "", _TOP_KEYS, required=("responses",))
        if "description" in top:
            self.string(top["description"], "description", what="a string")
        pacing = top.get("tokens_per_second", 0)
        pacing = self.number(pacing, "tokens_per_second")
        exhausted = top.get("when_exhausted", "error")
        exhausted = self.choice(exhausted, "when_exhausted", WHEN_EXHAUSTED)
        models = self.models(top.get("models", []))
        items = self.array(top["responses"], "responses")
        responses = tuple(self.response(item, f"responses[{i}]") for i, item in enumerate(items))
        if exhausted == "repeat_last" and all(r.match is not None for r in responses):
            self.fail(
                "when_exhausted",
                "repeat_last needs at least one response without a match rule to repeat",
            )
        return FauxScript(responses, pacing, cast(WhenExhausted, exhausted), models, self.source)

    def models(self, value: object) -> tuple[Model, ...]:
        rows: list[Model] = []
        for index, item in enumerate(self.array(value, "models")):
            path = f"models[{index}]"
            model = self.model(item, path)
            if any(row.id == model.id for row in rows):
                self.fail(path, f"duplicate model id {json.dumps(model.id)}")
            rows.append(model)
        return tuple(rows)

    def model(self, item: object, path: str) -> Model:
        if isinstance(item, str):
            return faux_model(self.string(item, path))
        row = self.mapping(item, path, _MODEL_KEYS, required=("id",))
        fields: dict[str, Any] = {"model_id": self.string(row["id"], f"{path}.id")}
        if "name" in row:
            fields["name"] = self.string(row["name"], f"{path}.name")
        for key in ("context_window", "max_tokens"):
            if key in row:
                fields[key] = self.integer(row[key], f"{path}.{key}", low=1)
        if "reasoning" in row:
            fields["reasoning"] = self.boolean(row["reasoning"], f"{path}.reasoning")
        if "input" in row:
            kinds = self.array(row["input"], f"{path}.input")
            if not kinds:
                self.expect(f"{path}.input", "a non-empty array", kinds)
            fields["input"] = [
                self.choice(kind, f"{path}.input[{i}]", _INPUT_KINDS)
                for i, kind in enumerate(kinds)
            ]
        if "cost" in row:
            prices = self.mapping(row["cost"], f"{path}.cost", _USAGE_KEYS)
            fields["cost"] = ModelCost(
                **{key: self.number(price, f"{path}.cost.{key}") for key, price in prices.items()}
            )
        model = faux_model(**fields)
        if "thinking_levels" in row:
            levels = self.array(row["thinking_levels"], f"{path}.thinking_levels")
            model.thinking_levels = [
                cast(ThinkingLevel, self.choice(level, f"{path}.thinking_levels[{i}]", _LEVELS))
                for i, level in enumerate(levels)
            ]
        return model

    def response(self, item: object, path: str) -> FauxResponse:
        row = self.mapping(item, path, _RESPONSE_KEYS)
        error = self.error(row["error"], f"{path}.error") if "error" in row else None
        blocks = self.array(row.get("content", []), f"{path}.content")
        if not blocks and error is None:
            self.fail(
                f"{path}.content",
                "expected at least one content block (only a response with an error may be empty)",
            )
        content = tuple(self.block(block, f"{path}.content[{i}]") for i, block in enumerate(blocks))
        ids: set[str] = set()
        for index, block in enumerate(content):
            if isinstance(block, ToolCall) and block.id:
                if block.id in ids:
                    where = f"{path}.content[{index}].id"
                    self.fail(where, f"duplicate tool call id {json.dumps(block.id)} in a response")
                ids.add(block.id)
        stop: StopReason | None = None
        if "stop_reason" in row:
            stop = cast(
                StopReason, self.choice(row["stop_reason"], f"{path}.stop_reason", _STOP_REASONS)
            )
        if error is not None and stop not in (None, "error", "aborted"):
            expected = "error or aborted for a response with an error"
            self.expect(f"{path}.stop_reason", expected, stop)
        if error is None and stop == "error":
            self.fail(f"{path}.error", 'missing key "error" (required when stop_reason is error)')
        usage = self.usage(row["usage"], f"{path}.usage") if "usage" in row else None
        match = self.match(row["match"], f"{path}.match") if "match" in row else None
        if error is not None and stop is None:
            stop = "error"
        return FauxResponse(content, stop, usage, error, match)

    def block(self, item: object, path: str) -> AssistantContent:
        if not isinstance(item, dict):
            self.expect(path, "an object", item)
        if "type" not in item:
            self.fail(path, 'missing key "type" (required: one of text, thinking, tool_call)')
        kind = self.choice(item["type"], f"{path}.type", tuple(_BLOCK_KEYS))
        block = self.mapping(item, path, _BLOCK_KEYS[kind], required=_BLOCK_KEYS[kind][:2])
        if kind == "text":
            return faux_text(self.string(block["text"], f"{path}.text", what="a string"))
        if kind == "thinking":
            return faux_thinking(self.string(block["text"], f"{path}.text", what="a string"))
        name = self.string(block["name"], f"{path}.name")
        arguments = block.get("arguments", {})
        if not isinstance(arguments, dict):
            self.expect(f"{path}.arguments", "an object", arguments)
        call_id = self.string(block["id"], f"{path}.id") if "id" in block else None
        return faux_tool_call(name, arguments, id=call_id)

    def usage(self, value: object, path: str) -> FauxUsage:
        row = self.mapping(value, path, _USAGE_KEYS)
        return FauxUsage(**{key: self.integer(n, f"{path}.{key}") for key, n in row.items()})

    def match(self, value: object, path: str) -> FauxMatch:
        if isinstance(value, str):
            return FauxMatch(text=self.string(value, path))
        if not isinstance(value, dict):
            self.expect(path, "a non-empty string or an object", value)
        row = self.mapping(value, path, _MATCH_KEYS)
        if not row:
            self.fail(path, f"expected at least one of {', '.join(_MATCH_KEYS)}")
        return FauxMatch(**{key: self.string(text, f"{path}.{key}") for key, text in row.items()})

    def error(self, value: object, path: str) -> FauxError:
        row = self.mapping(value, path, _ERROR_KEYS, required=("message",))
        message = self.string(row["message"], f"{path}.message")
        status = None
        if "status" in row:
            status = self.integer(row["status"], f"{path}.status", low=100, high=599)
        retryable = None
        if "retryable" in row:
            retryable = self.boolean(row["retryable"], f"{path}.retryable")
        wait = None
        if "retry_after_ms" in row:
            wait = self.integer(row["retry_after_ms"], f"{path}.retry_after_ms")
        return FauxError(message, status, retryable, wait)
