"""A fake ``pynvml`` module that answers from a captured NVML dump (fakes over mocks).

The capture format is what ``agent probe --raw`` prints (``service.agent.probe.capture_raw``);
an ``{"nvml_error": code}`` value makes the matching call raise ``NVMLError(code)``.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures"

NVML_CLOCK_SM = 1
NVML_CLOCK_MEM = 2


class NVMLError(Exception):
    def __init__(self, value: int) -> None:
        super().__init__(f"NVML error {value}")
        self.value = value


def load_capture(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / name).read_text())


class FakeNvml:
    NVMLError = NVMLError

    def __init__(self, raw: dict[str, Any], *, init_error: int | None = None) -> None:
        self.raw = raw
        self.init_error = init_error
        self.initialised = 0

    # -- helpers --------------------------------------------------------------------------
    @staticmethod
    def _answer(value: Any) -> Any:
        if isinstance(value, dict) and "nvml_error" in value:
            raise NVMLError(value["nvml_error"])
        return value

    def _dev(self, h: int, key: str) -> Any:
        return self._answer(self.raw["devices"][h].get(key, {"nvml_error": 3}))

    # -- system ---------------------------------------------------------------------------
    def nvmlInit(self) -> None:
        if self.init_error is not None:
            raise NVMLError(self.init_error)
        self.initialised += 1

    def nvmlShutdown(self) -> None:
        self.initialised -= 1

    def nvmlSystemGetDriverVersion(self) -> Any:
        return self._answer(self.raw["driver_version"])

    def nvmlSystemGetCudaDriverVersion(self) -> Any:
        return self._answer(self.raw["cuda_driver_version"])

    def nvmlSystemGetNVMLVersion(self) -> Any:
        return self._answer(self.raw["nvml_version"])

    def nvmlDeviceGetCount(self) -> int:
        return len(self.raw["devices"])

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        return i

    # -- device ---------------------------------------------------------------------------
    def nvmlDeviceGetName(self, h: int) -> Any:
        return self._dev(h, "name").encode()  # old pynvml answers bytes

    def nvmlDeviceGetUUID(self, h: int) -> Any:
        return self._dev(h, "uuid")

    def nvmlDeviceGetPciInfo(self, h: int) -> Any:
        p = self._dev(h, "pci")
        return SimpleNamespace(
            busId=p["busId"].encode(), pciDeviceId=p["pciDeviceId"], pciSubSystemId=p["pciSubSystemId"]
        )

    def nvmlDeviceGetMemoryInfo(self, h: int) -> Any:
        return SimpleNamespace(**self._dev(h, "memory"))

    def nvmlDeviceGetCudaComputeCapability(self, h: int) -> Any:
        return tuple(self._dev(h, "compute_capability"))

    def nvmlDeviceGetPowerManagementLimit(self, h: int) -> Any:
        return self._dev(h, "power_limit_mw")

    def nvmlDeviceGetEnforcedPowerLimit(self, h: int) -> Any:
        return self._dev(h, "enforced_power_limit_mw")

    def nvmlDeviceGetPowerUsage(self, h: int) -> Any:
        return self._dev(h, "power_usage_mw")

    def nvmlDeviceGetClockInfo(self, h: int, t: int) -> Any:
        return self._dev(h, {NVML_CLOCK_SM: "clock_sm_mhz", NVML_CLOCK_MEM: "clock_mem_mhz"}[t])

    def nvmlDeviceGetApplicationsClock(self, h: int, t: int) -> Any:
        return self._dev(h, {NVML_CLOCK_SM: "app_clock_sm_mhz", NVML_CLOCK_MEM: "app_clock_mem_mhz"}[t])

    def nvmlDeviceGetMaxClockInfo(self, h: int, t: int) -> Any:
        return self._dev(h, {NVML_CLOCK_SM: "max_clock_sm_mhz", NVML_CLOCK_MEM: "max_clock_mem_mhz"}[t])

    def nvmlDeviceGetEccMode(self, h: int) -> Any:
        return self._dev(h, "ecc_mode")

    def nvmlDeviceGetMigMode(self, h: int) -> Any:
        return self._dev(h, "mig_mode")

    def nvmlDeviceGetPersistenceMode(self, h: int) -> Any:
        return self._dev(h, "persistence_mode")

    def nvmlDeviceGetCurrPcieLinkGeneration(self, h: int) -> Any:
        return self._dev(h, "pcie_gen")

    def nvmlDeviceGetCurrPcieLinkWidth(self, h: int) -> Any:
        return self._dev(h, "pcie_width")

    def nvmlDeviceGetMaxPcieLinkGeneration(self, h: int) -> Any:
        return self._dev(h, "pcie_max_gen")

    def nvmlDeviceGetMaxPcieLinkWidth(self, h: int) -> Any:
        return self._dev(h, "pcie_max_width")

    def nvmlDeviceGetComputeRunningProcesses(self, h: int) -> Any:
        return [SimpleNamespace(**p) for p in self._dev(h, "compute_processes")]

    def nvmlDeviceGetUtilizationRates(self, h: int) -> Any:
        return SimpleNamespace(**self._dev(h, "utilization"))

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: int) -> Any:
        return self._dev(h, "clocks_event_reasons")

    def nvmlDeviceGetTemperature(self, h: int, sensor: int) -> Any:
        return self._dev(h, "temperature_c")

    def nvmlDeviceGetTotalEnergyConsumption(self, h: int) -> Any:
        return self._dev(h, "energy_mj")

    def nvmlDeviceGetNvLinkState(self, h: int, link: int) -> Any:
        states = self.raw["devices"][h]["nvlink_states"]
        if link >= len(states):
            raise NVMLError(3)
        return self._answer(states[link])
