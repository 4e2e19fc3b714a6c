"""Our SPARQL services as a query's text names them: `SERVICE sr:documentRag { ... }` and
`SERVICE sr:graphRag { ... }` (or one of our own endpoints' URLs), each read into a call.

pyoxigraph evaluates a SERVICE by fetching its URL and offers no hook for a service of our own,
so the server evaluates ours before the query runs and writes each block's rows into the text
(operations/sparql_services.py). Reading a block needs a lexer (sparql_text.py) and the shape
of a group pattern: the statements whose subject carries `sr:question` are the call (its
parameters and the variables its rows bind), and everything else in the block is its scope,
kept as the client wrote it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from sparqlrag.store.sparql_text import QUERY_FORMS, Token, matching_close, tokens
from sparqlrag.store.vocab import RDF, SR

INPUTS = ("question", "collection", "k", "mode")
OUTPUTS: dict[str, tuple[str, ...]] = {
    "documentRag": ("chunk", "score", "rank", "document", "text"),
    "graphRag": ("answer", "trace", "source", "rank", "score", "document"),
}
SERVICES = tuple(OUTPUTS)
SERVICE_PATHS = {"documentRag": "document-rag", "graphRag": "graph-rag"}  # each one's endpoint: /sparql/{path}
ELEMENTS = ("FILTER", "BIND", "OPTIONAL", "MINUS", "GRAPH", "SERVICE", "VALUES", "UNION")  # not triples
_ECHAR = {"t": "\t", "b": "\b", "n": "\n", "r": "\r", "f": "\f", '"': '"', "'": "'", "\\": "\\"}
_ESCAPE = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|(.))", re.DOTALL)


class ServiceCallError(ValueError):
    """A block of one of our services that cannot be evaluated: the message says why."""


@dataclass(frozen=True)
class ServiceCall:
    service: str  # "documentRag" or "graphRag"
    start: int  # the span of `SERVICE ... { ... }` in the query's text
    end: int
    hit: str  # the subject the call's properties hang from, as written (?hit, _:h, [])
    parameters: dict[str, str]  # property local name -> its object, as written ("question" -> '"wind"')
    scope: str  # the block's other patterns, as written ("" when there are none)

    @property
    def name(self) -> str:
        return f"sr:{self.service}"


def service_calls(query: str, endpoints: Mapping[str, str] | None = None) -> list[ServiceCall]:
    """Every call of ours in the query, in order: a SERVICE naming sr:documentRag or
    sr:graphRag, or an endpoint URL `endpoints` maps to one of them. ServiceCallError for a
    block that cannot be read as one."""
    if "service" not in query.lower():
        return []  # (the common case, with no lexing)
    found = tokens(query)
    prefixes = _prefixes(found)
    calls: list[ServiceCall] = []
    for index, token in enumerate(found):
        if not (token.kind == "word" and token.text.upper() == "SERVICE"):
            continue
        at = index + 1
        if at < len(found) and found[at].kind == "word" and found[at].text.upper() == "SILENT":
            at += 1
        if at + 1 >= len(found) or found[at + 1].kind != "open":
            continue
        service = _service(found[at], prefixes, endpoints or {})
        if service is None:
            continue
        close = matching_close(found, at + 1)
        if calls and calls[-1].end > token.start:
            raise ServiceCallError(f"{calls[-1].name}'s block holds another of our services: call them side by side")
        calls.append(_call(query, service, token.start, found[at + 1 : close + 1], prefixes))
    return calls


def prologue(query: str) -> str:
    """The query's PREFIX and BASE declarations, as written: what a scope is read with."""
    for token in tokens(query):
        if token.kind == "word" and token.text.upper() in QUERY_FORMS and token.depth == 0:
            return query[: token.start]
    return ""


def without(query: str, calls: list[ServiceCall], filler: str = "{}") -> str:
    """The query with each call's span replaced by `filler`."""
    for call in reversed(calls):
        query = query[: call.start] + filler + query[call.end :]
    return query


