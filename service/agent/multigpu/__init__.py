"""Multi-GPU benchmark suite: collective bus bandwidth and llm-train strong scaling.

Launched per configuration with ``torchrun --standalone`` (see :mod:`.launcher`); every
process runs with NVLink multicast off (:mod:`.env`). Documentation: ``docs/multigpu.md``.
Importing this package imports neither torch nor transformers.
"""
