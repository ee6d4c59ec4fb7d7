"""The T5 / MT5 Hugging Face fixtures under TP=2 and PP=2 — loaded with from_pretrained,
logits against transformers' reference, greedy and beam-3 generation against transformers'
tokens, export back equal to the fixture's tensors. hf_parallel_script.py runs these in its
launch (:func:`run_all`); alone:

    python -m oneflow.distributed.launch --nproc_per_node 2 t5_parallel_script.py OUT.json

Rank 0 writes {"<layout>/<fixture>": {...}}.
"""
import os
import sys
import tempfile

import libai  # noqa: F401  (must precede oneflow)
import numpy as np
import oneflow as flow

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "layers"))
from parallel_helpers import full, global_layout, place, write_results  # noqa: E402
from libai.models import T5ForPreTraining  # noqa: E402
from libai.models.pretrained import read_state_dict  # noqa: E402
from libai.models.pretrained.placement import broadcast_object  # noqa: E402

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "hf")
LAYOUTS = {"tp2": dict(tensor_parallel_size=2), "pp2": dict(pipeline_parallel_size=2)}
COMMON = dict(max_new_tokens=6, eos_token_id=2, pad_token_id=0)
FIXTURE_NAMES = ("t5", "mt5")


def run(layout_name, fixture):
    path = os.path.join(FIXTURES, fixture)
    ref = np.load(os.path.join(path, "reference.npz"))
    layout = global_layout(pipeline_num_layers=4, **LAYOUTS[layout_name])
    with layout:
        model = T5ForPreTraining.from_pretrained(path).eval()
        enc, dec, mask = (place(ref[k], layout, 0) for k in
                          ("input_ids", "decoder_input_ids", "attention_mask"))
        with flow.no_grad():
            logits = full(model(enc, dec, mask, None, mask)["prediction_scores"])
        tokens = {}
        for case, extra in (("greedy", {}), ("beam3", dict(num_beams=3))):
            tokens[case] = model.generate(ref["input_ids"], attention_mask=ref["attention_mask"],
                                          **extra, **COMMON).numpy()
        qkv = model.state_dict()["t5_model.encoder.layers.0.self_attention.query_key_value.weight"]
        bias = model.state_dict()["t5_model.decoder_position_bias.relative_attention_bias.weight"]
        export_dir = broadcast_object(tempfile.mkdtemp(prefix="t5_export_"))
        model.save_pretrained(export_dir)
    exported, original = read_state_dict(export_dir), read_state_dict(path)
    return {
        "max_abs_diff": float(np.abs(logits - ref["logits"]).max()),
        "greedy_equal": bool(np.array_equal(tokens["greedy"], ref["greedy"])),
        "beam3_equal": bool(np.array_equal(tokens["beam3"], ref["beam3"])),
        "qkv_sbp": [str(s) for s in qkv.sbp],
        "decoder_bias_ranks": np.asarray(bias.placement.ranks).ravel().tolist(),
        "export_names_equal": sorted(exported) == sorted(original),
        "export_max_abs_diff": max(float(np.abs(exported[k] - original[k]).max()) for k in exported),
    }


def run_all(results):
    """Adds ``<layout>/t5`` and ``<layout>/mt5`` for both layouts to ``results``."""
    for layout_name in LAYOUTS:
        for fixture in FIXTURE_NAMES:
            results[f"{layout_name}/{fixture}"] = run(layout_name, fixture)


def main():
    results = {}
    run_all(results)
    write_results(results, sys.argv[1])


if __name__ == "__main__":
    main()
