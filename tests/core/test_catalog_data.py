"""The shipped catalog: schema-valid, sourced, and free of the seed posts' wrong figures."""

from __future__ import annotations

from collections import Counter

import pytest

from service.catalog.loader import load_shipped
from service.core.catalog.specs import normalise_name
from service.schemas.gpus import _GROUP_FIELDS, SOURCE_KINDS, GpuDocument

GPUS = {g["slug"]: GpuDocument.model_validate(g) for g in load_shipped().gpus}
REQUIRED = [
    "nvidia-v100-sxm2-16gb",
    "nvidia-v100-pcie-16gb",
    "nvidia-t4",
    "nvidia-a10",
    "nvidia-a10g",
    "nvidia-a30",
    "nvidia-a40",
    "nvidia-a100-pcie-40gb",
    "nvidia-a100-pcie-80gb",
    "nvidia-a100-sxm4-40gb",
    "nvidia-a100-sxm4-80gb",
    "nvidia-l4",
    "nvidia-l20",
    "nvidia-l40",
    "nvidia-l40s",
    "nvidia-h20",
    "nvidia-h100-pcie",
    "nvidia-h100-sxm",
    "nvidia-h100-nvl-94gb",
    "nvidia-h800-sxm",
    "nvidia-h200-sxm",
    "nvidia-h200-nvl",
    "nvidia-b200",
    "nvidia-rtx-4090",
    "nvidia-rtx-6000-ada",
    "nvidia-rtx-a6000",
    "amd-mi210",
    "amd-mi250x",
    "amd-mi300x",
    "amd-mi325x",
    "intel-gaudi2",
    "intel-gaudi3",
]
# Issue #13, item 5: GPUs users meet in published tables and clouds.
GROWTH = [
    "nvidia-gh200-96gb",
    "nvidia-gh200-144gb",
    "nvidia-rtx-3090",
    "nvidia-rtx-a5000",
    "nvidia-quadro-rtx-8000",
    "nvidia-v100-sxm3-32gb",
    "nvidia-rtx-pro-6000-blackwell-ws",
    "nvidia-rtx-pro-6000-blackwell-maxq",
    "nvidia-rtx-pro-6000-blackwell-server",
    "nvidia-b300",
    "nvidia-rtx-5090",
    "amd-mi355x",
]


def test_at_least_35_devices_including_the_required_ones() -> None:
    assert len(GPUS) >= 35
    missing = [s for s in REQUIRED if s not in GPUS]
    assert not missing
    assert any(s.startswith("nvidia-a800") for s in GPUS)


def test_every_entry_has_sources_and_consistent_memory() -> None:
    for slug, g in GPUS.items():
        assert g.sources, slug
        m = g.memory
        if m.memory_bytes and m.usable_memory_bytes:
            assert m.usable_memory_bytes <= m.memory_bytes * 1.02, slug


def test_seed_post_errors_are_not_in_the_catalog() -> None:
    l40, l20 = GPUS["nvidia-l40"], GPUS["nvidia-l20"]
    assert l40.architecture == "Ada Lovelace" and l40.peaks.fp32_tflops == 90.5 and l40.power.tdp_w == 300
    assert l40.supports.fp8 == "yes"
    assert l20.memory.bandwidth_gb_per_s == 864 and l20.memory.memory_bytes == 48 * 2**30
    assert l20.compute.cuda_cores == 11776 and l20.power.tdp_w == 275
    assert GPUS["nvidia-a100-pcie-80gb"].memory.bandwidth_gb_per_s == 1935
    assert GPUS["nvidia-a100-sxm4-80gb"].memory.bandwidth_gb_per_s == 2039
    assert GPUS["nvidia-a100-sxm4-40gb"].memory.bandwidth_gb_per_s == 1555
    assert GPUS["nvidia-a100-pcie-40gb"].power.tdp_w == 250
    assert GPUS["nvidia-a100-sxm4-80gb"].power.tdp_w == 400


@pytest.mark.parametrize(
    ("slug", "mib"),
    [
        ("nvidia-h200-sxm", 143_771),
        ("nvidia-h100-sxm", 81_559),
        ("nvidia-l40s", 46_068),
        ("nvidia-l20", 46_068),
        ("nvidia-gh200-96gb", 97_871),
        ("nvidia-b300", 275_040),
        ("nvidia-rtx-pro-6000-blackwell-ws", 97_887),
        ("nvidia-rtx-pro-6000-blackwell-server", 97_887),
        ("nvidia-rtx-5090", 32_607),
        ("nvidia-rtx-a5000", 24_564),
    ],
)
def test_usable_memory_from_design(slug: str, mib: int) -> None:
    assert GPUS[slug].memory.usable_memory_bytes == mib * 2**20


