"""Process environment for every multi-GPU benchmark process.

NVLink SHARP / multicast ("NVLS") is switched off in NCCL, PyTorch symmetric memory and
NVSHMEM for every process this suite starts. On the shared H200 hosts that lend these GPUs a
program that creates multicast objects can take the host's GPUs out of service, so the
variables below are forced (never merely defaulted) and the fingerprint records
``nccl_nvls_enable: false``. Production NVSwitch systems with NVLS on run all-reduce faster
than these numbers; do not generalise from them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping

#: Forced on every process the suite launches (torchrun, its workers, anything below them).
SAFE_ENV: Mapping[str, str] = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}


def safe_environ(base: Mapping[str, str] | None = None, **extra: str) -> dict[str, str]:
    """A copy of ``base`` (default: ``os.environ``) with :data:`SAFE_ENV` forced on top.

    ``extra`` is applied before the safe variables, so a caller cannot switch NVLS back on.
    """
    env = dict(os.environ if base is None else base)
    env.update(extra)
    env.update(SAFE_ENV)
    return env


def apply_safe_env(environ: MutableMapping[str, str] | None = None) -> None:
    """Force :data:`SAFE_ENV` into this process's environment (before NCCL is initialised)."""
    target = os.environ if environ is None else environ
    for key, value in SAFE_ENV.items():
        target[key] = value


def nvls_disabled(environ: Mapping[str, str] | None = None) -> bool:
    """True when every safety variable has its safe value in ``environ`` (default: ours)."""
    env = os.environ if environ is None else environ
    return all(env.get(k) == v for k, v in SAFE_ENV.items())
