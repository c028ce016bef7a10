"""Probe parsing on captured NVML answers, through a fake pynvml module."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from service.agent import cli, exitcodes
from service.agent.hardware import identify
from service.agent.probe import ProbeError, busy_reasons, capture_raw, parse_raw, probe
from tests.agent.fake_nvml import FIXTURES, FakeNvml, load_capture

GIB = 2**30


def test_h200_capture_parses_to_the_h200() -> None:
    host = probe(FakeNvml(load_capture("nvml_h200_synthetic.json")))
    assert host.driver_version == "580.159.04"
    assert host.cuda_driver_version == "13.0"
    (g,) = host.gpus
    assert g.name == "NVIDIA H200"
    assert g.pci_device_id == "0x2335"  # from NVML's packed 0x233510DE
    assert g.pci_vendor_id == "0x10de"
    assert g.pci_subsystem_id == "0x18bf"
    assert g.memory_total_bytes == 143771 * 2**20
    assert g.slug == "nvidia-h200-sxm" and g.known_hardware
    assert g.compute_capability == "9.0"
    assert g.power_limit_w == 700.0
    assert (g.ecc_mode, g.mig_mode) == ("enabled", "disabled")
    assert (g.pcie_gen, g.pcie_max_gen, g.pcie_max_width) == (1, 5, 16)
    assert g.nvlink == "unknown"  # NVML: not supported
    assert g.compute_processes == []
    assert g.clocks_event_reasons == ["gpu_idle"] and g.throttling == []
    assert g.energy_counter_supported
    assert busy_reasons(g) == []


def _codes(v: object) -> object:
    """NVML error texts differ between pynvml versions; compare error codes only."""
    if isinstance(v, dict) and "nvml_error" in v:
        return {"nvml_error": v["nvml_error"]}
    if isinstance(v, list):
        return [_codes(x) for x in v]
    return v


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("nvml_*.json")))
def test_capture_round_trips_through_the_fake(name: str) -> None:
    raw = load_capture(name)
    again = capture_raw(FakeNvml(raw))
    for want, got in zip(raw["devices"], again["devices"], strict=True):
        for key, value in want.items():
            assert _codes(got[key]) == _codes(value), key
    assert parse_raw(again).to_dict() == parse_raw(raw).to_dict()


def test_busy_and_throttling_gpu_is_reported() -> None:
    (g,) = probe(FakeNvml(load_capture("nvml_l40s_busy_synthetic.json"))).gpus
    assert g.slug == "nvidia-l40s"  # 0x26b9 with ECC-on memory (46068 MiB)
    assert g.mig_mode == "unsupported"
    assert g.energy_counter_supported is False
    assert g.app_clock_sm_mhz is None
    assert g.compute_processes == [{"pid": 4242, "used_memory_bytes": 8 * GIB}]
    assert g.throttling == ["hw_thermal_slowdown"]  # sw_power_cap alone is not throttling
    reasons = " | ".join(busy_reasons(g))
    assert "pid 4242" in reasons and "87%" in reasons and "hw_thermal_slowdown" in reasons


def test_mig_nvlink_and_unknown_hardware() -> None:
    a, unknown = probe(FakeNvml(load_capture("nvml_a100_mig_synthetic.json"))).gpus
    assert a.slug == "nvidia-a100-sxm4-80gb"
    assert a.nvlink == {"links": 12, "active": 12}
    assert a.mig_mode == "enabled" and any("MIG" in r for r in busy_reasons(a))
    assert unknown.pci_device_id == "0x9999" and unknown.slug is None and not unknown.known_hardware


def test_no_driver_and_no_gpu_have_documented_exit_codes() -> None:
    with pytest.raises(ProbeError) as e:
        probe(FakeNvml({}, init_error=12))  # NVML_ERROR_LIBRARY_NOT_FOUND
    assert e.value.exit_code == exitcodes.NO_DRIVER
    raw = load_capture("nvml_h200_synthetic.json")
    raw["devices"] = []
    with pytest.raises(ProbeError) as e:
        probe(FakeNvml(raw))
    assert e.value.exit_code == exitcodes.NO_GPU


def test_hardware_table_disambiguates_by_memory() -> None:
    assert identify("0x233510DE", 143771 * 2**20).slug == "nvidia-h200-sxm"  # type: ignore[union-attr]
    assert identify("10de:26b5", 46068 * 2**20).slug == "nvidia-l40"  # type: ignore[union-attr]
    assert identify("0x2335", 80 * GIB) is None  # right id, wrong memory: not a guess we make
    assert identify("not-an-id", None) is None


def test_probe_cli_json_raw_and_exit_codes(monkeypatch: pytest.MonkeyPatch) -> None:
    runner = CliRunner()
    raw = load_capture("nvml_h200_synthetic.json")
    monkeypatch.setattr(cli, "load_nvml", lambda: FakeNvml(raw))
    res = runner.invoke(cli.agent_app, ["probe", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["gpus"][0]["slug"] == "nvidia-h200-sxm"
    res = runner.invoke(cli.agent_app, ["probe", "--raw"])
    assert json.loads(res.stdout)["devices"][0]["pci"]["pciDeviceId"] == 0x233510DE
    res = runner.invoke(cli.agent_app, ["probe"])
    assert res.exit_code == 0 and "NVIDIA H200" in res.stdout

    def no_driver() -> FakeNvml:
        return FakeNvml({}, init_error=9)

    monkeypatch.setattr(cli, "load_nvml", no_driver)
    res = runner.invoke(cli.agent_app, ["probe"])
    assert res.exit_code == exitcodes.NO_DRIVER
    res = runner.invoke(cli.agent_app, ["probe", "--json"])  # issue 16: JSON on error too
    assert res.exit_code == exitcodes.NO_DRIVER
    err = json.loads(res.stdout)["error"]
    assert err["exit_code"] == exitcodes.NO_DRIVER and err["message"]
    res = runner.invoke(cli.agent_app, ["run", "--sizes", "quick"])
    assert res.exit_code == exitcodes.NO_DRIVER


def test_run_refuses_a_busy_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "load_nvml", lambda: FakeNvml(load_capture("nvml_l40s_busy_synthetic.json")))
    res = CliRunner().invoke(cli.agent_app, ["run", "--sizes", "quick"])
    assert res.exit_code == exitcodes.GPU_BUSY
    assert "--allow-busy" in res.output
    res = CliRunner().invoke(cli.agent_app, ["run", "--sizes", "quick", "--gpu", "3"])
    assert res.exit_code == exitcodes.NO_GPU


def test_a_missing_extra_is_one_line_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 29: `agent probe` without nvidia-ml-py printed "pip install 'gpu-advisor'" (rich read
    "[agent]" as markup), and `agent run --smoke` without torch printed a worker's traceback."""
    import builtins
    import importlib.util

    real_import, real_find = builtins.__import__, importlib.util.find_spec

    def no_pynvml(name: str, *a: object, **k: object) -> object:
        if name == "pynvml":
            raise ImportError("No module named 'pynvml'")
        return real_import(name, *a, **k)  # type: ignore[arg-type]

    runner = CliRunner()
    monkeypatch.setattr(builtins, "__import__", no_pynvml)
    res = runner.invoke(cli.agent_app, ["probe"])
    monkeypatch.setattr(builtins, "__import__", real_import)
    assert res.exit_code == exitcodes.NO_DRIVER
    assert "pip install 'gpu-advisor[agent]'" in res.output.replace("\n", "")
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "torch" else real_find(n, *a))
    res = runner.invoke(cli.agent_app, ["run", "--smoke"])
    assert res.exit_code == exitcodes.ERROR and "Traceback" not in res.output
    assert "PyTorch is not installed" in res.output and "'gpu-advisor[agent]'" in res.output.replace("\n", "")
