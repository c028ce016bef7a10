"""Catalog API against the real app, real migrations and the shipped catalog."""

from __future__ import annotations

import copy
import uuid

from fastapi.testclient import TestClient

from tests.conftest import auth

MIB = 2**20


def test_l40_datasheet_figures(client: TestClient) -> None:
    r = client.get("/v1/gpus/NVIDIA-L40")
    assert r.status_code == 200, r.text
    g = r.json()
    assert g["slug"] == "nvidia-l40"
    assert g["architecture"] == "Ada Lovelace"
    assert g["memory"]["marketed"].startswith("48 GB")
    assert g["memory"]["bandwidth_gb_per_s"] == 864
    assert g["peaks"]["fp32_tflops"] == 90.5
    assert g["power"]["tdp_w"] == 300
    assert g["supports"]["fp8"] == "yes"
    assert r.headers["ETag"]


def test_l20_by_short_name(client: TestClient) -> None:
    g = client.get("/v1/gpus/l20").json()
    assert g["slug"] == "nvidia-l20"
    assert g["memory"]["marketed"].startswith("48 GB")
    assert g["memory"]["bandwidth_gb_per_s"] == 864


def test_h200_by_nvml_name_has_measured_usable_memory(client: TestClient) -> None:
    r = client.get("/v1/gpus/NVIDIA%20H200")
    assert r.status_code == 200, r.text
    g = r.json()
    assert g["slug"] == "nvidia-h200-sxm"
    assert g["memory"]["usable_memory_bytes"] == 143_771 * MIB
    assert g["form_factor"] == "sxm"


def test_ambiguous_alias_lists_both_a100_80gb(client: TestClient) -> None:
    r = client.get("/v1/gpus/A100-80GB")
    assert r.status_code == 300
    body = r.json()
    slugs = sorted(c["slug"] for c in body["candidates"])
    assert slugs == ["nvidia-a100-pcie-80gb", "nvidia-a100-sxm4-80gb"]
    r2 = client.get("/v1/gpus/A100-80GB", params={"on_ambiguous": "default"})
    assert r2.status_code == 200
    assert r2.json()["slug"] in slugs
    assert r2.json()["warnings"][0]["code"] == "assumed_variant"


def test_every_listed_slug_names_its_own_gpu(client: TestClient) -> None:
    """The list links each GPU by its slug; "intel-gaudi3" normalises like the family name
    "Gaudi 3" (two GPUs) and was answered 300. A slug is exact; the family stays ambiguous."""
    slugs = [g["slug"] for g in client.get("/v1/gpus", params={"limit": 500}).json()["items"]]
    assert "intel-gaudi3" in slugs and len(slugs) > 40
    answered = {s: client.get(f"/v1/gpus/{s}") for s in slugs}
    assert {s: r.status_code for s, r in answered.items() if r.status_code != 200} == {}
    assert all(r.json()["slug"] == s for s, r in answered.items())
    family = client.get("/v1/gpus/Gaudi 3")
    assert family.status_code == 300
    assert [c["slug"] for c in family.json()["candidates"]] == ["intel-gaudi3", "intel-gaudi3-pcie"]


def test_gfd_labels_with_shared_and_mig_suffixes(client: TestClient) -> None:
    r = client.get("/v1/gpus/NVIDIA-H100-80GB-HBM3-SHARED")
    assert r.status_code == 200, r.text
    assert r.json()["slug"] == "nvidia-h100-sxm"
    assert [w["code"] for w in r.json()["warnings"]] == ["shared_gpu"]
    r = client.get("/v1/gpus/NVIDIA-A100-SXM4-40GB-MIG-1g.5gb")
    assert r.status_code == 200, r.text
    assert r.json()["slug"] == "nvidia-a100-sxm4-40gb"
    assert r.json()["warnings"][0]["data"]["mig_profile"] == "1g.5gb"


