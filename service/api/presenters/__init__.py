"""Presenters: use-case answers (core types and use-case dataclasses) -> wire models, one
module per resource.

The convention: every core -> wire conversion is a function here (``<thing>_out``), never a
method of a wire model; ``service/schemas`` holds the wire shapes, the request models'
``to_core`` and the ``of`` constructors of small value types (``BandOut``, ``AccuracyOut``)
that several presenters share. Headers that state the data version come from
``service.api.answers``."""
