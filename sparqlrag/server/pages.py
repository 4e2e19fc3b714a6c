"""The pages people open in a browser: the SPARQL editor at `/`, the ask page at `/ask`, the
library at `/library`, the graph explorer at `/explore`, and the templates other modules render
(an entity's page).

The pages hold no data: their scripts call the JSON and SPARQL routes with the bearer token
the user typed (kept in the browser's localStorage), so they are served without one. YASGUI
is the npm package's built files, fetched by `make install` into static/vendor/yasgui (not
committed); without them the page loads the same version from the public CDN. d3, which the
explorer and the ask page draw with, comes the same way (static/vendor/d3); without it those
pages say so and keep their lists.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup, escape
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from sparqlrag.server.auth import token_cookie
from sparqlrag.server.state import state_of
from sparqlrag.store import vocab

HERE = Path(__file__).parent
STATIC = HERE / "static"
YASGUI_VERSION = "4.6.2"
YASGUI_CDN = f"https://cdn.jsdelivr.net/npm/@zazuko/yasgui@{YASGUI_VERSION}/build/"
YASGUI_LOCAL = STATIC / "vendor" / "yasgui"
D3_LOCAL = STATIC / "vendor" / "d3" / "d3.min.js"  # the explorer's drawing; without it the pages say so


def highlight(text: str, sentence: str | None) -> Markup:
    """A chunk's text, escaped, with the evidence sentence marked."""
    if not sentence or sentence not in text:
        return escape(text)
    before, _, after = text.partition(sentence)
    return escape(before) + Markup("<mark>") + escape(sentence) + Markup("</mark>") + escape(after)


def web_iri(value: object) -> bool:
    """Whether an IRI may become a link: http(s) only, never javascript:, data: and the like."""
    return isinstance(value, str) and urlsplit(value).scheme.lower() in ("http", "https") and value == value.strip()


_templates = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(["html"]))
_templates.filters["highlight"] = highlight
_templates.filters["short"] = vocab.local_name
_templates.tests["web_iri"] = web_iri


def render(template: str, root: str, **context: Any) -> HTMLResponse:
    """A page; `root` is the relative way back to the site root ("" at the top, "../" one down),
    so links work wherever a proxy mounts the server."""
    return HTMLResponse(_templates.get_template(template).render(root=root, **context))


def script_origins() -> list[str]:
    """Where pages load scripts from besides this server: the CDN, when YASGUI is not installed."""
    return [] if (YASGUI_LOCAL / "yasgui.min.js").is_file() else ["https://cdn.jsdelivr.net"]


def _yasgui_url(root: str, name: str) -> str:
    return f"{root}static/vendor/yasgui/{name}" if (YASGUI_LOCAL / name).is_file() else YASGUI_CDN + name


def _page_config(request: Request) -> dict[str, Any]:
    """What the pages' scripts need: the base IRI (graph and trace IRIs derive from it), the
    project's prefixes, and whether requests need a token."""
    settings = state_of(request).settings
    return {
        "base": settings.base_iri,
        "prefixes": vocab.PREFIXES,
        "auth": settings.auth_enabled,
        "cookie": token_cookie(settings),
    }


async def sparql_editor(request: Request) -> Response:
    return render(
        "yasgui.html",
        "",
        config=_page_config(request),
        yasgui_js=_yasgui_url("", "yasgui.min.js"),
        yasgui_css=_yasgui_url("", "yasgui.min.css"),
    )


def _d3_url(root: str) -> str | None:
    return f"{root}static/vendor/d3/d3.min.js" if D3_LOCAL.is_file() else None


async def ask_page(request: Request) -> Response:
    return render("ask.html", "", config=_page_config(request), d3_js=_d3_url(""))


async def explore_page(request: Request) -> Response:
    return render("explore.html", "", config=_page_config(request), d3_js=_d3_url(""))


async def library_page(request: Request) -> Response:
    return render("library.html", "", config=_page_config(request))
