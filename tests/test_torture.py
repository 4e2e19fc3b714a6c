"""bench/torture.py, CI-sized: three cycles of load each ended by SIGKILL (the third kills the
store worker alone first), the invariants checked after every restart and a knowledge core
exported and imported after the last kill; then 20 s of sustained load from 8 clients on 200
passages, and the invariants after; then schemathesis over the API on that data, every check
(bench/schemathesis.toml), 3 cases an operation, with a write token and with a read token."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ["--corpus", str(ROOT / "tests" / "data" / "musique" / "corpus.jsonl")]  # shipped with the tests
SMALL = ["--cycles", "3", "--seconds", "3", "--clients", "6", "--load-seconds", "20", "--load-clients", "8"]
FUZZ = ["--fuzz-examples", "3"]


def test_kills_and_load_leave_every_invariant_whole_and_no_acknowledged_write_lost() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "torture.py"), *SMALL, "--passages", "200", *FUZZ, *CORPUS],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    crashes, load = report["crash loop"], report["sustained load"]
    assert crashes["cycles survived"] == 3 and crashes["core"] == {"core exported": 200, "core imported": 201}
    for part in (crashes, load):
        assert part["invariant violations"] == 0, part["violations"]
        assert part["acknowledged writes lost"] == 0 and part["acknowledged writes"] > 0, part
        assert part["5xx"] == 0, part["5xx by route"]
        assert part["requests"] > 20
    assert len(load["rss_mb_by_quarter"]) == 4 and min(load["rss_mb_by_quarter"]) > 0
    for scope in ("write", "read"):
        fuzzed = report["fuzzing"][scope]
        assert fuzzed["failures"] == {} and fuzzed["exit"] == 0 and fuzzed["alive"], fuzzed
        assert fuzzed["cases"] > 500  # every operation reached
