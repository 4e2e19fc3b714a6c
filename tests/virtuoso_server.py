"""Virtuoso Open Source (Debian's `virtuoso-opensource`), started for a test: a store of RDF 1.1
(no triple terms) whose default graph is the union of its graphs, as many teams run it.

Its own data folder and loopback ports; SPARQL Update is granted to the anonymous SPARQL user
of this instance only, which is how a test user writes without a password here.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.oxigraph_server import StoreServer, free_port

VIRTUOSO, ISQL = shutil.which("virtuoso-t"), shutil.which("isql-vt")
VSP = Path("/var/lib/virtuoso-opensource-7/vsp")
DEFAULT_GRAPH = "urn:sparqlrag:default"
GRANTS = "grant SPARQL_UPDATE to \"SPARQL\"; DB.DBA.RDF_DEFAULT_USER_PERMS_SET ('nobody', 7);"

INI = """[Database]
DatabaseFile = {folder}/virtuoso.db
ErrorLogFile = {folder}/virtuoso.log
LockFile = {folder}/virtuoso.lck
TransactionFile = {folder}/virtuoso.trx
xa_persistent_file = {folder}/virtuoso.pxa
Striping = 0
TempStorage = TempDatabase
[TempDatabase]
DatabaseFile = {folder}/virtuoso-temp.db
TransactionFile = {folder}/virtuoso-temp.trx
Striping = 0
[Parameters]
ServerPort = 127.0.0.1:{sql_port}
DisableUnixSocket = 1
CheckpointInterval = 60
NumberOfBuffers = 20000
MaxDirtyBuffers = 15000
DirsAllowed = .
[HTTPServer]
ServerPort = 127.0.0.1:{http_port}
ServerRoot = {vsp}
ServerThreads = 10
MaxClientConnections = 10
Charset = UTF-8
EnabledGzipContent = 0
[SPARQL]
ResultSetMaxRows = 1000000
MaxQueryCostEstimationTime = 0
MaxQueryExecutionTime = 0
"""


class Virtuoso(StoreServer):
    @property
    def endpoints(self) -> dict[str, Any]:
        """Settings that keep a sparqlrag server's everything in this store: one endpoint for
        queries and updates, writes as INSERT DATA, its default graph already the union, and a
        graph of its own standing for the real default graph."""
        return {
            "store_url": self.url + "/sparql",
            "store_union_parameter": None,
            "store_default_graph": DEFAULT_GRAPH,
        }


def start_virtuoso(folder: Path) -> Virtuoso:
    """The server on loopback ports and `folder`, answering, with SPARQL Update allowed; skips
    the test where it is not installed (`make install` installs it on Debian as root)."""
    if not (VIRTUOSO and ISQL and VSP.is_dir()):
        pytest.skip("Virtuoso is installed by `make install` (Debian's virtuoso-opensource)")
    folder.mkdir(parents=True, exist_ok=True)
    for _ in range(3):  # a port found free may be taken before Virtuoso binds it
        sql_port, http_port = free_port(), free_port()
        ini = folder / "virtuoso.ini"
        ini.write_text(INI.format(folder=folder, sql_port=sql_port, http_port=http_port, vsp=VSP))
        process = subprocess.Popen(
            [VIRTUOSO, "+foreground", "+configfile", str(ini)],
            cwd=folder,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        url = f"http://127.0.0.1:{http_port}"
        deadline = time.monotonic() + 120
        while process.poll() is None and time.monotonic() < deadline:
            try:
                if httpx.get(url + "/sparql", params={"query": "ASK { ?s ?p ?o }"}, timeout=2).status_code == 200:
                    granted = subprocess.run(
                        [ISQL, f"127.0.0.1:{sql_port}", "dba", "dba", f"exec={GRANTS}"],
                        capture_output=True,
                        timeout=60,
                    )
                    if granted.returncode != 0:
                        break
                    return Virtuoso(url, process)
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        process.kill()
        process.wait()
    pytest.fail("Virtuoso did not start")
