"""Shared wire models: problem details (RFC 9457), pagination envelope, warnings, and the bound
types every request field uses (integers bounded to their column, finite floats in physical
ranges, NUL-free UTF-8 text, bounded JSON depth, sane timestamps, bounded decimals)."""

from __future__ import annotations

import datetime as dt
import math
import re
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, Strict, WithJsonSchema

from service.core.access.cursor import CATALOG_PATTERN, KEYSET_PATTERN, POSITION_PATTERN


class ProblemError(BaseModel):
    loc: list[str | int] = Field(
        description="path to the offending field, e.g. ['body', 'results', 3, 'metrics']"
    )
    msg: str
    type: str | None = None


class Problem(BaseModel):
    """RFC 9457 problem details (``application/problem+json``)."""

    model_config = ConfigDict(extra="allow")
    type: str = Field(description="URI identifying the problem type")
    title: str
    status: int
    detail: str | None = None
    instance: str | None = None
    errors: list[ProblemError] | None = None


class Warning_(BaseModel):
    code: str
    message: str
    data: dict[str, Any] = Field(default_factory=dict)


class Page(BaseModel):
    next_cursor: str | None = Field(
        description="pass as ?cursor= to get the next page; null on the last page"
    )
    count: int = Field(description="items on this page")


DataVersion = Annotated[
    str,
    Field(
        description="what the answer was computed from: c<catalog watermark>.m<measurement watermark>."
        "e<estimator version> (docs/architecture.md, 'Watermarks'); also the X-Data-Version header",
        examples=["c3.m42.e1.2.0"],
        pattern=r"^c\d+\.m\d+\.e.+$",
    ),
]


# ---- bound types: every value that reaches a column, a filter or the core is bounded here ------
#
# A request that breaks one of these is a 422 naming the field (FastAPI turns the Pydantic error
# into problem+json), the same on SQLite and PostgreSQL: nothing out of range reaches the database,
# where the two would fail differently (PostgreSQL: integer out of range, numeric field overflow,
# invalid byte sequence, stack depth; SQLite: stores it). Each type states its rule in the OpenAPI
# document too, so a generated client cannot send what the server refuses for an unstated reason.
# docs/architecture.md, "Where validation lives", says when to use which.

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
"""An ``Integer`` column (PostgreSQL ``integer``)."""
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
"""A ``BigInteger`` column (PostgreSQL ``bigint``; SQLite's integer)."""
MAX_JSON_DEPTH = 32
"""Nesting of free-form JSON objects (parameters, fingerprints, GPU documents, config.json):
real ones are 3-4 deep; PostgreSQL refuses ~300 and Python's recursion stops near 1000."""
FLOAT_ABS_MAX = 1e15
"""Largest magnitude of a free-form number (JSON maps, unbounded figures): every physical
quantity here is far below it, and float arithmetic on it stays finite."""
EARLIEST = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
LATEST = dt.datetime(2101, 1, 1, tzinfo=dt.UTC)
"""Timestamps are taken in [EARLIEST, LATEST) -- the years 1970 to 2100 -- after conversion to
UTC (a naive one is UTC)."""

NUL_FREE_PATTERN = r"^[^\x00]*$"
"""What the schema says of every free text: no NUL (PostgreSQL text cannot hold one)."""


def safe_text(value: str) -> str:
    """No NUL, and encodable as UTF-8 (a lone surrogate such as ``"\\udc80"``, which JSON's
    ``\\u`` escapes can carry, is not)."""
    if "\x00" in value:
        raise ValueError("must not contain NUL (\\u0000)")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("must be valid Unicode: a lone surrogate (\\ud800-\\udfff) is not") from None
    return value


