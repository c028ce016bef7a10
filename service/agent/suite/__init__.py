"""Workload implementations of the benchmark suite.

Each module exposes ``run(ctx, params) -> dict`` and imports torch (and transformers,
torchvision, peft) *inside* its functions, so importing this package -- as the service, the
CLI and the tests do -- never needs the GPU extras. The runner executes every configuration
in a separate process (``service.agent.suite.child``).
"""

from __future__ import annotations

WORKLOAD_MODULES: dict[str, str] = {
    "gemm": "service.agent.suite.gemm",
    "memory-bandwidth": "service.agent.suite.membw",
    "resnet50-train": "service.agent.suite.vision",
    "resnet50-infer": "service.agent.suite.vision",
    "bert-large-train": "service.agent.suite.bert",
    "bert-large-infer": "service.agent.suite.bert",
    "llm-train": "service.agent.suite.llm_train",
    "llm-infer": "service.agent.suite.llm_infer",
}