def test_lookup_by_pci_device_id(client: TestClient) -> None:
    for ident in ("0x2335", "10de:2335", "0x233510DE"):
        r = client.get(f"/v1/gpus/{ident}")
        assert r.status_code == 200, (ident, r.text)
        assert r.json()["slug"] == "nvidia-h200-sxm"


def test_unknown_name_is_404_problem_with_close_matches(client: TestClient) -> None:
    r = client.get("/v1/gpus/H2OO")
    assert r.status_code == 404
    assert r.headers["content-type"].startswith("application/problem+json")
    p = r.json()
    assert p["status"] == 404 and p["type"].endswith("/not-found")
    r = client.get("/v1/gpus/nvidia-h100-sx")
    assert "nvidia-h100-sxm" in r.json()["close_matches"]


def test_etag_if_none_match_304(client: TestClient) -> None:
    r = client.get("/v1/gpus/nvidia-l4")
    etag = r.headers["ETag"]
    r2 = client.get("/v1/gpus/nvidia-l4", headers={"If-None-Match": etag})
    assert r2.status_code == 304
    r3 = client.get("/v1/gpus/nvidia-l4", headers={"If-None-Match": '"0-stale"'})
    assert r3.status_code == 200
    # a list, the weak form (If-None-Match compares weakly) and "*" match; a tag that merely
    # contains this one does not
    for header in (f'"0-stale", {etag}', f"W/{etag}", "*"):
        assert client.get("/v1/gpus/nvidia-l4", headers={"If-None-Match": header}).status_code == 304, header
    assert client.get("/v1/gpus/nvidia-l4", headers={"If-None-Match": etag[:-1] + 'x"'}).status_code == 200


def test_the_page_and_its_files_answer_304_by_the_same_rule(client: TestClient) -> None:
    etag = client.get("/static/app.js").headers["etag"]
    assert client.get("/static/app.js", headers={"If-None-Match": f'"other", W/{etag}'}).status_code == 304
    assert client.get("/static/app.js", headers={"If-None-Match": etag.rstrip('"') + 'x"'}).status_code == 200


def test_list_filters_sort_and_cursor(client: TestClient) -> None:
    r = client.get("/v1/gpus", params={"limit": 500})
    assert r.status_code == 200
    all_items = r.json()["items"]
    assert len(all_items) >= 35
    # every figure group with a value is sourced
    for g in all_items:
        groups = {s["group"] for s in g["sources"]}
        assert g["memory"]["bandwidth_gb_per_s"] is None or "memory" in groups, g["slug"]
        assert all(v is None for v in g["peaks"].values()) or "peaks" in groups, g["slug"]
    r = client.get(
        "/v1/gpus",
        params={
            "vendor": "nvidia",
            "min_usable_memory_gib": 80,
            "supports": ["fp8"],
            "sort": "-usable_memory_bytes",
        },
    )
    items = r.json()["items"]
    assert items and all(g["vendor"] == "nvidia" and g["supports"]["fp8"] == "yes" for g in items)
    usable = [g["memory"]["usable_memory_bytes"] for g in items if g["memory"]["usable_memory_bytes"]]
    assert usable == sorted(usable, reverse=True)  # sorted by usable memory; unsourced ones last
    # the floor reads the usable memory, the physical where that is unsourced (the H200's)
    assert all(
        (g["memory"]["usable_memory_bytes"] or g["memory"]["memory_bytes"]) >= 80 * 2**30 for g in items
    )
    assert "nvidia-h200-sxm" in {g["slug"] for g in items}
    amd = client.get("/v1/gpus", params={"vendor": "amd", "min_usable_memory_gib": 100}).json()["items"]
    assert {"amd-mi300x", "amd-mi325x", "amd-mi355x"} <= {g["slug"] for g in amd}
    ada = client.get("/v1/gpus", params={"architecture": "ada"}).json()["items"]
    assert ada and all(g["architecture"] == "Ada Lovelace" for g in ada)
    blackwell = {
        g["slug"] for g in client.get("/v1/gpus", params={"architecture": "blackwell"}).json()["items"]
    }
    assert {"nvidia-b200", "nvidia-b300"} <= blackwell  # the family takes Blackwell Ultra
    r = client.get("/v1/gpus", params={"form_factor": "sxm", "nvlink_topology": "switched"})
    assert all(g["form_factor"] == "sxm" for g in r.json()["items"])
    # cursor pagination walks everything exactly once
    seen: list[str] = []
    cursor = None
    while True:
        params: dict[str, object] = {"limit": 7, "sort": "-bandwidth_gb_per_s"}
        if cursor:
            params["cursor"] = cursor
        page = client.get("/v1/gpus", params=params).json()
        seen.extend(g["slug"] for g in page["items"])
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert len(seen) == len(set(seen)) == len(all_items)