def _json_ok(value: Any, depth: int, path: str) -> None:
    if isinstance(value, dict):
        if depth >= MAX_JSON_DEPTH:
            raise ValueError(f"nested deeper than {MAX_JSON_DEPTH} levels at {path or 'the top'}")
        for k, v in value.items():
            if not isinstance(k, str):
                raise ValueError(f"object keys must be strings at {path or 'the top'}")
            try:
                safe_text(k)
            except ValueError as exc:
                raise ValueError(f"key {path + '.' if path else ''}{k!r}: {exc}") from None
            _json_ok(v, depth + 1, f"{path}.{k}" if path else k)
    elif isinstance(value, list):
        if depth >= MAX_JSON_DEPTH:
            raise ValueError(f"nested deeper than {MAX_JSON_DEPTH} levels at {path or 'the top'}")
        for i, v in enumerate(value):
            _json_ok(v, depth + 1, f"{path}[{i}]")
    elif isinstance(value, str):
        try:
            safe_text(value)
        except ValueError as exc:
            raise ValueError(f"{path or 'value'}: {exc}") from None
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, int):
        if not INT64_MIN <= value <= INT64_MAX:
            raise ValueError(f"{path or 'value'}: integers must fit in 64 bits")
    elif isinstance(value, float) and value.is_integer() and INT64_MIN <= value <= INT64_MAX:
        return  # JSON Schema's integer (``2e18`` has no fraction): the schema's 64-bit range holds
    elif isinstance(value, float) and (not math.isfinite(value) or abs(value) > FLOAT_ABS_MAX):
        raise ValueError(
            f"{path or 'value'}: numbers must be finite and at most {FLOAT_ABS_MAX:g} in magnitude"
        )


def safe_json(value: Any) -> Any:
    """A free-form JSON value kept or searched as given: bounded depth, safe text in keys and
    values, 64-bit integers, finite floats of sane magnitude."""
    _json_ok(value, 0, "")
    return value


ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def iso_text(value: Any) -> Any:
    """Timestamps and dates arrive as ISO 8601 text (Pydantic would also read a number, or a
    numeric string, as Unix time -- the schema says ``format: date-time``, so that is refused)."""
    if isinstance(value, str) and not ISO_DATE.match(value):
        raise ValueError("must be an ISO 8601 date or date-time, e.g. 2026-12-01T23:00:00Z")
    if isinstance(value, bool | int | float):
        raise ValueError("must be an ISO 8601 string, not a number")
    return value


