"""The run's spill directory survives being removed under it (issue 13)."""

from __future__ import annotations

import os
import shutil

from pi_durable_tui.env._run_guard import RUN_GUARD


def test_the_spill_directory_is_made_again_when_something_removed_it() -> None:
    directory = RUN_GUARD.spill_directory()
    shutil.rmtree(directory)

    again = RUN_GUARD.spill_directory()

    assert again == directory
    assert os.path.isdir(again)
    assert os.stat(again).st_mode & 0o777 == 0o700
