"""An HTML page's main content as blocks, with its headings, without menus, banners and footers.

Two ways, by what the page declares:
- A page with HTML's own landmarks (`main`, `nav`, a page-level `header`/`footer`, `aside`, or
  their ARIA roles) says what its main content is: the landmarks that are not content go, and
  of a page with a `main` (or one `article`) only that stays. The headings are its h1-h6.
- A page of anonymous `div`s leaves it to trafilatura's main-content extraction, which leads
  the open-source extractors in published comparisons: what it keeps is content, with the
  headings above that content (it drops headings outside a content container itself).
A page trafilatura finds no content in (a fragment) gives all its visible text. The title is
the page's own: `og:title`, else `<title>` (less the site's name after the h1), else its first
h1. lxml parses (no network, no entities).
"""

from __future__ import annotations

import logging
import re
from typing import Any

from sparqlrag.extraction.structure import Block

logging.getLogger("trafilatura").setLevel(logging.ERROR)  # it reports each page it finds thin at WARNING

HEADINGS = {f"h{level}": level for level in range(1, 7)}
XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*\?>")
NEVER_CONTENT = ("script", "style", "noscript", "template", "svg", "iframe", "object", "button", "select")
NOT_CONTENT = ("nav", "aside", "menu", "dialog")  # landmarks that are never the page's main content
NOT_CONTENT_ROLES = ("navigation", "banner", "contentinfo", "complementary", "search", "menu", "menubar", "dialog")
PARAGRAPHS = {"p", "li", "dt", "dd", "pre", "blockquote", "figcaption", "caption", "address", "summary", "tr"}
BLOCK_LEVEL = PARAGRAPHS | set(HEADINGS) | {
    "div", "section", "article", "main", "ul", "ol", "dl", "table", "thead", "tbody", "tfoot", "figure", "details",
    "header", "footer", "hr", "br", "body",
}  # fmt: skip


def read_html(html: str) -> tuple[list[Block], str | None]:
    """The blocks of the page's main content and its title."""
    from lxml import etree
    from lxml import html as lxml_html

    html = XML_DECLARATION.sub("", html, count=1)  # (XHTML's: lxml takes no encoding declaration in a str)
    try:
        root = lxml_html.document_fromstring(html, parser=lxml_html.HTMLParser(huge_tree=True))  # (deep pages)
    except (etree.ParserError, ValueError):
        return [], None
    title = _title(root)
    for element in root.xpath("|".join(f"//{tag}" for tag in NEVER_CONTENT)):
        element.drop_tree()
    landmarks = _not_content(root)
    for element in landmarks:
        element.drop_tree()
    articles = root.xpath("//article")
    main = root.xpath("//main | //*[@role='main']") or (articles if len(articles) == 1 else [])
    body = root.find("body")
    blocks = _walk(main[0] if main else body if body is not None else root)
    return (blocks if main or landmarks else _main_content(root, blocks)), title


def _title(root: Any) -> str | None:
    """The page's own title; where `<title>` is the first h1 and the site's name, the h1."""
    og, head, h1 = (
        " ".join(str(root.xpath(f"string({path})")).split())
        for path in ("//meta[@property='og:title']/@content", "//title", "//h1")
    )
    if h1 and head.startswith(h1):
        head = h1
    return og or head or h1 or None


def _not_content(root: Any) -> list[Any]:
    """Navigation, complementary parts, and the page's banner and footer (a `header` or `footer`
    inside an article or section introduces or closes that part, and stays)."""
    roles = " or ".join(f"@role='{role}'" for role in NOT_CONTENT_ROLES)
    found = root.xpath("|".join(f"//{tag}" for tag in NOT_CONTENT) + f" | //*[{roles}]")
    parts = ("article", "section", "main")
    for tag in ("header", "footer"):
        found += [e for e in root.iter(tag) if not any(a.tag in parts for a in e.iterancestors())]
    chosen = dict.fromkeys(found)  # (once each: a `header role="banner"` is found twice, and dropped once)
    return [e for e in chosen if not any(a in chosen for a in e.iterancestors())]


def _walk(top: Any) -> list[Block]:
    """Blocks in document order: a heading or paragraph-like element as one block, the loose
    text of a container (text beside its blocks) as blocks of its own. Iterative, with which
    elements hold blocks found in one pass, so a deeply nested page costs time in proportion."""
    holds_blocks = _holding_blocks(top)
    blocks: list[Block] = []
    todo: list[Any] = [top]  # elements to read, and loose texts (str) to keep, last first
    while todo:
        element = todo.pop()
        if isinstance(element, str):
            blocks.append(Block(element))
            continue
        tag = element.tag if isinstance(element.tag, str) else ""
        if tag in HEADINGS:
            blocks.append(Block(element.text_content(), HEADINGS[tag]))
        elif tag == "tr":
            cells = [" ".join(cell.text_content().split()) for cell in element if cell.tag in ("td", "th")]
            blocks.append(Block(" | ".join(cell for cell in cells if cell)))
        elif tag in PARAGRAPHS and element not in holds_blocks:
            blocks.append(Block(element.text_content()))
        else:
            parts: list[Any] = []
            loose = [element.text or ""]
            for child in element:
                if isinstance(child.tag, str) and (child.tag in BLOCK_LEVEL or child in holds_blocks):
                    parts += ["".join(loose), child]
                    loose = []
                elif isinstance(child.tag, str):
                    loose.append(child.text_content())
                loose.append(child.tail or "")
            todo += reversed(parts + ["".join(loose)])
    return blocks


def _holding_blocks(top: Any) -> set[Any]:
    """The elements under `top` (itself included) with a block-level element inside them."""
    holding: set[Any] = set()
    for element in reversed(list(top.iter())):  # children before their parents
        if any(isinstance(c.tag, str) and (c.tag in BLOCK_LEVEL or c in holding) for c in element):
            holding.add(element)
    return holding


def _main_content(root: Any, blocks: list[Block]) -> list[Block]:
    """The blocks trafilatura finds to be main content, and the headings above them (it drops
    headings that are not inside a content container, so its text chooses, our walk keeps the
    structure). All of them when it finds none. It reads the tree already parsed (and walked)."""
    import trafilatura
    from trafilatura.settings import use_config

    config = use_config()
    config.set("DEFAULT", "MIN_EXTRACTED_SIZE", "1")  # a short page is content too, not a cue to guess wider
    text = trafilatura.extract(root, include_tables=True, include_comments=False, favor_recall=True, config=config)
    if not text:
        return blocks
    content = " " + " ".join(text.split()) + " "
    kept: list[Block] = []
    below_is_content = False
    for block in reversed(blocks):
        words = " ".join(block.text.split())
        if not words:
            continue
        is_content = f" {words} " in content
        if is_content or (block.heading and below_is_content):
            kept.append(block)
        if not block.heading:
            below_is_content = is_content
    return kept[::-1]