def json_int(value: Any) -> Any:
    """An integer as JSON has it: ``3`` or ``3.0`` (JSON Schema's integer), never ``true`` or ``"3"``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("must be an integer")
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError("must be an integer")
        return int(value)
    return value


YEARS_PATTERN = r"^(?:19[7-9][0-9]|20[0-9][0-9]|2100)-"
"""The years 1970 to 2100, as written: what the schema states of every timestamp and date."""


def sane_datetime(value: dt.datetime) -> dt.datetime:
    """A timestamp written in the years 1970 to 2100 (the year as written, which the schema's
    pattern states; the offset moves it at most a day, so nothing underflows), in UTC; naive
    means UTC."""
    if not EARLIEST.year <= value.year < LATEST.year:
        raise ValueError("must be in the years 1970 to 2100")
    return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)


def utc_datetime(value: dt.datetime) -> dt.datetime:
    """An answer's timestamp with its offset (a naive one, as SQLite returns, is UTC), so it is
    an RFC 3339 ``date-time``."""
    return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value


def bounded_decimal(*, max_digits: int, decimal_places: int, le: Decimal, description: str) -> Any:
    """A positive decimal that fits ``Numeric(max_digits, decimal_places)`` and is at most ``le``:
    a JSON number (rounded half-even to ``decimal_places``; at least one unit of the last
    place) or a string of plain digits (``"0.71"``: no sign, no exponent). The schema states
    both forms, so a client that follows it is never refused for the form."""
    int_digits = len(str(int(le))) - 1
    assert int_digits + decimal_places <= max_digits and le == Decimal(10) ** int_digits
    step = Decimal(1).scaleb(-decimal_places)
    # >= 1: up to int_digits digits, optional fraction; below 1: "0." then k zeros, a non-zero
    # digit, up to the remaining places (so "0", "0.0" are not positive and "0.10" is fine)
    below_one = "|".join(("0" * k) + rf"[1-9]\d{{0,{decimal_places - 1 - k}}}" for k in range(decimal_places))
    pattern = rf"^(?:[1-9]\d{{0,{int_digits - 1}}}(?:\.\d{{1,{decimal_places}}})?|0\.(?:{below_one}))$"

    def plain(value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError("must be a number or a decimal string")
        if isinstance(value, str):
            if not re.fullmatch(pattern, value):
                raise ValueError(
                    f"a decimal string must be plain digits, more than 0 and less than {le}, with at most "
                    f"{decimal_places} places after the point, e.g. '0.71'"
                )
            return Decimal(value)
        if isinstance(value, float):
            if not math.isfinite(value):
                raise ValueError("must be finite")
            return (
                Decimal(repr(value)).quantize(step, rounding=ROUND_HALF_EVEN) if abs(value) < 1e18 else value
            )
        if isinstance(value, int):
            return Decimal(value)
        return value

    return Annotated[
        Decimal,
        Strict(False),
        BeforeValidator(plain),
        Field(
            ge=step,
            le=le,
            max_digits=max_digits,
            decimal_places=decimal_places,
            allow_inf_nan=False,
            description=description,
        ),
        WithJsonSchema(
            {
                "anyOf": [
                    {"type": "number", "minimum": float(step), "maximum": float(le)},
                    {"type": "string", "pattern": pattern},
                ],
                "description": description,
            }
        ),
    ]


JsonInt = Annotated[int, Strict(False), BeforeValidator(json_int)]
"""An integer of a request body (``3`` or ``3.0``; not ``true``, not ``"3"``): add ``Field`` bounds."""

Int32 = Annotated[int, Field(ge=INT32_MIN, le=INT32_MAX)]
"""Any integer stored in or compared with an ``Integer`` column."""
BoundedInt32 = Int32
NonNegativeInt32 = Annotated[JsonInt, Field(ge=0, le=INT32_MAX)]
"""A count of a request body stored in an ``Integer`` column."""
Id32 = Annotated[int, Field(ge=1, le=INT32_MAX, description="row id")]
"""The id of a row whose key is an ``Integer`` (keys, alerts, pending GPUs)."""
Int64 = Annotated[JsonInt, Field(ge=INT64_MIN, le=INT64_MAX)]
BoundedInt64 = Int64
Id64 = Annotated[int, Field(ge=1, le=INT64_MAX, description="row id")]
"""The id of a row whose key is a ``BigInteger`` (benchmark results)."""
ByteCount = Annotated[JsonInt, Field(ge=0, le=INT64_MAX, description="bytes")]
"""A byte count of a request body (``BigInteger``)."""

FiniteFloat = Annotated[float, Field(allow_inf_nan=False, ge=-FLOAT_ABS_MAX, le=FLOAT_ABS_MAX)]
"""A float that is finite (no NaN, Infinity, 1e309) and of sane magnitude."""


def physical(lo: float, hi: float, *, lo_exclusive: bool = False, description: str | None = None) -> Any:
    """The bounds of a finite float in a physical range: ``Annotated[float, physical(1, 2000)]``
    for a power limit in W."""
    if lo_exclusive:
        return Field(gt=lo, le=hi, allow_inf_nan=False, description=description)
    return Field(ge=lo, le=hi, allow_inf_nan=False, description=description)


SafeStr = Annotated[
    str,
    AfterValidator(safe_text),
    Field(json_schema_extra={"pattern": NUL_FREE_PATTERN}),
]
"""Free text: NUL-free, valid UTF-8 (no lone surrogates). Add ``max_length`` where it is stored."""

NAME_INVISIBLE = (
    "\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u061c\\u115f\\u1160\\u180e\\u200b-\\u200f"
    "\\u2028-\\u202e\\u2060-\\u206f\\u3164\\ufe00-\\ufe0f\\ufeff\\uffa0\\ufff0-\\ufffb"
)
"""Characters a name (of a GPU, a model) must not carry: control characters, zero-width and
joiner characters, bidirectional marks and overrides, invisible fillers and variation
selectors -- text that looks like ``L40`` but is not (``L\u200b40``, ``\u202e04L``). One class,
in the regular-expression syntax both JSON Schema (ECMA 262) and Python read."""
NAME_PATTERN = rf"^[^{NAME_INVISIBLE}]*$"
_NAME_INVISIBLE = re.compile(rf"[{NAME_INVISIBLE}]")


def name_text(value: str) -> str:
    """A name as people type it: no invisible or direction-changing characters."""
    safe_text(value)
    found = _NAME_INVISIBLE.search(value)
    if found is not None:
        raise ValueError(
            f"must not contain control, zero-width, joiner or bidirectional characters "
            f"(found U+{ord(found.group()):04X} at {found.start()})"
        )
    return value


NameStr = Annotated[str, AfterValidator(name_text), Field(json_schema_extra={"pattern": NAME_PATTERN})]
"""A GPU or model name (slug, alias, PCI id, preset or Hugging Face id): :func:`name_text`.
Add ``max_length``."""

SAFE_JSON_VALUE = "SafeJsonValue"
SAFE_JSON_REF = {"$ref": f"#/components/schemas/{SAFE_JSON_VALUE}"}
SAFE_JSON_MARK = {"x-safe-json-value": True}
"""Stands for :data:`SAFE_JSON_REF` in a model's own schema (Pydantic resolves every ``$ref`` it
sees); the API document replaces it (``service.api.openapi_ops.refer_safe_json``)."""
SAFE_JSON_SCHEMA: dict[str, Any] = {
    "description": "any JSON value of a free-form document: NUL-free text (keys too), integers of 64 bits, "
    f"other numbers finite and at most {FLOAT_ABS_MAX:g} in magnitude, nested at most {MAX_JSON_DEPTH} deep",
    "anyOf": [
        {"type": "null"},
        {"type": "boolean"},
        {"type": "integer", "minimum": INT64_MIN, "maximum": INT64_MAX},
        {"type": "number", "minimum": -FLOAT_ABS_MAX, "maximum": FLOAT_ABS_MAX},
        {"type": "string", "pattern": NUL_FREE_PATTERN},
        {"type": "array", "items": SAFE_JSON_REF},
        {
            "type": "object",
            "propertyNames": {"pattern": NUL_FREE_PATTERN},
            "additionalProperties": SAFE_JSON_REF,
        },
    ],
}
"""The component every free-form JSON value refers to (the document states :func:`safe_json`)."""


def json_object_schema(**extra: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "propertyNames": {"pattern": NUL_FREE_PATTERN},
        "additionalProperties": dict(SAFE_JSON_MARK),
        "x-max-depth": MAX_JSON_DEPTH,
        **extra,
    }


JsonObject = Annotated[dict[str, Any], AfterValidator(safe_json), WithJsonSchema(json_object_schema())]
"""A free-form JSON object (parameters, fingerprint, config.json): depth <= MAX_JSON_DEPTH,
safe text, 64-bit integers, finite floats (the schema states it: :data:`SAFE_JSON_SCHEMA`)."""

SaneDatetime = Annotated[
    dt.datetime,
    Strict(False),
    BeforeValidator(iso_text),
    AfterValidator(sane_datetime),
    Field(
        description="RFC 3339 date-time in the years 1970 to 2100; without an offset it is UTC",
        json_schema_extra={"pattern": YEARS_PATTERN},
    ),
]
"""A timestamp a request gives (stored, or compared with stored ones)."""

UtcDatetime = Annotated[dt.datetime, AfterValidator(utc_datetime)]
"""A timestamp an answer gives: always with its offset."""


def sane_date(value: dt.date) -> dt.date:
    if not EARLIEST.year <= value.year < LATEST.year:
        raise ValueError("must be in the years 1970 to 2100")
    return value


SaneDate = Annotated[
    dt.date,
    Strict(False),
    BeforeValidator(iso_text),
    AfterValidator(sane_date),
    Field(
        description="ISO 8601 date in the years 1970 to 2100", json_schema_extra={"pattern": YEARS_PATTERN}
    ),
]
"""A calendar date a request gives (price and FX effective dates)."""


class RequestModel(BaseModel):
    """Base of every request body: unknown members are refused, and JSON types are taken as
    the schema states them (``true`` is not a number, ``"5"`` is not an integer); timestamps,
    dates and decimals are parsed from their string forms (their types say so)."""

    model_config = ConfigDict(extra="forbid", strict=True)


def whole_number(value: Any) -> Any:
    """A count in a query string: digits only (``500.0``, ``+5``, ``5e2`` are refused, so every
    reader of the query -- a rate rule, the route -- reads the same number)."""
    if isinstance(value, str) and not re.fullmatch(r"[0-9]{1,12}", value):
        raise ValueError("must be a whole number written in digits (no sign, point or exponent)")
    return value


PageLimit = Annotated[int, BeforeValidator(whole_number)]
"""The ``limit`` query parameter of a paged listing: add ``Query(ge=1, le=...)``."""

Cursor = Annotated[
    str,
    Field(
        pattern=KEYSET_PATTERN,
        max_length=20,
        description="the `next_cursor` of the previous page: `b<id>`, the page of the ids below it",
    ),
]
"""The ``cursor`` of a listing ordered newest first by id (results, runs, alerts)."""
PositionCursor = Annotated[
    str,
    Field(
        pattern=POSITION_PATTERN,
        max_length=10,
        description="the `next_cursor` of the previous page: `p<position>`, the page from that position",
    ),
]
"""The ``cursor`` of a positional listing (a GPU's measured cells)."""
CatalogCursor = Annotated[
    str,
    Field(
        pattern=CATALOG_PATTERN,
        max_length=120,
        description="the `next_cursor` of the previous page: `p<position>~<slug>`, the page after that GPU "
        "in this request's sort order (from the position when the GPU is gone)",
    ),
]
"""The ``cursor`` of the catalog listing."""
