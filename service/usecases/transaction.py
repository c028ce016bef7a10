"""The one commit point of a write use case.

A write use case is decorated with :func:`commits`: it loads through the repositories,
computes in core, writes through the repositories (which flush), and returns; the decorator
then commits the unit of work once, before the API turns the result into a response (DESIGN
"Transactions and consistency": a 2xx means committed). Nothing else in ``service.usecases``
commits; an exception leaves the transaction to be rolled back when the unit of work closes.
"""

from __future__ import annotations

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
        result = fn(uow, *args, **kwargs)
        uow.commit()
        return result

    return run
