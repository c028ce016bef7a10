"""A process-wide cache of canonical parameters for benchmark ingestion.

Agents submit the same configuration grid run after run, and a run carries up to 10,000
results: canonicalising (and hashing) each parameter set once per process, not once per
result, is most of the cost of a large submission.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from service.core.evidence.run_check import CanonicalParameters, canonicalise

CANON_CACHE_SIZE = 50_000
"""Entries kept; a tenth (the oldest) is dropped when full."""


class CanonicalCache:
    """Raw parameters -> canonical parameters, hash and JSON, shared across requests. Bounded
    (oldest entries dropped); values are never mutated by their users."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.data: dict[tuple[str, tuple[tuple[str, Any], ...]], CanonicalParameters] = {}
        self.lock = threading.Lock()

    def get(self, workload: str, params: Mapping[str, Any]) -> CanonicalParameters:
        # the wire model hands parameters over key-sorted, so the items are the key as they are
        key = (workload, tuple(params.items()))
        try:
            hit = self.data.get(key)
        except TypeError:  # unhashable values: not cached (canonicalisation refuses them anyway)
            return canonicalise(workload, params)
        if hit is None:
            hit = canonicalise(workload, params)
            with self.lock:
                if len(self.data) >= self.size:
                    for old in list(self.data)[: self.size // 10]:
                        self.data.pop(old, None)
                self.data[key] = hit
        return hit


canonical = CanonicalCache(CANON_CACHE_SIZE).get
"""The process's cache, as a :data:`~service.core.evidence.run_check.Canonicaliser`."""
