"""Lambda Labs PyTorch training throughput, NGC ``pytorch:20.01-py3`` (Volta, Turing, Pascal; 2020).

Source: Lambda's public GPU benchmark (https://lambdalabs.com/gpu-benchmarks, 2020 edition), raw
CSVs in ``lambdal/deeplearning-benchmark`` at commit ``0b7337a752b69d895ab4c328d5a9f1cd7efe6a95``:
``pytorch/pytorch-train-throughput-fp16.csv``, ``pytorch/pytorch-train-throughput-fp32.csv``
(throughput) and ``pytorch/pytorch-train-bs-fp16.csv``, ``pytorch/pytorch-train-bs-fp32.csv``
(batch per GPU) — all four at that commit. Only the single-GPU desktop/server rows compiled with
Lambda's "version 0" stack are kept here; the Ampere rows of the same files were run on another
container and are the separate table ``lambda_pytorch_train_2021``.

Stack (Lambda's ``pytorch/scripts/compile_results_pytorch_throughput.py``, same commit: "version:
0 for pytorch:20.01-py3"): NGC PyTorch 20.01 with the NVIDIA DeepLearningExamples copies of that
image (PyTorch 1.4 pre-release and CUDA 10.2 per NVIDIA's container release notes -- not stated in
the cited files). Date: result logs of these GPUs are dated 2020-03
(e.g. ``pytorch/results/V100/PyTorch_resnet50_FP32/08-03-2020_23-02-38.txt``, DLL timestamps
2020-03-08).

Method: ResNet-50 v1.5 trains on real ImageNet through DALI (``data_backend: dali-cpu`` in the
V100 logs) for 2 epochs of 100 iterations; the figure is the mean of the per-epoch ``train.total_ips`` of the
log(s). BERT-large / BERT-base: SQuAD v1.1 fine-tuning, seq_len 384, ``training throughput``
(sequences/s). Batch per GPU is Lambda's configured batch (the V100 ResNet-50 logs confirm 296
FP32 and 596 FP16). ``fp32`` here is IEEE FP32 (no TF32 on these GPUs nor in PyTorch 1.4).
``fp16`` is NOT autocast: the ResNet-50 V100 log shows ``fp16: True, amp: False,
static_loss_scale: 256`` (apex ``FP16_Optimizer``, FP16 model with FP32 master weights); BERT
ran with DeepLearningExamples' ``--fp16`` flag (apex amp) of that image.

GPU mapping: "V100 32GB" is listed at 250 W per GPU in Lambda's compile script, the PCIe part's
TDP (SXM2 is 300 W), so it is mapped to ``nvidia-v100-pcie-32gb`` (flagged as an assumption).
"RTX 8000" / "RTX 6000" / "RTX 5000" are the Quadro RTX parts; of the Turing/Pascal parts only the
Quadro RTX 8000 is in the catalog (the others keep slug ``None``; ``published.gpus`` sources their
figures for the transfer fit). The laptop "MAX-Q" rows are left out (power-limited variants
without a datasheet figure), as are multi-GPU rows.

Caveats: real-data ResNet-50 (DALI on CPU) can be input-bound on fast GPUs; figures are
rounded to integers by Lambda; BERT batch sizes on 11 GB cards are tiny (2 for BERT-large FP32).
"""

from __future__ import annotations

from typing import Final

from service.core.evidence.published._lambda_csv import lambda_rows, parse_csv
from service.core.evidence.published.schema import PublishedRow, PublishedTable, SourceFile

TABLE_ID: Final = "lambda-pytorch-train-ngc2001"
_REPO = "lambdal/deeplearning-benchmark"
_COMMIT = "0b7337a752b69d895ab4c328d5a9f1cd7efe6a95"

