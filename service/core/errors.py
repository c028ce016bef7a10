"""What the pure core refuses, naming the input at fault."""

from __future__ import annotations


class InvalidConfiguration(ValueError):
    """A configuration the estimator refuses (an invalid combination, not a miss): ``field``
    names the offending input; ``code`` is a stable reason code where one applies (e.g.
    ``PRECISION_UNSUPPORTED``)."""

    def __init__(self, field: str, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.field = field
        self.message = message
        self.code = code


class MissingFigure(KeyError):
    """A datasheet figure the time model needs is unsourced (``null`` in the catalog)."""

    def __init__(self, gpu: str, figure: str) -> None:
        super().__init__(f"{gpu} has no sourced {figure}")
        self.gpu = gpu
        self.figure = figure
        self.message = f"{gpu} has no sourced {figure}"