def test_peaks_are_dense_and_ordered() -> None:
    for slug, g in GPUS.items():
        p = g.peaks
        if p.bf16_tflops and p.fp8_tflops:
            assert p.fp8_tflops <= 2.05 * p.bf16_tflops, slug
        if p.tf32_tflops and p.bf16_tflops:
            assert p.tf32_tflops <= p.bf16_tflops * 1.01, slug
    assert GPUS["nvidia-h100-sxm"].peaks.bf16_tflops == pytest.approx(989.4, rel=0.01)
    assert GPUS["nvidia-rtx-4090"].peaks.fp16_tflops == pytest.approx(165.2, rel=0.01)


def test_alias_defaults_are_unique_per_alias() -> None:
    defaults: Counter[str] = Counter()
    for g in GPUS.values():
        for a in g.aliases:
            if a.default:
                defaults[normalise_name(a.name)] += 1
    assert all(n == 1 for n in defaults.values()), defaults


def test_catalog_growth_gpus_are_present() -> None:
    missing = [s for s in GROWTH if s not in GPUS]
    assert not missing


def _has_value(g: GpuDocument, path: str) -> bool:
    section, key = path.split(".")
    return getattr(getattr(g, section), key) is not None


def test_every_non_null_group_has_a_source() -> None:
    for slug, g in GPUS.items():
        groups = {s.group for s in g.sources}
        for group, paths in _GROUP_FIELDS.items():
            if any(_has_value(g, p) for p in paths):
                assert group in groups, (slug, group)
        if g.identity.pci_device_ids or g.identity.compute_capability:
            assert "identity" in groups, slug
        ic = g.interconnect
        if ic.nvlink.topology != "none" or ic.nvlink.per_direction_gb_per_s or ic.pcie.gen or ic.pcie.lanes:
            assert "interconnect" in groups, slug


def test_pci_device_ids_name_one_gpu_each() -> None:
    seen: Counter[str] = Counter(p for g in GPUS.values() for p in g.identity.pci_device_ids)
    assert [p for p, n in seen.items() if n > 1] == []
    # DESIGN: 0x26B5 L40, 0x26B9 L40S, 0x26BA L20 (pci.ids)
    assert "0x26b5" in GPUS["nvidia-l40"].identity.pci_device_ids
    assert "0x26b9" in GPUS["nvidia-l40s"].identity.pci_device_ids
    assert "0x26ba" in GPUS["nvidia-l20"].identity.pci_device_ids


def test_derived_is_a_source_kind() -> None:
    assert "derived" in SOURCE_KINDS


def test_derived_figures_carry_their_derivation() -> None:
    derived = {slug: g for slug, g in GPUS.items() if any(s.source_kind == "derived" for s in g.sources)}
    assert "nvidia-rtx-a5000" in derived
    for slug, g in derived.items():
        for src in g.sources:
            if src.source_kind != "derived":
                continue
            assert src.derived_from in GPUS and src.derived_from != slug, slug
            assert src.note and len(src.note) > 200, slug  # sibling, per-SM rate, SMs, clock, arithmetic
            assert GPUS[src.derived_from].name.split()[-1] in src.note, slug
            sibling = GPUS[src.derived_from]
            assert not any(s.source_kind == "derived" for s in sibling.sources), (
                "derive from a sourced sibling"
            )
            if src.alternative is not None:
                assert src.alternative.sibling in GPUS, slug
                assert GPUS[src.alternative.sibling].name.split()[-1] in src.note, slug
            # no derivation where a sourced figure exists: every other source of the group says what it covers
            others = [s for s in g.sources if s.group == src.group and s is not src]
            for other in others:
                assert other.figures is not None, (slug, other.title)
                assert not set(other.figures) & set(src.figures or ()), (slug, other.title)


def test_rtx_a5000_derivation_and_band() -> None:
    g = GPUS["nvidia-rtx-a5000"]
    band = g.derived_figures()
    assert band["peaks.bf16_tflops"].value == pytest.approx(64 * 1024 * 1.695e9 / 1e12, abs=0.05)
    assert (band["peaks.bf16_tflops"].low, band["peaks.bf16_tflops"].high) == (55.5, 111.1)
    assert band["peaks.bf16_tflops"].alternative_sibling == "nvidia-rtx-3090"
    assert band["peaks.tf32_tflops"].low == pytest.approx(27.8)
    assert band["peaks.int8_tops"].low == band["peaks.int8_tops"].high == 222.2
    assert g.peaks.fp32_tflops == 27.8 and "peaks.fp32_tflops" not in band
    a6000 = GPUS["nvidia-rtx-a6000"]
    per_sm_clock = (
        a6000.peaks.bf16_tflops * 1e12 / (a6000.compute.sm_count * a6000.compute.boost_clock_mhz * 1e6)
    )
    assert per_sm_clock == pytest.approx(1024, rel=0.005)


