"""``agent probe``: what GPU hardware this host has, read through NVML (nvidia-ml-py).

Two steps, so the parsing can be tested on captured output without a GPU:

1. :func:`capture_raw` calls NVML and records every answer as plain JSON (an NVML error is
   recorded as ``{"nvml_error": <code>}``, so "not supported" stays distinguishable from
   "failed"). ``agent probe --raw`` prints this capture; ``tests/agent/fixtures`` hold real ones.
2. :func:`parse_raw` turns a capture into a :class:`HostProbe` with units from DESIGN.md
   (bytes, watts, MHz) and "unknown" where NVML could not say.

No GPU or no driver raises :class:`ProbeError` with a documented exit code (see
``service.agent.exitcodes``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from service.agent import exitcodes
from service.agent.hardware import identify
from service.core.catalog.fingerprint import normalise_pci_id
from service.core.catalog.vocabulary import VocabularyError

# NVML constants (nvml.h); repeated here so parsing needs no pynvml import.
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_CLOCK_GRAPHICS = 0
NVML_CLOCK_SM = 1
NVML_CLOCK_MEM = 2
NVML_TEMPERATURE_GPU = 0
NVML_NVLINK_MAX_LINKS = 18

# nvmlClocksEventReasons bits (formerly "throttle reasons").
CLOCK_EVENT_REASONS: dict[int, str] = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
# Reasons that mean the GPU is being slowed by heat or power hardware, not by its own idleness
# or a software power cap that any busy GPU reaches: the run is refused (or flagged) on these.
THROTTLING_REASONS = frozenset(
    {"hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"}
)

UNKNOWN = "unknown"


class ProbeError(RuntimeError):
    """The host cannot be probed; ``exit_code`` is what the CLI exits with."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def load_nvml() -> Any:
    """Import ``pynvml`` (package nvidia-ml-py) or raise :class:`ProbeError`."""
    try:
        import pynvml
    except ImportError:
        raise ProbeError(
            "nvidia-ml-py is not installed: install the agent extra (pip install 'gpu-advisor[agent]')",
            exitcodes.NO_DRIVER,
        ) from None
    return pynvml


# ---------------------------------------------------------------------------------------------
# capture
# ---------------------------------------------------------------------------------------------


def _err(nvml: Any, exc: Exception) -> dict[str, Any]:
    code = getattr(exc, "value", None)
    return {"nvml_error": int(code) if isinstance(code, int) else -1, "message": str(exc)[:200]}


def _text(v: Any) -> Any:
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else v


def _jsonable(v: Any) -> Any:
    """NVML answers are ints, strings/bytes, lists or ctypes structures: make them JSON."""
    if isinstance(v, (bytes, str)):
        return _text(v)
    if isinstance(v, (int, float, bool)) or v is None:
        return v
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    fields = getattr(v, "_fields_", None)
    if fields is not None:
        return {name: _jsonable(getattr(v, name)) for name, *_ in fields}
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    return str(v)


def _call(nvml: Any, fn_names: tuple[str, ...], *args: Any, pick: Callable[[Any], Any] | None = None) -> Any:
    err: dict[str, Any] = {"nvml_error": NVML_ERROR_FUNCTION_NOT_FOUND, "message": "not in this pynvml"}
    for name in fn_names:
        fn = getattr(nvml, name, None)
        if fn is None:
            continue
        try:
            value = fn(*args)
        except nvml.NVMLError as exc:
            err = _err(nvml, exc)
            if err["nvml_error"] == NVML_ERROR_FUNCTION_NOT_FOUND:
                continue
            return err
        return _jsonable(pick(value) if pick else value)
    return err


