#!/usr/bin/env bash
# The capture demo on a GPU machine: the seed's two commands, `pista run` of the training
# workloads, and a small sweep. The run folders go to WORK (default /tmp/pista-capture); OUT
# (default ./capture-out) gets only capture.log and capture.tar.gz (the run folders, packed).
#
#   bash scripts/device_capture.sh [OUT]
#
# Needs torch with CUDA, numpy, rich and msgspec; pista runs from src/ (no install), so a machine
# without network only needs msgspec carried as a wheel (see .whl/ in the device README).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-${OUT:-capture-out}}
WORK=${WORK:-/tmp/pista-capture}
rm -rf "$WORK/runs"
mkdir -p "$OUT" "$WORK/runs"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
LOG="$OUT/capture.log"
: >"$LOG"
R="$WORK/runs"
BIG=${BIG:-4096}  # BIG=256 for a quick check on a CPU-only machine
MID=$((BIG / 4))

step() {  # step NAME CMD...: run one capture, keep its output, never stop the whole script
  local name=$1; shift
  if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $name "* ]]; then return; fi  # ONLY="run_mlp sweep": just those
  echo "=== $name: $*" | tee -a "$LOG"
  local t0=$SECONDS
  "$@" >"$R/$name.stdout.txt" 2>"$R/$name.stderr.txt"
  local rc=$?
  cat "$R/$name.stdout.txt" "$R/$name.stderr.txt" >>"$LOG"
  echo "=== $name: rc=$rc in $((SECONDS - t0)) s" | tee -a "$LOG"
  pack  # after every step, so a run cut short still brings back what it made
}

pack() {
  tar -czf "$OUT/.capture.tar.gz" -C "$WORK" runs && mv "$OUT/.capture.tar.gz" "$OUT/capture.tar.gz"
}

{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  $PY -c 'import torch, rich, msgspec, numpy; print("torch", torch.__version__, "cuda", torch.version.cuda,
"device", torch.cuda.get_device_name(), "| msgspec", msgspec.__version__, "numpy", numpy.__version__)'
} 2>&1 | tee -a "$LOG"

step seed_mm64 $PY examples/01_matmul_add.py --size 64 --out "$R/seed_mm64"
step seed_mm4096_compile $PY examples/01_matmul_add.py --size $BIG --warmup --compile --out "$R/seed_mm4096_compile"
# the same two with a synchronize at every step end
step seed_mm64_sync $PY examples/01_matmul_add.py --size 64 --sync --out "$R/seed_mm64_sync"
step seed_mm4096_compile_sync $PY examples/01_matmul_add.py --size $BIG --warmup --compile --sync \
  --out "$R/seed_mm4096_compile_sync"
step run_mm4096 $PY -m pista run matmul_add --size $BIG --warmup --out "$R/run_mm4096"
step run_linear $PY -m pista run linear --size $BIG --batch $BIG --warmup --out "$R/run_linear"
step run_mlp $PY -m pista run mlp --size $MID --warmup --out "$R/run_mlp"
step run_mlp_compile $PY -m pista run mlp --size $MID --warmup --compile --out "$R/run_mlp_compile"
step run_transformer $PY -m pista run transformer --size $((BIG / 8)) --batch 8 --warmup --out "$R/run_transformer"
step sweep $PY -m pista sweep matmul_add --sizes 64,256,$MID,$BIG --out "$R/sweep"
cat >"$WORK/user_train.py" <<'EOF_SCRIPT'
import torch
model = torch.nn.Sequential(torch.nn.Linear(2048, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 2048))
dev = "cuda" if torch.cuda.is_available() else "cpu"
model = model.to(dev)
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x = torch.randn(512, 2048, device=dev)

def train_step():
    loss = model(x).square().mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss.item()  # a host sync every step, on purpose

for _ in range(8):
    train_step()
EOF_SCRIPT
step profile_script $PY -m pista profile --function train_step --out "$R/profile_script" "$WORK/user_train.py"
# Ctrl-C for real on the GPU: SIGINT 12 s into an endless profile; expect rc=130 and a whole trace
step sigint_linear timeout --preserve-status -s INT 12 $PY -m pista run linear --size $((2 * BIG)) \
  --batch $((2 * BIG)) --steps 1000000 --active 1000000 --out "$R/sigint_linear"

# Torch's printed Self CPU total against pista's rebuild from the written trace (run.json keeps both).
$PY - "$R" <<'EOF' 2>&1 | tee -a "$LOG"
import json, sys
from pathlib import Path
from pista.analysis import analyze
from pista.capture.session import parse_self_cpu_total
for table in sorted(Path(sys.argv[1]).rglob("table.txt")):
    torch_total = parse_self_cpu_total(table.read_text())
    a = analyze(table.with_name("trace.json.gz"))
    s = a.summary
    print(f"{str(table.parent.relative_to(sys.argv[1])):28s} torch {torch_total:12.3f}us  pista {s.self_cpu_total_us:12.3f}us"
          f"  diff {100 * (s.self_cpu_total_us - torch_total) / torch_total:+.3f}%  cuda {s.self_device_total_us:10.3f}us  {s.verdict}")
EOF
pack
echo "packed $OUT/capture.tar.gz ($(du -h "$OUT/capture.tar.gz" | cut -f1))" | tee -a "$LOG"
