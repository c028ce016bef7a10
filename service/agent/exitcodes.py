"""Exit codes of ``gpu-advisor agent ...`` (documented in docs/agent.md; scripts rely on them)."""

from __future__ import annotations

OK = 0
"""Success: probe printed, run completed (oom/error results are results), everything submitted."""
ERROR = 1
"""Unexpected failure (a bug, an unreadable file); the message says what."""
USAGE = 2
"""Bad command line or plan file (typer/click's own code for usage errors)."""
NO_DRIVER = 3
"""No NVIDIA driver / NVML library (or nvidia-ml-py missing): nothing to probe."""
NO_GPU = 4
"""NVML loaded but reports no GPU, or the requested GPU index does not exist."""
GPU_BUSY = 5
"""The GPU is busy (other compute processes, utilisation) or throttling; ``--allow-busy`` overrides."""
SPOOLED = 6
"""Measured but not delivered: the service was unreachable (or refused the key); the runs are
in the spool and ``agent flush`` sends them later."""
DEAD_LETTER = 7
"""The service permanently refused at least one run (4xx); it is in the dead-letter directory
with the server's problem text."""
