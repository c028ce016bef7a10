#!/bin/bash
# device call on the lent H200: the launch-bound inference cells again (host variance), and the host-launch probe
set -o pipefail
T0=$(date +%s)
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD:$PWD/client PYTHONUNBUFFERED=1
if ! python3 -c 'import pydantic' 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .devrun/whl/*.whl && export PYTHONPATH=$PWD:$PWD/client:/tmp/site
fi
{ date -u; nvidia-smi; lscpu | head -20; uptime; } > $OUT/env.txt 2>&1
python3 -m service.agent.cli run --plan service/agent/plans/h200-variants.json --workloads resnet50-infer,bert-large-infer --time-budget 200s -o $OUT/infer.json 2>&1 | tee $OUT/infer.log
timeout 150 python3 benchmarks/probes/h200_host_launch_probe.py > $OUT/host-launch.jsonl 2> $OUT/host-launch.err; tail -3 $OUT/host-launch.err
echo "call done after $(( $(date +%s) - T0 ))s"
