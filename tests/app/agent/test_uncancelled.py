"""``complete``: a start-up or shutdown step runs to its end even when its caller is cancelled."""

from __future__ import annotations

import asyncio

import pytest

from pi_durable_tui.app.agent._uncancelled import complete


class Step:
    """A step that waits for ``release`` and records what happened to it."""

    def __init__(self, result: str = "opened", error: Exception | None = None) -> None:
        self.release = asyncio.Event()
        self.ended = False
        self.undone: list[str] = []
        self._result = result
        self._error = error

    async def run(self) -> str:
        await self.release.wait()
        self.ended = True
        if self._error is not None:
            raise self._error
        return self._result

    async def undo(self, result: str) -> None:
        await asyncio.sleep(0)
        self.undone.append(result)


async def cancel_while_running(step: Step, *, times: int = 1) -> asyncio.Task[str]:
    caller = asyncio.ensure_future(complete(step.run(), undo=step.undo))
    for _ in range(times):
        await asyncio.sleep(0)
        caller.cancel()
    await asyncio.sleep(0)
    assert not caller.done()  # still waiting for the step
    step.release.set()
    await asyncio.wait({caller}, timeout=5)
    return caller


async def test_an_uncancelled_caller_gets_the_steps_result() -> None:
    step = Step()
    step.release.set()

    assert await complete(step.run(), undo=step.undo) == "opened"
    assert step.undone == []


async def test_an_uncancelled_caller_gets_the_steps_error() -> None:
    step = Step(error=OSError("disk"))
    step.release.set()

    with pytest.raises(OSError, match="disk"):
        await complete(step.run(), undo=step.undo)


@pytest.mark.parametrize("times", [1, 3])
async def test_a_cancelled_caller_waits_for_the_step_undoes_it_and_is_then_cancelled(
    times: int,
) -> None:
    step = Step()

    caller = await cancel_while_running(step, times=times)

    assert caller.cancelled()
    assert step.ended
    assert step.undone == ["opened"]


async def test_a_cancelled_caller_of_a_failing_step_is_cancelled_with_nothing_to_undo() -> None:
    step = Step(error=OSError("disk"))

    caller = await cancel_while_running(step)

    assert caller.cancelled()
    assert step.ended
    assert step.undone == []
