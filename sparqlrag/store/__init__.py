"""The system of record: an RDF quad store behind a small interface (base.QuadStore).

`EmbeddedStore` runs pyoxigraph in-process (CLI, tests); `WorkerStore` hosts it in a child
process that can be killed when a query runs past its deadline (the server).
"""

from sparqlrag.store.base import (
    DataSyntaxError,
    GraphNotFound,
    NotAcceptable,
    QuadStore,
    QueryResult,
    QuerySyntaxError,
    QueryTimeout,
    StoreError,
    StoreLocked,
    StoreUnavailable,
    UpdateDatasetConflict,
)
from sparqlrag.store.embedded import EmbeddedStore
from sparqlrag.store.worker import WorkerStore

__all__ = [
    "DataSyntaxError",
    "EmbeddedStore",
    "GraphNotFound",
    "NotAcceptable",
    "QuadStore",
    "QueryResult",
    "QuerySyntaxError",
    "QueryTimeout",
    "StoreError",
    "StoreLocked",
    "StoreUnavailable",
    "UpdateDatasetConflict",
    "WorkerStore",
]
