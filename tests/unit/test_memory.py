"""The CLI bounds glibc's malloc arenas for itself and the processes it starts, unless told otherwise."""

from __future__ import annotations

import os
import subprocess
import sys

SHOW = (
    "from sparqlrag.cli.memory import bound_malloc_arenas; bound_malloc_arenas(); "
    "import os; print(os.environ['MALLOC_ARENA_MAX'])"
)


def test_the_arena_bound_reaches_child_processes_and_a_users_own_value_stays() -> None:
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    assert subprocess.run([sys.executable, "-c", SHOW], env=env, capture_output=True, text=True).stdout.strip() == "2"
    mine = env | {"MALLOC_ARENA_MAX": "6"}
    assert subprocess.run([sys.executable, "-c", SHOW], env=mine, capture_output=True, text=True).stdout.strip() == "6"