def _capture_device(nvml: Any, index: int) -> dict[str, Any]:
    h = nvml.nvmlDeviceGetHandleByIndex(index)
    d: dict[str, Any] = {"index": index}

    def c(
        key: str, *names: str, args: tuple[Any, ...] = (), pick: Callable[[Any], Any] | None = None
    ) -> None:
        d[key] = _call(nvml, names, h, *args, pick=pick)

    c("name", "nvmlDeviceGetName")
    c("uuid", "nvmlDeviceGetUUID")
    c(
        "pci",
        "nvmlDeviceGetPciInfo_v3",
        "nvmlDeviceGetPciInfo",
        pick=lambda p: {
            "busId": _text(p.busId),
            "pciDeviceId": int(p.pciDeviceId),
            "pciSubSystemId": int(p.pciSubSystemId),
        },
    )
    c(
        "memory",
        "nvmlDeviceGetMemoryInfo",
        pick=lambda m: {"total": int(m.total), "used": int(m.used), "free": int(m.free)},
    )
    c("compute_capability", "nvmlDeviceGetCudaComputeCapability")
    c("power_limit_mw", "nvmlDeviceGetPowerManagementLimit")
    c("enforced_power_limit_mw", "nvmlDeviceGetEnforcedPowerLimit")
    c("power_usage_mw", "nvmlDeviceGetPowerUsage")
    c("clock_sm_mhz", "nvmlDeviceGetClockInfo", args=(NVML_CLOCK_SM,))
    c("clock_mem_mhz", "nvmlDeviceGetClockInfo", args=(NVML_CLOCK_MEM,))
    c("app_clock_sm_mhz", "nvmlDeviceGetApplicationsClock", args=(NVML_CLOCK_SM,))
    c("app_clock_mem_mhz", "nvmlDeviceGetApplicationsClock", args=(NVML_CLOCK_MEM,))
    c("max_clock_sm_mhz", "nvmlDeviceGetMaxClockInfo", args=(NVML_CLOCK_SM,))
    c("max_clock_mem_mhz", "nvmlDeviceGetMaxClockInfo", args=(NVML_CLOCK_MEM,))
    c("ecc_mode", "nvmlDeviceGetEccMode")
    c("mig_mode", "nvmlDeviceGetMigMode")
    c("persistence_mode", "nvmlDeviceGetPersistenceMode")
    c("pcie_gen", "nvmlDeviceGetCurrPcieLinkGeneration")
    c("pcie_width", "nvmlDeviceGetCurrPcieLinkWidth")
    c("pcie_max_gen", "nvmlDeviceGetMaxPcieLinkGeneration")
    c("pcie_max_width", "nvmlDeviceGetMaxPcieLinkWidth")
    c(
        "compute_processes",
        "nvmlDeviceGetComputeRunningProcesses",
        pick=lambda ps: [{"pid": int(p.pid), "usedGpuMemory": p.usedGpuMemory} for p in ps],
    )
    c(
        "utilization",
        "nvmlDeviceGetUtilizationRates",
        pick=lambda u: {"gpu": int(u.gpu), "memory": int(u.memory)},
    )
    c(
        "clocks_event_reasons",
        "nvmlDeviceGetCurrentClocksEventReasons",
        "nvmlDeviceGetCurrentClocksThrottleReasons",
    )
    c("temperature_c", "nvmlDeviceGetTemperature", args=(NVML_TEMPERATURE_GPU,))
    c("energy_mj", "nvmlDeviceGetTotalEnergyConsumption")
    links: list[Any] = []
    for link in range(NVML_NVLINK_MAX_LINKS):
        state = _call(nvml, ("nvmlDeviceGetNvLinkState",), h, link)
        links.append(state)
        if isinstance(state, dict):  # an error: not supported / no such link; later links say the same
            break
    d["nvlink_states"] = links
    return d


def capture_raw(nvml: Any) -> dict[str, Any]:
    """Call NVML for the host and every device; JSON-able. Raises :class:`ProbeError`."""
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as exc:
        code = getattr(exc, "value", None)
        if code in (NVML_ERROR_LIBRARY_NOT_FOUND, NVML_ERROR_DRIVER_NOT_LOADED):
            raise ProbeError(
                f"no NVIDIA driver: NVML could not be loaded ({exc})", exitcodes.NO_DRIVER
            ) from None
        raise ProbeError(f"NVML failed to initialise: {exc}", exitcodes.NO_DRIVER) from None
    try:
        raw: dict[str, Any] = {
            "driver_version": _call(nvml, ("nvmlSystemGetDriverVersion",)),
            "cuda_driver_version": _call(
                nvml, ("nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion")
            ),
            "nvml_version": _call(nvml, ("nvmlSystemGetNVMLVersion",)),
        }
        count = nvml.nvmlDeviceGetCount()
        raw["devices"] = [_capture_device(nvml, i) for i in range(count)]
        return raw
    finally:
        with contextlib.suppress(nvml.NVMLError):
            nvml.nvmlShutdown()


