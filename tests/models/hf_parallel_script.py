"""Launched script: Hugging Face fixtures loaded with from_pretrained under tensor and pipeline
parallel layouts, run forward, exported again.

Usage: python -m oneflow.distributed.launch --nproc_per_node 2 hf_parallel_script.py OUT.json
Rank 0 writes {"<layout>/<fixture>": {"max_abs_diff": logits vs transformers' reference,
"local_rows": {param: rows of this rank's shard}, "export_max_abs_diff": exported tensors vs
the fixture's}}, and the T5 / MT5 results of t5_parallel_script.py (the same launch).
"""
import os
import sys
import tempfile

import libai  # noqa: F401  (must precede oneflow)
import numpy as np
import oneflow as flow

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "layers"))
import t5_parallel_script  # noqa: E402
from parallel_helpers import full, global_layout, place, write_results  # noqa: E402
from libai.models import (  # noqa: E402
    BertForClassification, BertForPreTraining, GPTForPreTraining, SwinTransformer, VisionTransformer,
)
from libai.models import LlamaForCausalLM, RobertaForPreTraining, SwinTransformerV2  # noqa: E402
from libai.models import (  # noqa: E402
    GemmaForCausalLM, MistralForCausalLM, Phi3ForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM,
)
from libai.models.pretrained import read_state_dict  # noqa: E402
from libai.models.pretrained.placement import broadcast_object  # noqa: E402

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "hf")
LAYOUTS = {"tp2": dict(tensor_parallel_size=2), "pp2": dict(pipeline_parallel_size=2)}
# fixture -> (class, pipeline layers, input names, reference output, model output, a split weight)
CASES = {
    "gpt2": (GPTForPreTraining, 2, ["input_ids"], "logits", "prediction_scores",
             "GPT_model.transformer.layers.0.self_attention.query_key_value.weight"),
    "bert": (BertForPreTraining, 2, ["input_ids", "attention_mask", "token_type_ids"],
             "prediction_logits", "prediction_scores", "bert.encoder.layers.1.mlp.dense_h_to_4h.weight"),
    "bert_classifier": (BertForClassification, 2, ["input_ids", "attention_mask", "token_type_ids"],
                        "logits", "prediction_scores", "bert.embeddings.word_embeddings.weight"),
    "vit": (VisionTransformer, 2, ["pixel_values"], "logits", "prediction_scores",
            "blocks.1.self_attention.query_key_value.weight"),
    "swin": (SwinTransformer, 4, ["pixel_values"], "logits", "prediction_scores",
             "layers.1.blocks.0.attn.qkv.weight"),
    "roberta": (RobertaForPreTraining, 2, ["input_ids", "attention_mask"], "logits",
                "prediction_scores", "roberta.encoder.layers.1.mlp.dense_h_to_4h.weight"),
    "swinv2": (SwinTransformerV2, 4, ["pixel_values"], "logits", "prediction_scores",
               "layers.1.blocks.0.attn.qkv.weight"),
    "llama": (LlamaForCausalLM, 2, ["input_ids"], "logits", "prediction_scores",
              "model.layers.0.self_attention.query.weight"),
    # the decoder families of the Llama skeleton: q/k/v biases, sliding window (7 tokens past
    # a window of 3 / 4), per-head q/k norms, Gemma's norms and tied head, Phi-3's fused tensors
    **{name: (cls, 2, ["input_ids"], "logits", "prediction_scores",
              "model.layers.0.self_attention.key_value.weight")
       for name, cls in [("qwen2", Qwen2ForCausalLM), ("mistral", MistralForCausalLM),
                         ("qwen3", Qwen3ForCausalLM), ("gemma", GemmaForCausalLM),
                         ("phi3", Phi3ForCausalLM)]},
}


def run(layout_name, fixture):
    cls, layers, inputs, ref_key, out_key, split_param = CASES[fixture]
    path = os.path.join(FIXTURES, fixture)
    ref = np.load(os.path.join(path, "reference.npz"))
    layout = global_layout(pipeline_num_layers=layers, **LAYOUTS[layout_name])
    with layout:
        model = cls.from_pretrained(path).eval()
        with flow.no_grad():
            out = model(*[place(ref[name], layout, 0) for name in inputs])[out_key]
        logits = full(out)
        param = model.state_dict()[split_param]
        local_rows = int(param.to_local().shape[0]) if flow.env.get_rank() in np.asarray(
            param.placement.ranks).ravel() else -1
        export_dir = broadcast_object(tempfile.mkdtemp(prefix="hf_export_"))
        model.save_pretrained(export_dir)
    exported, original = read_state_dict(export_dir), read_state_dict(path)
    return {
        "max_abs_diff": float(np.abs(logits - ref[ref_key]).max()),
        "local_rows": local_rows,
        "full_rows": int(param.shape[0]),
        "export_max_abs_diff": max(float(np.abs(exported[k] - original[k]).max()) for k in exported),
        # a tied head is not written (transformers re-ties it); everything else round-trips
        "export_names_equal": set(exported) <= set(original)
        and set(original) - set(exported) <= {"lm_head.weight"},
    }


def main():
    results = {}
    for layout_name in LAYOUTS:
        for fixture in CASES:
            local = run(layout_name, fixture)
            gathered = broadcast_object(local)  # rank 0's view; each rank checks its own below
            results[f"{layout_name}/{fixture}"] = gathered
            results[f"{layout_name}/{fixture}/rank{flow.env.get_rank()}_rows"] = local["local_rows"]
    # every rank reports its own shard size to rank 0 through a tiny all-gather
    rows = {k: v for k, v in results.items() if k.endswith("_rows")}
    other = flow.tensor([[float(v) for v in rows.values()]]).to_global(
        placement=flow.placement("cpu", ranks=[0, 1]), sbp=flow.sbp.split(0)
    ).to_global(sbp=flow.sbp.broadcast).to_local().numpy()
    for i, key in enumerate(rows):
        base = key.rsplit("/", 1)[0]
        results[base]["rows_per_rank"] = [int(other[0, i]), int(other[1, i])]
    t5_parallel_script.run_all(results)
    write_results({k: v for k, v in results.items() if not k.endswith("_rows")}, sys.argv[1])


if __name__ == "__main__":
    main()
