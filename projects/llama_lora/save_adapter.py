"""Step 3: write the adapter alone, and check that fine-tuning moved nothing but the adapter.

Builds the LoRA model of a config, loads a checkpoint of its fine-tuning run, compares every
base tensor with the base model's checkpoint (they must be bit-identical) and writes
``adapter_model.safetensors`` + ``adapter_config.json`` with :func:`save_lora`.

    python projects/llama_lora/save_adapter.py \\
        --config-file projects/llama_lora/configs/llama_lora_docstrings.py \\
        --checkpoint output/llama_lora/lora/model_final \\
        --base output/llama_lora/base/model_final --output output/llama_lora/adapter
"""
import argparse
import os
from typing import List

import libai  # noqa: F401  (must precede oneflow)
import numpy as np
import oneflow as flow

from libai.config import LazyConfig, instantiate
from libai.models.utils.lora import save_lora
from libai.utils.checkpoint import Checkpointer
from libai.utils.distributed import ParallelLayout


def main(argv: List[str] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config-file", required=True)
    parser.add_argument("--checkpoint", required=True, help="the fine-tuned checkpoint")
    parser.add_argument("--base", required=True, help="the base model's checkpoint")
    parser.add_argument("--output", required=True, help="the adapter directory to write")
    parser.add_argument("--opts", nargs="*", default=[],
                        help="config overrides the run used (key=value), e.g. shrunken sizes")
    args = parser.parse_args(argv)
    cfg = LazyConfig.apply_overrides(LazyConfig.load(args.config_file), args.opts)
    with ParallelLayout.from_config({"device_type": "cpu"}, world_size=1, rank=0):
        model = instantiate(cfg.model)  # loads the base, then adds the adapters
    Checkpointer(model, save_to_disk=False).load_weights_only(args.checkpoint)
    base = flow.load(os.path.join(args.base, "model"))
    tuned = model.state_dict()
    same = [k for k, v in base.items() if np.array_equal(v.numpy(), tuned[k].numpy())]
    adapters = sorted(k for k in tuned if ".lora_" in k)
    print(f"base tensors bit-identical to {args.base}: {len(same)} of {len(base)}")
    weights = save_lora(model, args.output)
    count = sum(int(tuned[k].numel()) for k in adapters)
    size = os.path.getsize(weights)
    print(f"wrote {len(adapters)} adapter tensors ({count} parameters, {size} bytes) to {weights}")
    if len(same) != len(base):
        raise SystemExit("fine-tuning changed base weights: " + ", ".join(sorted(set(base) - set(same))))


if __name__ == "__main__":
    main()
