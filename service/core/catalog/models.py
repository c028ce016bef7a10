"""Model architectures and presets, with parameter counts computed from the architecture.

Three kinds of model are described, each by a frozen dataclass:

* :class:`DecoderSpec` (:mod:`service.core.catalog.decoder`, with its counting rules) --
  decoder-only transformers as Hugging Face implements them: Llama and its relatives, and the
  sparse models (MLA, routed + shared experts, MTP) of :mod:`service.core.catalog.sparse_models`.
* :class:`EncoderSpec` (:mod:`service.core.catalog.encoder`) -- BERT-style encoders, counted as Hugging Face ``BertForMaskedLM``
  (no pooler; MLM head transform + decoder bias; decoder weight tied to the word embeddings).
* :class:`CnnSpec` (:mod:`service.core.catalog.cnn`) -- torchvision ResNet (bottleneck) classifiers.

Sources of the preset shapes: the published ``config.json`` of each Hugging Face repository
named in ``hf_id`` (Llama 2/3/3.1, Mistral-7B-v0.1, Mixtral-8x7B-v0.1, Qwen2.5, BERT), the
GPT-3 paper (Brown et al. 2020, table 2.1: 175B = 96 layers, d_model 12288, 96 heads of 128,
context 2048, GPT-2 BPE vocabulary of 50257) and torchvision's ``resnet50``.

Specs from a ``config.json`` are built in :mod:`service.core.catalog.hf_config`. All of these
names stay importable from here.

The ``gt-*`` presets are the Llama-style shapes the benchmark agent trains on the H200 to
produce ground truth (built from config, no download).
"""

from __future__ import annotations

import difflib
import re

from service.core.catalog.cnn import CnnSpec
from service.core.catalog.decoder import DecoderSpec, UnsupportedArchitecture
from service.core.catalog.encoder import EncoderSpec
from service.core.catalog.hf_config import (
    ModelSpec,
    from_hf_config,
)
from service.core.catalog.llama_shape import from_parameter_count as from_parameter_count
from service.core.catalog.llama_shape import llama_spec as _llama
from service.core.catalog.sparse_models import SPARSE_PRESETS

__all__ = [
    "PRESETS",
    "CnnSpec",
    "DecoderSpec",
    "EncoderSpec",
    "ModelNotFound",
    "ModelSpec",
    "UnsupportedArchitecture",
    "from_hf_config",
    "from_parameter_count",
    "get_model",
    "list_models",
]


class ModelNotFound(LookupError):
    """No preset matches ``name``; ``close_matches`` lists preset ids that look similar."""

    def __init__(self, name: str, close_matches: list[str]) -> None:
        hint = f"; did you mean {', '.join(close_matches)}?" if close_matches else ""
        super().__init__(f"unknown model {name!r}{hint}")
        self.name = name
        self.close_matches = close_matches


# --------------------------------------------------------------------------------------------
# Presets
# --------------------------------------------------------------------------------------------


_GT_NOTE = "ground-truth shape trained on the H200 by the benchmark agent (built from config)"

