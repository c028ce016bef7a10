"""The stack fingerprint of a benchmark run: its completeness, types and ranges
(:data:`~service.core.catalog.vocabulary.FINGERPRINT_REQUIRED` and the tables beside it), its
hash, and the PCI device id it and the GPU identity carry.

Pure: no I/O.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from service.core.catalog.vocabulary import (
    _JSON_TYPES,
    FINGERPRINT_NULLABLE,
    FINGERPRINT_RANGES,
    FINGERPRINT_REQUIRED,
    FINGERPRINT_TYPES,
    FINGERPRINT_UNHASHED,
    FingerprintType,
    VocabularyError,
    stable_hash,
)


def check_fingerprint(fp: Mapping[str, Any], loc: tuple[str | int, ...] = ("fingerprint",)) -> dict[str, Any]:
    """Every fingerprint key present; required ones non-null; returns a normalised copy."""
    out: dict[str, Any] = {}
    for key in FINGERPRINT_REQUIRED:
        if key not in fp or fp[key] is None or fp[key] == "":
            raise VocabularyError((*loc, key), f"fingerprint field {key!r} is required")
        out[key] = fp[key]
    for key in FINGERPRINT_NULLABLE:
        if key not in fp:
            raise VocabularyError(
                (*loc, key), f"fingerprint field {key!r} is required (null where not applicable)"
            )
        out[key] = fp[key]
    for key in fp:
        if key not in out:
            raise VocabularyError((*loc, key), f"unknown fingerprint field {key!r}")
    for key, kind in FINGERPRINT_TYPES.items():
        value = out[key]
        wrong = not isinstance(value, _JSON_TYPES[kind]) or (kind == "number" and isinstance(value, bool))
        if value is not None and wrong:
            nullable = " or null" if key in FINGERPRINT_NULLABLE else ""
            raise VocabularyError(
                (*loc, key), f"fingerprint field {key!r} must be {kind_name(kind)}{nullable}"
            )
    for key, (lo, hi) in FINGERPRINT_RANGES.items():
        value = out.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise VocabularyError((*loc, key), f"fingerprint field {key!r} must be a finite number or null")
        if not lo <= value <= hi:
            raise VocabularyError(
                (*loc, key), f"fingerprint field {key!r} must be between {lo:g} and {hi:g}; got {value!r}"
            )
    nvls = out.get("nccl_nvls_enable")
    if isinstance(nvls, str):  # the environment string ("0"/"1") and a boolean are one value
        low = nvls.strip().lower()
        if low in {"0", "false", "off", "no"}:
            out["nccl_nvls_enable"] = False
        elif low in {"1", "true", "on", "yes"}:
            out["nccl_nvls_enable"] = True
    if isinstance(out["pci_device_id"], str):
        out["pci_device_id"] = normalise_pci_id(out["pci_device_id"], (*loc, "pci_device_id"))
    return out


def kind_name(kind: FingerprintType) -> str:
    return {
        "text": "text",
        "boolean": "a boolean",
        "number": "a number",
        "object": "an object",
        "flag": "a boolean or text",
    }[kind]


def fingerprint_hash(fp: Mapping[str, Any]) -> str:
    return stable_hash({k: v for k, v in fp.items() if k not in FINGERPRINT_UNHASHED})


PCI_ID_PATTERN = r"^(?:[0-9A-Fa-f]{4}:)?(?:0[xX])?[0-9A-Fa-f]{4}(?:[0-9A-Fa-f]{4})?$"
"""A PCI device id as tools print it: ``0x2335``, ``2335``, ``10de:2335`` (vendor:device) or
``0x233510DE`` (NVML's packed device << 16 | vendor)."""


def normalise_pci_id(value: str, loc: tuple[str | int, ...] = ("pci_device_id",)) -> str:
    """``0x2335``, ``2335``, ``10de:2335``, ``0x233510DE`` (NVML's packed form) -> ``0x2335``
    (:data:`PCI_ID_PATTERN`, which the API document states)."""
    if not re.fullmatch(PCI_ID_PATTERN, value):
        raise VocabularyError(loc, f"not a PCI device id: {value!r} (e.g. 0x2335, 10de:2335, 0x233510DE)")
    s = value.lower().rsplit(":", 1)[-1].removeprefix("0x")
    return f"0x{s[:4]}"
