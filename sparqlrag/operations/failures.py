"""What a failure means to the person who asked: a status, a short code and a message, the same
on every surface. HTTP answers `{"error": code, "detail": message}` with the status, MCP a tool
error "code: message", the CLI the message. An error written for users keeps its text; any
other gets a fixed message and its details go to the log.
"""

from __future__ import annotations

from sparqlrag.extraction.curation_refusals import CurationRefused, UnknownEntity
from sparqlrag.extraction.decode_pool import DecoderUnavailable
from sparqlrag.extraction.decoders import DecodeError, DecodeLimitExceeded
from sparqlrag.library.cores import CoreInvalid, CoreMismatch
from sparqlrag.library.librarian import CollectionBusy, UnknownCollection
from sparqlrag.models.embedder import ModelUnavailable
from sparqlrag.models.llm import LLMError
from sparqlrag.ontology.owl import OntologyError
from sparqlrag.ontology.registry import OntologyConflict, UnknownOntology
from sparqlrag.operations.refused import Refused
from sparqlrag.retrieval.question import EmptyGraph, QuestionTooLong
from sparqlrag.store import base
from sparqlrag.store.vocab import InvalidName

__all__ = ["Refused"]


STORE_ERROR_STATUS: dict[type[Exception], tuple[int, str]] = {
    base.QuerySyntaxError: (400, "syntax_error"),
    base.DataSyntaxError: (400, "invalid_rdf"),
    base.QueryEvaluationError: (400, "evaluation_error"),
    base.ResultTooLarge: (400, "result_too_large"),
    base.ClientGone: (499, "client_closed_request"),  # (nginx's code; never read: for logs and metrics)
    base.UpdateDatasetConflict: (400, "dataset_conflict"),
    base.RemoteAccessRefused: (403, "remote_access_refused"),
    base.RemoteSourceFailed: (400, "remote_source_failed"),
    base.QueryCrashed: (400, "query_crashed_store"),
    base.GraphNotFound: (404, "graph_not_found"),
    base.NotAcceptable: (406, "not_acceptable"),
    base.QueryTimeout: (503, "query_timeout"),
    base.StoreLocked: (503, "store_locked"),
    base.StoreUnavailable: (503, "store_unavailable"),
    base.StorageFull: (507, "insufficient_storage"),
    base.RemoteStoreFailed: (502, "store_failed"),
    base.StoreInternalError: (500, "internal_error"),
}

CLIENT_ERRORS: list[tuple[type[Exception], int, str]] = [
    (UnknownCollection, 404, "collection_not_found"),
    (CollectionBusy, 409, "collection_busy"),
    (EmptyGraph, 409, "empty_graph"),
    (QuestionTooLong, 400, "question_too_long"),
    (DecoderUnavailable, 503, "decoder_unavailable"),
    (DecodeLimitExceeded, 400, "decode_failed"),  # (before DecodeError: it is one)
    (DecodeError, 400, "bad_document"),
    (InvalidName, 400, "bad_name"),
    (UnknownOntology, 404, "ontology_not_found"),
    (OntologyConflict, 409, "ontology_conflict"),
    (OntologyError, 400, "bad_ontology"),
    (CoreMismatch, 409, "core_mismatch"),
    (UnknownEntity, 404, "unknown_entity"),
    (ModelUnavailable, 503, "model_unavailable"),
    (CurationRefused, 409, "curation_refused"),
    (CoreInvalid, 400, "invalid_core"),
]

INTERNAL = "unexpected server error; see the server log"
USER_FAILURES: tuple[type[Exception], ...] = (
    Refused,
    base.StoreError,
    LLMError,
    *(kind for kind, _, _ in CLIENT_ERRORS),
)
"""The failures written for the person who asked: every surface shows their message."""


def described(exc: Exception) -> tuple[int, str, str]:
    """(status, code, detail) for an error a client may see: the message of errors written for
    clients, a fixed one for the rest (their text goes to the log)."""
    if isinstance(exc, Refused):
        return exc.status, exc.error, exc.detail
    if base.disk_full(exc):  # the store's, or an index's (SQLite), or a file's
        return 507, "insufficient_storage", base.DISK_FULL
    if isinstance(exc, base.StoreError):  # the store's messages are for clients, but an internal error's
        status, error = next(  # along the MRO: a subclass answers as the error it refines
            (STORE_ERROR_STATUS[kind] for kind in type(exc).__mro__ if kind in STORE_ERROR_STATUS),
            (500, "internal_error"),
        )
        return status, error, INTERNAL if error == "internal_error" else str(exc)
    if isinstance(exc, LLMError):  # the model behind an answer failed (quota, auth, overload): say which
        return 502, "model_failed", str(exc)
    for kind, status, error in CLIENT_ERRORS:
        if isinstance(exc, kind):
            return status, error, str(exc)
    return 500, "internal_error", INTERNAL


def unexpected(exc: Exception, status: int) -> bool:
    """Whether a failure is the server's own, for its log: a 5xx other than a refusal it chose
    to give (no LLM to write a query), a model's failure, or a query that ran out of time (the
    client's query, not a fault)."""
    return status >= 500 and not isinstance(exc, (Refused, LLMError, base.QueryTimeout))
