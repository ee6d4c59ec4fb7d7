"""Write a training run's final weights as a Hugging Face model directory (with the tokenizer).

lm_eval (through ``python -m libai.inference.lm_eval_cli`` or its own ``hf`` model) and
transformers read the result::

    python projects/stdlib_sft/export_hf.py output/stdlib_sft/sft output/stdlib_sft/sft_hf
"""
import argparse
import json
import os
import shutil
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from libai.inference.loading import build_layout, load_model, resolve_source  # noqa: E402

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")


def export(run_dir: str, out_dir: str, tokenizer_dir: str) -> None:
    source = resolve_source(run_dir, None, None)
    layout = build_layout(source, None, None, None, None, None, "cpu")
    model = load_model(source, layout, {}, "causal_lm")
    model.save_pretrained(out_dir)
    for name in TOKENIZER_FILES:
        shutil.copy(os.path.join(tokenizer_dir, name), os.path.join(out_dir, name))
    write_generation_config(out_dir)


def write_generation_config(out_dir: str) -> None:
    """``generation_config.json``: a reply ends at the chat template's ``<|end|>`` (or at the
    end of text), what tools/chat.py and transformers read as the stop tokens."""
    from libai.tokenizer import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(out_dir)
    stops = [tokenizer.convert_tokens_to_ids("<|end|>"), tokenizer.eos_token_id]
    with open(os.path.join(out_dir, "generation_config.json"), "w", encoding="utf-8") as handle:
        json.dump({"eos_token_id": stops, "pad_token_id": tokenizer.pad_token_id}, handle, indent=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", help="a training output_dir (config.yaml + model_final)")
    parser.add_argument("out_dir", help="the Hugging Face directory to write")
    parser.add_argument("--tokenizer", default="data/stdlib_sft/tokenizer")
    args = parser.parse_args()
    export(args.run_dir, args.out_dir, args.tokenizer)
    print(f"{args.run_dir} -> {args.out_dir}")


if __name__ == "__main__":
    main()
