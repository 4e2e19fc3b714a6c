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
    assert done.returncode == 0, done.stderr[-3000:]  # (schemathesis's output, when it failed, is on stderr too)
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
        assert fuzzed["failures"] == {} and fuzzed["exit"] == 0 and fuzzed["alive"], fuzzed.get("output", fuzzed)
        assert fuzzed["cases"] > 500  # every operation reached


def test_a_fuzzing_run_that_failed_without_naming_a_check_is_not_clean() -> None:
    """A schemathesis run can fail with no check to name (its client timed out, the network
    failed): the report says it failed and keeps the end of its output, never `failures: {}`."""
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from torture import fuzzed
    finally:
        sys.path.remove(str(ROOT / "bench"))
    timed_out = subprocess.CompletedProcess([], 1, stdout="120 generated\nNetwork Error: read timed out\n", stderr="")
    report = fuzzed(timed_out)
    assert report["failures"] == {"unnamed": 1} and report["exit"] == 1 and "read timed out" in report["output"]
    found = fuzzed(subprocess.CompletedProcess([], 1, stdout="❌ ST101 Server error: 2\n300 generated", stderr=""))
    assert found["failures"] == {"ST101": 2} and found["5xx"] == 2 and found["cases"] == 300
    assert fuzzed(subprocess.CompletedProcess([], 0, stdout="900 generated", stderr="")) == {
        "cases": 900,
        "failures": {},
        "5xx": 0,
        "exit": 0,
    }