def test_list_rejects_bad_query(client: TestClient) -> None:
    r = client.get("/v1/gpus", params={"sort": "colour"})
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["query", "sort"]
    r = client.get("/v1/gpus", params={"form_factor": "usb"})
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["query", "form_factor"]
    r = client.get("/v1/gpus", params={"cursor": "!!!"})
    assert r.status_code == 422


def _doc(slug: str) -> dict[str, object]:
    return {
        "slug": slug,
        "vendor": "nvidia",
        "name": f"Test GPU {slug}",
        "architecture": "Hopper",
        "form_factor": "pcie",
        "memory": {"marketed": "10 GB", "memory_bytes": 10 * 2**30, "bandwidth_gb_per_s": 100.0},
        "power": {"tdp_w": 100},
        "aliases": [{"name": f"Alias {slug}", "kind": "short"}],
        "sources": [
            {"group": "memory", "title": "test sheet", "source_kind": "vendor-datasheet"},
            {"group": "power", "title": "test sheet", "source_kind": "vendor-datasheet"},
        ],
    }


def test_admin_writes_need_admin_key(client: TestClient, submit_key: str) -> None:
    slug = f"nvidia-test-{uuid.uuid4().hex[:6]}"
    assert client.post("/v1/gpus", json=_doc(slug)).status_code == 401
    r = client.post("/v1/gpus", json=_doc(slug), headers=auth(submit_key))
    assert r.status_code == 403 and r.headers["content-type"].startswith("application/problem+json")
    assert client.get(f"/v1/gpus/{slug}").status_code == 404


def test_admin_create_update_delete_with_if_match(client: TestClient, admin_key: str) -> None:
    slug = f"nvidia-test-{uuid.uuid4().hex[:6]}"
    h = auth(admin_key)
    r = client.post("/v1/gpus", json=_doc(slug), headers=h)
    assert r.status_code == 201, r.text
    etag = r.headers["ETag"]
    assert client.post("/v1/gpus", json=_doc(slug), headers=h).status_code == 409
    assert client.get(f"/v1/gpus/Alias {slug}").json()["slug"] == slug
    # missing If-Match -> 428, stale -> 412, right -> 200
    assert client.patch(f"/v1/gpus/{slug}", json={"power": {"tdp_w": 120}}, headers=h).status_code == 428
    r = client.patch(f"/v1/gpus/{slug}", json={"power": {"tdp_w": 120}}, headers={**h, "If-Match": '"9-x"'})
    assert r.status_code == 412
    r = client.patch(f"/v1/gpus/{slug}", json={"power": {"tdp_w": 120}}, headers={**h, "If-Match": etag})
    assert r.status_code == 200, r.text
    assert r.json()["power"]["tdp_w"] == 120
    new_etag = r.headers["ETag"]
    assert new_etag != etag
    # invalid patch -> 422 naming the field, nothing changes
    r = client.patch(f"/v1/gpus/{slug}", json={"power": {"tdp_w": -5}}, headers={**h, "If-Match": new_etag})
    assert r.status_code == 422
    assert r.json()["errors"][0]["loc"][-2:] == ["power", "tdp_w"]
    assert client.get(f"/v1/gpus/{slug}").json()["power"]["tdp_w"] == 120
    assert client.delete(f"/v1/gpus/{slug}", headers={**h, "If-Match": etag}).status_code == 412
    assert client.delete(f"/v1/gpus/{slug}", headers={**h, "If-Match": new_etag}).status_code == 204
    assert client.get(f"/v1/gpus/{slug}").status_code == 404


