"""What every request must be before a route sees it: a query string that decodes as UTF-8,
and a body that keeps arriving; and what its client must do with the answer: take it.

Starlette decodes `%FF` in a query string as U+FFFD, so a malformed query would run as some
other text; here it is a 400. uvicorn has no read timeout for a body, so a client that
announces more bytes than it sends would hold a worker and a connection forever; here a body
that stalls for `body_timeout` seconds ends the request with 408 (and the connection).
Once the body is complete its handling is not timed: a streamed answer may take as long as
it takes. But each piece of an answer must be taken by the client within `send_timeout`
seconds: ten stalled readers of a 100 MB original held a gigabyte for as long as they liked,
and four stalled Graph Store reads held the store's threads. A client that does not read is
cut off (SlowReader ends the response, which drops the connection).
"""

from __future__ import annotations

import asyncio
import logging
from urllib.parse import parse_qsl

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sparqlrag.operations.failures import Refused
from sparqlrag.server.errors import error_response
from sparqlrag.server.middleware import HttpMiddleware

log = logging.getLogger("sparqlrag.server")


class SlowReader(Exception):
    """The client did not take a piece of its answer within send_timeout seconds."""


class RequestGuard(HttpMiddleware):
    def __init__(self, app: ASGIApp, body_timeout: float, send_timeout: float) -> None:
        super().__init__(app)
        self.body_timeout, self.send_timeout = body_timeout, send_timeout

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        query = scope.get("query_string", b"")
        try:
            if b"%" in query:  # only percent-escapes are decoded as UTF-8
                parse_qsl(query.decode("latin-1"), keep_blank_values=True, errors="strict")
        except UnicodeDecodeError:
            refusal = error_response(400, "bad_encoding", "the query string is not valid UTF-8 once percent-decoded")
            await refusal(scope, receive, send)
            return
        body_complete = False

        async def receiving() -> Message:
            nonlocal body_complete
            if body_complete:
                return await receive()
            try:
                async with asyncio.timeout(self.body_timeout):
                    message = await receive()
            except TimeoutError:
                raise Refused(
                    408,
                    "body_timeout",
                    f"the request body stalled for {self.body_timeout:g} s",
                    {"Connection": "close"},
                ) from None
            body_complete = message["type"] != "http.request" or not message.get("more_body", False)
            return message

        async def sending(message: Message) -> None:
            try:
                async with asyncio.timeout(self.send_timeout):
                    await send(message)
            except TimeoutError:
                log.warning(
                    "%s %s: the client took no answer for %g s; cut off",
                    scope["method"],
                    scope["path"],
                    self.send_timeout,
                )
                raise SlowReader from None

        await self.app(scope, receiving, sending)
