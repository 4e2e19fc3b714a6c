"""The crash loop of bench/torture.py, CI-sized: three cycles of load, each ended by SIGKILL (the
third kills the store worker alone first), the invariants checked after every restart, and a
knowledge core exported and imported after the last kill."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_three_kill_cycles_leave_every_invariant_whole_and_no_acknowledged_write_lost() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "torture.py"), "--cycles", "3", "--seconds", "3", "--clients", "6"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["cycles survived"] == 3, report
    assert report["invariant violations"] == 0, report["violations"]
    assert report["acknowledged writes lost"] == 0 and report["acknowledged writes"] > 0, report
    assert report["5xx"] == 0, report["5xx by route"]
    assert report["core"] == {"core exported": 200, "core imported": 201}
    assert report["requests"] > 20
