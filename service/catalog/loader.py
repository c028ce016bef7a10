"""Load the shipped catalog (``service/catalog/data/*.json``) and reference prices / FX.

``catalog_version`` is a hash of the shipped files (GPU documents, ``prices.json``,
``purchase_prices.json`` and the SkyPilot snapshot), so a corrected figure changes the version
and the upsert on start carries it to existing deployments.

The price rows the seed upserts (:func:`shipped_prices`) come from three files: the reference
rows of ``prices.json``, the purchase prices of ``purchase_prices.json`` (as ``purchase`` rows)
and the SkyPilot cloud snapshot (``data/skypilot/``, built by
:func:`service.catalog.skypilot_snapshot.build_snapshot`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DATA_DIR = Path(__file__).resolve().parent / "data"
VENDOR_FILES = ("nvidia.json", "amd.json", "intel.json")


@dataclass(frozen=True)
class ShippedCatalog:
    version: str
    gpus: list[dict[str, Any]]
    prices: list[dict[str, Any]]  # prices.json rows only; every shipped row: shipped_prices()
    fx_rates: list[dict[str, Any]]
    purchase_prices: list[dict[str, Any]] = field(default_factory=list)  # purchase_prices.json entries


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
    purchases: list[dict[str, Any]] = []
    pp = data_dir / "purchase_prices.json"
    if pp.exists():
        raw = pp.read_bytes()
        h.update(b"purchase" + raw)
        purchases = list(json.loads(raw).get("purchase_prices", []))
    sky = data_dir / "skypilot"
    if sky.is_dir():
        for f in sorted(p for p in sky.rglob("*") if p.is_file()):
            h.update(str(f.relative_to(sky)).encode() + f.read_bytes())
    return ShippedCatalog(
        version=h.hexdigest()[:16], gpus=gpus, prices=prices, fx_rates=fx, purchase_prices=purchases
    )


def purchase_rows(shipped: ShippedCatalog) -> list[dict[str, Any]]:
    """``purchase_prices.json`` entries as price rows (the mapping its ``_note`` states):
    ``pricing_model`` purchase, ``region`` global, ``instance_type`` the unit, GPUs per unit;
    the provider is the GPU's vendor (who sets the price). Vendor-stated figures, so
    ``is_estimate`` is false."""
    vendor = {str(g["slug"]): str(g.get("vendor") or "vendor") for g in shipped.gpus}
    return [
        {
            "gpu_slug": p["gpu_slug"],
            "provider": vendor.get(p["gpu_slug"], "vendor"),
            "region": "global",
            "instance_type": p["unit"],
            "gpus_per_instance": p["gpus_per_unit"],
            "pricing_model": "purchase",
            "currency": p["currency"],
            "amount": p["amount"],
            "effective_date": p["effective_date"],
            "source": p["source"],
            "is_estimate": False,
        }
        for p in shipped.purchase_prices
    ]


def shipped_prices(shipped: ShippedCatalog, data_dir: Path = DATA_DIR) -> list[dict[str, Any]]:
    """Every price row the seed upserts: ``prices.json``, the purchase prices and the SkyPilot
    snapshot's cloud rows (names mapped through the shipped catalog's aliases)."""
    from service.catalog.skypilot_snapshot import build_snapshot

    cloud: list[dict[str, Any]] = []
    if (data_dir / "skypilot" / "manifest.json").exists():
        cloud = build_snapshot(shipped.gpus, data_dir / "skypilot").prices
    return [*shipped.prices, *purchase_rows(shipped), *cloud]