# pytorch/pytorch-train-throughput-fp16.csv @ 0b7337a (single-GPU "version 0" rows, verbatim)
THROUGHPUT_FP16_CSV: Final = """
name_gpu,num_gpu,watt,price,ssd,bert_base_squad,bert_large_squad,gnmt,maskrcnn,ncf,resnet50,tacotron2,transformerxlbase,transformerxllarge,waveglow
V100 32GB,1.0,250.0,11357.0,224.0,148.0,49.0,81625.0,14.0,20491424.0,828.0,27249.0,10348.0,4372.0,100553.0
RTX 8000,1.0,260.0,6900.0,180.0,124.0,41.0,77458.0,11.0,15875971.0,646.0,31664.0,9290.0,4109.0,92695.0
RTX 6000,1.0,260.0,4964.0,179.0,121.0,39.0,71300.0,12.0,15669330.0,645.0,25203.0,8605.0,3481.0,78139.0
RTX 5000,1.0,230.0,2392.0,126.0,86.0,25.0,37135.0,9.0,10884543.0,439.0,15410.0,6085.0,979.0,51401.0
Titan RTX,1.0,280.0,3500.0,181.0,123.0,40.0,70149.0,12.0,16192798.0,644.0,22208.0,8877.0,3579.0,81980.0
RTX 2080Ti,1.0,250.0,1928.0,139.0,88.0,23.0,41770.0,9.0,14271325.0,526.0,12321.0,5699.0,0.0,45183.0
GTX 1080Ti,1.0,250.0,892.0,65.0,35.0,10.0,15369.0,6.0,5216770.0,230.0,7938.0,3412.0,0.0,25184.0
"""

# pytorch/pytorch-train-throughput-fp32.csv @ 0b7337a
THROUGHPUT_FP32_CSV: Final = """
name_gpu,num_gpu,watt,price,ssd,bert_base_squad,bert_large_squad,gnmt,maskrcnn,ncf,resnet50,tacotron2,transformerxlbase,transformerxllarge,waveglow
V100 32GB,1.0,250.0,11357.0,136.0,42.0,12.0,22743.0,10.0,9799945.0,368.0,17604.0,6518.0,2329.0,48458.0
RTX 8000,1.0,260.0,6900.0,116.0,38.0,11.0,21808.0,10.0,8377572.0,300.0,10016.0,6124.0,2158.0,45876.0
RTX 6000,1.0,260.0,4964.0,118.0,38.0,10.0,21014.0,10.0,8260887.0,301.0,8954.0,5684.0,1816.0,38687.0
RTX 5000,1.0,230.0,2392.0,83.0,26.0,6.0,14320.0,7.0,5508657.0,213.0,6841.0,3188.0,1034.0,25736.0
Titan RTX,1.0,280.0,3500.0,119.0,39.0,11.0,21329.0,10.0,8418704.0,306.0,8732.0,5801.0,1878.0,40381.0
RTX 2080Ti,1.0,250.0,1928.0,106.0,30.0,6.0,15983.0,8.0,7534435.0,275.0,8669.0,4109.0,0.0,26236.0
GTX 1080Ti,1.0,250.0,892.0,70.0,28.0,5.0,11948.0,7.0,4265333.0,196.0,5828.0,2774.0,0.0,19581.0
"""

# pytorch/pytorch-train-bs-fp16.csv @ 0b7337a
BATCH_FP16_CSV: Final = """
name_gpu,num_gpu,watt,price,ssd,bert_base_squad,bert_large_squad,gnmt,maskrcnn,ncf,resnet50,tacotron2,transformerxlbase,transformerxllarge,waveglow
V100 32GB,1,250,11357,192,72,24,616,20,5678184,596,220,40,16,30
RTX 8000,1,260,6900,288,108,36,968,36,10854552,928,336,72,32,52
RTX 6000,1,260,4964,140,52,16,464,16,4278184,448,160,24,8,20
RTX 5000,1,230,2392,88,32,8,260,10,2800000,288,100,12,0,10
Titan RTX,1,280,3500,140,52,16,464,16,4278184,448,160,24,8,20
RTX 2080Ti,1,250,1928,56,20,4,160,6,1440000,184,72,5,0,4
GTX 1080Ti,1,250,892,56,20,4,160,6,1440000,184,72,5,0,4
"""

