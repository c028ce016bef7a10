"""Offline hardware identification: (PCI device id, NVML memory total) -> catalog slug guess.

The table (``hardware.json`` beside this module) is bundled so that an agent on a node with
no network can still say what it is running on. It is a *guess*: the service resolves every
submission again by PCI id + memory against its own catalog, and an unknown device makes the
run ``pending`` there rather than refused.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from service.core.catalog.fingerprint import normalise_pci_id
from service.core.catalog.vocabulary import VocabularyError

MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class HardwareEntry:
    pci_device_id: str
    name: str
    slug: str
    memory_mib_nominal: int
    memory_mib_min: int
    memory_mib_max: int
    compute_capability: str


@lru_cache(maxsize=1)
def hardware_table() -> tuple[HardwareEntry, ...]:
    raw = resources.files("service.agent").joinpath("hardware.json").read_text(encoding="utf-8")
    doc: dict[str, Any] = json.loads(raw)
    return tuple(HardwareEntry(**e) for e in doc["entries"])


def identify(pci_device_id: str, memory_total_bytes: int | None) -> HardwareEntry | None:
    """The table entry for a PCI device id whose memory range contains ``memory_total_bytes``.

    ``pci_device_id`` may be in any form :func:`normalise_pci_id` accepts (``0x2335``,
    ``10de:2335`` or NVML's packed ``0x233510DE``). With no memory figure, the entry is
    returned only when the PCI id alone is unambiguous.
    """
    try:
        pci = normalise_pci_id(pci_device_id)
    except VocabularyError:
        return None
    candidates = [e for e in hardware_table() if e.pci_device_id == pci]
    if memory_total_bytes is None:
        return candidates[0] if len(candidates) == 1 else None
    mib = memory_total_bytes / MIB
    for e in candidates:
        if e.memory_mib_min <= mib <= e.memory_mib_max:
            return e
    return None
