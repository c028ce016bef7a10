"""A small YAML writer for the JSON data model (the core takes no YAML library): block style,
strings as JSON (a JSON string is a YAML double-quoted scalar), multi-line strings as literal
blocks so scripts stay readable."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

_PLAIN_KEY = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./")


def _key(k: str) -> str:
    return k if k and set(k) <= _PLAIN_KEY and k[0] not in "-." else json.dumps(k)


def _scalar(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return json.dumps(v)
    return json.dumps(str(v), ensure_ascii=False)


def _block(s: str, indent: int) -> str:
    pad = " " * indent
    body = "\n".join(pad + line if line else "" for line in s.rstrip("\n").split("\n"))
    return "|\n" + body


def _lines(v: Any, indent: int) -> list[str]:
    pad = " " * indent
    out: list[str] = []
    if isinstance(v, Mapping):
        for k, x in v.items():
            head = f"{pad}{_key(str(k))}:"
            if (isinstance(x, Mapping) and x) or (isinstance(x, Sequence) and not isinstance(x, str) and x):
                out += [head, *_lines(x, indent + 2)]
            elif isinstance(x, str) and "\n" in x:
                out.append(f"{head} {_block(x, indent + 2)}")
            else:
                out.append(f"{head} {_empty(x) or _scalar(x)}")
        return out
    for x in v:
        inner = _lines(x, indent + 2) if isinstance(x, Mapping | list | tuple) and x else None
        if inner:
            out.append(f"{pad}- {inner[0].lstrip()}")
            out += inner[1:]
        elif isinstance(x, str) and "\n" in x:
            out.append(f"{pad}- {_block(x, indent + 2)}")
        else:
            out.append(f"{pad}- {_empty(x) or _scalar(x)}")
    return out


def _empty(x: Any) -> str | None:
    if isinstance(x, Mapping) and not x:
        return "{}"
    if isinstance(x, list | tuple) and not x:
        return "[]"
    return None


def dump(doc: Mapping[str, Any], comments: Sequence[str] = ()) -> str:
    """One YAML document, with ``# `` comment lines above it."""
    head = [f"# {c}" if c else "#" for c in comments]
    return "\n".join([*head, *_lines(doc, 0)]) + "\n"
