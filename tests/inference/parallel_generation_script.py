"""Launched script: generation and pipelines under tensor / pipeline parallelism.

Usage: python -m oneflow.distributed.launch --nproc_per_node 2 parallel_generation_script.py
           OUT_PREFIX LAYOUT [LAYOUT ...]      (LAYOUT: tp2, pp2)

For each layout, tiny GPT-2 and T5 models are built twice from one seed (under the layout and
under a one-process layout in the same process) and generate with the same settings; the
Hugging Face fixtures run through the pipelines under the layout. Every rank writes
OUT_PREFIX.rank<R>.json: {"<layout>/<case>": [parallel result, reference result]}.
"""
import json
import os
import sys

import libai  # noqa: F401  (must precede oneflow)
import numpy as np
import oneflow as flow

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tiny_models import PAD, left_padded, prompts, tiny_gpt, tiny_t5  # noqa: E402
from libai.inference import TextClassificationPipeline, TextGenerationPipeline  # noqa: E402
from libai.utils.distributed import ParallelLayout, get_rank  # noqa: E402

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "hf")
SIZES = {"tp2": dict(tensor_parallel_size=2), "pp2": dict(pipeline_parallel_size=2)}
PIPELINE_SIZES = {"tp2": dict(tensor_parallel=2), "pp2": dict(pipeline_parallel=2)}


def _seeded(seed):
    generator = flow.Generator()
    generator.manual_seed(seed)
    return generator


GPT_CASES = {
    "gpt_greedy_padded": lambda: dict(input_ids=left_padded(1)[0], attention_mask=left_padded(1)[1],
                                      pad_token_id=PAD),
    "gpt_beam3": lambda: dict(input_ids=prompts(2), num_beams=3),
    "gpt_repetition": lambda: dict(input_ids=prompts(3), repetition_penalty=1.5),
    "gpt_sample_seeded": lambda: dict(input_ids=prompts(4), do_sample=True, top_k=0,
                                      generator=_seeded(7)),
    "gpt_greedy_no_cache": lambda: dict(input_ids=prompts(5), use_cache=False),
}
T5_CASES = {
    "t5_greedy": lambda: dict(input_ids=prompts(6, length=6), decoder_start_token_id=PAD),
    "t5_beam3": lambda: dict(input_ids=prompts(6, length=6), decoder_start_token_id=PAD, num_beams=3),
}


def _layout(name):
    sizes = dict(SIZES[name], device_type="cpu", pipeline_num_layers=4 if name == "pp2" else None)
    return ParallelLayout.from_config(sizes)


def run(layout_name, results):
    for builder, cases, layers in ((tiny_gpt, GPT_CASES, 2), (tiny_t5, T5_CASES, 4)):
        sizes = dict(SIZES[layout_name], device_type="cpu")
        if layout_name == "pp2":
            sizes["pipeline_num_layers"] = layers
        parallel = builder(seed=0, layout=ParallelLayout.from_config(sizes))
        reference = builder(seed=0)
        for case, kwargs in cases.items():
            a = parallel.generate(max_new_tokens=7, **kwargs()).numpy().tolist()
            b = reference.generate(max_new_tokens=7, **kwargs()).numpy().tolist()
            results[f"{layout_name}/{case}"] = [a, b]

    for family in ("gpt2", "llama"):  # transformers' tokens, from the fixture
        ref = np.load(os.path.join(FIXTURES, family, "reference.npz"))
        pipe = TextGenerationPipeline(os.path.join(FIXTURES, family), **PIPELINE_SIZES[layout_name])
        prompts_ = [ref["padded_prompts"][0].tolist(), ref["padded_prompts"][1, 2:].tolist()]
        got = [r["generated_token_ids"] for r in pipe(prompts_, max_new_tokens=6, eos_token_id=2)]
        beam = pipe(ref["prompt"][0].tolist(), max_new_tokens=6, eos_token_id=2, num_beams=3)
        results[f"{layout_name}/hf_{family}_pipeline"] = [
            got + [beam["generated_token_ids"]],
            [ref["padded_greedy"][0].tolist(), ref["padded_greedy"][1, 2:].tolist(),
             ref["beam3"][0].tolist()],
        ]

    bert = np.load(os.path.join(FIXTURES, "bert_classifier", "reference.npz"))
    classify = TextClassificationPipeline(os.path.join(FIXTURES, "bert_classifier"),
                                          **PIPELINE_SIZES[layout_name])
    items = [{"input_ids": bert["input_ids"][i][bert["attention_mask"][i] == 1].tolist(),
              "token_type_ids": bert["token_type_ids"][i][bert["attention_mask"][i] == 1].tolist()}
             for i in range(2)]
    scores = [[r["score"] for r in rec] for rec in classify(items, return_all_scores=True)]
    e = np.exp(bert["logits"].astype(np.float64))
    results[f"{layout_name}/hf_bert_pipeline_scores"] = [scores, (e / e.sum(-1, keepdims=True)).tolist()]


def main():
    prefix, layouts = sys.argv[1], sys.argv[2:]
    results = {}
    for name in layouts:
        run(name, results)
    with open(f"{prefix}.rank{get_rank()}.json", "w") as f:
        json.dump(results, f)


if __name__ == "__main__":
    main()
