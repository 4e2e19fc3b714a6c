"""Headers every response carries so that a page cannot be turned against its reader.

The Content-Security-Policy allows scripts only from this server (and the CDN when YASGUI's
files are not installed locally): no inline script runs, so markup injected through data,
even a `javascript:` link, executes nothing. Styles may be inline (YASGUI sets them).
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sparqlrag.server.middleware import HttpMiddleware


def content_security_policy(script_origins: list[str]) -> str:
    scripts = " ".join(["'self'", *script_origins])
    return (
        f"default-src 'none'; script-src {scripts}; style-src 'self' 'unsafe-inline' {' '.join(script_origins)}; "
        "img-src 'self' data:; font-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; "
        "frame-ancestors 'none'"
    ).replace("  ", " ")


class SecurityHeaders(HttpMiddleware):
    def __init__(self, app: ASGIApp, script_origins: list[str]) -> None:
        super().__init__(app)
        self.headers = [
            (b"content-security-policy", content_security_policy(script_origins).encode()),
            (b"x-content-type-options", b"nosniff"),
            (b"referrer-policy", b"same-origin"),
        ]

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *self.headers]}
            await send(message)

        await self.app(scope, receive, sending)
