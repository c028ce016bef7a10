"""Documents checked against their wire schema before (or, injected, while) a use case runs.

Request bodies FastAPI can validate itself are declared as Pydantic models on the route; a GPU
document is taken as a plain JSON object (a PATCH is merged into the stored document first) and
checked here against :class:`~service.schemas.gpus.GpuDocument`. A failure is the use cases'
:class:`~service.usecases.errors.Invalid`, with one :class:`FieldError` per schema error at its
path inside the document, so ``api/problems.py`` answers it like any other refusal.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from service.schemas.gpus import GpuDocument
from service.usecases.errors import FieldError, Invalid


def field_errors(exc: ValidationError, prefix: Sequence[str | int] = ()) -> list[FieldError]:
    """Pydantic's errors as use-case field errors (paths under ``prefix``)."""
    return [FieldError((*prefix, *e["loc"]), e["msg"], type=e["type"]) for e in exc.errors()]


def gpu_document(doc: Mapping[str, Any]) -> dict[str, Any]:
    """``doc`` checked against the GPU document schema and normalised (defaults filled, JSON
    types): the :data:`service.usecases.catalog.DocumentValidator` the use cases take."""
    try:
        return GpuDocument.model_validate(doc).model_dump(mode="json")
    except ValidationError as exc:
        raise Invalid("the GPU document is invalid", fields=field_errors(exc)) from None
