"""A faster ``__init__`` for the frozen, slotted dataclasses an estimate builds.

A frozen dataclass's generated ``__init__`` sets each field with ``object.__setattr__(self,
name, value)``: a global and an attribute lookup, then the generic attribute machinery, per
field. An estimate builds ~80 such fields (job, configuration, memory breakdown, bands, answers),
and that was about a quarter of its CPU time. :func:`fast_init` replaces ``__init__`` by one
that calls each slot's own descriptor setter (bound once, when the class is decorated) -- the
same storage, about twice as fast. Everything else the dataclass decorator made stays as it was:
the signature (positional order, defaults, default factories), ``__post_init__``, the frozen
``__setattr__``/``__delattr__``, ``__eq__``, ``__hash__``, ``__repr__``, ``__match_args__``,
pickling, ``dataclasses.replace`` (it calls the class) and ``asdict``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

__all__ = ["fast_init", "replace"]

T = TypeVar("T")

_MISSING_FACTORY: Any = object()
"""Default of a parameter whose field has a ``default_factory`` (called when it is passed)."""


def fast_init(cls: type[T]) -> type[T]:
    """Give the frozen, slotted dataclass ``cls`` an ``__init__`` that sets each slot through
    its descriptor. Apply it above ``@dataclass(frozen=True, slots=True)``; refuses a class
    with ``init=False``, keyword-only or ``InitVar`` fields (none of the hot types has any)."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" not in cls.__dict__:
        raise TypeError(f"{cls.__name__}: fast_init is for frozen dataclasses with slots=True")
    fields = dataclasses.fields(cast(Any, cls))
    if len(getattr(cls, "__dataclass_fields__", {})) != len(fields):
        raise TypeError(f"{cls.__name__}: InitVar / ClassVar pseudo-fields are not supported")
    ns: dict[str, Any] = {"_MISSING_FACTORY": _MISSING_FACTORY}
    args: list[str] = []
    body: list[str] = []
    for i, f in enumerate(fields):
        if not f.init or f.kw_only:
            raise TypeError(f"{cls.__name__}.{f.name}: init=False and keyword-only fields are not supported")
        name = f.name
        setter = f"_set{i}"
        ns[setter] = cls.__dict__[name].__set__  # the slot's member descriptor
        if f.default is not dataclasses.MISSING:
            ns[f"_default{i}"] = f.default
            args.append(f"{name}=_default{i}")
        elif f.default_factory is not dataclasses.MISSING:
            ns[f"_factory{i}"] = f.default_factory
            args.append(f"{name}=_MISSING_FACTORY")
            body.append(f"    if {name} is _MISSING_FACTORY: {name} = _factory{i}()")
        else:
            args.append(name)
        body.append(f"    {setter}(self, {name})")
    if hasattr(cls, "__post_init__"):
        body.append("    self.__post_init__()")
    src = f"def __init__(self, {', '.join(args)}):\n" + "\n".join(body or ["    pass"]) + "\n"
    exec(src, ns)  # the source is built above from the class's own field names
    init = ns["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__doc__ = cls.__init__.__doc__
    type.__setattr__(cls, "__init__", init)
    return cls


_Replacer = Callable[[Any, Mapping[str, Any]], Any]
_REPLACERS: dict[type, _Replacer] = {}


def replace(obj: T, /, **changes: Any) -> T:
    """``dataclasses.replace`` in a third of the time for a dataclass whose fields are all
    positional ``__init__`` parameters: a per-class function, generated once, calls the class
    with each field from ``changes`` or ``obj`` (so ``__post_init__`` and its checks run as with
    ``dataclasses.replace``). An unknown name is a ``TypeError``; other classes take
    ``dataclasses.replace``. The recommender copies ~100 options, jobs and configurations a
    request."""
    r = _REPLACERS.get(type(obj))
    if r is None:
        r = _REPLACERS[type(obj)] = _replacer(type(obj))
    return cast(T, r(obj, changes))


def _replacer(cls: type) -> _Replacer:
    fields = dataclasses.fields(cast(Any, cls))
    if len(getattr(cls, "__dataclass_fields__", {})) != len(fields) or any(
        not f.init or f.kw_only for f in fields
    ):
        return lambda obj, changes: dataclasses.replace(obj, **changes)
    names = [f.name for f in fields]
    args = ", ".join(f"get({n!r}, obj.{n})" for n in names)
    src = (
        "def _replace(obj, changes):\n"
        "    if not _names.issuperset(changes):\n"
        "        raise TypeError(f'{_cls.__name__} has no field(s) {sorted(set(changes) - _names)}')\n"
        "    get = changes.get\n"
        f"    return _cls({args})\n"
    )
    ns: dict[str, Any] = {"_cls": cls, "_names": frozenset(names)}
    exec(src, ns)  # the source is built above from the class's own field names
    return cast(_Replacer, ns["_replace"])
