"""Lambda Labs PyTorch training throughput, NGC ``pytorch:20.10-py3`` (Ampere; 2020-2021).

Source: Lambda's public GPU benchmark (https://lambdalabs.com/gpu-benchmarks, 2021 edition), raw
CSVs in ``lambdal/deeplearning-benchmark`` at commit ``0b7337a752b69d895ab4c328d5a9f1cd7efe6a95``:
``pytorch/pytorch-train-throughput-fp16.csv``, ``pytorch/pytorch-train-throughput-fp32.csv``,
``pytorch/pytorch-train-bs-fp16.csv``, ``pytorch/pytorch-train-bs-fp32.csv``. Only the
single-GPU rows compiled with Lambda's "version 1" stack are kept (the Volta/Turing rows of the
same files are ``lambda_pytorch_train_2020``).

Stack (``pytorch/scripts/compile_results_pytorch_throughput.py`` at that commit: "version: ... 1
for pytorch:20.10-py3"; every GPU here is listed as version 1): NGC PyTorch 20.10 with the
DeepLearningExamples copies of that image (PyTorch 1.7 pre-release and CUDA 11.1 per NVIDIA's
container release notes -- not stated in the cited files). PyTorch 1.7 and NVIDIA's Ampere-era
images enable TF32 for cuDNN convolutions and matmuls by default, so the ``fp32`` CSV is recorded
as ``tf32`` (every GPU here is Ampere). Date: result logs run from 2020-10-31 (A100 PCIe) to 2021-12-02 (the newest, 16x A4000;
file names are ``dd-mm-yyyy``); the CSV is the state at that commit.

Method: ResNet-50 v1.5 for 2 epochs of 100 iterations, the figure is the mean of the per-epoch
``train.total_ips``; BERT SQuAD v1.1 fine-tuning at seq_len 384, sequences/s; Lambda's configured
batch per GPU (from the ``bs`` CSVs; the logs read agree: A100 PCIe FP32 360, A40 FP16 912).
``fp16`` is the DeepLearningExamples ``--fp16`` task of Lambda's config (``PyTorch_resnet50_FP16``;
the A40 log shows ``fp16: True, amp: False, static_loss_scale: 256``, apex ``FP16_Optimizer``:
FP16 model with FP32 master weights), not the separate ``_AMP`` task.

Caveat on the input pipeline: it is not uniform across GPUs and the CSV does not record it. The
A100 PCIe ResNet-50 log (``pytorch/results/A100_PCIe/PyTorch_resnet50_FP32/31-10-2020_17-17-55.txt``)
reads real ImageNet through the PyTorch data loader (``data_backend: pytorch``, data time ~3% of
the step); the A40 log (``pytorch/results/A40/PyTorch_resnet50_FP16/26-06-2021_16-13-13.txt``) uses
synthetic data. Both logs show the same DeepLearningExamples options (``memory_format``,
``run_epochs``), consistent with one image.

GPU mapping: "RTX A40" is the NVIDIA A40 (``nvidia-a40``). "Lambda Cloud — RTX A6000" duplicates
the RTX A6000 row and is left out, as are the laptop "RTX 3080 Max-Q" and all multi-GPU rows.
The GeForce RTX 3090 and the RTX A5000 are catalogued; the RTX 3070 / 3080 and RTX A4000 are not
(slug ``None``; ``published.gpus`` sources their figures for the transfer fit).
The RTX 3070 BERT-large FP32 cell is left out: its batch is listed as 0 (the run could not fit a
batch), so its throughput of 3 is not a measurement of a known configuration.
"""

from __future__ import annotations

from typing import Final

from service.core.evidence.published._lambda_csv import lambda_rows, parse_csv
from service.core.evidence.published.schema import PublishedRow, PublishedTable, SourceFile

TABLE_ID: Final = "lambda-pytorch-train-ngc2010"
_REPO = "lambdal/deeplearning-benchmark"
_COMMIT = "0b7337a752b69d895ab4c328d5a9f1cd7efe6a95"

