"""``python -m pi_durable_tui.ai``: stream one answer from a model, as a diagnostic.

Owns the diagnostic command: it resolves ``--model PROVIDER/ID`` through
``Models`` (the packaged catalog, ``--base-url`` for a local OpenAI-compatible
server, ``--faux-script`` for the offline faux provider), streams the answer to
stdout (text as it arrives, thinking dimmed on a terminal or prefixed with
``[thinking]`` otherwise, one line per tool call), then prints a usage and cost
line. Exit status: 0 on success, 1 on a provider error or abort (message on
stderr), 2 on bad arguments. Exercises model-layer.md 1.3 (events), 1.5 (usage
and cost) and 1.6 (faux scripts) end to end.

Keys are never printed: providers keep them out of their messages, and this
command also masks the value of any ``*_API_KEY``, ``*_KEY`` or ``*_TOKEN``
environment variable that would appear in an error.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import Mapping, Sequence
from typing import TextIO

from pi_durable_tui.ai._events import (
    DoneEvent,
    ErrorEvent,
    TextDeltaEvent,
    TextEndEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCallEndEvent,
)
from pi_durable_tui.ai._models import Models, default_models
from pi_durable_tui.ai._thinking import clamp_thinking_level
from pi_durable_tui.ai._types import (
    THINKING_LEVELS,
    AssistantMessage,
    Context,
    Model,
    ModelRef,
    StreamOptions,
    ThinkingLevel,
    UserMessage,
)
from pi_durable_tui.ai.faux import FauxProvider, FauxScriptError, load_faux_script

EXIT_OK = 0
EXIT_PROVIDER_ERROR = 1
EXIT_BAD_ARGUMENTS = 2
_DIM, _RESET = "\x1b[2m", "\x1b[0m"
_THINKING_PREFIX = "[thinking] "
_SECRET_SUFFIXES = ("_API_KEY", "_KEY", "_TOKEN")


class _BadArguments(Exception):
    """An argument that parsed but cannot be used (unknown model, broken script)."""


def build_parser() -> argparse.ArgumentParser:
    """Build the argument parser of the diagnostic command.

    Returns:
        The parser.
    """
    parser = argparse.ArgumentParser(
        prog="python -m pi_durable_tui.ai",
        description="Stream one answer from a model provider, then print usage and cost.",
    )
    parser.add_argument(
        "--model",
        required=True,
        metavar="PROVIDER/ID[:LEVEL]",
        help="the model, e.g. anthropic/claude-sonnet-4-5, openai/gpt-5, faux/faux-1",
    )
    parser.add_argument(
        "--base-url",
        metavar="URL",
        help="a server to send the request to (llama.cpp, Ollama, vLLM, LM Studio...): a "
        "known PROVIDER/ID keeps its api and prices; an unknown ID costs nothing and speaks "
        "its provider's api, or openai-completions for an unknown PROVIDER",
    )
    parser.add_argument(
        "--faux-script", metavar="FILE", help="serve provider 'faux' from this JSON script"
    )
    parser.add_argument("--thinking", choices=THINKING_LEVELS, help="the thinking level")
    parser.add_argument("--system", metavar="TEXT", help="a system prompt")
    parser.add_argument("--max-tokens", type=int, metavar="N", help="the output token limit")
    parser.add_argument("prompt", help="the user message")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the diagnostic command.

    Args:
        argv: Arguments without the program name; ``sys.argv[1:]`` when omitted.

    Returns:
        The exit status.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        ref, suffix_level = _parse_model(args.model)
    except ValueError as error:
        parser.error(str(error))
    if ref.provider == "faux" and not args.faux_script:
        parser.error("faux models need --faux-script FILE (a JSON script of responses)")
    try:
        models, model = _resolve(ref, args.base_url, args.faux_script)
    except _BadArguments as error:
        sys.stderr.write(f"error: {_redact(str(error))}\n")
        return EXIT_BAD_ARGUMENTS
    level = _thinking_level(model, args.thinking or suffix_level)
    context = Context(
        system_prompt=args.system,
        messages=[UserMessage(content=args.prompt)],
    )
    options = StreamOptions(reasoning=level, max_tokens=args.max_tokens)
    return asyncio.run(_stream(models, model, context, options, sys.stdout, sys.stderr))


def _parse_model(text: str) -> tuple[ModelRef, ThinkingLevel | None]:
    base, colon, suffix = text.rpartition(":")
    if colon and suffix in THINKING_LEVELS:
        return ModelRef.parse(base), suffix
    return ModelRef.parse(text), None


def _resolve(ref: ModelRef, base_url: str | None, script_path: str | None) -> tuple[Models, Model]:
    faux: FauxProvider | None = None
    if script_path:
        try:
            script = load_faux_script(script_path)
        except FauxScriptError as error:
            raise _BadArguments(str(error)) from None
        faux = script.provider()
        if ref.provider == faux.provider and not script.models:
            faux.add_model(ref.model_id)  # a script without models serves any id
    try:
        models = default_models(faux=faux)
        if base_url:
            return models, models.use_base_url(ref, base_url)
        return models, models.resolve(ref)
    except (LookupError, ValueError) as error:
        raise _BadArguments(str(error)) from None


def _thinking_level(model: Model, wanted: ThinkingLevel | None) -> ThinkingLevel | None:
    if wanted is None:
        return None
    level = clamp_thinking_level(model, wanted)
    if level != wanted:
        sys.stderr.write(
            f"note: {model.provider}/{model.id} has no thinking level {wanted!r}; using {level!r}\n"
        )
    return level


async def _stream(
    models: Models,
    model: Model,
    context: Context,
    options: StreamOptions,
    out: TextIO,
    err: TextIO,
) -> int:
    abort = asyncio.Event()
    loop = asyncio.get_running_loop()
    with contextlib.suppress(NotImplementedError, RuntimeError):
        loop.add_signal_handler(signal.SIGINT, abort.set)  # Ctrl+C ends the stream cleanly
    printer = _Printer(out, color=out.isatty())
    final: AssistantMessage | None = None
    try:
        async for event in models.stream(model, context, options, abort=abort):
            printer.show(event)
            if isinstance(event, DoneEvent):
                final = event.message
            elif isinstance(event, ErrorEvent):
                printer.finish_line()
                message = event.error
                if event.reason == "aborted":
                    err.write("aborted\n")
                else:
                    status = f" (status {message.error_status})" if message.error_status else ""
                    err.write(f"error: {_redact(message.error_message or 'unknown')}{status}\n")
                return EXIT_PROVIDER_ERROR
    except Exception as error:  # a broken provider; report it rather than a traceback
        printer.finish_line()
        err.write(f"error: {_redact(f'{type(error).__name__}: {error}')}\n")
        return EXIT_PROVIDER_ERROR
    finally:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.remove_signal_handler(signal.SIGINT)
    printer.finish_line()
    if final is None:
        err.write("error: the stream ended without a final message\n")
        return EXIT_PROVIDER_ERROR
    out.write(usage_line(final) + "\n")
    out.flush()
    return EXIT_OK


def usage_line(message: AssistantMessage) -> str:
    """Describe a final message's usage and cost in one line.

    Args:
        message: The final message.

    Returns:
        For example ``usage: 12 input, 30 output, 0 cache read, 0 cache write
        tokens; cost $0.000486; stop``.
    """
    usage = message.usage
    return (
        f"usage: {usage.input} input, {usage.output} output, {usage.cache_read} cache read, "
        f"{usage.cache_write} cache write tokens; cost ${usage.cost.total:.6f}; "
        f"{message.stop_reason}"
    )


class _Printer:
    """Writes stream events to a text stream as they arrive."""

    def __init__(self, out: TextIO, *, color: bool) -> None:
        self._out = out
        self._color = color
        self._at_line_start = True

    def show(self, event: object) -> None:
        if isinstance(event, ThinkingStartEvent):
            self.finish_line()
            self._write(_DIM if self._color else "")
        elif isinstance(event, ThinkingDeltaEvent):
            self._write_thinking(event.delta)
        elif isinstance(event, ThinkingEndEvent):
            self.finish_line()
            self._write(_RESET if self._color else "")
        elif isinstance(event, TextDeltaEvent):
            self._write(event.delta)
        elif isinstance(event, TextEndEvent):
            self.finish_line()
        elif isinstance(event, ToolCallEndEvent):
            self.finish_line()
            call = event.tool_call
            arguments = json.dumps(call.arguments, ensure_ascii=False)
            self._write(f"-> tool call {call.name} {arguments} (id {call.id})\n")

    def finish_line(self) -> None:
        if not self._at_line_start:
            self._write("\n")

    def _write_thinking(self, delta: str) -> None:
        if self._color:
            self._write(delta)
            return
        for piece in delta.splitlines(keepends=True):
            self._write((_THINKING_PREFIX if self._at_line_start else "") + piece)

    def _write(self, text: str) -> None:
        if not text:
            return
        self._out.write(text)
        self._out.flush()
        if text not in (_DIM, _RESET):
            self._at_line_start = text.endswith("\n")


def _redact(text: str, environ: Mapping[str, str] | None = None) -> str:
    """Mask the value of any secret-looking environment variable found in ``text``."""
    env = os.environ if environ is None else environ
    for name, value in env.items():
        if name.upper().endswith(_SECRET_SUFFIXES) and len(value) >= 8 and value in text:
            text = text.replace(value, "[redacted]")
    return text


if __name__ == "__main__":
    sys.exit(main())
