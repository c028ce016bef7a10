"""Stack fingerprint and GPU identity for multi-GPU runs, read from the environment.

Every field of :data:`service.core.catalog.vocabulary.FINGERPRINT_FIELDS` is filled. On a GPU host the
hardware fields come from NVML (``nvidia-ml-py``), with ``/sys/bus/pci`` as a fallback for the
PCI device id; on a CPU-only host (the gloo smoke runs) they take explicit placeholder values
(``driver_version: "none"``, ``pci_device_id: "0x0000"``, ``ecc_mode: "n/a"``) rather than
nulls, because the vocabulary requires them.

The conventions are the single-GPU agent's (``service.agent.payload.fingerprint``), so that a
host's single- and multi-GPU results share a stack hash where the stack is the same:
``host_id`` is ``mid-`` + SHA-256 of ``/etc/machine-id``; ECC/MIG read
``enabled|disabled|unsupported|unknown``; PCIe is the maximum negotiated link (the current
one drops at idle); ``attention_backend`` lists the SDPA kernels torch has enabled
(``torch-sdpa[flash,mem_efficient,cudnn,math]``); ``engine_versions`` names transformers.
This module does not import that one because it needs pydantic, which GPU images may lack.

``nccl_nvls_enable`` is ``False`` whenever :mod:`service.agent.multigpu.env` forced NVLS off in
this process (always, for processes this suite starts): results measured without NVLink
multicast must not pool with results measured with it.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from service.agent.multigpu.env import nvls_disabled
from service.core.catalog.fingerprint import normalise_pci_id
from service.core.catalog.vocabulary import SUITE_VERSION, suite_definition_hash

#: Placeholder values for hardware that a CPU-only host does not have.
CPU_PLACEHOLDERS: dict[str, Any] = {
    "driver_version": "none",
    "cuda_version": "none",
    "ecc_mode": "n/a",
    "mig_mode": "n/a",
    "pci_device_id": "0x0000",
}


@dataclass(frozen=True, slots=True)
class DeviceInfo:
    """What NVML (or the PCI tree) says about one GPU; ``None`` where it could not say."""

    name: str
    pci_device_id: str
    pci_vendor_id: str | None
    pci_subsystem_id: str | None
    memory_total_bytes: int
    driver_version: str | None
    ecc_mode: str
    mig_mode: str
    power_limit_w: float | None
    app_clock_sm_mhz: int | None
    app_clock_mem_mhz: int | None
    pcie_gen: int | None
    pcie_width: int | None


# One definition of the host identity for both suites, so their runs hash alike.
from service.agent.payload import host_id  # noqa: E402  (re-exported)


def _decode(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def _nvml_device_info(pci_bus_id: str | None, index: int) -> DeviceInfo | None:
    """NVML identity of one GPU, addressed by PCI bus id (preferred) or NVML index."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:
        return None
    try:
        h = None
        if pci_bus_id:
            for candidate in (pci_bus_id, "0000" + pci_bus_id):  # NVML wants an 8-digit domain
                try:
                    h = pynvml.nvmlDeviceGetHandleByPciBusId(candidate.encode())
                    break
                except Exception:
                    continue
        if h is None:
            if pci_bus_id and os.environ.get("CUDA_VISIBLE_DEVICES"):
                return None  # NVML and CUDA number devices differently here: do not guess
            h = pynvml.nvmlDeviceGetHandleByIndex(index)

        def opt(fn: Any, *args: Any) -> Any:
            try:
                return fn(h, *args)
            except Exception:
                return None

        pci = pynvml.nvmlDeviceGetPciInfo(h)
        packed = int(pci.pciDeviceId)  # device << 16 | vendor
        sub = int(getattr(pci, "pciSubSystemId", 0) or 0)
        ecc = _nvml_mode(pynvml, pynvml.nvmlDeviceGetEccMode, h)
        mig = _nvml_mode(pynvml, pynvml.nvmlDeviceGetMigMode, h)
        power_mw = opt(pynvml.nvmlDeviceGetEnforcedPowerLimit)
        return DeviceInfo(
            name=_decode(pynvml.nvmlDeviceGetName(h)),
            pci_device_id=f"0x{packed >> 16:04x}",
            pci_vendor_id=f"0x{packed & 0xFFFF:04x}",
            pci_subsystem_id=f"0x{sub:08x}" if sub else None,
            memory_total_bytes=int(pynvml.nvmlDeviceGetMemoryInfo(h).total),
            driver_version=_decode(pynvml.nvmlSystemGetDriverVersion()),
            ecc_mode=ecc,
            mig_mode=mig,
            power_limit_w=power_mw / 1000.0 if power_mw else None,
            app_clock_sm_mhz=opt(pynvml.nvmlDeviceGetApplicationsClock, pynvml.NVML_CLOCK_SM),
            app_clock_mem_mhz=opt(pynvml.nvmlDeviceGetApplicationsClock, pynvml.NVML_CLOCK_MEM),
            pcie_gen=opt(pynvml.nvmlDeviceGetMaxPcieLinkGeneration),
            pcie_width=opt(pynvml.nvmlDeviceGetMaxPcieLinkWidth),
        )
    except Exception:
        return None
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()


