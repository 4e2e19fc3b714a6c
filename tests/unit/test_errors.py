"""What a client is told for an error: the status table read along the class hierarchy."""

from __future__ import annotations

from sparqlrag.server.errors import INTERNAL, described
from sparqlrag.store import base


class _SlowerTimeout(base.QueryTimeout):
    """A refinement of a mapped store error, as a backend might define one."""


def test_a_subclass_of_a_mapped_store_error_answers_as_that_error() -> None:
    assert described(_SlowerTimeout("the query ran past 5 s")) == (503, "query_timeout", "the query ran past 5 s")


def test_a_store_error_with_no_status_is_an_internal_error_without_its_text() -> None:
    assert described(base.StoreInternalError("rocksdb: corruption at /secret/path")) == (
        500,
        "internal_error",
        INTERNAL,
    )