@pytest.mark.parametrize("slug", ["nvidia-l20", "nvidia-a10g", "nvidia-rtx-6000-ada"])
def test_issue_13_gpus_have_what_a_time_estimate_needs(slug: str) -> None:
    g = GPUS[slug]
    assert g.memory.bandwidth_gb_per_s
    p = g.peaks
    assert p.bf16_tflops and p.fp16_tflops and p.tf32_tflops and p.fp32_tflops
    if g.supports.fp8 == "yes":
        assert p.fp8_tflops
    assert p.int8_tops


def test_issue_13_figures() -> None:
    l20, a10g, ada = GPUS["nvidia-l20"], GPUS["nvidia-a10g"], GPUS["nvidia-rtx-6000-ada"]
    assert (l20.peaks.bf16_tflops, l20.peaks.fp8_tflops, l20.peaks.fp32_tflops) == (119.5, 239.0, 59.8)
    assert (a10g.memory.bandwidth_gb_per_s, a10g.peaks.bf16_tflops, a10g.peaks.tf32_tflops) == (600, 70, 35)
    assert (ada.peaks.bf16_tflops, ada.peaks.tf32_tflops, ada.peaks.fp8_tflops) == (364, 182.1, 728.5)
    # sourced, not derived: same chip as the L40/L40S, but tensor rates are set per product
    for g in (l20, a10g, ada):
        assert not any(s.source_kind == "derived" for s in g.sources)
    assert GPUS["nvidia-l40"].peaks.bf16_tflops != ada.peaks.bf16_tflops


def test_unsourced_figures_stay_null() -> None:
    v100 = GPUS["nvidia-v100-sxm3-32gb"]
    assert v100.peaks.fp16_tflops is None and v100.memory.bandwidth_gb_per_s is None
    assert GPUS["nvidia-rtx-pro-6000-blackwell-server"].power.tdp_w is None
    assert (
        GPUS["nvidia-quadro-rtx-8000"].identity.pci_device_ids == []
    )  # 0x1e30 is shared with the Quadro RTX 6000
    assert GPUS["amd-mi355x"].supports.tf32 == "no" and GPUS["amd-mi355x"].peaks.tf32_tflops is None


def test_rtx_pro_6000_server_is_derived_between_the_workstation_editions() -> None:
    """No readable document gives the Server Edition's figures: its peaks are derived from the
    same 188-SM GB202 of the two workstation editions and span their clocks (Max-Q 300 W to
    Workstation 600 W); its bandwidth is their common 1,792 GB/s."""
    server = GPUS["nvidia-rtx-pro-6000-blackwell-server"]
    ws, maxq = GPUS["nvidia-rtx-pro-6000-blackwell-ws"], GPUS["nvidia-rtx-pro-6000-blackwell-maxq"]
    band = server.derived_figures()
    bf16 = band["peaks.bf16_tflops"]
    assert (bf16.low, bf16.high) == (maxq.peaks.bf16_tflops, ws.peaks.bf16_tflops)
    assert bf16.alternative_sibling == "nvidia-rtx-pro-6000-blackwell-maxq"
    assert server.memory.bandwidth_gb_per_s == ws.memory.bandwidth_gb_per_s == 1792.0
    assert band["memory.bandwidth_gb_per_s"].low == band["memory.bandwidth_gb_per_s"].high == 1792.0


def test_mi350x_is_the_air_cooled_mi350_series_part() -> None:
    """The MI350X data sheet: the MI355X's package (same CUs, memory and links) at 2.2 GHz and
    1,000 W, so every peak is lower by the clock and nothing else."""
    mi350x, mi355x = GPUS["amd-mi350x"], GPUS["amd-mi355x"]
    assert (mi350x.peaks.bf16_tflops, mi350x.peaks.fp8_tflops) == (2309.6, 4614.0)
    assert mi350x.power.tdp_w == 1000 and mi355x.power.tdp_w == 1400
    assert mi350x.memory.bandwidth_gb_per_s == mi355x.memory.bandwidth_gb_per_s == 8000.0
    assert mi350x.memory.memory_bytes == mi355x.memory.memory_bytes
    assert (
        mi350x.interconnect.nvlink.per_direction_gb_per_s == mi355x.interconnect.nvlink.per_direction_gb_per_s
    )
    assert 0.9 < mi350x.peaks.bf16_tflops / mi355x.peaks.bf16_tflops < 0.93  # 2.2 / 2.4 GHz
    assert mi350x.peaks.tf32_tflops is None and mi350x.supports.tf32 == "no"


