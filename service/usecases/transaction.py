"""The one commit point of a write use case.

A write use case is decorated with :func:`commits`: it loads through the repositories,
computes in core, writes through the repositories (which flush), and returns; the decorator
then commits the unit of work once, before the API turns the result into a response (DESIGN
"Transactions and consistency": a 2xx means committed). Nothing else in ``service.usecases``
commits. When the use case or its commit fails, the decorator rolls the transaction back at
once, in the same call (and so the same thread): a failed write holds no lock or connection
while its error travels to the client.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from typing import Concatenate, ParamSpec, TypeVar

from service.db.uow import UnitOfWork

P = ParamSpec("P")
R = TypeVar("R")


def commits(fn: Callable[Concatenate[UnitOfWork, P], R]) -> Callable[Concatenate[UnitOfWork, P], R]:
    """Run the use case, then commit its unit of work (the first positional argument)."""

    @functools.wraps(fn)
    def run(uow: UnitOfWork, /, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            result = fn(uow, *args, **kwargs)
            uow.commit()
        except BaseException:
            with contextlib.suppress(Exception):  # a dead connection: the original error says more
                uow.rollback()
            raise
        return result

    return run
