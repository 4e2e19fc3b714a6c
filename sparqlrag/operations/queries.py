"""A question written as SPARQL over an ontology by the LLM, checked, then run by the caller's
own runner (each surface runs it under its own limits and result format)."""

from __future__ import annotations

from collections.abc import Callable

from sparqlrag.ontology.registry import UnknownOntology
from sparqlrag.operations.collection import Collection
from sparqlrag.operations.failures import Refused
from sparqlrag.operations.requests import NlQuestion
from sparqlrag.queries.nl_query import NlAnswer, NlQueryUnavailable, QueryRejected
from sparqlrag.store.base import QueryResult
from sparqlrag.store.vocab import InvalidName

__all__ = ["NlAnswer"]

Runner = Callable[[str, str], QueryResult]
"""Runs a checked query of a form ("select", "ask", "construct") and gives its result."""


async def nl_query(collection: Collection, asked: NlQuestion, run: Runner) -> NlAnswer:
    """501 without an LLM; 422 with the query when the one written fails its checks; 400 for an
    ontology not loaded, or none to use."""
    try:
        return await collection.services.nl_query.ask(
            asked.question, run, iris=collection.iris, ontology=asked.ontology
        )
    except NlQueryUnavailable as error:
        raise Refused(501, "nl_query_unavailable", str(error)) from None
    except QueryRejected as error:
        raise Refused(422, "query_rejected", str(error), extra={"query": error.query}) from None
    except (UnknownOntology, InvalidName) as error:
        raise Refused(400, "unknown_ontology", str(error)) from None
    except ValueError as error:
        raise Refused(400, "bad_request", str(error)) from None
