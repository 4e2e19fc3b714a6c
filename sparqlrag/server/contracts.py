"""An HTTP request's JSON body or query string as its operation's model (operations/requests.py),
or the API's 400 naming each problem."""

from __future__ import annotations

from pydantic import ValidationError
from starlette.requests import Request

from sparqlrag.operations.requests import M, refusal, validated
from sparqlrag.server.bodies import read_body
from sparqlrag.server.state import state_of


async def parsed(request: Request, model: type[M]) -> M:
    """The request's JSON body as `model`; a 400 that names each problem otherwise."""
    body = await read_body(request, state_of(request).settings.max_sparql_bytes)
    try:
        return model.model_validate_json(body)
    except ValidationError as error:
        raise refusal(error, model) from None


def parsed_query(request: Request, model: type[M]) -> M:
    """The request's query parameters as `model` (each given once); a 400 naming each problem."""
    return validated(
        model, {name: request.query_params[name] for name in model.model_fields if name in request.query_params}
    )