def _nvml_mode(pynvml: Any, fn: Any, handle: Any) -> str:
    """NVML (current, pending) mode pair -> ``enabled|disabled``; ``unsupported|unknown`` on errors."""
    try:
        cur = fn(handle)
    except pynvml.NVMLError as exc:
        return "unsupported" if getattr(exc, "value", None) == pynvml.NVML_ERROR_NOT_SUPPORTED else "unknown"
    except Exception:
        return "unknown"
    cur = cur[0] if isinstance(cur, (list, tuple)) else cur
    return "enabled" if int(cur) == 1 else "disabled"


def _sysfs_pci_device_id(pci_bus_id: str) -> str | None:
    """``/sys/bus/pci/devices/<bus id>/device`` (e.g. ``0x2335``), or ``None``."""
    path = Path("/sys/bus/pci/devices") / pci_bus_id.lower() / "device"
    try:
        return normalise_pci_id(path.read_text().strip())
    except (OSError, ValueError):
        return None


def torch_pci_bus_id(device_index: int) -> str | None:
    """``0000:18:00.0``-style bus id of a CUDA device as torch sees it (CUDA_VISIBLE_DEVICES aware)."""
    import torch

    if not torch.cuda.is_available():
        return None
    props = torch.cuda.get_device_properties(device_index)
    dom, bus, dev = (getattr(props, k, None) for k in ("pci_domain_id", "pci_bus_id", "pci_device_id"))
    if bus is None or dev is None:
        return None
    return f"{int(dom or 0):04x}:{int(bus):02x}:{int(dev):02x}.0"


def device_info(device_index: int | None) -> DeviceInfo | None:
    """Identity of CUDA device ``device_index`` (torch numbering), or ``None`` on a CPU run."""
    if device_index is None:
        return None
    bus_id = torch_pci_bus_id(device_index)
    info = _nvml_device_info(bus_id, device_index)
    if info is not None:
        return info
    import torch

    props = torch.cuda.get_device_properties(device_index)
    pci = (_sysfs_pci_device_id(bus_id) if bus_id else None) or "0x0000"
    return DeviceInfo(
        name=str(props.name),
        pci_device_id=pci,
        pci_vendor_id="0x10de" if torch.version.cuda else None,
        pci_subsystem_id=None,
        memory_total_bytes=int(props.total_memory),
        driver_version=None,
        ecc_mode="unknown",
        mig_mode="unknown",
        power_limit_w=None,
        app_clock_sm_mhz=None,
        app_clock_mem_mhz=None,
        pcie_gen=None,
        pcie_width=None,
    )


def gpu_identity(info: DeviceInfo | None) -> dict[str, Any]:
    """The run's ``gpu`` object (``GpuIdentity`` on the wire)."""
    if info is None:
        return {
            "name": "CPU (no GPU; gloo smoke run)",
            "pci_device_id": "0x0000",
            "pci_vendor_id": None,
            "pci_subsystem_id": None,
            "memory_total_bytes": 0,
            "slug": None,
        }
    return {
        "name": info.name,
        "pci_device_id": info.pci_device_id,
        "pci_vendor_id": info.pci_vendor_id,
        "pci_subsystem_id": info.pci_subsystem_id,
        "memory_total_bytes": info.memory_total_bytes,
        "slug": None,
    }


