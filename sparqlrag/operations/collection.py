"""A collection, checked once per request: its name, IRIs and the running parts that hold it.

Every use case that works on one collection takes a `Collection`, made by `open_collection`
after the checks every surface makes in the same order: the name (400), the caller's grant
(403), existence (404).
"""

from __future__ import annotations

from dataclasses import dataclass

from sparqlrag.library.librarian import UnknownCollection
from sparqlrag.operations.access import EVERYTHING, Access, Scope
from sparqlrag.operations.failures import Refused
from sparqlrag.services import Services
from sparqlrag.store.vocab import DEFAULT_COLLECTION, InvalidName, Iris, check_collection


@dataclass(frozen=True)
class Collection:
    """One existing collection, opened for a caller: its name, its IRIs, the running parts that
    hold it, and the caller's grants (for what a use case may reach beyond it)."""

    services: Services
    iris: Iris
    access: Access

    @property
    def name(self) -> str:
        return self.iris.collection


def checked_name(name: str) -> str:
    """A collection name as given, or Refused (400 `bad_collection`) saying what is wrong with it."""
    try:
        return check_collection(name)
    except InvalidName as error:
        raise Refused(400, "bad_collection", str(error)) from None


async def open_collection(
    services: Services, name: str | None, access: Access = EVERYTHING, scope: Scope = "read"
) -> Collection:
    """The collection `name` (None: the default one) for a caller with `access`: 400 for a bad
    name, 403 for one beyond the caller's grants, 404 (UnknownCollection) for one that does not exist."""
    checked = checked_name(DEFAULT_COLLECTION if name is None else name)
    access.check(scope, checked)
    if not await services.collections.exists(checked):
        raise UnknownCollection(checked)
    return Collection(services, services.collections.iris(checked), access)
