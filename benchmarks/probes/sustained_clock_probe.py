"""Physics probe (the power cap behind ``transfer.clock_factor``; run on one CUDA GPU): the SM
clock, board power and GEMM rate a dense 8192^3 GEMM loop sustains for ``SECS`` seconds (45), in
bf16 and then FP8 (``torch._scaled_mm``), with ``nvidia-smi`` sampled every 0.25 s beside it.
Writes ``$OUT/clock-probe.json``: the TFLOP/s of every 20-GEMM window and the samples, tagged by
phase; prints the medians after the first 10 s."""

import json
import os
import subprocess
import threading
import time

import torch

N = 8192
QUERY = (
    "clocks.sm,clocks.max.sm,clocks.mem,power.draw,power.limit,temperature.gpu,clocks_throttle_reasons.active"
)
samples: list[tuple[str, float, str]] = []
phase = ["idle"]
running = [True]


def sample() -> None:
    while running[0]:
        r = subprocess.run(
            ["nvidia-smi", f"--query-gpu={QUERY}", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
        )
        samples.append((phase[0], time.time(), r.stdout.strip()))
        time.sleep(0.25)


def gemm(precision: str):
    a = torch.randn(N, N, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(N, N, device="cuda", dtype=torch.bfloat16)
    if precision == "bf16":
        return lambda: a @ b
    a8 = a.to(torch.float8_e4m3fn)
    b8 = b.t().contiguous().to(torch.float8_e4m3fn).t()  # column-major, as _scaled_mm wants
    one = torch.tensor(1.0, device="cuda")
    return lambda: torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)


def windows(f, secs: float) -> list[tuple[float, float]]:
    out = []
    t0 = time.time()
    while time.time() - t0 < secs:
        s = time.time()
        for _ in range(20):
            f()
        torch.cuda.synchronize()
        out.append((time.time() - t0, 20 * 2 * N**3 / (time.time() - s) / 1e12))
    return out


def main() -> None:
    res: dict = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "runs": []}
    th = threading.Thread(target=sample, daemon=True)
    th.start()
    time.sleep(2)
    for precision in ("bf16", "fp8"):
        try:
            f = gemm(precision)
            for _ in range(5):
                f()
            torch.cuda.synchronize()
        except Exception as exc:  # FP8 needs sm89+
            res["runs"].append({"precision": precision, "error": repr(exc)[:300]})
            continue
        phase[0] = precision
        res["runs"].append(
            {
                "precision": precision,
                "n": N,
                "tflops_windows": windows(f, float(os.environ.get("SECS", "45"))),
            }
        )
        phase[0] = "cool-" + precision
        time.sleep(3)
    running[0] = False
    th.join()
    res["samples"] = samples
    with open(os.path.join(os.environ.get("OUT", "."), "clock-probe.json"), "w") as fh:
        json.dump(res, fh)
    for r in res["runs"]:
        late = sorted(x for t, x in r.get("tflops_windows", []) if t > 10)
        print(r["precision"], "TFLOP/s after 10 s, median:", late[len(late) // 2] if late else r.get("error"))


if __name__ == "__main__":
    main()