_PRESET_LIST: tuple[ModelSpec, ...] = (
    # Llama 2 (4096 context, RoPE 1e4, RMSNorm eps 1e-5 in the HF configs)
    _llama(
        "llama2-7b",
        4096,
        32,
        32,
        32,
        11008,
        32000,
        hf_id="meta-llama/Llama-2-7b-hf",
        family="llama2",
        rope_theta=10000.0,
        max_pos=4096,
        aliases=("meta-llama/Llama-2-7b-chat-hf", "llama-2-7b"),
    ),
    _llama(
        "llama2-13b",
        5120,
        40,
        40,
        40,
        13824,
        32000,
        hf_id="meta-llama/Llama-2-13b-hf",
        family="llama2",
        rope_theta=10000.0,
        max_pos=4096,
        aliases=("meta-llama/Llama-2-13b-chat-hf", "llama-2-13b"),
    ),
    _llama(
        "llama2-70b",
        8192,
        80,
        64,
        8,
        28672,
        32000,
        hf_id="meta-llama/Llama-2-70b-hf",
        family="llama2",
        rope_theta=10000.0,
        max_pos=4096,
        aliases=("meta-llama/Llama-2-70b-chat-hf", "llama-2-70b"),
    ),
    # Llama 3 (8192 context) and 3.1 (131072 context, llama3 RoPE scaling; same weights shape)
    _llama(
        "llama3-8b",
        4096,
        32,
        32,
        8,
        14336,
        128256,
        hf_id="meta-llama/Meta-Llama-3-8B",
        family="llama3",
        rope_theta=500000.0,
        max_pos=8192,
        aliases=("meta-llama/Meta-Llama-3-8B-Instruct", "llama-3-8b"),
    ),
    _llama(
        "llama3-70b",
        8192,
        80,
        64,
        8,
        28672,
        128256,
        hf_id="meta-llama/Meta-Llama-3-70B",
        family="llama3",
        rope_theta=500000.0,
        max_pos=8192,
        aliases=("meta-llama/Meta-Llama-3-70B-Instruct", "llama-3-70b"),
    ),
    _llama(
        "llama3.1-8b",
        4096,
        32,
        32,
        8,
        14336,
        128256,
        hf_id="meta-llama/Llama-3.1-8B",
        family="llama3.1",
        rope_theta=500000.0,
        max_pos=131072,
        aliases=(
            "meta-llama/Meta-Llama-3.1-8B",
            "meta-llama/Llama-3.1-8B-Instruct",
            "meta-llama/Meta-Llama-3.1-8B-Instruct",
        ),
    ),
    _llama(
        "llama3.1-70b",
        8192,
        80,
        64,
        8,
        28672,
        128256,
        hf_id="meta-llama/Llama-3.1-70B",
        family="llama3.1",
        rope_theta=500000.0,
        max_pos=131072,
        aliases=(
            "meta-llama/Meta-Llama-3.1-70B",
            "meta-llama/Llama-3.1-70B-Instruct",
            "meta-llama/Meta-Llama-3.1-70B-Instruct",
            # the same architecture and config.json shape (Llama 3.3 is a post-training release;
            # DeepSeek's R1 distillation fine-tunes Llama-3.3-70B-Instruct)
            "meta-llama/Llama-3.3-70B-Instruct",
            "deepseek-ai/DeepSeek-R1-Distill-Llama-70B",
        ),
    ),
    _llama(
        "llama3.1-405b",
        16384,
        126,
        128,
        8,
        53248,
        128256,
        hf_id="meta-llama/Llama-3.1-405B",
        family="llama3.1",
        rope_theta=500000.0,
        max_pos=131072,
        aliases=(
            "meta-llama/Meta-Llama-3.1-405B",
            "meta-llama/Llama-3.1-405B-Instruct",
            "meta-llama/Meta-Llama-3.1-405B-Instruct",
        ),
    ),
    # Mistral / Mixtral (v0.1)
    _llama(
        "mistral-7b",
        4096,
        32,
        32,
        8,
        14336,
        32000,
        hf_id="mistralai/Mistral-7B-v0.1",
        family="mistral",
        rope_theta=10000.0,
        max_pos=32768,
        sliding_window=4096,
        aliases=("mistralai/Mistral-7B-Instruct-v0.1", "mistral-7b-v0.1"),
    ),
    _llama(
        "mixtral-8x7b",
        4096,
        32,
        32,
        8,
        14336,
        32000,
        hf_id="mistralai/Mixtral-8x7B-v0.1",
        family="mixtral",
        rope_theta=1e6,
        max_pos=32768,
        experts=8,
        top_k=2,
        aliases=("mistralai/Mixtral-8x7B-Instruct-v0.1", "mixtral-8x7b-v0.1"),
    ),
    # Mixtral-8x22B v0.1: the shape of mistral-community/Mixtral-8x22B-v0.1's config (vocab 32000,
    # 56 layers, hidden 6144, 48 heads / 8 KV, expert FFN 16384, 8 experts top-2, untied, 64k
    # positions), as Cerebras Model Zoo's params_mixtral_8x22b.yaml (commit cc48e20) restates it
    _llama(
        "mixtral-8x22b",
        6144,
        56,
        48,
        8,
        16384,
        32000,
        hf_id="mistralai/Mixtral-8x22B-v0.1",
        family="mixtral",
        rope_theta=1e6,
        max_pos=65536,
        experts=8,
        top_k=2,
        aliases=("mistralai/Mixtral-8x22B-Instruct-v0.1", "mixtral-8x22b-v0.1"),
    ),
    # Qwen2.5 (q/k/v biases, untied embeddings from 7B up, RMSNorm eps 1e-6, RoPE 1e6)
    _llama(
        "qwen2.5-7b",
        3584,
        28,
        28,
        4,
        18944,
        152064,
        hf_id="Qwen/Qwen2.5-7B",
        family="qwen2.5",
        rope_theta=1e6,
        max_pos=131072,
        eps=1e-6,
        attention_bias=True,
        qkv_bias_only=True,
        aliases=("Qwen/Qwen2.5-7B-Instruct",),
    ),
    _llama(
        "qwen2.5-14b",
        5120,
        48,
        40,
        8,
        13824,
        152064,
        hf_id="Qwen/Qwen2.5-14B",
        family="qwen2.5",
        rope_theta=1e6,
        max_pos=131072,
        eps=1e-5,
        attention_bias=True,
        qkv_bias_only=True,
        aliases=("Qwen/Qwen2.5-14B-Instruct",),
    ),
    _llama(
        "qwen2.5-32b",
        5120,
        64,
        40,
        8,
        27648,
        152064,
        hf_id="Qwen/Qwen2.5-32B",
        family="qwen2.5",
        rope_theta=1e6,
        max_pos=131072,
        eps=1e-5,
        attention_bias=True,
        qkv_bias_only=True,
        # DeepSeek's R1 distillation fine-tunes Qwen2.5-32B: the same config.json shape
        aliases=("Qwen/Qwen2.5-32B-Instruct", "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B"),
    ),
    _llama(
        "qwen2.5-72b",
        8192,
        80,
        64,
        8,
        29568,
        152064,
        hf_id="Qwen/Qwen2.5-72B",
        family="qwen2.5",
        rope_theta=1e6,
        max_pos=131072,
        eps=1e-5,
        attention_bias=True,
        qkv_bias_only=True,
        aliases=("Qwen/Qwen2.5-72B-Instruct",),
    ),
    # GPT-3 175B (Brown et al. 2020): learned positions, LayerNorm, GELU MLP 4h, biases, tied.
    DecoderSpec(
        id="gpt3-175b",
        hidden_size=12288,
        num_layers=96,
        num_heads=96,
        num_kv_heads=96,
        head_dim=128,
        intermediate_size=49152,
        vocab_size=50257,
        tie_word_embeddings=True,
        attention_bias=True,
        mlp_bias=True,
        gated_mlp=False,
        num_experts=1,
        experts_per_token=1,
        max_position_embeddings=2048,
        rope_theta=0.0,
        rms_norm_eps=1e-5,
        hf_id=None,
        family="gpt3",
        norm="layernorm",
        position_embedding="learned",
        activation="gelu",
        aliases=("gpt-3", "gpt3", "davinci"),
        source="Brown et al. 2020, Language Models are Few-Shot Learners, table 2.1",
        notes="dense attention assumed (the paper alternates dense and locally banded sparse "
        "layers; parameters are unaffected)",
    ),
    EncoderSpec(
        id="bert-base",
        hidden_size=768,
        num_layers=12,
        num_heads=12,
        intermediate_size=3072,
        vocab_size=30522,
        max_position_embeddings=512,
        type_vocab_size=2,
        layer_norm_eps=1e-12,
        hf_id="google-bert/bert-base-uncased",
        family="bert",
        aliases=("bert-base-uncased", "bert-base-cased"),
        source="https://huggingface.co/google-bert/bert-base-uncased/blob/main/config.json",
        notes="uncased vocabulary (30522); bert-base-cased has 28996 tokens",
    ),
    EncoderSpec(
        id="bert-large",
        hidden_size=1024,
        num_layers=24,
        num_heads=16,
        intermediate_size=4096,
        vocab_size=30522,
        max_position_embeddings=512,
        type_vocab_size=2,
        layer_norm_eps=1e-12,
        hf_id="google-bert/bert-large-uncased",
        family="bert",
        aliases=("bert-large-uncased", "bert-large-cased"),
        source="https://huggingface.co/google-bert/bert-large-uncased/blob/main/config.json",
        notes="uncased vocabulary (30522); bert-large-cased has 28996 tokens",
    ),
    CnnSpec(
        id="resnet50",
        block_counts=(3, 4, 6, 3),
        base_width=64,
        num_classes=1000,
        image_size=224,
        hf_id="microsoft/resnet-50",
        family="resnet",
        aliases=("resnet-50", "torchvision/resnet50"),
        source="torchvision.models.resnet50 (He et al. 2016, v1.5 layout)",
    ),
    # Ground-truth shapes (Llama layout, SwiGLU, no biases, untied, RMSNorm eps 1e-5).
    _llama(
        "gt-llama-110m",
        768,
        12,
        12,
        12,
        2048,
        32000,
        hf_id=None,
        family="gt-llama",
        rope_theta=10000.0,
        max_pos=4096,
        notes=_GT_NOTE,
    ),
    _llama(
        "gt-llama-350m",
        1024,
        24,
        16,
        16,
        2816,
        32000,
        hf_id=None,
        family="gt-llama",
        rope_theta=10000.0,
        max_pos=4096,
        notes=_GT_NOTE,
    ),
    _llama(
        "gt-llama-1b-v32k",
        2048,
        16,
        32,
        8,
        8192,
        32000,
        hf_id=None,
        family="gt-llama",
        rope_theta=10000.0,
        max_pos=4096,
        notes=_GT_NOTE + "; Llama-3.2-1B shape with a 32k vocabulary, untied",
    ),
    _llama(
        "gt-llama-1b-v128k",
        2048,
        16,
        32,
        8,
        8192,
        128256,
        hf_id=None,
        family="gt-llama",
        rope_theta=500000.0,
        max_pos=131072,
        notes=_GT_NOTE + "; Llama-3.2-1B shape (128k vocabulary), untied",
    ),
    _llama(
        "gt-llama-3b",
        3072,
        28,
        24,
        8,
        8192,
        128256,
        hf_id=None,
        family="gt-llama",
        rope_theta=500000.0,
        max_pos=131072,
        notes=_GT_NOTE + "; Llama-3.2-3B shape, untied",
    ),
    _llama(
        "tinyllama-1.1b",
        2048,
        22,
        32,
        4,
        5632,
        32000,
        hf_id="TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T",
        family="tinyllama",
        rope_theta=10000.0,
        max_pos=4096,
        aliases=("TinyLlama/TinyLlama-1.1B-Chat-v1.0", "tinyllama"),
        notes=_GT_NOTE + "; max_position_embeddings raised from the published 2048 to 4096 so "
        "the sweep can train 4096-token sequences (RoPE: no parameters change)",
    ),
)

