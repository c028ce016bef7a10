"""Imported once by the runner's fork server so each configuration's process starts warm.

Importing torch and transformers takes seconds; forking a process that already holds them
takes milliseconds. CUDA is *not* initialised here (only imported), so every child still gets
its own fresh CUDA context. Missing optional packages are ignored: the workload that needs
one reports it.
"""

from __future__ import annotations

import contextlib
import importlib

for _name in (
    "torch",
    "transformers",
    "transformers.models.llama.modeling_llama",
    "transformers.models.bert.modeling_bert",
    "peft",
    "torchvision",
    "pynvml",
):
    with contextlib.suppress(Exception):
        importlib.import_module(_name)
