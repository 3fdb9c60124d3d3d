"""Stack dumps of a running ``pidurable`` on SIGUSR1, for diagnosing a hang (layer 7).

Off unless ``PIDURABLE_STACK_DUMP`` is set in the environment (the crash
campaigns set it). Then SIGUSR1 writes to stderr, without stopping anything:

- every thread's Python stack, by ``faulthandler`` from the C signal handler:
  it is written even when the main thread is stuck in a C call or a lock;
- then every asyncio task of the running loop with the chain of awaits it is
  suspended in, down to the future it waits on (a thread stack only shows the
  loop in ``select``): written by the Python-level handler in the main thread
  between two bytecodes, which the loop's wakeup descriptor makes prompt.

A test that gives up on a hung process sends SIGUSR1, waits for ``END_MARKER``
on stderr (or a few seconds), then kills it: its failure message holds where
every task was waiting.
"""

from __future__ import annotations

import faulthandler
import os
import signal
import sys
import threading
from collections.abc import Iterator
from types import CoroutineType, FrameType, GeneratorType
from typing import Any, TextIO

ENV_VAR = "PIDURABLE_STACK_DUMP"
SIGNAL = signal.SIGUSR1
END_MARKER = "-- end of stack dump --"
"""The last line of a dump: a reader waiting for the whole dump waits for it."""


def install() -> bool:
    """Arm the dump on SIGUSR1 when ``PIDURABLE_STACK_DUMP`` is set (main thread only).

    Returns:
        Whether the dump is armed.
    """
    if not os.environ.get(ENV_VAR) or threading.current_thread() is not threading.main_thread():
        return False
    # REMINDER: the Python handler first, then faulthandler chained to it: the C
    # dump of the threads runs at once, then the task dump runs on the main thread.
    signal.signal(SIGNAL, _dump_tasks)
    faulthandler.register(SIGNAL, file=sys.stderr, all_threads=True, chain=True)
    return True


def _dump_tasks(_signum: int, _frame: FrameType | None) -> None:
    write_tasks(sys.stderr)


def write_tasks(out: TextIO) -> None:
    """Write every task of the running loop (if any) and the awaits it is suspended in."""
    import asyncio  # here: the command imports asyncio only once it runs a loop

    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        out.write("asyncio: no running loop\n")
    else:
        tasks = sorted(asyncio.all_tasks(loop), key=lambda task: task.get_name())
        out.write(f"asyncio: {len(tasks)} tasks\n")
        for task in tasks:
            out.write(f"task {task.get_name()}{' (done)' if task.done() else ''}:\n")
            for line in await_chain(task.get_coro()):
                out.write(f"  {line}\n")
            # The future the task is suspended on (a C iterator in the chain hides it).
            waiter = getattr(task, "_fut_waiter", None)
            if waiter is not None:
                out.write(f"  waits on {waiter!r}"[:500] + "\n")
    out.write(END_MARKER + "\n")
    out.flush()


def await_chain(awaitable: object) -> Iterator[str]:
    """The frames of a suspended coroutine and of each awaitable it awaits, outermost first.

    Ends with the future (or other object) at the bottom of the chain, whose repr
    says what it waits for.
    """
    current: Any = awaitable
    for _ in range(200):  # a bound against a cycle in a hand-made awaitable
        if isinstance(current, CoroutineType):
            frame, current = current.cr_frame, current.cr_await
        elif isinstance(current, GeneratorType):
            frame, current = current.gi_frame, current.gi_yieldfrom
        elif hasattr(current, "ag_frame"):  # an async generator's asend/athrow
            frame, current = current.ag_frame, current.ag_await
        else:
            if current is not None:
                yield f"awaits {current!r}"[:500]
            return
        if frame is not None:
            code = frame.f_code
            yield f"{code.co_filename}:{frame.f_lineno} in {code.co_name}"
