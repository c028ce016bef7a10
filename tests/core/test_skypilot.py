"""SkyPilot vms.csv -> price records (service.core.pricing.skypilot), on small files in SkyPilot's format."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from service.core.catalog.specs import AliasEntry
from service.core.pricing import skypilot as sp

AWS_HEADER = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region,AvailabilityZone,Arch"


def gpu_info(name: str, count: int, mib: int) -> str:
    gpus = f"[{{'Name': '{name}', 'Manufacturer': 'NVIDIA', 'Count': {count}, 'MemoryInfo': {{'SizeInMiB': {mib}}}}}]"
    return f"\"{{'Gpus': {gpus}, 'TotalGpuMemoryInMiB': {count * mib}}}\""


def aws(*rows: str) -> str:
    return "\n".join((AWS_HEADER, *rows)) + "\n"


T4 = gpu_info("T4", 1, 16384)
A100_40 = gpu_info("A100", 8, 40960)
A100_80 = gpu_info("A100", 8, 81920)

# A small catalog: the alias index the service would build, and memory per slug (MiB).
DOCS = [
    {
        "slug": "nvidia-t4",
        "name": "NVIDIA T4",
        "aliases": [{"name": "T4", "kind": "skypilot"}],
        "memory": {"memory_bytes": 16 * 2**30, "usable_memory_bytes": 15 * 2**30},
    },
    {
        "slug": "nvidia-a100-pcie-40gb",
        "name": "NVIDIA A100 40GB PCIe",
        "aliases": [{"name": "A100", "kind": "skypilot"}],
        "memory": {"memory_bytes": 40 * 2**30},
    },
    {
        "slug": "nvidia-a100-sxm4-40gb",
        "name": "NVIDIA A100 40GB SXM4",
        "aliases": [{"name": "A100", "kind": "skypilot", "default": True}],
        "memory": {"memory_bytes": 40 * 2**30},
    },
    {
        "slug": "nvidia-a100-sxm4-80gb",
        "name": "NVIDIA A100 80GB SXM4",
        "aliases": [{"name": "a100", "kind": "short"}, {"name": "A100-80GB", "kind": "skypilot"}],
        "memory": {"memory_bytes": 80 * 2**30},
    },
    {
        "slug": "nvidia-h100-sxm",
        "name": "NVIDIA H100 SXM",
        "aliases": [{"name": "H100", "kind": "skypilot"}],
        "memory": {"memory_bytes": 80 * 2**30},
    },
    {
        "slug": "nvidia-h100-pcie",
        "name": "NVIDIA H100 PCIe",
        "aliases": [{"name": "h100", "kind": "short"}],
        "memory": {"memory_bytes": 80 * 2**30},
    },
]
SKY = sp.alias_index_from_docs(DOCS, kinds={"skypilot"})
FULL = sp.alias_index_from_docs(DOCS)
MEM = sp.memory_mib_from_docs(DOCS)
DAY = dt.date(2026, 1, 15)


def run(text: str, provider: str = "aws", **kw: object) -> sp.ImportReport:
    return sp.import_vms_csv(
        text,
        provider=provider,
        effective_date=DAY,
        source="test file",
        indexes=[SKY, FULL],
        gpu_memory_mib=MEM,
        **kw,  # type: ignore[arg-type]
    )


# ---- parsing -------------------------------------------------------------------------------


def test_good_rows_become_one_record_per_region_and_pricing_model() -> None:
    text = aws(
        f"g4dn.xlarge,T4,1.0,4.0,16.0,{T4},0.526,0.215800,us-east-1,use1-az1,x86_64",
        f"g4dn.xlarge,T4,1.0,4.0,16.0,{T4},0.526,0.200000,us-east-1,use1-az2,x86_64",
        f"g4dn.xlarge,T4,1.0,4.0,16.0,{T4},0.526,,us-east-1,use1-az4,x86_64",
        f"g4dn.xlarge,T4,1.0,4.0,16.0,{T4},0.587,0.3317,eu-west-1,euw1-az1,x86_64",
    )
    rep = run(text)
    assert rep.ok and rep.gpu_rows == 4
    got = [
        (r.gpu_slug, r.region, r.instance_type, r.gpus_per_instance, r.pricing_model, r.amount)
        for r in rep.records
    ]
    assert got == [
        ("nvidia-t4", "eu-west-1", "g4dn.xlarge", 1, "on_demand", "0.587"),
        ("nvidia-t4", "eu-west-1", "g4dn.xlarge", 1, "spot", "0.3317"),
        ("nvidia-t4", "us-east-1", "g4dn.xlarge", 1, "on_demand", "0.526"),
        ("nvidia-t4", "us-east-1", "g4dn.xlarge", 1, "spot", "0.2"),  # cheapest zone; trailing zeros dropped
    ]
    r = rep.records[0]
    assert (r.provider, r.currency, r.effective_date, r.source) == ("aws", "USD", DAY, "test file")
    assert r.as_dict()["effective_date"] == "2026-01-15" and r.as_dict()["is_estimate"] is False


def test_columns_are_found_by_name_whatever_their_order() -> None:
    # Lambda's order: ... Price, Region, GpuInfo, SpotPrice ; RunPod's: ... Region, SpotPrice, Price, AvailabilityZone, GpuInfo
    lam = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region,GpuInfo,SpotPrice\n"
    lam += f"gpu_1x_t4,T4,1.0,8.0,32.0,0.5,us-east-1,{T4},\n"
    rep = run(lam, "lambda")
    assert [(r.pricing_model, r.amount) for r in rep.records] == [("on_demand", "0.5")]


def test_non_gpu_rows_are_skipped_and_counted_not_errors() -> None:
    rep = run(
        aws(
            "a1.large,,,2.0,4.0,,0.051,0.038500,us-east-2,use2-az1,arm64",
            f"g4dn.xlarge,T4,1.0,4.0,16.0,{T4},0.526,,us-east-1,use1-az1,x86_64",
        )
    )
    assert rep.ok and rep.non_gpu_rows == 1 and rep.gpu_rows == 1 and len(rep.records) == 1


def test_missing_required_column_is_an_error_on_the_header_naming_the_column() -> None:
    text = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,SpotPrice,Region\n"
    rep = run(text + f"g4dn.xlarge,T4,1.0,4.0,16.0,{T4},0.2,us-east-1\n")
    assert not rep.ok and rep.records == ()
    assert [(e.line, e.column, e.message) for e in rep.errors] == [(1, "Price", "missing required column")]


@pytest.mark.parametrize(
    ("price", "spot", "column", "message"),
    [
        ("abc", "0.2", "Price", "not a number: 'abc'"),
        ("-0.5", "0.2", "Price", "negative price: '-0.5'"),
        ("NaN", "0.2", "Price", "not a finite number: 'NaN'"),
        ("0.5", "inf", "SpotPrice", "not a finite number: 'inf'"),
        ("0.5", "-1", "SpotPrice", "negative price: '-1'"),
    ],
)
def test_bad_prices_are_errors_with_line_and_column(price: str, spot: str, column: str, message: str) -> None:
    text = aws(
        f"g4dn.xlarge,T4,1.0,4.0,16.0,{T4},0.526,0.2,us-east-1,use1-az1,x86_64",
        f"g4dn.xlarge,T4,1.0,4.0,16.0,{T4},{price},{spot},us-east-1,use1-az2,x86_64",
    )
    rep = run(text)
    assert not rep.ok
    assert [(e.line, e.column, e.message) for e in rep.errors] == [(3, column, message)]
    assert str(rep.errors[0]) == f"line 3, column {column}: {message}"


def test_one_bad_row_means_nothing_is_imported() -> None:
    good = [f"g4dn.xlarge,T4,1.0,4.0,16.0,{T4},0.526,0.2,us-east-{i},use1-az1,x86_64" for i in range(1, 5)]
    rep = run(aws(*good, f"g4dn.2xlarge,T4,one,8.0,32.0,{T4},0.75,0.3,us-east-1,use1-az1,x86_64"))
    assert not rep.ok and rep.records == () and rep.issues == ()
    assert [(e.line, e.column) for e in rep.errors] == [(6, "AcceleratorCount")]


def test_wrong_field_count_and_empty_region_are_errors() -> None:
    rep = run(
        aws(
            f"g4dn.xlarge,T4,1.0,4.0,16.0,{T4},0.526,0.2,us-east-1",
            f"g4dn.xlarge,T4,1.0,4.0,16.0,{T4},0.526,0.2,,use1-az1,x86_64",
        )
    )
    assert [(e.line, e.column, e.message) for e in rep.errors] == [
        (2, None, "expected 11 fields, found 9"),
        (3, "Region", "empty region"),
    ]


def test_empty_file_and_gpu_row_without_count_are_errors() -> None:
    assert [str(e) for e in run("").errors] == ["line 1: empty file: no header row"]
    rep = run(aws(f"g4dn.xlarge,T4,,4.0,16.0,{T4},0.526,0.2,us-east-1,use1-az1,x86_64"))
    assert [(e.line, e.column) for e in rep.errors] == [(2, "AcceleratorCount")]


def test_fractional_accelerators_are_skipped_with_a_reason() -> None:
    rep = run(
        aws(
            f"g6f.large,L4,0.125,2.0,8.0,{T4},0.2,0.1,us-east-1,use1-az1,x86_64",
            f"g4dn.xlarge,T4,1.0,4.0,16.0,{T4},0.526,,us-east-1,use1-az1,x86_64",
        )
    )
    assert rep.ok and len(rep.records) == 1
    assert [(s.line, s.reason) for s in rep.skipped] == [(2, "fractional-gpu")]


def test_empty_price_means_no_offer_zero_means_no_price_and_neither_skips_the_row() -> None:
    rep = run(
        aws(
            f"p5e.48xlarge,H100,8.0,192.0,2048.0,{gpu_info('H100', 8, 81920)},,19.5387,us-west-2,usw2-az3,x86_64",
            f"p5.4xlarge,H100,1.0,16.0,256.0,{gpu_info('H100', 1, 81920)},6.88,0.0,us-west-2,usw2-az1,x86_64",
            f"p5.48xlarge,H100,8.0,192.0,2048.0,{gpu_info('H100', 8, 81920)},,,us-west-2,usw2-az1,x86_64",
        )
    )
    assert rep.ok
    assert [(r.instance_type, r.pricing_model, r.amount) for r in rep.records] == [
        ("p5.4xlarge", "on_demand", "6.88"),
        ("p5e.48xlarge", "spot", "19.5387"),
    ]
    assert [(s.line, s.reason) for s in rep.skipped] == [(4, "no-price")]


def test_exact_duplicate_rows_collapse_and_are_counted() -> None:
    row = f"g4dn.xlarge,T4,1.0,4.0,16.0,{T4},0.526,0.2,us-east-1,use1-az1,x86_64"
    rep = run(aws(row, row))
    assert rep.ok and rep.duplicate_rows == 1 and rep.gpu_rows == 1 and len(rep.records) == 2


def test_amounts_round_half_even_to_six_places() -> None:
    assert sp.format_amount(Decimal("21.9576425")) == "21.957642"
    assert sp.format_amount(Decimal("21.9576435")) == "21.957644"
    assert sp.format_amount(Decimal("55.040000")) == "55.04"
    assert sp.format_amount(Decimal("100")) == "100"


# ---- GpuInfo -------------------------------------------------------------------------------


def test_gpu_info_python_literal_json_and_garbage() -> None:
    assert sp.parse_gpu_info(T4.strip('"')) == (16384, "T4")
    assert sp.parse_gpu_info(
        '{"Gpus": [{"Name": "L4", "MemoryInfo": {"SizeInMiB": 24576}, "Extra": null}]}'
    ) == (24576, "L4")
    assert sp.parse_gpu_info("V100") == (None, None)  # Azure writes the bare name
    assert sp.parse_gpu_info("") == (None, None)
    assert sp.parse_gpu_info("{'Gpus': []}") == (None, None)


# ---- names ---------------------------------------------------------------------------------


def test_unknown_names_are_reported_sorted_with_counts_never_mapped() -> None:
    rep = run(
        aws(
            f"g5g.xlarge,T4g,1.0,4.0,8.0,{gpu_info('T4g', 1, 16384)},0.42,,us-east-1,use1-az1,arm64",
            f"g5g.xlarge,T4g,1.0,4.0,8.0,{gpu_info('T4g', 1, 16384)},0.42,,us-west-2,usw2-az1,arm64",
            "inf2.xlarge,Inferentia2,1.0,4.0,16.0,,0.7582,,us-east-1,use1-az1,x86_64",
        )
    )
    assert rep.ok and rep.records == ()
    assert rep.unknown_names == (("Inferentia2", 1), ("T4g", 2))


def test_ambiguous_name_is_reported_not_resolved_to_its_default() -> None:
    rep = run(aws(f"p4d.24xlarge,A100,8.0,96.0,1152.0,{A100_40},21.957642,2.4655,us-east-1,use1-az1,x86_64"))
    assert rep.records == ()
    [issue] = rep.issues
    assert (issue.kind, issue.name, issue.candidates) == (
        "ambiguous",
        "A100",
        ("nvidia-a100-pcie-40gb", "nvidia-a100-sxm4-40gb"),
    )


def test_memory_narrows_an_ambiguous_name_from_the_fallback_index() -> None:
    # 'a100' is a short alias of the 80 GB SXM4 part only in the full index; the SkyPilot index
    # says PCIe/SXM4 40 GB. A GPU-only name 'a100' (no SkyPilot alias) with 80 GiB resolves.
    only_full = [sp.alias_index_from_docs(DOCS, kinds={"short"})]
    offers = sp.collapse_zones(
        sp.parse_vms_csv(aws(f"x.8x,a100,8.0,96.0,1152.0,{A100_80},30.0,,us-east-1,use1-az1,x86_64")).rows
    )
    res = sp.map_offers(offers, only_full, provider="aws", gpu_memory_mib=MEM)
    assert [(m.gpu_slug, m.via) for m in res.mapped] == [("nvidia-a100-sxm4-80gb", "alias")]


def test_memory_that_contradicts_every_candidate_is_a_conflict() -> None:
    rep = run(aws(f"g4dn.xlarge,T4,1.0,4.0,16.0,{gpu_info('T4', 1, 49152)},0.526,,us-east-1,use1-az1,x86_64"))
    assert rep.records == ()
    [issue] = rep.issues
    assert (issue.kind, issue.candidates, issue.detail) == (
        "conflict",
        ("nvidia-t4",),
        "GpuInfo says 49152 MiB per GPU",
    )


def test_small_memory_figures_are_not_evidence() -> None:
    # RunPod writes GB into SizeInMiB: 80 must not contradict an 80 GB part.
    rp = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Region,SpotPrice,Price,AvailabilityZone,GpuInfo\n"
    rp += "1x_H100_SECURE,H100,1.0,16.0,125.0,US,2.69,2.69,US-TX-1,\"{'Gpus': [{'Name': 'H100 SXM', 'MemoryInfo': {'SizeInMiB': 80}}]}\"\n"
    rep = run(rp, "runpod")
    assert {r.gpu_slug for r in rep.records} == {"nvidia-h100-sxm"}


def test_skypilot_index_wins_over_other_alias_kinds() -> None:
    # Full index: 'H100' -> SXM and PCIe (short alias); the SkyPilot index says SXM only.
    rep = run(
        aws(
            f"p5.48xlarge,H100,8.0,192.0,2048.0,{gpu_info('H100', 8, 81920)},55.04,,us-east-1,use1-az3,x86_64"
        )
    )
    assert {r.gpu_slug for r in rep.records} == {"nvidia-h100-sxm"}
    rep2 = sp.import_vms_csv(
        aws(
            f"p5.48xlarge,H100,8.0,192.0,2048.0,{gpu_info('H100', 8, 81920)},55.04,,us-east-1,use1-az3,x86_64"
        ),
        provider="aws",
        effective_date=DAY,
        source="s",
        indexes=[FULL],
        gpu_memory_mib=MEM,
    )
    assert rep2.records == () and rep2.issues[0].kind == "ambiguous"


def test_hints_name_the_variant_and_overrides_are_listed() -> None:
    hints = [
        sp.InstanceHint("aws", "p4d.24xlarge", "nvidia-a100-sxm4-40gb", "AWS P4d page"),
        sp.InstanceHint("lambda", "gpu_1x_h100_pcie", "nvidia-h100-pcie", "instance name"),
        sp.InstanceHint("aws", "p5.48xlarge", "nvidia-h100-pcie", "for another provider: must not apply"),
    ]
    rep = run(
        aws(
            f"p4d.24xlarge,A100,8.0,96.0,1152.0,{A100_40},21.957642,2.4655,us-east-1,use1-az1,x86_64",
        ),
        hints=hints,
    )
    assert {(r.gpu_slug, r.pricing_model) for r in rep.records} == {
        ("nvidia-a100-sxm4-40gb", "on_demand"),
        ("nvidia-a100-sxm4-40gb", "spot"),
    }
    lam = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region,GpuInfo,SpotPrice\n"
    lam += f"gpu_1x_h100_pcie,H100,1.0,26.0,200.0,3.29,us-east-1,{gpu_info('H100', 1, 81920)},\n"
    rep2 = run(lam, "lambda", hints=hints)
    assert [r.gpu_slug for r in rep2.records] == ["nvidia-h100-pcie"]
    assert rep2.hint_overrides == (("gpu_1x_h100_pcie", "nvidia-h100-sxm", "nvidia-h100-pcie"),)


def test_a_hint_is_still_checked_against_memory_and_must_name_a_known_gpu() -> None:
    bad_mem = [sp.InstanceHint("aws", "p4d.24xlarge", "nvidia-a100-sxm4-80gb", "wrong")]
    rep = run(
        aws(f"p4d.24xlarge,A100,8.0,96.0,1152.0,{A100_40},21.957642,,us-east-1,use1-az1,x86_64"),
        hints=bad_mem,
    )
    assert rep.records == () and rep.issues[0].kind == "conflict"
    unknown_slug = [sp.InstanceHint("aws", "p4d.24xlarge", "nvidia-a100-sxm5", "typo")]
    rep2 = run(
        aws(f"p4d.24xlarge,A100,8.0,96.0,1152.0,{A100_40},21.957642,,us-east-1,use1-az1,x86_64"),
        hints=unknown_slug,
    )
    assert rep2.records == () and rep2.issues[0].detail == "hint names a GPU the catalog lacks"


def test_alias_index_marks_defaults_and_uses_slugs_and_names() -> None:
    assert SKY["a100"] == [
        AliasEntry("nvidia-a100-pcie-40gb", False),
        AliasEntry("nvidia-a100-sxm4-40gb", True),
    ]
    assert "nvidiaa10040gbpcie" not in SKY and FULL["nvidiaa10040gbpcie"] == [
        AliasEntry("nvidia-a100-pcie-40gb")
    ]
    assert SKY["nvidiat4"] == [AliasEntry("nvidia-t4")]  # slugs are always aliases
    assert MEM["nvidia-t4"] == (15360, 16384)


# ---- GCP: GPU-only rows joined with their host ---------------------------------------------

GCP_HEADER = "InstanceType,vCPUs,MemoryGiB,AcceleratorName,AcceleratorCount,GpuInfo,Region,AvailabilityZone,Price,SpotPrice"


def gcp(*rows: str) -> str:
    return "\n".join((GCP_HEADER, *rows)) + "\n"


GPU80 = "{'Gpus': [{'MemoryInfo': {'SizeInMiB': 81920}}]}"


def test_gcp_gpu_rows_join_their_fixed_host_per_zone() -> None:
    text = gcp(
        "a3-highgpu-8g,208.0,1872.0,,,,us-central1,us-central1-a,9.46006,2.88933",
        "a3-highgpu-8g,208.0,1872.0,,,,us-central1,us-central1-b,9.46006,",
        f",,,H100,8,{GPU80},us-central1,us-central1-a,33.60609,23.9408",
        f",,,H100,8,{GPU80},us-central1,us-central1-b,33.60609,23.9408",
        f",,,H100,8,{GPU80},us-east4,us-east4-a,78.37241,17.8848",
        "n1-standard-8,8.0,30.0,,,,us-central1,us-central1-a,0.38,0.08",
        "c2-standard-4,4.0,16.0,,,,us-central1,us-central1-a,0.2,0.05",
    )
    rep = run(text, "gcp")
    assert rep.ok
    assert [(r.instance_type, r.region, r.pricing_model, r.amount) for r in rep.records] == [
        ("a3-highgpu-8g", "us-central1", "on_demand", "43.06615"),  # 9.46006 + 33.60609
        ("a3-highgpu-8g", "us-central1", "spot", "26.83013"),  # zone a only: zone b host has no spot
    ]
    assert [(s.line, s.reason) for s in rep.skipped] == [(6, "no-host-in-zone")]
    assert rep.non_gpu_rows == 4  # two host rows (kept for the join) + n1 + c2


def test_gcp_attachable_gpus_without_a_fixed_host_are_skipped() -> None:
    rep = run(gcp(",,,T4,1,,us-central1,us-central1-a,0.35,0.07"), "gcp")
    assert rep.ok and rep.records == ()
    assert [s.reason for s in rep.skipped] == ["accelerator-without-fixed-host"]


def test_gcp_host_with_zero_price_gives_no_price() -> None:
    text = gcp(
        "a4-highgpu-8g,224.0,3968.0,,,,us-central1,us-central1-b,0.0,0.0",
        ",,,B200,8,,us-central1,us-central1-b,90.216,32.6064",
    )
    rep = run(text, "gcp")
    assert rep.ok and rep.records == () and [s.reason for s in rep.skipped] == ["no-price"]


def test_gpu_only_rows_outside_gcp_are_skipped() -> None:
    rep = run(aws(",A100,1.0,,,,2.9,,us-east-1,use1-az1,x86_64"))
    assert (
        rep.ok and rep.records == () and [s.reason for s in rep.skipped] == ["accelerator-without-fixed-host"]
    )


# ---- determinism, idempotence, round trip --------------------------------------------------

MIXED = aws(
    f"p4d.24xlarge,A100,8.0,96.0,1152.0,{A100_40},21.957642,2.4655,us-east-1,use1-az1,x86_64",
    f"g4dn.xlarge,T4,1.0,4.0,16.0,{T4},0.526,0.2158,us-east-1,use1-az1,x86_64",
    f"g4dn.xlarge,T4,1.0,4.0,16.0,{T4},0.526,,us-west-2,usw2-lax1-az1,x86_64",
    f"g4dn.xlarge,T4,1.0,4.0,16.0,{T4},0.526,0.0631,us-west-2,usw2-az1,x86_64",
    "a1.large,,,2.0,4.0,,0.051,0.0385,us-east-2,use2-az1,arm64",
)


def test_reimport_is_identical_and_row_order_does_not_matter() -> None:
    a, b = run(MIXED), run(MIXED)
    assert a == b
    lines = MIXED.strip().split("\n")
    shuffled = "\n".join([lines[0], *reversed(lines[1:])]) + "\n"
    assert run(shuffled).records == a.records


def test_round_trip_through_render_keeps_every_row() -> None:
    parsed = sp.parse_vms_csv(MIXED)
    again = sp.parse_vms_csv(sp.render_vms_csv(parsed.rows))
    strip = lambda rows: [r.__class__(**{**{f: getattr(r, f) for f in r.__slots__}, "line": 0}) for r in rows]  # noqa: E731
    assert again.ok and strip(again.rows) == strip(parsed.rows)
    assert run(sp.render_vms_csv(parsed.rows)).records == run(MIXED).records


def test_source_label() -> None:
    assert sp.source_label("o/r", "catalogs/v8/aws/vms.csv", commit="abc", date=dt.date(2026, 1, 2)) == (
        "o/r catalogs/v8/aws/vms.csv @ abc (2026-01-02)"
    )
