"""One Settings object: defaults, then an optional TOML file, then SPARQLRAG_* env vars, then CLI flags."""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

DEFAULT_BASE_IRI = "http://localhost:7878/"

Tokens = Annotated[list[str], NoDecode]


class Settings(BaseSettings):
    """Every knob of the server, CLI and pipeline; documented in README.md ("Settings")."""

    model_config = SettingsConfigDict(env_prefix="SPARQLRAG_", extra="forbid")

    data_dir: Path = Path("data")
    base_iri: str = DEFAULT_BASE_IRI
    host: str = "127.0.0.1"
    port: int = 7878
    read_tokens: Tokens = Field(default_factory=list)
    write_tokens: Tokens = Field(default_factory=list)
    # tokens limited to named collections: {"TOKEN": ["read:finance", "write:hr"]} (JSON in the env var)
    collection_tokens: dict[str, list[str]] = Field(default_factory=dict)
    insecure: bool = False
    union_default_graph: bool = True
    query_timeout: float = 30.0
    max_query_timeout: float = 300.0
    max_sparql_bytes: int = 10 * 1024 * 1024
    max_concurrent_queries: int = 8  # SPARQL queries one client (token, else address) may run at once; 0: any
    max_concurrent_uploads: int = 4  # document uploads (and re-ingests) one client may have in flight; 0: any
    query_crash_budget: int = 3  # queries of a client that may stop the store in 10 minutes before it gets 429
    max_result_bytes: int = 128 * 1024 * 1024  # a client's query result (/sparql, MCP): more is 400 result_too_large
    max_upload_bytes: int = 512 * 1024 * 1024
    max_ontology_bytes: int = 32 * 1024 * 1024
    body_timeout: float = 30.0  # a request body that stalls this long ends with 408
    send_timeout: float = 30.0  # a piece of an answer the client does not take this long cuts the connection
    header_timeout: float = 10.0  # a request head (request line and headers) not in after this long: 408
    max_header_bytes: int = 32 * 1024  # a request head larger than this: 431
    max_connections: int = 1000  # open connections (and requests) beyond this get 503, once none is idle
    max_connections_per_address: int = 100  # beyond this, an address's longest-idle connection is closed
    keep_alive_timeout: int = 5  # seconds an idle keep-alive connection stays open
    # reverse proxies (addresses or networks) whose X-Forwarded-For names the client; none: the socket's peer
    trusted_proxies: Tokens = Field(default_factory=list)
    bulk_load_bytes: int = 16 * 1024 * 1024
    allow_remote: bool = False
    store_threads: int = 16  # clients' queries the store process runs at once (twice one client's limit)
    cors_origins: Tokens = Field(default_factory=lambda: ["*"])  # "*": reads from any site, writes from none
    # host names requests may name besides loopback's, the base IRI's and the bound host ("*": any)
    allowed_hosts: Tokens = Field(default_factory=list)
    # models
    offline: bool = True
    embedding_model: str = "sentence-transformers/all-MiniLM-L6-v2"
    reranker_model: str | None = "ms-marco-TinyBERT-L-2-v2"
    llm: Literal["none", "anthropic", "openai"] = "none"
    llm_model: str = "claude-sonnet-4-5"
    llm_base_url: str | None = None
    llm_api_key: str | None = None
    llm_concurrency: int = 4
    prompts_dir: Path | None = None
    # ingestion: each document is decoded in one of decode_workers processes, within these limits
    decode_workers: int = 2
    decode_timeout: float = 60.0  # seconds (wall clock and CPU) one document's decode may take
    decode_memory_bytes: int = 1024 * 1024 * 1024  # memory a decode may take beyond the decoder's own
    decode_max_unpacked_bytes: int = 256 * 1024 * 1024  # what a DOCX's members or a PDF's streams expand to
    decode_max_blocks: int = 200_000  # paragraphs, PDF lines and table rows of one document
    extractor: Literal["offline", "llm"] = "offline"
    chunk_size: int = 2000
    chunk_overlap: int = 100
    ingest_concurrency: int = 4
    entity_resolution: bool = True  # one node per thing (extraction/resolution.py); off: one node per spelling
    qdrant_url: str | None = None
    # the system of record in a SPARQL store the organisation runs (store/remote.py); none: the
    # embedded store in data_dir. Update and Graph Store URLs default to none: updates go to
    # store_url, graph writes as INSERT DATA.
    store_url: str | None = None
    store_update_url: str | None = None
    store_gsp_url: str | None = None
    store_username: str | None = None
    store_password: str | None = None
    store_token: str | None = None
    store_timeout: float = 60.0  # seconds a request to the store may take in all (queries: their own limit)
    store_max_response_bytes: int = 256 * 1024 * 1024  # the most one answer of the store may be
    store_union_parameter: str | None = "union-default-graph"  # none: the store's default graph is the union
    store_default_graph: str | None = None  # where the default graph is the union: the graph that stands for it
    store_triple_terms: bool | None = None  # store keeps RDF 1.2 triple terms (false: RDF 1.1 reification; none: ask)
    # ontology subset selection: a sentence or phrase selects its top_k nearest elements at or above threshold
    ontology_threshold: float = 0.3
    ontology_top_k: int = 10
    # explainability traces: how many each collection keeps (0: all), and for how many days (none: forever)
    trace_keep: int = 10_000
    trace_max_age_days: float | None = None
    # answers per minute per token (per client address without tokens) on the RAG routes; 0: no limit
    answer_rate: int = 120
    # retrieval: weights of the vector and keyword rankings in hybrid fusion (Weaviate's default alpha 0.7)
    hybrid_weights: tuple[float, float] = (0.7, 0.3)

    @field_validator("read_tokens", "write_tokens", "cors_origins", "trusted_proxies", "allowed_hosts", mode="before")
    @classmethod
    def _split_commas(cls, value: Any) -> Any:
        """Env vars carry lists as comma-separated text: SPARQLRAG_READ_TOKENS=a,b."""
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("collection_tokens")
    @classmethod
    def _grants(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        """Each token non-blank, each grant `read:COLLECTION` or `write:COLLECTION` (the names are
        checked where grants are read, operations/access.py)."""
        for token, grants in value.items():
            if not token.strip():
                raise ValueError("a collection token must not be blank")
            if not grants:
                raise ValueError("a collection token needs at least one grant, such as read:COLLECTION")
            for grant in grants:
                scope, _, collection = grant.partition(":")
                if scope not in ("read", "write") or not collection:
                    raise ValueError(f"a grant is read:COLLECTION or write:COLLECTION, not {grant!r}")
        return value

    @model_validator(mode="after")
    def _tokens_unique(self) -> Settings:
        """A token has one meaning: the same one in two lists would be read as the wider."""
        lists = [set(self.read_tokens), set(self.write_tokens), set(self.collection_tokens)]
        if any(lists[i] & lists[j] for i in range(3) for j in range(i + 1, 3)):
            raise ValueError("a token appears in more than one of read_tokens, write_tokens, collection_tokens")
        return self

    @field_validator("trusted_proxies")
    @classmethod
    def _networks(cls, value: list[str]) -> list[str]:
        for proxy in value:
            try:
                ipaddress.ip_network(proxy, strict=False)
            except ValueError:
                raise ValueError(f"a trusted proxy is an IP address or network, not {proxy[:100]!r}") from None
        return value

    @field_validator("store_union_parameter", "store_default_graph", "store_triple_terms", mode="before")
    @classmethod
    def _empty_is_none(cls, value: Any) -> Any:
        """TOML and env vars have no null: an empty text (or "auto" for triple terms) is none."""
        return None if isinstance(value, str) and value.strip().lower() in ("", "auto") else value

    @field_validator("store_url", "store_update_url", "store_gsp_url")
    @classmethod
    def _store_endpoint(cls, value: str | None) -> str | None:
        """The one kind of address the server will contact for its store: an http(s) URL with a host."""
        if value is not None and not re.fullmatch(r"https?://[^/?#\s]+(?:[/?#]\S*)?", value):
            raise ValueError(f"must be an http(s) URL with a host, got {value[:200]!r}")
        return value

    @field_validator("store_default_graph")
    @classmethod
    def _absolute_iri(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]*:[^\s<>\"{}|^`\\]+", value):
            raise ValueError(f"must be an absolute IRI, got {value[:200]!r}")
        return value

    @field_validator("hybrid_weights")
    @classmethod
    def _weights(cls, value: tuple[float, float]) -> tuple[float, float]:
        if min(value) < 0 or sum(value) <= 0:
            raise ValueError("hybrid_weights are two non-negative numbers (vector, keyword), not both zero")
        return value

    @field_validator("base_iri")
    @classmethod
    def _base_ends_with_slash(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"base_iri must be an http(s) IRI, got {value!r}")
        return value if value.endswith("/") else value + "/"

    @field_validator(
        "trace_keep", "answer_rate", "max_concurrent_queries", "max_concurrent_uploads", "query_crash_budget"
    )
    @classmethod
    def _not_negative(cls, value: int) -> int:
        if value < 0:
            raise ValueError("must be 0 (no limit) or more")
        return value

    @field_validator(
        "max_connections_per_address",
        "keep_alive_timeout",
        "decode_workers",
        "decode_memory_bytes",
        "decode_max_unpacked_bytes",
        "decode_max_blocks",
    )
    @classmethod
    def _at_least_one(cls, value: int) -> int:
        if value < 1:
            raise ValueError("must be 1 or more")
        return value

    @field_validator(
        "query_timeout", "max_query_timeout", "body_timeout", "header_timeout", "decode_timeout", "send_timeout"
    )
    @classmethod
    def _positive(cls, value: float) -> float:
        if value <= 0:
            raise ValueError("timeouts must be positive seconds")
        return value

    @property
    def store_path(self) -> Path:
        return self.data_dir / "oxigraph"

    @property
    def models_dir(self) -> Path:
        return self.data_dir / "models"

    @property
    def auth_enabled(self) -> bool:
        return bool(self.read_tokens or self.write_tokens or self.collection_tokens)

    def check_bind_address(self) -> None:
        """Refuse to expose an open server: non-loopback needs tokens or an explicit --insecure."""
        if self.auth_enabled or self.insecure:
            return
        host = self.host.strip("[]")
        if host == "localhost":
            return
        try:
            if ipaddress.ip_address(host).is_loopback:
                return
        except ValueError:
            pass
        raise ValueError(
            f"refusing to bind {self.host} without tokens: set SPARQLRAG_WRITE_TOKENS / "
            "SPARQLRAG_READ_TOKENS, or pass --insecure to serve without authentication"
        )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return init_settings, env_settings, TomlConfigSettingsSource(settings_cls)


def load_settings(config_file: Path | None = None, **overrides: Any) -> Settings:
    """Settings from an optional TOML file (lowest), env vars, then explicit overrides (CLI flags)."""
    overrides = {key: value for key, value in overrides.items() if value is not None}
    if config_file is None:
        return Settings(**overrides)
    if not config_file.is_file():
        raise ValueError(f"config file not found: {config_file}")

    class FileSettings(Settings):
        model_config = SettingsConfigDict(toml_file=config_file)

    # (only what a source set: Settings.model_fields_set says what nobody chose, such as the base IRI)
    return Settings.model_validate(FileSettings(**overrides).model_dump(exclude_unset=True))