# pytorch/pytorch-train-throughput-fp16.csv @ 0b7337a (single-GPU "version 1" rows, verbatim)
THROUGHPUT_FP16_CSV: Final = """
name_gpu,num_gpu,watt,price,ssd,bert_base_squad,bert_large_squad,gnmt,maskrcnn,ncf,resnet50,tacotron2,transformerxlbase,transformerxllarge,waveglow
RTX 3070,1.0,220.0,1035.0,111.0,80.0,14.0,28084.0,8.0,10445102.0,419.0,6283.0,4245.0,0.0,0.0
RTX 3080,1.0,320.0,1642.0,174.0,123.0,29.0,50559.0,13.0,19031878.0,650.0,14005.0,10020.0,0.0,68121.0
RTX 3090,1.0,350.0,3142.0,214.0,160.0,47.0,80051.0,15.0,23862032.0,801.0,19449.0,21062.0,7582.0,78023.0
A100 40GB PCIe,1.0,250.0,12785.0,365.0,289.0,91.0,171503.0,22.0,33608872.0,1120.0,30032.0,31286.0,14566.0,158416.0
A100 40GB SXM4,1.0,400.0,14571.0,404.0,335.0,107.0,194557.0,23.0,35602916.0,1211.0,28648.0,33952.0,16246.0,169193.0
A100 80GB SXM4,1.0,400.0,18571.0,420.0,374.0,123.0,230223.0,26.0,42980368.0,1386.0,51481.0,38320.0,18289.0,215124.0
RTX A6000,1.0,300.0,5785.0,230.0,202.0,63.0,103830.0,15.0,24360110.0,775.0,23068.0,25231.0,11140.0,96724.0
RTX A5000,1.0,230.0,2857.0,199.0,147.0,45.0,81294.0,15.0,15835683.0,703.0,19606.0,18810.0,6987.0,51423.0
RTX A40,1.0,300.0,6464.0,176.0,179.0,57.0,99539.0,14.0,20030201.0,653.0,24489.0,21848.0,9691.0,60997.0
RTX A4000,1.0,140.0,1321.0,125.0,102.0,29.0,47277.0,9.0,11191030.0,452.0,10655.0,11431.0,3333.0,3029.0
"""

# pytorch/pytorch-train-throughput-fp32.csv @ 0b7337a
THROUGHPUT_FP32_CSV: Final = """
name_gpu,num_gpu,watt,price,ssd,bert_base_squad,bert_large_squad,gnmt,maskrcnn,ncf,resnet50,tacotron2,transformerxlbase,transformerxllarge,waveglow
RTX 3070,1.0,220.0,1035.0,71.0,29.0,3.0,12668.0,7.0,6263134.0,246.0,3789.0,2147.0,0.0,0.0
RTX 3080,1.0,320.0,1642.0,111.0,47.0,8.0,26904.0,11.0,11568606.0,384.0,7251.0,5007.0,0.0,29891.0
RTX 3090,1.0,350.0,3142.0,137.0,72.0,17.0,43323.0,14.0,14717145.0,471.0,19728.0,11772.0,4062.0,70841.0
A100 40GB PCIe,1.0,250.0,12785.0,230.0,142.0,37.0,92575.0,23.0,23219336.0,744.0,29822.0,21311.0,9687.0,138951.0
A100 40GB SXM4,1.0,400.0,14571.0,251.0,154.0,40.0,105406.0,25.0,24027758.0,798.0,29795.0,23158.0,10795.0,144956.0
A100 80GB SXM4,1.0,400.0,18571.0,272.0,207.0,60.0,124186.0,29.0,27997544.0,925.0,57115.0,28082.0,12847.0,147096.0
RTX A6000,1.0,300.0,5785.0,135.0,94.0,25.0,57971.0,12.0,13386073.0,437.0,24085.0,13880.0,6114.0,93918.0
RTX A5000,1.0,230.0,2857.0,116.0,70.0,14.0,27205.0,13.0,11927449.0,405.0,20459.0,8172.0,3452.0,35112.0
RTX A40,1.0,300.0,6464.0,110.0,62.0,20.0,36858.0,13.0,10838123.0,390.0,22863.0,9638.0,3536.0,66806.0
RTX A4000,1.0,140.0,1321.0,75.0,46.0,9.0,16291.0,8.0,6767547.0,255.0,11029.0,6253.0,1790.0,24262.0
"""

# pytorch/pytorch-train-bs-fp16.csv @ 0b7337a
BATCH_FP16_CSV: Final = """
name_gpu,num_gpu,watt,price,ssd,bert_base_squad,bert_large_squad,gnmt,maskrcnn,ncf,resnet50,tacotron2,transformerxlbase,transformerxllarge,waveglow
RTX 3070,1,220,1035,24,16,2,80,2,480000,120,32,2,0,0
RTX 3080,1,320,1642,56,20,4,112,4,1000000,136,56,4,0,4
RTX 3090,1,350,3142,140,52,16,464,16,4278184,448,80,24,8,12
A100 40GB PCIe,1,250,12785,224,88,32,800,24,7500000,768,128,52,24,24
A100 40GB SXM4,1,400,14571,224,88,32,760,24,7500000,768,128,52,24,24
A100 80GB SXM4,1,400,18571,448,176,64,1520,48,15000000,1536,256,104,48,48
RTX A6000,1,300,5785,256,108,36,968,32,10000000,912,148,64,32,32
RTX A5000,1,230,2857,140,52,16,464,16,4278184,448,80,24,8,12
RTX A40,1,300,6464,256,108,36,880,32,10000000,912,148,64,32,32
RTX A4000,1,140,1321,88,32,8,260,10,2800000,288,48,12,4,10
"""