# pytorch/pytorch-train-bs-fp32.csv @ 0b7337a
BATCH_FP32_CSV: Final = """
name_gpu,num_gpu,watt,price,ssd,bert_base_squad,bert_large_squad,gnmt,maskrcnn,ncf,resnet50,tacotron2,transformerxlbase,transformerxllarge,waveglow
V100 32GB,1,250,11357,108,36,12,372,15,3616582,296,108,20,8,15
RTX 8000,1,260,6900,158,56,18,648,32,5120000,496,168,32,16,26
RTX 6000,1,260,4964,80,26,8,288,12,2516582,224,80,14,4,10
RTX 5000,1,230,2392,48,16,4,184,9,1400000,152,52,8,2,5
Titan RTX,1,280,3500,80,26,8,288,12,2516582,224,80,14,4,10
RTX 2080Ti,1,250,1928,32,10,2,108,6,720000,100,36,4,0,2
GTX 1080Ti,1,250,892,32,10,2,108,6,720000,100,36,4,0,2
"""

# CSV name -> (name, catalog slug or None, assumption)
GPUS: Final[dict[str, tuple[str, str | None, str]]] = {
    "V100 32GB": (
        "Tesla V100 32GB",
        "nvidia-v100-pcie-32gb",
        "PCIe assumed: Lambda lists 250 W per GPU (PCIe TDP; SXM2 is 300 W)",
    ),
    "RTX 8000": ("Quadro RTX 8000", "nvidia-quadro-rtx-8000", ""),
    "RTX 6000": ("Quadro RTX 6000", None, ""),
    "RTX 5000": ("Quadro RTX 5000", None, ""),
    "Titan RTX": ("Titan RTX", None, ""),
    "RTX 2080Ti": ("GeForce RTX 2080 Ti", None, ""),
    "GTX 1080Ti": ("GeForce GTX 1080 Ti", None, ""),
}

_FP16_NOTE = (
    "fp16 = apex FP16 model + FP32 master weights (ResNet-50: FP16_Optimizer, static loss "
    "scale 256; BERT: --fp16), not autocast."
)


def _rows() -> tuple[PublishedRow, ...]:
    fp16 = lambda_rows(
        TABLE_ID,
        parse_csv(THROUGHPUT_FP16_CSV),
        parse_csv(BATCH_FP16_CSV),
        GPUS,
        dict.fromkeys(GPUS, "fp16"),
        note=_FP16_NOTE,
    )
    fp32 = lambda_rows(
        TABLE_ID, parse_csv(THROUGHPUT_FP32_CSV), parse_csv(BATCH_FP32_CSV), GPUS, dict.fromkeys(GPUS, "fp32")
    )
    return tuple(fp16 + fp32)


TABLE: Final = PublishedTable(
    id=TABLE_ID,
    title="Lambda PyTorch training GPU benchmarks (NGC 20.01: Volta, Turing, Pascal)",
    kind="training",
    publisher="Lambda Labs",
    url=f"https://github.com/{_REPO}/tree/{_COMMIT}/pytorch",
    files=tuple(
        SourceFile(_REPO, p, _COMMIT)
        for p in (
            "pytorch/pytorch-train-throughput-fp16.csv",
            "pytorch/pytorch-train-throughput-fp32.csv",
            "pytorch/pytorch-train-bs-fp16.csv",
            "pytorch/pytorch-train-bs-fp32.csv",
            "pytorch/scripts/compile_results_pytorch_throughput.py",
        )
    ),
    date="2020-03",
    date_note="result logs of these GPUs are dated 2020-03 (file names and DLL timestamps)",
    engine="pytorch 1.4 (ngc 20.01)",
    stack="NGC PyTorch 20.01-py3 (PyTorch 1.4 pre-release, CUDA 10.2), NVIDIA DeepLearningExamples of that image",
    method="single GPU; ResNet-50 v1.5 real ImageNet via DALI (CPU), mean per-epoch total img/s over "
    "2x100 iterations; BERT SQuAD v1.1 fine-tuning seq_len 384, sequences/s; Lambda's batch per GPU",
    caveats="fp16 is apex FP16 (master weights), not autocast; fp32 is strict FP32; Max-Q laptop and "
    "multi-GPU rows left out; V100 variant inferred from the 250 W figure",
    rows=_rows(),
)
