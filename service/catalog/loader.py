"""Load the shipped catalog (``service/catalog/data/*.json``) and reference prices / FX.

``catalog_version`` is a hash of the shipped files, so a corrected figure changes the version
and the upsert on start carries it to existing deployments.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DATA_DIR = Path(__file__).resolve().parent / "data"
VENDOR_FILES = ("nvidia.json", "amd.json", "intel.json")


@dataclass(frozen=True)
class ShippedCatalog:
    version: str
    gpus: list[dict[str, Any]]
    prices: list[dict[str, Any]]
    fx_rates: list[dict[str, Any]]


def load_shipped(data_dir: Path = DATA_DIR) -> ShippedCatalog:
    h = hashlib.sha256()
    gpus: list[dict[str, Any]] = []
    for name in VENDOR_FILES:
        p = data_dir / name
        if not p.exists():
            continue
        raw = p.read_bytes()
        h.update(name.encode() + raw)
        gpus.extend(json.loads(raw))
    prices: list[dict[str, Any]] = []
    fx: list[dict[str, Any]] = []
    pp = data_dir / "prices.json"
    if pp.exists():
        raw = pp.read_bytes()
        h.update(b"prices" + raw)
        doc = json.loads(raw)
        prices = list(doc.get("prices", []))
        fx = list(doc.get("fx_rates", []))
    return ShippedCatalog(version=h.hexdigest()[:16], gpus=gpus, prices=prices, fx_rates=fx)
