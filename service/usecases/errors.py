"""What a use case can refuse, in domain terms.

These errors say *what* went wrong and *which input field* is at fault; they carry no HTTP
status and no request location. The API layer (``service.api.problems``) maps each kind to a
status and turns a :class:`FieldError` path into an RFC 9457 ``errors[].loc`` (``body`` for
writes, ``query`` for reads, unless the field names its location, e.g. a header).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

Location = Literal["body", "query", "path", "header"]


# Error ``type`` codes of the rules a JSON Schema cannot state (catalog membership, the
# estimator's rules); each operation lists those it may answer (``x-domain-rules``,
# service.api.openapi_ops.DOMAIN_RULES).
CONFIGURATION = "configuration"
"""A combination the estimator refuses (QLoRA in fp32, a tensor-parallel degree that does not
divide the KV heads, a deadline without tokens...): the rule is the model's, stated in the answer."""
UNKNOWN_MODEL = "unknown_model"
"""A model name that is no preset, alias or Hugging Face id of the catalog (``GET /v1/models``)."""
UNSUPPORTED_MODEL = "unsupported_model"
"""A config.json of an architecture the estimator does not model, or not consistent with itself."""
UNKNOWN_GPU = "unknown_gpu"
"""A GPU name in a request body that the catalog does not resolve (``GET /v1/gpus``)."""
DUPLICATE_GPU = "duplicate_gpu"
"""Two names of one list that name the same GPU."""


@dataclass(frozen=True, slots=True)
class FieldError:
    """One input at fault: ``path`` inside the request (``("items", 3, "gpu")``), a message,
    and the location only where it is not the request's main input (headers, query flags)."""

    path: tuple[str | int, ...]
    msg: str
    location: Location | None = None
    type: str | None = None


class UseCaseError(Exception):
    """Base of every refusal. ``kind`` is the stable machine name (the problem type)."""

    kind: ClassVar[str] = "bad-request"

    def __init__(self, detail: str, *, fields: Sequence[FieldError] = (), **extra: Any) -> None:
        super().__init__(detail)
        self.detail = detail
        self.fields: tuple[FieldError, ...] = tuple(fields)
        self.extra = extra

    def at(self, *prefix: str | int) -> UseCaseError:
        """The same error with every field path prefixed (an item inside a batch)."""
        clone = type(self)(
            self.detail,
            fields=[FieldError((*prefix, *f.path), f.msg, f.location, f.type) for f in self.fields],
            **self.extra,
        )
        return clone


class NotFound(UseCaseError):
    kind = "not-found"


class Gone(UseCaseError):
    kind = "gone"


class Conflict(UseCaseError):
    kind = "conflict"


class IdempotencyConflict(UseCaseError):
    kind = "idempotency-conflict"


class RunIdTaken(Conflict):
    """A run id another API key stored: run ids are global, and the refusal reveals nothing of
    the stored run."""

    kind = "run-id-taken"


class PreconditionFailed(UseCaseError):
    kind = "precondition-failed"


class PreconditionRequired(UseCaseError):
    kind = "precondition-required"


class Unauthorized(UseCaseError):
    kind = "unauthorized"


class Forbidden(UseCaseError):
    kind = "forbidden"


class Invalid(UseCaseError):
    """The input is well-formed but refused (an invalid combination, an unknown name in a
    field, a cursor this API did not issue)."""

    kind = "validation-error"


class PayloadTooLarge(UseCaseError):
    kind = "payload-too-large"


class Ambiguous(UseCaseError):
    """A name matches several catalog entries; ``extra['candidates']`` lists them."""

    kind = "ambiguous"