def software_versions(backend: str) -> dict[str, str | None]:
    """torch / CUDA runtime / cuDNN / NCCL / transformers versions as this process sees them.

    ``nccl_version`` is the NCCL torch carries (recorded for any CUDA build, as the single-GPU
    agent does; a gloo-only CPU build has none).
    """
    import torch

    cuda = torch.version.cuda
    cudnn: str | None = None
    nccl: str | None = None
    if cuda:
        cudnn_mod: Any = torch.backends.cudnn
        v = cudnn_mod.version() if cudnn_mod.is_available() else None
        cudnn = str(v) if v else None
        try:
            nccl_mod: Any = torch.cuda.nccl
            nv = nccl_mod.version()
            nccl = ".".join(str(x) for x in nv) if isinstance(nv, tuple) else str(nv)
        except Exception:
            nccl = None
    try:
        import transformers

        tv: str | None = str(transformers.__version__)
    except ImportError:
        tv = None
    return {
        "torch_version": str(torch.__version__),
        "cuda_version": str(cuda) if cuda else None,
        "cudnn_version": cudnn,
        "nccl_version": nccl,
        "transformers_version": tv,
    }


def sdpa_backend(device_type: str) -> str:
    """The SDPA kernels torch has enabled, as the single-GPU agent writes them."""
    if device_type != "cuda":
        return "torch-sdpa[cpu]"
    import torch

    b: Any = torch.backends.cuda
    enabled = [
        name
        for name, on in (
            ("flash", b.flash_sdp_enabled()),
            ("mem_efficient", b.mem_efficient_sdp_enabled()),
            ("cudnn", b.cudnn_sdp_enabled()),
            ("math", b.math_sdp_enabled()),
        )
        if on
    ]
    return "torch-sdpa[" + ",".join(enabled) + "]"


def tf32_flags() -> tuple[bool, bool]:
    """(matmul, cudnn) TF32 switches as they stand in this process."""
    import torch

    return (torch.get_float32_matmul_precision() != "highest", bool(torch.backends.cudnn.allow_tf32))


def build_fingerprint(
    *,
    backend: str,
    info: DeviceInfo | None,
    attention_backend: str,
    torch_compile: bool = False,
    tf32: tuple[bool, bool] | None = None,
) -> dict[str, Any]:
    """A complete fingerprint (every FINGERPRINT_FIELDS key) for a run on this host.

    ``info`` is the GPU of local rank 0 (``None`` for a CPU run); ``attention_backend`` the
    attention implementation the model actually used (``"none"`` for collectives only);
    ``tf32`` the (matmul, cudnn) flags in force while measuring (read now when omitted).
    """
    sw = software_versions(backend)
    matmul_tf32, cudnn_tf32 = tf32 if tf32 is not None else tf32_flags()
    fp: dict[str, Any] = {
        "suite_version": SUITE_VERSION,
        "workload_definition_hash": suite_definition_hash(),
        "driver_version": CPU_PLACEHOLDERS["driver_version"],
        "cuda_version": sw["cuda_version"] or CPU_PLACEHOLDERS["cuda_version"],
        "torch_version": sw["torch_version"],
        "attention_backend": attention_backend,
        "tf32_matmul": matmul_tf32,
        "tf32_cudnn": cudnn_tf32,
        "torch_compile": torch_compile,
        "ecc_mode": CPU_PLACEHOLDERS["ecc_mode"],
        "mig_mode": CPU_PLACEHOLDERS["mig_mode"],
        "pci_device_id": CPU_PLACEHOLDERS["pci_device_id"],
        "host_id": host_id(),
        "cudnn_version": sw["cudnn_version"],
        "nccl_version": sw["nccl_version"],
        "transformers_version": sw["transformers_version"],
        "engine_versions": {"hf-transformers": sw["transformers_version"]}
        if sw["transformers_version"]
        else None,
        "power_limit_w": None,
        "app_clock_sm_mhz": None,
        "app_clock_mem_mhz": None,
        "pcie_gen": None,
        "pcie_width": None,
        "container_image_digest": os.environ.get("GPU_ADVISOR_CONTAINER_IMAGE_DIGEST") or None,
        "nccl_nvls_enable": not nvls_disabled(),
    }
    if info is not None:
        fp.update(
            driver_version=info.driver_version or "unknown",
            ecc_mode=info.ecc_mode,
            mig_mode=info.mig_mode,
            pci_device_id=info.pci_device_id,
            power_limit_w=info.power_limit_w,
            app_clock_sm_mhz=info.app_clock_sm_mhz,
            app_clock_mem_mhz=info.app_clock_mem_mhz,
            pcie_gen=info.pcie_gen,
            pcie_width=info.pcie_width,
        )
    return fp
