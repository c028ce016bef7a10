"""Shared wire models: problem details (RFC 9457), pagination envelope, warnings."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field


class ProblemError(BaseModel):
    loc: list[str | int] = Field(description="path to the offending field, e.g. ['body', 'results', 3, 'metrics']")
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
    next_cursor: str | None = Field(description="pass as ?cursor= to get the next page; null on the last page")
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