# pytorch/pytorch-train-bs-fp32.csv @ 0b7337a
BATCH_FP32_CSV: Final = """
name_gpu,num_gpu,watt,price,ssd,bert_base_squad,bert_large_squad,gnmt,maskrcnn,ncf,resnet50,tacotron2,transformerxlbase,transformerxllarge,waveglow
RTX 3070,1,220,1035,16,8,0,40,2,240000,64,16,0,0,0
RTX 3080,1,320,1642,24,10,2,80,4,600000,80,24,2,0,0
RTX 3090,1,350,3142,80,26,8,288,12,2516582,224,80,14,4,8
A100 40GB PCIe,1,250,12785,128,48,16,512,24,4000000,360,128,26,12,16
A100 40GB SXM4,1,400,14571,128,48,16,512,24,4000000,360,128,26,12,16
A100 80GB SXM4,1,400,18571,256,96,32,1024,48,8000000,720,256,52,24,32
RTX A6000,1,300,5785,144,56,18,648,32,5000000,496,136,32,16,26
RTX A5000,1,230,2857,80,26,8,288,12,2516582,224,80,14,4,8
RTX A40,1,300,6464,144,56,18,648,32,5000000,496,136,32,16,26
RTX A4000,1,140,1321,48,16,4,160,9,1400000,152,52,8,2,5
"""

GPUS: Final[dict[str, tuple[str, str | None, str]]] = {
    "RTX 3070": ("GeForce RTX 3070", None, ""),
    "RTX 3080": ("GeForce RTX 3080", None, ""),
    "RTX 3090": ("GeForce RTX 3090", "nvidia-rtx-3090", ""),
    "A100 40GB PCIe": ("A100 40GB PCIe", "nvidia-a100-pcie-40gb", ""),
    "A100 40GB SXM4": ("A100 40GB SXM4", "nvidia-a100-sxm4-40gb", ""),
    "A100 80GB SXM4": ("A100 80GB SXM4", "nvidia-a100-sxm4-80gb", ""),
    "RTX A6000": ("RTX A6000", "nvidia-rtx-a6000", ""),
    "RTX A5000": ("RTX A5000", "nvidia-rtx-a5000", ""),
    "RTX A40": ("A40", "nvidia-a40", ""),
    "RTX A4000": ("RTX A4000", None, ""),
}

_FP16_NOTE = "fp16 = DeepLearningExamples --fp16 task (apex FP16 model + FP32 master weights), not autocast."
_TF32_NOTE = "Lambda's 'fp32' run; TF32 tensor cores on (PyTorch 1.7 default)."


def _rows() -> tuple[PublishedRow, ...]:
    fp16 = lambda_rows(
        TABLE_ID,
        parse_csv(THROUGHPUT_FP16_CSV),
        parse_csv(BATCH_FP16_CSV),
        GPUS,
        dict.fromkeys(GPUS, "fp16"),
        note=_FP16_NOTE,
    )
    tf32 = lambda_rows(
        TABLE_ID,
        parse_csv(THROUGHPUT_FP32_CSV),
        parse_csv(BATCH_FP32_CSV),
        GPUS,
        dict.fromkeys(GPUS, "tf32"),
        skip=frozenset({("RTX 3070", "bert_large_squad")}),
        note=_TF32_NOTE,
    )
    return tuple(fp16 + tf32)


TABLE: Final = PublishedTable(
    id=TABLE_ID,
    title="Lambda PyTorch training GPU benchmarks (NGC 20.10: Ampere)",
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
    date="2021-12",
    date_note="CSV state at commit 0b7337a; result logs dated 2020-10-31 .. 2021-12-02",
    engine="pytorch 1.7 (ngc 20.10)",
    stack="NGC PyTorch 20.10-py3 (PyTorch 1.7 pre-release, CUDA 11.1), NVIDIA DeepLearningExamples of that image",
    method="single GPU; ResNet-50 v1.5 real ImageNet via DALI, mean per-epoch total img/s; BERT SQuAD v1.1 "
    "fine-tuning seq_len 384, sequences/s; Lambda's batch per GPU",
    caveats="'fp32' CSV recorded as tf32 (PyTorch 1.7 default on Ampere); fp16 is apex FP16, not autocast; "
    "ResNet-50 input pipeline differs by GPU (real data via PyTorch loader on A100 PCIe, synthetic "
    "on A40); RTX 3070 BERT-large fp32 left out (batch 0)",
    rows=_rows(),
)