def as_service_block(query: str, service: str) -> str:
    """A query sent to a service's own endpoint, with its WHERE pattern made the service's
    block: what another engine's SERVICE sent as `SELECT * WHERE { block }` means here."""
    found = tokens(query)
    opening = next((i for i, t in enumerate(found) if t.kind == "open" and t.depth == 0), None)
    if opening is None:
        raise ServiceCallError(f"the query has no pattern in braces to evaluate as sr:{service}")
    close = matching_close(found, opening)
    start, end = found[opening].end, found[close].start
    return f"{query[:start]} SERVICE <{SR}{service}> {{ {query[start:end]}\n}}\n{query[end:]}"


def literal(text: str) -> str | int | float:
    """A parameter's object as a value: a string literal's lexical form (any language tag or
    datatype after it ignored), or a number. ServiceCallError for anything else."""
    found = tokens(text)
    if found and found[0].kind == "string":
        body = found[0].text
        quote = 3 if body[:3] in ('"""', "'''") else 1
        return _ESCAPE.sub(_unescaped, body[quote:-quote])
    try:
        number = float(text)
    except ValueError:
        raise ServiceCallError(f"{text[:60]!r} is not a literal") from None
    return int(number) if re.fullmatch(r"[+-]?\d+", text) else number


def variable(text: str) -> str | None:
    """`?name` or `$name` as its name; None for anything else."""
    return text[1:] if re.fullmatch(r"[?$][\w\u00b7\u00c0-\uffff]+", text) else None


def _unescaped(match: re.Match[str]) -> str:
    code = match.group(1) or match.group(2)
    return chr(int(code, 16)) if code else _ECHAR.get(match.group(3), "\\" + match.group(3))


def _prefixes(found: list[Token]) -> dict[str, str]:
    prefixes: dict[str, str] = {}
    for index, token in enumerate(found[:-2]):
        if token.kind == "word" and token.text.upper() == "PREFIX" and token.depth == 0:
            name, iri = found[index + 1], found[index + 2]
            if name.kind == "pname" and iri.kind == "iri":
                prefixes[name.text[:-1]] = iri.text[1:-1]
    return prefixes


def _iri(token: Token, prefixes: Mapping[str, str]) -> str | None:
    """The IRI an IRI or prefixed-name token names (a prefix not declared: None)."""
    if token.kind == "iri":
        return token.text[1:-1]
    if token.kind == "pname":
        prefix, _, local = token.text.partition(":")
        return prefixes[prefix] + local if prefix in prefixes else None
    if token.kind == "word" and token.text == "a":
        return RDF + "type"
    return None


def _service(token: Token, prefixes: Mapping[str, str], endpoints: Mapping[str, str]) -> str | None:
    iri = _iri(token, prefixes)
    if iri is None:
        return None
    if iri.startswith(SR) and iri[len(SR) :] in SERVICES:
        return iri[len(SR) :]
    return endpoints.get(iri)


def _call(query: str, service: str, start: int, block: list[Token], prefixes: Mapping[str, str]) -> ServiceCall:
    """The call a block makes (block: its tokens, braces included)."""
    name = f"sr:{service}"
    for token in block:
        prefix = token.text.partition(":")[0]
        if token.kind == "pname" and prefix != "_" and prefix not in prefixes:
            raise ServiceCallError(f"the prefix {prefix}: is not declared: add PREFIX {prefix}: <...> to the query")
    statements = _statements(block)
    asked = {
        subject
        for part in statements
        if (subject := _subject(part))
        and any(_iri(predicate, prefixes) == SR + "question" for predicate, _ in _predicates(part, subject))
    }
    if not asked:
        example = f'SERVICE {name} {{ ?hit sr:question "..." ; ... }}'
        raise ServiceCallError(f"{name} needs sr:question, a literal: {example}")
    if len(asked) > 1:
        raise ServiceCallError(f"{name}'s block asks {len(asked)} questions; give one sr:question per block")
    (hit,) = asked
    known = (*INPUTS, *OUTPUTS[service])
    parameters: dict[str, str] = {}
    cuts: list[tuple[int, int]] = []
    for part in statements:
        if _subject(part) != hit:
            continue
        for predicate, objects in _predicates(part, hit):
            iri = _iri(predicate, prefixes) or predicate.text
            local = iri[len(SR) :] if iri.startswith(SR) else None
            if local not in known:
                properties = ", ".join(f"sr:{p}" for p in known)
                raise ServiceCallError(f"{name} has no property {_short(iri)}; its properties are {properties}")
            if local in parameters or len(objects) != 1:
                raise ServiceCallError(f"{name}'s sr:{local} is given more than once")
            if not objects[0]:
                raise ServiceCallError(f"{name}'s sr:{local} has no value")
            parameters[local] = query[objects[0][0].start : objects[0][-1].end]
        end = part[-1].end
        cuts.append((part[0].start, _after_dot(query, end)))
    scope = query[block[0].end : block[-1].start]
    offset = block[0].end
    for cut_start, cut_end in reversed(cuts):
        scope = scope[: cut_start - offset] + scope[cut_end - offset :]
    return ServiceCall(service, start, block[-1].end, hit, parameters, scope.strip())