def test_fp4_peaks_are_the_datasheets_dense_figures() -> None:
    """Dense FP4 (NVFP4 on Blackwell, MXFP4 on CDNA 4): sparse figures halved; the B300's is
    what sets it apart from the B200 (their FP8 peaks are equal)."""
    fp4 = {s: GPUS[s].peaks.fp4_tflops for s in ("nvidia-b200", "nvidia-b300", "amd-mi355x", "amd-mi350x")}
    assert fp4 == {"nvidia-b200": 9000.0, "nvidia-b300": 14000.0, "amd-mi355x": 10000.0, "amd-mi350x": 9227.5}
    assert GPUS["nvidia-b300"].peaks.fp8_tflops == GPUS["nvidia-b200"].peaks.fp8_tflops
    ws, maxq = GPUS["nvidia-rtx-pro-6000-blackwell-ws"], GPUS["nvidia-rtx-pro-6000-blackwell-maxq"]
    assert (ws.peaks.fp4_tflops, maxq.peaks.fp4_tflops) == (2015.2, 1755.7)  # 2 x their FP8
    assert GPUS["nvidia-h200-sxm"].peaks.fp4_tflops is None  # Hopper has no FP4 tensor cores


def test_grace_blackwell_gpus_are_their_hgx_siblings_at_rack_power() -> None:
    """GB200 and GB300 (NVL72): the B200's and B300's dies at 1,200 / 1,400 W and 8 TB/s, dense
    peaks from the datasheets' per-GPU columns (GB300 FP4 15 PF dense as printed), one switched
    NVLink domain of 72, and nvidia-smi's names so that an agent's host maps to them."""
    gb200, gb300 = GPUS["nvidia-gb200"], GPUS["nvidia-gb300"]
    b200, b300 = GPUS["nvidia-b200"], GPUS["nvidia-b300"]
    peaks = {
        s: (g.peaks.bf16_tflops, g.peaks.fp8_tflops, g.peaks.fp4_tflops)
        for s, g in (("gb200", gb200), ("gb300", gb300))
    }
    assert peaks == {"gb200": (2500.0, 5000.0, 10000.0), "gb300": (2500.0, 5000.0, 15000.0)}
    assert gb300.peaks.int8_tops is None and b300.peaks.int8_tops is None  # cut on Blackwell Ultra
    assert (gb200.power.tdp_w, gb300.power.tdp_w) == (1200, 1400)
    assert gb200.memory.bandwidth_gb_per_s == gb300.memory.bandwidth_gb_per_s == 8000.0
    assert gb200.memory.usable_memory_bytes == 189471 * 2**20  # MiB as nvidia-smi reports them
    assert gb300.memory.usable_memory_bytes == 284208 * 2**20
    for gb, hgx in ((gb200, b200), (gb300, b300)):
        assert gb.identity.compute_capability == hgx.identity.compute_capability
        assert gb.interconnect.nvlink.topology == "switched" and gb.interconnect.nvlink.domain_size == 72
        assert gb.interconnect.nvlink.per_direction_gb_per_s == hgx.interconnect.nvlink.per_direction_gb_per_s
        assert gb.peaks.bf16_tflops > hgx.peaks.bf16_tflops  # the rack part's higher power limit
    assert {a.name for a in gb200.aliases if a.kind == "nvml"} == {"NVIDIA GB200"}
    assert {a.name for a in gb300.aliases if a.kind == "nvml"} == {"NVIDIA GB300"}


def test_an_nvl72_rack_is_one_scale_up_domain() -> None:
    """64 GB200s talk over NVLink (the rack's switch trays); 64 B200s leave their 8-GPU boards."""
    from service.core.catalog.specs import gpu_spec_from_doc

    docs = {g["slug"]: g for g in load_shipped().gpus}
    gb200, b200 = gpu_spec_from_doc(docs["nvidia-gb200"]), gpu_spec_from_doc(docs["nvidia-b200"])
    assert gb200.scale_up_gb_per_s(64) == 900.0
    assert b200.scale_up_gb_per_s(64) is None and b200.scale_up_gb_per_s(8) == 900.0
