#!/usr/bin/env bash
# The capture demo on a GPU machine: the seed's two commands, `pista run` of the training
# workloads, and a small sweep. Everything lands in OUT (default ./capture-out), packed into
# OUT/capture.tar.gz with a log beside it.
#
#   bash scripts/device_capture.sh [OUT]
#
# Needs torch with CUDA, numpy, rich and msgspec; pista runs from src/ (no install), so a machine
# without network only needs msgspec carried as a wheel (see .whl/ in the device README).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-${OUT:-capture-out}}
mkdir -p "$OUT/runs"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
LOG="$OUT/capture.log"
R="$OUT/runs"
BIG=${BIG:-4096}  # BIG=256 for a quick check on a CPU-only machine
MID=$((BIG / 4))

step() {  # step NAME CMD...: run one capture, keep its output, never stop the whole script
  local name=$1; shift
  echo "=== $name: $*" | tee -a "$LOG"
  local t0=$SECONDS
  "$@" >"$R/$name.stdout.txt" 2>"$R/$name.stderr.txt"
  local rc=$?
  cat "$R/$name.stdout.txt" "$R/$name.stderr.txt" >>"$LOG"
  echo "=== $name: rc=$rc in $((SECONDS - t0)) s" | tee -a "$LOG"
}

{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  $PY -c 'import torch, rich, msgspec, numpy; print("torch", torch.__version__, "cuda", torch.version.cuda,
"device", torch.cuda.get_device_name(), "| msgspec", msgspec.__version__, "numpy", numpy.__version__)'
} 2>&1 | tee -a "$LOG"

step seed_mm64 $PY examples/01_matmul_add.py --size 64 --out "$R/seed_mm64"
step seed_mm4096_compile $PY examples/01_matmul_add.py --size $BIG --warmup --compile --out "$R/seed_mm4096_compile"
step run_mm4096 $PY -m pista run matmul_add --size $BIG --warmup --out "$R/run_mm4096"
step run_linear $PY -m pista run linear --size $BIG --batch $BIG --warmup --out "$R/run_linear"
step run_mlp $PY -m pista run mlp --size $MID --warmup --out "$R/run_mlp"
step run_mlp_compile $PY -m pista run mlp --size $MID --warmup --compile --out "$R/run_mlp_compile"
step run_transformer $PY -m pista run transformer --size $((BIG / 8)) --batch 8 --warmup --out "$R/run_transformer"
step sweep $PY -m pista sweep matmul_add --sizes 64,256,$MID,$BIG --out "$R/sweep"

# Torch's printed Self CPU total against pista's rebuild from the written trace (run.json keeps both).
$PY - "$R" <<'EOF' 2>&1 | tee -a "$LOG"
import json, sys
from pathlib import Path
from pista.findings import analyze
from pista.capture.session import parse_self_cpu_total
for table in sorted(Path(sys.argv[1]).rglob("table.txt")):
    torch_total = parse_self_cpu_total(table.read_text())
    a = analyze(table.with_name("trace.json.gz"))
    s = a.summary
    print(f"{str(table.parent.relative_to(sys.argv[1])):28s} torch {torch_total:12.3f}us  pista {s.self_cpu_total_us:12.3f}us"
          f"  diff {100 * (s.self_cpu_total_us - torch_total) / torch_total:+.3f}%  cuda {s.self_device_total_us:10.3f}us  {s.verdict}")
EOF
tar -czf "$OUT/capture.tar.gz" -C "$OUT" runs
echo "packed $OUT/capture.tar.gz ($(du -h "$OUT/capture.tar.gz" | cut -f1))" | tee -a "$LOG"
