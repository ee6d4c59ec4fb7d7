#!/usr/bin/env bash
# The whole project, from the repository root: data, base model, fine-tuning, evaluation, chats.
# Usage: bash projects/stdlib_sft/run_all.sh [PYTHON]   (default .venv/bin/python)
set -euo pipefail
PY=${1:-.venv/bin/python}
export HF_DATASETS_OFFLINE=1
OUT=output/stdlib_sft
$PY projects/stdlib_sft/make_data.py --output data/stdlib_sft
$PY tools/train_net.py --config-file projects/stdlib_sft/configs/pretrain.py
$PY tools/train_net.py --config-file projects/stdlib_sft/configs/sft.py --eval-only \
    train.load_weight=$OUT/base/model_final train.output_dir=$OUT/base_eval
$PY tools/train_net.py --config-file projects/stdlib_sft/configs/sft.py
for m in base sft; do
  $PY projects/stdlib_sft/export_hf.py $OUT/$m $OUT/${m}_hf
  $PY -m libai.inference.lm_eval_cli run --model libai --model_args pretrained=$OUT/${m}_hf \
      --batch_size 16 --tasks stdlib_qa --include_path data/stdlib_sft/task --output_path $OUT/lm_eval_$m
  $PY projects/stdlib_sft/chat_samples.py $OUT/${m}_hf
done
