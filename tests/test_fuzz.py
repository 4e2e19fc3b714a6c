"""The HTTP API fuzzed from its own OpenAPI document with schemathesis (a bounded run; the
planners' bigger ones use the same checks): no 5xx, every answer as its schema says.

Left out, with reasons:
- positive_data_acceptance: a SPARQL, RDF or document body that matches its schema (a string)
  is still mostly not valid SPARQL or RDF; such 400s are right.
- negative_data_rejection: pyoxigraph reads a bare JSON string as an empty JSON-LD document.
- allow_header_conformance: `/api/v1/documents/{id}` takes ids with slashes, so its GET and
  DELETE also answer `.../x/reingest` (the Allow says so; the schema cannot).
- use_after_free, ensure_resource_availability: `default` stays when deleted (documented).
- /api/v1/nl-query: without an LLM it answers 501, as documented.
- /api/v1/collections/{name}/core: schemathesis cannot write a zip body (tests/test_cores.py).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import start_server

WRITE = "fuzz-write-token"
SCHEMATHESIS = shutil.which("schemathesis") or str(Path(sys.executable).parent / "schemathesis")
CHECKS = [
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_headers_conformance",
    "response_schema_conformance",
    "missing_required_header",
    "unsupported_method",
    "ignored_auth",
]


def test_the_api_survives_its_own_schema(tmp_path: Path) -> None:
    server, stop = start_server(tmp_path / "data", write_tokens=[WRITE], answer_rate=0)
    try:
        run = subprocess.run(
            [
                SCHEMATHESIS,
                "run",
                server.url + "/openapi.json",
                "--checks",
                ",".join(CHECKS),
                "--max-examples",
                "5",
                "--seed",
                "1",
                "--generation-database",
                "none",
                "--exclude-path",
                "/api/v1/nl-query",
                "--exclude-path",
                "/api/v1/collections/{name}/core",
                "--header",
                f"Authorization: Bearer {WRITE}",
                "--no-color",
            ],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert run.returncode == 0, run.stdout[-6000:]
        tested = re.search(r"Tested: (\d+)", run.stdout)
        assert tested and int(tested.group(1)) >= 40, run.stdout[-3000:]  # the operations were reached
        with server.client() as client:
            assert client.get("/healthz").status_code == 200  # alive afterwards
    finally:
        stop()
