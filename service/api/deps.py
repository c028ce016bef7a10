"""Request dependencies: settings, the unit of work, authentication."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Annotated

from fastapi import Depends, Header, Request

from service.db.uow import UnitOfWork
from service.settings import Settings
from service.usecases.catalog import AliasIndexCache
from service.usecases.keys import Principal, authenticate


def get_settings(request: Request) -> Settings:
    s: Settings = request.app.state.settings
    return s


def get_uow(request: Request) -> Iterator[UnitOfWork]:
    """One unit of work per request. A write use case commits when it returns
    (``usecases.transaction.commits``), before the route builds the response; this only
    closes (rolling back anything uncommitted, e.g. after an error)."""
    uow = UnitOfWork(request.app.state.session_factory)
    try:
        yield uow
    finally:
        uow.close()


def get_alias_cache(request: Request) -> AliasIndexCache:
    c: AliasIndexCache = request.app.state.alias_cache
    return c


SettingsDep = Annotated[Settings, Depends(get_settings)]
UowDep = Annotated[UnitOfWork, Depends(get_uow)]
AliasCacheDep = Annotated[AliasIndexCache, Depends(get_alias_cache)]


def require(scope: str) -> Callable[..., Principal | None]:
    def dep(
        uow: UowDep,
        settings: SettingsDep,
        authorization: Annotated[str | None, Header(include_in_schema=False)] = None,
    ) -> Principal | None:
        if scope == "read" and not settings.read_requires_key:
            return None
        return authenticate(uow, authorization, scope)

    return dep


ReadAuth = Annotated[Principal | None, Depends(require("read"))]
SubmitAuth = Annotated[Principal, Depends(require("submit"))]
AdminAuth = Annotated[Principal, Depends(require("admin"))]