def test_create_validation_names_field(client: TestClient, admin_key: str) -> None:
    doc = _doc("nvidia-bad")
    doc["memory"] = {"bandwidth_gb_per_s": 100.0}
    doc["sources"] = []
    r = client.post("/v1/gpus", json=doc, headers=auth(admin_key))
    assert r.status_code == 422
    assert "no source" in r.json()["errors"][0]["msg"]
    doc2 = copy.deepcopy(_doc("Not A Slug"))
    r = client.post("/v1/gpus", json=doc2, headers=auth(admin_key))
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "slug"]


def test_an_assumed_variant_answer_matches_its_declared_schema(client: TestClient) -> None:
    """``on_ambiguous=default`` adds ``warnings``; the declared 200 schema (``GpuAnswer``, extra
    fields forbidden) has it (the long fuzz run found an answer the schema did not allow)."""
    from service.schemas.gpus import GpuAnswer

    r = client.get("/v1/gpus/A100-80GB?on_ambiguous=default")
    assert r.status_code == 200 and r.json()["warnings"][0]["code"] == "assumed_variant"
    GpuAnswer.model_validate_json(r.text)
    plain = client.get("/v1/gpus/nvidia-l4")
    assert "warnings" not in plain.json()
    GpuAnswer.model_validate_json(plain.text)


def test_a_slug_without_its_vendor_prefix_resolves(client: TestClient) -> None:
    """``A100-SXM4-80GB`` (what nvidia-smi users and blog posts write) is the catalog's
    ``nvidia-a100-sxm4-80gb`` without the vendor: it resolves, in any case, as ``mi300x`` does."""
    for ident in ("A100-SXM4-80GB", "a100-pcie-40gb", "A100 SXM4 80GB"):
        r = client.get(f"/v1/gpus/{ident}")
        assert r.status_code == 200, (ident, r.text)
    assert client.get("/v1/gpus/A100-SXM4-80GB").json()["slug"] == "nvidia-a100-sxm4-80gb"


def test_fp4_is_a_capability_filter_and_agrees_with_the_estimators_rule(client: TestClient) -> None:
    """``supports=fp4`` lists the GPUs whose tensor cores read FP4 (Blackwell, Blackwell Ultra,
    CDNA 4): exactly those the estimator serves NVFP4 or MXFP4 on natively, never an H100."""
    from service.core.catalog.specs import gpu_spec_from_doc
    from service.core.estimation.fp4 import fp4_tensor_cores

    r = client.get("/v1/gpus", params={"supports": "fp4", "limit": 500})
    assert r.status_code == 200, r.text
    listed = {g["slug"] for g in r.json()["items"]}
    assert {"nvidia-b200", "nvidia-b300", "amd-mi355x"} <= listed and "nvidia-h100-sxm" not in listed
    every = client.get("/v1/gpus", params={"limit": 500}).json()["items"]
    for g in every:
        native = fp4_tensor_cores("mxfp4", gpu_spec_from_doc(g))
        assert (g["supports"]["fp4"] == "yes") == native, g["slug"]
        assert (g["slug"] in listed) == native, g["slug"]
    doc = client.get("/v1/compare", params={"gpus": "nvidia-b200,nvidia-h200-sxm"}).json()
    (row,) = [c for c in doc["capabilities"] if c["key"] == "supports_fp4"]
    assert row["values"] == ["yes", "no"] and row["differs"]
