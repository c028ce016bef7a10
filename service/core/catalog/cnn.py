"""torchvision bottleneck ResNets (:class:`CnnSpec`); split out of
:mod:`service.core.catalog.models`, which re-exports it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal


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
