"""One child program with bounded output, ended with its call: the output limit stops it, a
cancel kills its whole process group, a cancelled task reaps it first."""

from __future__ import annotations

import os
import sys

import anyio
import pytest

from meith_core import CancelToken, ToolError
from meith_plugins_git.process import OutputTooLarge, run_program
from tests.git.support import alive, wait_for


@pytest.mark.anyio
async def test_output_beyond_the_limit_stops_the_child(tmp_path):
    with pytest.raises(OutputTooLarge):
        await run_program(
            [sys.executable, "-c", "import sys\nwhile True: sys.stdout.write('x' * 65536)"],
            cwd=None,
            env=dict(os.environ),
            max_stdout=1024 * 1024,
        )


@pytest.mark.slow
@pytest.mark.anyio
async def test_cancel_token_kills_the_whole_process_group(tmp_path):
    pid_file = tmp_path / "grandchild.pid"
    token = CancelToken()
    script = f"sleep 60 & echo $! > '{pid_file}'; wait"

    async def cancel_when_started() -> None:
        await wait_for(pid_file.exists, "the grandchild to start")
        token.cancel()

    async with anyio.create_task_group() as tg:
        tg.start_soon(cancel_when_started)
        with pytest.raises(ToolError) as err:
            await run_program(
                ["/bin/sh", "-c", script],
                cwd=None,
                env=dict(os.environ),
                max_stdout=1024,
                cancel=token,
            )
    assert err.value.code == "CANCELLED"
    grandchild = int(pid_file.read_text())
    await wait_for(lambda: not alive(grandchild), "the grandchild to die")


@pytest.mark.slow
@pytest.mark.anyio
async def test_task_cancellation_reaps_the_child_before_propagating(tmp_path):
    pid_file = tmp_path / "child.pid"
    script = f"echo $$ > '{pid_file}'; trap '' TERM; sleep 60"

    async with anyio.create_task_group() as tg:

        async def run() -> None:
            await run_program(
                ["/bin/sh", "-c", script], cwd=None, env=dict(os.environ), max_stdout=1024
            )

        tg.start_soon(run)
        await wait_for(pid_file.exists, "the child to start")
        tg.cancel_scope.cancel()
    # The child ignored SIGTERM: it was SIGKILLed after the grace period, and reaped.
    assert not alive(int(pid_file.read_text()))
