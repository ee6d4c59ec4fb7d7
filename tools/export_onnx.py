#!/usr/bin/env python
"""Export a libai model (GPT-2, BERT) to ONNX and check it with onnxruntime.

    python tools/export_onnx.py --hf DIR --output model.onnx [--batch-size 1 --seq-length N]
    python tools/export_onnx.py --config-file CFG --weights DIR --output model.onnx

``--hf DIR``: a Hugging Face directory (config.json + weights); the libai class is chosen from
config.json's ``architectures``. ``--config-file CFG``: a libai config (``.py``/``.yaml``, or a
training output_dir holding config.yaml) whose ``model`` is built, with weights from
``--weights`` (a libai checkpoint directory or a Hugging Face directory; an output_dir's own
model_final by default). The file takes inputs of exactly ``--batch-size`` x ``--seq-length``
(pad to it); ``--seq-length`` defaults to 128, or to the model's position count when it has fewer,
and a longer one is refused with the largest that fits. Loading is libai.inference's; exporting is libai.models.utils.onnx_export's.
See docs/onnx_export.md.
"""
import argparse
import os
import sys
from typing import Any, List, Optional

# Run from a checkout without installing: make the repository importable.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import libai  # noqa: E402,F401  (makes OneFlow's libraries loadable; must precede oneflow)
from libai.inference.loading import build_layout, load_model, resolve_source  # noqa: E402
from libai.models.utils.onnx_export import example_token_inputs, export_onnx  # noqa: E402

# Hugging Face architectures -> the libai class whose logits are exported
ARCHITECTURES = {
    "GPT2LMHeadModel": "GPTForPreTraining",
    "GPT2Model": "GPTForPreTraining",
    "BertForPreTraining": "BertForPreTraining",
    "BertForMaskedLM": "BertForPreTraining",
    "BertForSequenceClassification": "BertForClassification",
}


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--config-file", help="libai config file or training output_dir")
    source.add_argument("--hf", help="Hugging Face model directory (config.json + weights)")
    parser.add_argument("--weights", help="checkpoint or Hugging Face directory (with --config-file)")
    parser.add_argument("--output", required=True, help="the .onnx file to write")
    parser.add_argument("--batch-size", type=int, default=1)
    parser.add_argument("--seq-length", type=int, default=None,
                        help="tokens per input row (default: 128, or the model's position count "
                        "when it has fewer)")
    parser.add_argument("--inputs", help="comma-separated forward() inputs to export "
                        "(default: the required ones, e.g. input_ids[,attention_mask])")
    parser.add_argument("--opset", type=int, default=13)
    parser.add_argument("--atol", type=float, default=1e-4, help="largest accepted difference")
    args = parser.parse_args(argv)
    if args.weights and not args.config_file:
        parser.error("--weights goes with --config-file (--hf names its own weights)")
    return args


def position_count(model: Any) -> Optional[int]:
    """How many positions the model's position table holds (None: no table, e.g. rotary)."""
    counts = []
    for name, module in model.named_modules():
        if "position" in name.lower() and getattr(module, "num_embeddings", None):
            counts.append(int(module.num_embeddings))
        elif getattr(module, "max_seq_length", None) and hasattr(module, "position_embeddings"):
            counts.append(int(module.max_seq_length))
    return min(counts) if counts else None


def choose_seq_length(model: Any, wanted: Optional[int], default: int = 128) -> int:
    """``--seq-length``, checked against the model's positions; by default 128 or fewer."""
    limit = position_count(model)
    if wanted is None:
        return default if limit is None else min(default, limit)
    if limit is not None and wanted > limit:
        raise SystemExit(
            f"export_onnx.py: --seq-length {wanted} exceeds the model's {limit} positions "
            f"(its position table); pass --seq-length {limit} or less"
        )
    return wanted


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    source = resolve_source(args.config_file or args.hf, args.weights or args.hf, None)
    layout = build_layout(source, None, None, None, None, None, "cpu")
    model = load_model(source, layout, ARCHITECTURES, "ONNX export")
    names = args.inputs.split(",") if args.inputs else None
    args.seq_length = choose_seq_length(model, args.seq_length)
    with layout:
        inputs = example_token_inputs(model, args.batch_size, args.seq_length, names=names)
        result = export_onnx(model, args.output, inputs, opset=args.opset, atol=args.atol)
    shapes = ", ".join(f"{n} {list(s)}" for n, s in zip(result.input_names, result.input_shapes))
    print(f"wrote {result.path}: inputs {shapes} -> {result.output_name}; onnxruntime vs libai "
          f"max |diff| = {result.max_abs_diff:.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