# ---------------------------------------------------------------------------------------------
# parse
# ---------------------------------------------------------------------------------------------


@dataclass(slots=True)
class GpuProbe:
    index: int
    name: str
    uuid: str | None
    pci_bus_id: str | None
    pci_device_id: str
    pci_vendor_id: str | None
    pci_subsystem_id: str | None
    memory_total_bytes: int
    memory_used_bytes: int | None
    compute_capability: str | None
    power_limit_w: float | None
    enforced_power_limit_w: float | None
    power_usage_w: float | None
    clock_sm_mhz: int | None
    clock_mem_mhz: int | None
    app_clock_sm_mhz: int | None
    app_clock_mem_mhz: int | None
    max_clock_sm_mhz: int | None
    max_clock_mem_mhz: int | None
    ecc_mode: str
    mig_mode: str
    persistence_mode: str
    pcie_gen: int | None
    pcie_width: int | None
    pcie_max_gen: int | None
    pcie_max_width: int | None
    nvlink: str | dict[str, int]
    compute_processes: list[dict[str, Any]] | str
    utilization_gpu_pct: int | None
    clocks_event_reasons: list[str] | str
    throttling: list[str]
    temperature_c: int | None
    energy_counter_supported: bool
    slug: str | None
    known_hardware: bool

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(slots=True)
class HostProbe:
    driver_version: str
    cuda_driver_version: str | None
    nvml_version: str | None
    gpus: list[GpuProbe] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "driver_version": self.driver_version,
            "cuda_driver_version": self.cuda_driver_version,
            "nvml_version": self.nvml_version,
            "gpus": [g.to_dict() for g in self.gpus],
        }


def _ok(v: Any) -> bool:
    return not (isinstance(v, dict) and "nvml_error" in v)


def _int(v: Any) -> int | None:
    return int(v) if _ok(v) and isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _watts(v: Any) -> float | None:
    i = _int(v)
    return round(i / 1000.0, 3) if i is not None else None


def _mode(v: Any, unsupported: str = "unsupported") -> str:
    """NVML (current, pending) mode pairs: 1 enabled, 0 disabled."""
    if not _ok(v):
        return unsupported if v.get("nvml_error") == NVML_ERROR_NOT_SUPPORTED else UNKNOWN
    cur = v[0] if isinstance(v, list) else v
    return "enabled" if int(cur) == 1 else "disabled"


def _pci_hex(v: int | None, shift: int = 0, mask: int = 0xFFFF) -> str | None:
    return None if v is None else f"0x{(v >> shift) & mask:04x}"


def _nvlink(states: list[Any]) -> str | dict[str, int]:
    ok = [s for s in states if _ok(s)]
    if not ok:
        return UNKNOWN  # NVML says not supported (PCIe parts, VMs without NVLink passthrough)
    return {"links": len(ok), "active": sum(1 for s in ok if int(s) == 1)}


def _reasons(v: Any) -> list[str] | str:
    i = _int(v)
    if i is None:
        return UNKNOWN
    return [name for bit, name in CLOCK_EVENT_REASONS.items() if i & bit]