_PRESET_LIST += SPARSE_PRESETS

PRESETS: dict[str, ModelSpec] = {m.id: m for m in _PRESET_LIST}


_STRIP_SUFFIXES = ("hf", "instruct", "chat", "base")


def _normalise(name: str) -> str:
    """Lower-case and drop everything but letters and digits (``Llama-3.1_8B`` -> ``llama318b``)."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _keys_for(name: str) -> list[str]:
    """Lookup keys for a user-supplied name: as given, without the org prefix, and without
    a trailing ``-hf``/``-instruct``/``-chat``/``-base`` (same architecture)."""
    raw = name.strip().lower()
    candidates = [raw]
    if "/" in raw:
        candidates.append(raw.rsplit("/", 1)[1])
    keys: list[str] = []
    for c in candidates:
        parts = [p for p in re.split(r"[-_\s]+", c) if p]
        while parts:
            key = _normalise("".join(parts))
            if key and key not in keys:
                keys.append(key)
            if parts[-1] in _STRIP_SUFFIXES:
                parts = parts[:-1]
            else:
                break
    return keys


def _build_index() -> dict[str, str]:
    index: dict[str, str] = {}
    for spec in _PRESET_LIST:
        names = [spec.id, *spec.aliases]
        if spec.hf_id:
            names.append(spec.hf_id)
        for n in names:
            for key in _keys_for(n)[:2]:  # as given, and without the org prefix
                other = index.setdefault(key, spec.id)
                if other != spec.id:
                    raise RuntimeError(f"model alias {n!r} is ambiguous: {other} and {spec.id}")
        # Common spelling "llama-3-8b" / "meta-llama-3-8b" / "qwen2.5 7b" all normalise here.
    return index


_INDEX = _build_index()


def list_models() -> list[ModelSpec]:
    """All presets, in declaration order."""
    return list(_PRESET_LIST)


def get_model(name: str) -> ModelSpec:
    """Resolve a preset by id, alias or Hugging Face id, ignoring case and punctuation.

    ``"meta-llama/Llama-3.1-8B"``, ``"Llama-3.1-8B-Instruct"``, ``"llama3.1-8b"`` and
    ``"LLAMA 3.1 8B"`` resolve to the same preset. Raises :class:`ModelNotFound` with up to
    five close matches (by normalised-string similarity) on a miss.
    """
    for key in _keys_for(name):
        if key in _INDEX:
            return PRESETS[_INDEX[key]]
    keys = _keys_for(name)
    target = keys[-1] if keys else _normalise(name)
    close = difflib.get_close_matches(target, list(_INDEX), n=10, cutoff=0.6)
    ids: list[str] = []
    for k in close:
        pid = _INDEX[k]
        if pid not in ids:
            ids.append(pid)
    raise ModelNotFound(name, ids[:5])