def _short(iri: str) -> str:
    return "sr:" + iri[len(SR) :] if iri.startswith(SR) else f"<{iri[:200]}>"


def _after_dot(query: str, end: int) -> int:
    """Past the `.` that ends a statement ending at `end`, if one does."""
    match = re.compile(r"\s*\.(?!\d)").match(query, end)
    return match.end() if match else end


def _statements(block: list[Token]) -> list[list[Token]]:
    """The triples statements directly in a block (its tokens, braces included), each as its
    tokens without the ending `.`; groups, FILTERs and the like are stepped over whole."""
    depth = block[0].depth + 1
    inner, statements, index = block[1:-1], [], 0
    while index < len(inner):
        token = inner[index]
        if token.kind == "open":
            index = _past_group(inner, index)
        elif token.kind == "word" and token.text.upper() in ELEMENTS:
            index = _past_element(inner, index)
        elif token.kind == "other" and token.text == ".":
            index += 1
        else:
            end, nesting = index, 0
            while end < len(inner):
                here = inner[end]
                if here.depth == depth and nesting == 0:
                    if (here.kind == "other" and here.text == ".") or here.kind == "open":
                        break
                    if here.kind == "word" and here.text.upper() in ELEMENTS:
                        break
                if here.kind == "other" and here.text in ("[", "("):
                    nesting += 1
                elif here.kind == "other" and here.text in ("]", ")"):
                    nesting -= 1
                end += 1
            statements.append(inner[index:end])
            index = end
    return statements


def _past_group(inner: list[Token], index: int) -> int:
    depth = inner[index].depth
    for end in range(index + 1, len(inner)):
        if inner[end].kind == "close" and inner[end].depth == depth:
            return end + 1
    return len(inner)


def _past_element(inner: list[Token], index: int) -> int:
    """Past a FILTER, BIND, OPTIONAL, GRAPH, VALUES ... element: its first bracketed part (a
    group, or an expression in parentheses), or for VALUES its data block."""
    keyword = inner[index].text.upper()
    nesting = 0
    for end in range(index + 1, len(inner)):
        token = inner[end]
        if token.kind == "open" and nesting == 0:
            return _past_group(inner, end)
        if token.kind == "other" and token.text == "(":
            nesting += 1
        elif token.kind == "other" and token.text == ")":
            nesting -= 1
            if nesting == 0 and keyword not in ("VALUES",):
                return end + 1
    return len(inner)


def _subject(statement: list[Token]) -> str:
    """A statement's subject as written: a variable, a blank node label, or `[]`."""
    first = statement[0]
    if first.kind == "other" and first.text == "[" and len(statement) > 1 and statement[1].text == "]":
        return "[]"
    return first.text


def _predicates(statement: list[Token], subject: str) -> list[tuple[Token, list[list[Token]]]]:
    """A statement's predicate-object lists: each predicate with its objects' tokens."""
    lists: list[list[list[Token]]] = [[[]]]  # per `;`, its objects apart at each `,`
    nesting = 0
    for token in statement[2:] if subject == "[]" else statement[1:]:
        if token.kind == "other" and token.text in ("[", "("):
            nesting += 1
        elif token.kind == "other" and token.text in ("]", ")"):
            nesting -= 1
        if nesting == 0 and token.kind == "semicolon":
            lists.append([[]])
        elif nesting == 0 and token.kind == "other" and token.text == ",":
            lists[-1].append([])
        else:
            lists[-1][-1].append(token)
    return [(parts[0][0], [parts[0][1:], *parts[1:]]) for parts in lists if parts[0]]
