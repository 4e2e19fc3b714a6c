"""What a command works with: its settings, and the store and services it opens on first use."""

from __future__ import annotations

import argparse
import asyncio
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

from sparqlrag.config import Settings, load_settings
from sparqlrag.operations.requests import validated
from sparqlrag.store.base import QuadStore
from sparqlrag.store.data_dir import is_data_dir, pinned_base_iri, prepare_data_dir
from sparqlrag.store.embedded import EmbeddedStore

if TYPE_CHECKING:
    from sparqlrag.operations.documents import Extractor
    from sparqlrag.services import Models, Services


M = TypeVar("M", bound=BaseModel)
# the commands that may make a data directory: those that put data in, and the server (which takes uploads)
CREATE_DATA = frozenset({"serve", "demo", "mcp", "load", "update", "ingest", "ontology", "collections", "core"})
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1", "[::1]")


class CliError(Exception):
    """A user-facing failure: printed as one line, exit status 2."""


def request_of(model: type[M], args: argparse.Namespace, **values: Any) -> M:
    """An operation's request from the options the command line gave (those left out take the
    model's defaults) and `values`; Refused (400) names what is wrong."""
    given = {name: getattr(args, name) for name in model.model_fields if getattr(args, name, None) is not None}
    return validated(model, given | values)


def settings_of(args: argparse.Namespace) -> Settings:
    """The settings file, environment and defaults, with the command line's options on top."""
    try:
        settings = load_settings(
            args.config,
            data_dir=args.data_dir,
            base_iri=args.base_iri,
            host=getattr(args, "host", None),
            port=getattr(args, "port", None),
            insecure=getattr(args, "insecure", None),
            store_url=args.store_url,
            store_update_url=args.store_update_url,
            store_gsp_url=args.store_gsp_url,
        )
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors())
        raise CliError(f"invalid settings: {problems}") from None
    except ValueError as error:
        raise CliError(str(error)) from None
    return with_base_iri(settings)


def with_base_iri(settings: Settings) -> Settings:
    """Settings whose base IRI nobody set (flag, environment, file) take the data directory's
    pinned one, so a directory made with --base-iri needs it only once; a new directory served
    on another loopback port mints IRIs that resolve there."""
    if "base_iri" in settings.model_fields_set:
        return settings
    pinned = pinned_base_iri(settings.data_dir)
    if pinned is None and "port" in settings.model_fields_set and settings.host in LOOPBACK_NAMES:
        pinned = f"http://localhost:{settings.port}/"
    return settings.model_copy(update={"base_iri": pinned}) if pinned else settings


def load_models(settings: Settings) -> Models:
    """The embedder, reranker and LLM; a configuration the user can fix is a CliError."""
    from sparqlrag.services import Models  # seconds to import: only commands that need models pay it

    try:
        return Models.load(settings)
    except ValueError as error:  # (a model that cannot load, or an LLM that fails, is a user failure too)
        raise CliError(str(error)) from None


class Session:
    """One command's resources. The store opens the data directory (a server holding it makes
    that a clear StoreError); the services load the models, so commands that only read or write
    RDF never pay for them."""

    def __init__(self, settings: Settings, args: argparse.Namespace) -> None:
        self.settings, self.args = settings, args

    @cached_property
    def store(self) -> QuadStore:
        """The store at --store-url, or the embedded one in the data directory (which only the
        commands that put data in may create: a query of a folder that holds none is a mistake)."""
        data_dir = self.settings.data_dir
        if not self.settings.store_url and self.args.command not in CREATE_DATA and not is_data_dir(data_dir):
            raise CliError(
                f"{data_dir} holds no sparqlrag data: name the data directory with --data-dir (or "
                "SPARQLRAG_DATA_DIR), or put data in first with `sparqlrag ingest PATH` or `sparqlrag load FILE`"
            )
        prepare_data_dir(data_dir, self.settings.base_iri)
        if self.settings.store_url:
            from sparqlrag.services import remote_store  # seconds to import: only when it is needed

            return remote_store(self.settings)
        return EmbeddedStore(self.settings.store_path, allow_remote=self.settings.allow_remote)

    @cached_property
    def services(self) -> Services:
        from sparqlrag.services import Services

        services = Services.open(self.settings, self.store, _pre_extracted(self.args), load_models(self.settings))
        asyncio.run(services.repair())  # what a killed server or command left, before this one writes
        return services

    def close(self) -> None:
        """Closes what was opened, the services before the store they use."""
        if "services" in self.__dict__:
            self.services.close()
        if "store" in self.__dict__:
            self.store.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _pre_extracted(args: argparse.Namespace) -> Extractor | None:
    """`ingest --triples`: read and checked before anything is ingested (or any model loads)."""
    if getattr(args, "triples", None) is None:
        return None
    from sparqlrag.operations.documents import pre_extracted  # (the pipeline's import: seconds)

    return pre_extracted(args.triples)
