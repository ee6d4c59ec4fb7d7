#!/usr/bin/env bash
# Launch a libai script on N processes of this machine (and optionally several machines),
# through libai's launcher (python -m libai.launch: OneFlow's launcher, plus signals forwarded
# to the ranks for a preemption checkpoint, and no rank outliving it; docs/distributed.md).
#
#   bash tools/train.sh tools/train_net.py CONFIG N [key=value ...]
#   NNODES=2 NODE_RANK=0 MASTER_ADDR=10.0.0.1 bash tools/train.sh tools/train_net.py CONFIG 8
#
# Environment: NNODES (1), NODE_RANK (0), MASTER_ADDR (127.0.0.1), MASTER_PORT (12345),
# PYTHON (the project's .venv python when present, else python3).
set -euo pipefail
if [ $# -lt 3 ]; then
  echo "usage: bash tools/train.sh SCRIPT CONFIG NPROC_PER_NODE [key=value ...]" >&2
  exit 2
fi
SCRIPT=$1; CONFIG=$2; NPROC=$3; shift 3
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  if [ -x "$root/.venv/bin/python" ]; then PY="$root/.venv/bin/python"; else PY=python3; fi
fi
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"  # libai.launch from this checkout
exec "$PY" -m libai.launch \
  --nproc_per_node "$NPROC" --nnodes "${NNODES:-1}" --node_rank "${NODE_RANK:-0}" \
  --master_addr "${MASTER_ADDR:-127.0.0.1}" --master_port "${MASTER_PORT:-12345}" \
  "$SCRIPT" --config-file "$CONFIG" "$@"
