"""Model architectures and presets, with parameter counts computed from the architecture.

Three kinds of model are described, each by a frozen dataclass:

* :class:`DecoderSpec` (:mod:`service.core.catalog.decoder`, with its counting rules) --
  decoder-only transformers as Hugging Face implements them: Llama and its relatives, and the
  sparse models (MLA, routed + shared experts, MTP) of :mod:`service.core.catalog.sparse_models`.
* :class:`EncoderSpec` -- BERT-style encoders, counted as Hugging Face ``BertForMaskedLM``
  (no pooler; MLM head transform + decoder bias; decoder weight tied to the word embeddings).
* :class:`CnnSpec` -- torchvision ResNet (bottleneck) classifiers.

Sources of the preset shapes: the published ``config.json`` of each Hugging Face repository
named in ``hf_id`` (Llama 2/3/3.1, Mistral-7B-v0.1, Mixtral-8x7B-v0.1, Qwen2.5, BERT), the
GPT-3 paper (Brown et al. 2020, table 2.1: 175B = 96 layers, d_model 12288, 96 heads of 128,
context 2048, GPT-2 BPE vocabulary of 50257) and torchvision's ``resnet50``.

The ``gt-*`` presets are the Llama-style shapes the benchmark agent trains on the H200 to
produce ground truth (built from config, no download).
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from service.core.catalog.decoder import DecoderSpec, UnsupportedArchitecture
from service.core.catalog.sparse_models import SPARSE_HF_TYPES, SPARSE_PRESETS, sparse_from_hf_config

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
# Encoders (BERT)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EncoderSpec:
    """A BERT-style post-LN encoder, counted as Hugging Face ``BertForMaskedLM``.

    Parameters: word/position/token-type embeddings + LayerNorm; per layer q/k/v/o with
    biases, two LayerNorms, a GELU MLP ``h -> f -> h`` with biases; MLM head = dense ``h*h``
    + bias, LayerNorm, and a vocabulary bias (the decoder weight is tied to the word
    embeddings). No pooler (``BertForMaskedLM`` builds ``BertModel(add_pooling_layer=False)``).
    """

    id: str
    hidden_size: int
    num_layers: int
    num_heads: int
    intermediate_size: int
    vocab_size: int
    max_position_embeddings: int
    type_vocab_size: int
    layer_norm_eps: float
    hf_id: str | None
    family: str
    aliases: tuple[str, ...] = ()
    source: str = ""
    notes: str = ""
    kind: Literal["encoder"] = field(default="encoder", init=False)

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_heads

    @property
    def embedding_params(self) -> int:
        h = self.hidden_size
        return (self.vocab_size + self.max_position_embeddings + self.type_vocab_size) * h + 2 * h

    @property
    def params_per_layer(self) -> int:
        h, f = self.hidden_size, self.intermediate_size
        attention = 4 * (h * h + h)
        mlp = h * f + f + f * h + h
        return attention + mlp + 4 * h

    @property
    def head_params(self) -> int:
        """MLM head: transform dense + LayerNorm + decoder bias (weight tied)."""
        h = self.hidden_size
        return h * h + h + 2 * h + self.vocab_size

    @property
    def total_params(self) -> int:
        return self.embedding_params + self.num_layers * self.params_per_layer + self.head_params

    @property
    def active_params(self) -> int:
        return self.total_params

    @property
    def matmul_params_per_token(self) -> int:
        """Weights multiplied per token: layer linears + MLM transform + tied decoder."""
        h, f = self.hidden_size, self.intermediate_size
        return self.num_layers * (4 * h * h + 2 * h * f) + h * h + self.vocab_size * h

    def parameter_breakdown(self) -> dict[str, int]:
        return {
            "embedding": self.embedding_params,
            "layers": self.num_layers * self.params_per_layer,
            "mlm_head": self.head_params,
        }

    def describe(self) -> str:
        return (
            f"BERT encoder: {self.num_layers} layers, hidden {self.hidden_size}, "
            f"{self.num_heads} heads, FFN {self.intermediate_size}, vocab {self.vocab_size}"
        )


# --------------------------------------------------------------------------------------------
# CNNs (ResNet)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CnnSpec:
    """A torchvision bottleneck ResNet (v1.5: stride on the 3x3 conv).

    ``block_counts`` per stage (ResNet-50: 3, 4, 6, 3), stage widths ``base_width * 2**i``,
    bottleneck expansion 4, BatchNorm (weight + bias) after every conv, a 1x1 downsample
    conv + BN on the first block of each stage, global average pool, and a linear classifier.
    Counts and FLOPs are derived by walking that graph (:meth:`_walk`).
    """

    id: str
    block_counts: tuple[int, ...]
    base_width: int
    num_classes: int
    image_size: int
    hf_id: str | None
    family: str
    in_channels: int = 3
    expansion: int = 4
    aliases: tuple[str, ...] = ()
    source: str = ""
    notes: str = ""
    kind: Literal["cnn"] = field(default="cnn", init=False)

    def _walk(self) -> tuple[int, int, int, int]:
        """Return ``(parameters, forward MACs per image, activation elements per image,
        downsample-conv output elements per image)``.

        Activation elements count every conv output (which BN and ReLU consume and autograd
        saves) at its spatial size for the configured ``image_size``.
        """
        params = 0
        macs = 0
        acts = 0
        ds_acts = 0
        size = self.image_size

        def conv(cin: int, cout: int, k: int, stride: int, downsample: bool = False) -> None:
            nonlocal params, macs, acts, size, ds_acts
            size = (size + stride - 1) // stride
            params += cin * cout * k * k + 2 * cout  # conv weight (no bias) + BN
            macs += cin * cout * k * k * size * size
            acts += cout * size * size
            if downsample:
                ds_acts += cout * size * size

        conv(self.in_channels, self.base_width, 7, 2)
        size = (size + 1) // 2  # 3x3 max-pool, stride 2
        cin = self.base_width
        for stage, blocks in enumerate(self.block_counts):
            width = self.base_width * 2**stage
            cout = width * self.expansion
            for b in range(blocks):
                stride = 2 if (stage > 0 and b == 0) else 1
                start = size
                conv(cin, width, 1, 1)
                conv(width, width, 3, stride)
                conv(width, cout, 1, 1)
                if b == 0:
                    end = size
                    size = start
                    conv(cin, cout, 1, stride, downsample=True)
                    size = end
                cin = cout
        params += cin * self.num_classes + self.num_classes
        macs += cin * self.num_classes
        return params, macs, acts, ds_acts

    @property
    def total_params(self) -> int:
        return self._walk()[0]

    @property
    def active_params(self) -> int:
        return self.total_params

    @property
    def forward_flops_per_image(self) -> float:
        """Forward FLOPs per image, ``2 * MACs`` of convs and the classifier (ResNet-50 at
        224x224: 4.09 GMACs, the figure torchvision publishes)."""
        return 2.0 * self._walk()[1]

    @property
    def activation_elements_per_image(self) -> int:
        """Every conv output element per image (downsample convs included)."""
        return self._walk()[2]

    @property
    def saved_elements_per_image(self) -> int:
        """Elements autograd keeps per image in training: each conv output (kept by its
        BatchNorm) and each BN/ReLU output (kept by the in-place ReLU and the next conv; for the
        last conv of a block, the residual sum after ReLU) -- two per conv output -- except the
        downsample branch, whose BN output only feeds the sum (one)."""
        _, _, acts, ds = self._walk()
        return 2 * acts - ds

    @property
    def largest_activation_elements(self) -> int:
        """The largest activation per image: stage 1's ``4*base_width`` channels at 1/4 size."""
        side = -(-self.image_size // 4)
        return self.base_width * self.expansion * side * side

    def parameter_breakdown(self) -> dict[str, int]:
        fc = self.base_width * 2 ** (len(self.block_counts) - 1) * self.expansion * self.num_classes
        fc += self.num_classes
        return {"convolutions_and_bn": self.total_params - fc, "classifier": fc}

    def describe(self) -> str:
        return f"ResNet bottleneck {self.block_counts}, {self.image_size}x{self.image_size}"


ModelSpec = DecoderSpec | EncoderSpec | CnnSpec


# --------------------------------------------------------------------------------------------
# Presets
# --------------------------------------------------------------------------------------------


def _llama(
    id: str,
    h: int,
    layers: int,
    heads: int,
    kv: int,
    ffn: int,
    vocab: int,
    *,
    hf_id: str | None,
    family: str,
    rope_theta: float,
    max_pos: int,
    eps: float = 1e-5,
    head_dim: int | None = None,
    tie: bool = False,
    experts: int = 1,
    top_k: int = 1,
    aliases: tuple[str, ...] = (),
    source: str = "",
    notes: str = "",
    attention_bias: bool = False,
    qkv_bias_only: bool = False,
    sliding_window: int | None = None,
) -> DecoderSpec:
    return DecoderSpec(
        id=id,
        hidden_size=h,
        num_layers=layers,
        num_heads=heads,
        num_kv_heads=kv,
        head_dim=head_dim or h // heads,
        intermediate_size=ffn,
        vocab_size=vocab,
        tie_word_embeddings=tie,
        attention_bias=attention_bias,
        mlp_bias=False,
        gated_mlp=True,
        num_experts=experts,
        experts_per_token=top_k,
        max_position_embeddings=max_pos,
        rope_theta=rope_theta,
        rms_norm_eps=eps,
        hf_id=hf_id,
        family=family,
        qkv_bias_only=qkv_bias_only,
        sliding_window=sliding_window,
        aliases=aliases,
        source=source or (f"https://huggingface.co/{hf_id}/blob/main/config.json" if hf_id else ""),
        notes=notes,
    )


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
        aliases=("Qwen/Qwen2.5-32B-Instruct",),
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


# --------------------------------------------------------------------------------------------
# Hugging Face config.json
# --------------------------------------------------------------------------------------------

_DENSE_TYPES: tuple[str, ...] = ("llama", "mistral", "mixtral", "qwen2", "qwen3", "bert")
HF_CONFIG_TYPES: tuple[str, ...] = (*_DENSE_TYPES, *SPARSE_HF_TYPES)
"""The ``model_type`` values :func:`from_hf_config` models (as Hugging Face writes them)."""
HF_CONFIG_WRAPPED: tuple[str, ...] = ("llama4",)
"""Types whose shape fields sit in ``text_config`` (the multimodal wrapper's text model)."""
MLA_KEYS: tuple[str, ...] = ("kv_lora_rank", "q_lora_rank")
"""Keys of multi-head latent attention: given only with a DeepSeek ``model_type``."""
MLA_TYPES: tuple[str, ...] = ("deepseek_v2", "deepseek_v3")
HF_CONFIG_SIZES: dict[str, int] = {
    "hidden_size": 2**20,
    "num_hidden_layers": 4096,
    "num_attention_heads": 4096,
    "intermediate_size": 2**22,
    "vocab_size": 2**24,
}
"""The shape fields every config.json must give, whole numbers from 1 to these (the largest
published models are far inside: hidden 16,384, 126 layers, vocabularies of ~256k)."""


def _req(cfg: Mapping[str, Any], *names: str) -> Any:
    for n in names:
        if n in cfg and cfg[n] is not None:
            return cfg[n]
    raise UnsupportedArchitecture(str(cfg.get("model_type", "?")), f"config.json lacks {names[0]!r}")


def from_hf_config(cfg: Mapping[str, Any], id: str | None = None) -> ModelSpec:
    """Build a spec from a Hugging Face ``config.json`` body, exactly as published.

    Supported ``model_type``: ``llama``, ``mistral``, ``mixtral``, ``qwen2``, ``qwen3``
    (dense), ``bert``, and the sparse families of :mod:`service.core.catalog.sparse_models`
    (``deepseek_v2``/``deepseek_v3`` with MLA, ``qwen3_moe``, ``llama4``/``llama4_text``,
    ``gpt_oss``). Anything else -- MLA keys on a non-DeepSeek type, an MoE variant of a dense
    family, other multimodal wrappers -- raises :class:`UnsupportedArchitecture`: its parameter
    and KV-cache layout differs and an approximation would be silently wrong.
    """
    if not isinstance(cfg, Mapping):
        raise UnsupportedArchitecture("?", "config must be a JSON object")
    mtype = str(cfg.get("model_type", ""))
    archs = cfg.get("architectures") or []
    arch = str(archs[0]) if archs else mtype or "?"
    if mtype not in MLA_TYPES and any(k in cfg for k in MLA_KEYS):
        raise UnsupportedArchitecture(
            arch,
            f"multi-head latent attention (kv_lora_rank, q_lora_rank) is modelled for model_type "
            f"{' and '.join(MLA_TYPES)} only, not {mtype!r}",
        )
    if mtype not in HF_CONFIG_TYPES:
        raise UnsupportedArchitecture(
            arch, f"model_type {mtype!r} is not modelled; supported: {', '.join(HF_CONFIG_TYPES)}"
        )
    sized = cfg.get("text_config") if mtype in HF_CONFIG_WRAPPED else cfg
    if not isinstance(sized, Mapping):
        raise UnsupportedArchitecture(arch, f"a {mtype} config.json needs its text_config object")
    for key, largest in HF_CONFIG_SIZES.items():
        value = sized.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= largest:
            where = "text_config." if sized is not cfg else ""
            raise UnsupportedArchitecture(
                arch, f"config.json needs {where}{key} as a whole number from 1 to {largest}"
            )
    if mtype in SPARSE_HF_TYPES:
        return sparse_from_hf_config(cfg, arch, id)
    if mtype == "bert" and cfg["hidden_size"] % cfg["num_attention_heads"]:
        raise UnsupportedArchitecture(arch, "hidden_size must be a multiple of num_attention_heads")
    if mtype == "bert":
        h = int(_req(cfg, "hidden_size"))
        return EncoderSpec(
            id=id or str(cfg.get("_name_or_path") or "custom-bert"),
            hidden_size=h,
            num_layers=int(_req(cfg, "num_hidden_layers")),
            num_heads=int(_req(cfg, "num_attention_heads")),
            intermediate_size=int(_req(cfg, "intermediate_size")),
            vocab_size=int(_req(cfg, "vocab_size")),
            max_position_embeddings=int(cfg.get("max_position_embeddings", 512)),
            type_vocab_size=int(cfg.get("type_vocab_size", 2)),
            layer_norm_eps=float(cfg.get("layer_norm_eps", 1e-12)),
            hf_id=None,
            family="bert",
            source="config.json",
        )
    if mtype not in {"llama", "mistral", "mixtral", "qwen2", "qwen3"}:
        raise UnsupportedArchitecture(
            arch,
            f"model_type {mtype!r} is not modelled; supported: llama, mistral, mixtral, qwen2, qwen3, bert",
        )
    if cfg.get("text_config") is not None or cfg.get("vision_config") is not None:
        raise UnsupportedArchitecture(arch, "multimodal wrappers are not modelled")
    h = int(_req(cfg, "hidden_size"))
    heads = int(_req(cfg, "num_attention_heads"))
    kv = int(cfg.get("num_key_value_heads") or heads)
    head_dim = int(cfg.get("head_dim") or h // heads)
    if head_dim < 1:
        raise UnsupportedArchitecture(arch, "the attention heads are wider than hidden_size: give head_dim")
    experts = int(cfg.get("num_local_experts") or 1) if mtype == "mixtral" else 1
    if mtype == "mixtral":
        top_k = int(cfg.get("num_experts_per_tok") or 2)
    else:
        top_k = 1
        if cfg.get("num_experts") or cfg.get("num_local_experts"):
            raise UnsupportedArchitecture(arch, "MoE variant of this family is not modelled")
    act = str(cfg.get("hidden_act", "silu"))
    if act not in {"silu", "swish"}:
        raise UnsupportedArchitecture(arch, f"hidden_act {act!r}: only SwiGLU MLPs are modelled")
    attention_bias = bool(cfg.get("attention_bias", False))
    qkv_bias_only = False
    if mtype == "qwen2":  # Qwen2Attention: q/k/v with bias, o_proj without (hard-coded)
        attention_bias, qkv_bias_only = True, True
    rope_theta = cfg.get("rope_theta")
    if rope_theta is None and isinstance(cfg.get("rope_parameters"), Mapping):
        rope_theta = cfg["rope_parameters"].get("rope_theta")  # transformers 5.x layout
    sw = cfg.get("sliding_window") if cfg.get("use_sliding_window", mtype == "mistral") else None
    return DecoderSpec(
        id=id or str(cfg.get("_name_or_path") or f"custom-{mtype}"),
        hidden_size=h,
        num_layers=int(_req(cfg, "num_hidden_layers")),
        num_heads=heads,
        num_kv_heads=kv,
        head_dim=head_dim,
        intermediate_size=int(_req(cfg, "intermediate_size")),
        vocab_size=int(_req(cfg, "vocab_size")),
        tie_word_embeddings=bool(cfg.get("tie_word_embeddings", False)),
        attention_bias=attention_bias,
        mlp_bias=bool(cfg.get("mlp_bias", False)),
        gated_mlp=True,
        num_experts=experts,
        experts_per_token=top_k,
        max_position_embeddings=int(cfg.get("max_position_embeddings", 4096)),
        rope_theta=float(rope_theta if rope_theta is not None else 10000.0),
        rms_norm_eps=float(cfg.get("rms_norm_eps", 1e-6)),
        hf_id=None,
        family=mtype,
        qkv_bias_only=qkv_bias_only,
        qk_norm=(mtype == "qwen3"),
        sliding_window=int(sw) if sw else None,
        source="config.json",
    )


# --------------------------------------------------------------------------------------------
# "N billion parameters"
# --------------------------------------------------------------------------------------------


def from_parameter_count(n_billion: float) -> tuple[DecoderSpec, str]:
    """A Llama-2-style dense shape with about ``n_billion * 1e9`` parameters, and a sentence
    stating the assumed shape.

    Assumptions (the Llama 2 7B/13B recipe): 32k vocabulary, untied embeddings, multi-head
    attention with head_dim 128 (64 below hidden 1024), depth ``hidden / 128`` (at least 4),
    SwiGLU FFN ``8/3 * hidden`` rounded up to a multiple of 256, hidden a multiple of 256.
    The hidden size whose total is closest to the request is chosen.
    """
    if not (n_billion > 0 and math.isfinite(n_billion)):
        raise ValueError("parameter count must be a positive number of billions")
    target = n_billion * 1e9
    best: DecoderSpec | None = None
    for h in range(256, 65536 + 1, 256):
        hd = 128 if h >= 1024 else 64
        layers = max(4, h // 128)
        ffn = -(-(8 * h // 3) // 256) * 256
        spec = _llama(
            f"assumed-{n_billion:g}b",
            h,
            layers,
            h // hd,
            h // hd,
            ffn,
            32000,
            hf_id=None,
            family="assumed",
            rope_theta=10000.0,
            max_pos=4096,
            source="assumed shape",
        )
        if best is None or abs(spec.total_params - target) < abs(best.total_params - target):
            best = spec
        if spec.total_params > target * 2:
            break
    assert best is not None
    text = (
        f"assumed a Llama-2-style dense shape for {n_billion:g}B parameters: {best.describe()} "
        f"({best.total_params / 1e9:.2f}B parameters)"
    )
    return best, text