def parse_device(d: dict[str, Any]) -> GpuProbe:
    pci = d.get("pci") if _ok(d.get("pci")) else None
    packed = int(pci["pciDeviceId"]) if pci else None
    try:
        pci_device_id = normalise_pci_id(f"0x{packed:08x}") if packed is not None else "0x0000"
    except VocabularyError:
        pci_device_id = "0x0000"
    mem = d.get("memory") if _ok(d.get("memory")) else None
    total = int(mem["total"]) if mem else 0
    cc = d.get("compute_capability")
    procs_raw = d.get("compute_processes")
    procs: list[dict[str, Any]] | str
    if _ok(procs_raw) and isinstance(procs_raw, list):
        procs = [{"pid": p["pid"], "used_memory_bytes": p.get("usedGpuMemory")} for p in procs_raw]
    else:
        procs = UNKNOWN
    util = d.get("utilization")
    reasons = _reasons(d.get("clocks_event_reasons"))
    hw = identify(pci_device_id, total or None)
    return GpuProbe(
        index=int(d["index"]),
        name=str(_text(d["name"])) if _ok(d.get("name")) else UNKNOWN,
        uuid=d["uuid"] if _ok(d.get("uuid")) else None,
        pci_bus_id=pci["busId"] if pci else None,
        pci_device_id=pci_device_id,
        pci_vendor_id=_pci_hex(packed, 0) if packed is not None else None,
        pci_subsystem_id=_pci_hex(int(pci["pciSubSystemId"]), 16) if pci else None,
        memory_total_bytes=total,
        memory_used_bytes=int(mem["used"]) if mem else None,
        compute_capability=f"{cc[0]}.{cc[1]}" if _ok(cc) and isinstance(cc, list) else None,
        power_limit_w=_watts(d.get("power_limit_mw")),
        enforced_power_limit_w=_watts(d.get("enforced_power_limit_mw")),
        power_usage_w=_watts(d.get("power_usage_mw")),
        clock_sm_mhz=_int(d.get("clock_sm_mhz")),
        clock_mem_mhz=_int(d.get("clock_mem_mhz")),
        app_clock_sm_mhz=_int(d.get("app_clock_sm_mhz")),
        app_clock_mem_mhz=_int(d.get("app_clock_mem_mhz")),
        max_clock_sm_mhz=_int(d.get("max_clock_sm_mhz")),
        max_clock_mem_mhz=_int(d.get("max_clock_mem_mhz")),
        ecc_mode=_mode(d.get("ecc_mode", {"nvml_error": -1})),
        mig_mode=_mode(d.get("mig_mode", {"nvml_error": -1})),
        persistence_mode=_mode(d.get("persistence_mode", {"nvml_error": -1})),
        pcie_gen=_int(d.get("pcie_gen")),
        pcie_width=_int(d.get("pcie_width")),
        pcie_max_gen=_int(d.get("pcie_max_gen")),
        pcie_max_width=_int(d.get("pcie_max_width")),
        nvlink=_nvlink(list(d.get("nvlink_states") or [])),
        compute_processes=procs,
        utilization_gpu_pct=int(util["gpu"]) if _ok(util) and isinstance(util, dict) else None,
        clocks_event_reasons=reasons,
        throttling=sorted(set(reasons) & THROTTLING_REASONS) if isinstance(reasons, list) else [],
        temperature_c=_int(d.get("temperature_c")),
        energy_counter_supported=_int(d.get("energy_mj")) is not None,
        slug=hw.slug if hw else None,
        known_hardware=hw is not None,
    )


def _cuda_version(v: Any) -> str | None:
    i = _int(v)
    return f"{i // 1000}.{(i % 1000) // 10}" if i is not None else None


def parse_raw(raw: dict[str, Any]) -> HostProbe:
    """A :class:`HostProbe` from a capture. No devices raises :class:`ProbeError` (NO_GPU)."""
    devices = raw.get("devices") or []
    if not devices:
        raise ProbeError("NVML is loaded but reports no NVIDIA GPU on this host", exitcodes.NO_GPU)
    drv = raw.get("driver_version")
    nv = raw.get("nvml_version")
    return HostProbe(
        driver_version=str(drv) if _ok(drv) and drv else UNKNOWN,
        cuda_driver_version=_cuda_version(raw.get("cuda_driver_version")),
        nvml_version=str(nv) if _ok(nv) and nv else None,
        gpus=[parse_device(d) for d in devices],
    )


def probe(nvml: Any | None = None) -> HostProbe:
    """Probe this host. ``nvml`` is the pynvml module (a fake in tests)."""
    return parse_raw(capture_raw(nvml if nvml is not None else load_nvml()))


def busy_reasons(gpu: GpuProbe, *, max_utilisation_pct: int = 10) -> list[str]:
    """Why this GPU is not fit for benchmarking right now (empty list: it is)."""
    out: list[str] = []
    if isinstance(gpu.compute_processes, list) and gpu.compute_processes:
        pids = ", ".join(str(p["pid"]) for p in gpu.compute_processes[:8])
        out.append(f"{len(gpu.compute_processes)} other compute process(es) on the GPU (pid {pids})")
    if gpu.utilization_gpu_pct is not None and gpu.utilization_gpu_pct > max_utilisation_pct:
        out.append(f"GPU utilisation {gpu.utilization_gpu_pct}% (> {max_utilisation_pct}%)")
    if gpu.throttling:
        out.append("clocks throttled: " + ", ".join(gpu.throttling))
    if gpu.mig_mode == "enabled":
        out.append("MIG mode is enabled: results would describe a MIG slice, not the whole GPU")
    return out
