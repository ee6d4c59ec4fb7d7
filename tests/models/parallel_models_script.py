"""Launched script: tiny GPT-2, BERT and T5, forward + backward under parallel layouts, each
compared with the same model built from the same seed under a one-process layout.

Usage: python -m oneflow.distributed.launch --nproc_per_node N parallel_models_script.py \
           OUT.json LAYOUT[:model,model] [LAYOUT ...]
with LAYOUT among tp2, dp2, pp2 (2 processes) and dp2_tp2, tp2_pp2 (4 processes), and the
models among gpt, bert, t5 (all three when not given).
Rank 0 writes {"<layout>/<model>": {"losses": {name: [parallel, one-process]},
"grads": {param: rel err}, "init": {param: rel err}, "grad_norm": ..., "replicated": [modules
whose output holds the whole batch on every data-parallel rank]}}.
"""
import os
import sys

import libai  # noqa: F401  (must precede oneflow)
import numpy as np
import oneflow as flow

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "layers"))
from parallel_helpers import (  # noqa: E402
    LAYOUTS, build_twice, compare_params, full, global_layout, place, record_replicated_outputs,
    sbp_names, write_results,
)
from libai.models import BertForPreTraining, GPTForPreTraining, T5ForPreTraining  # noqa: E402

BATCH, SEQ, VOCAB, LAYERS = 4, 8, 96, 2
BODY = dict(
    vocab_size=VOCAB, hidden_size=32, hidden_layers=LAYERS, num_attention_heads=4,
    intermediate_size=64, hidden_dropout_prob=0.0, attention_dropout_prob=0.0,
    initializer_range=0.2,
)


def gpt_case(rng):
    ids = rng.randint(0, VOCAB, size=(BATCH, SEQ + 1))
    labels = ids[:, 1:].copy()
    labels[0, -2:] = -100  # ignored positions
    model = lambda: GPTForPreTraining(dict(BODY, max_seq_length=SEQ, embedding_dropout_prob=0.0))
    return model, LAYERS, {"input_ids": (ids[:, :-1], 0), "labels": (labels, -1)}


def bert_case(rng):
    ids = rng.randint(0, VOCAB, size=(BATCH, SEQ))
    mask = np.ones((BATCH, SEQ), dtype=np.int64)
    mask[1, -3:] = 0
    loss_mask = (rng.rand(BATCH, SEQ) < 0.4).astype(np.int64)
    loss_mask[:, 0] = 1
    fields = {
        "input_ids": (ids, 0), "attention_mask": (mask, 0),
        "tokentype_ids": ((np.arange(SEQ) >= SEQ // 2).astype(np.int64)[None].repeat(BATCH, 0), 0),
        "ns_labels": (rng.randint(0, 2, size=(BATCH,)), -1),
        "lm_labels": (rng.randint(0, VOCAB, size=(BATCH, SEQ)), -1),
        "loss_mask": (loss_mask, -1),
    }
    model = lambda: BertForPreTraining(dict(BODY, max_position_embeddings=SEQ))
    return model, LAYERS, fields


def t5_case(rng):
    dec = SEQ - 2
    enc_mask = np.ones((BATCH, SEQ, SEQ), dtype=np.int64)
    enc_mask[2, :, -2:] = 0
    fields = {
        "encoder_input_ids": (rng.randint(0, VOCAB, size=(BATCH, SEQ)), 0),
        "decoder_input_ids": (rng.randint(0, VOCAB, size=(BATCH, dec)), 0),
        "encoder_attn_mask": (enc_mask, 0),
        "decoder_attn_mask": (np.tril(np.ones((dec, dec), dtype=np.int64))[None].repeat(BATCH, 0), 0),
        "encoder_decoder_attn_mask": (enc_mask[:, :dec, :], 0),
        "lm_labels": (rng.randint(0, VOCAB, size=(BATCH, dec)), -1),
        "loss_mask": ((rng.rand(BATCH, dec) < 0.7).astype(np.int64), -1),
    }
    model = lambda: T5ForPreTraining(dict(BODY, max_position_embeddings=SEQ, embedding_dropout_prob=0.0))
    return model, 2 * LAYERS, fields


CASES = {"gpt": gpt_case, "bert": bert_case, "t5": t5_case}


def _zoo_cases():
    """More cases, one module per model family in ``zoo_cases/`` (each defines ``CASES``
    mapping a name to a function ``rng -> (build, num_layers, fields)`` shaped like the
    cases above); they run only when named in a layout spec (``tp2:roberta``)."""
    import importlib.util

    folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "zoo_cases")
    found = {}
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        if name.endswith(".py") and not name.startswith("_"):
            spec = importlib.util.spec_from_file_location(f"zoo_cases_{name[:-3]}",
                                                          os.path.join(folder, name))
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            found.update(module.CASES)
    return found


ZOO_CASES = _zoo_cases()


def run_case(layout_name, case):
    build, num_layers, fields = {**CASES, **ZOO_CASES}[case](np.random.RandomState(3))
    layout = global_layout(pipeline_num_layers=num_layers, **LAYOUTS[layout_name])
    parallel, reference = build_twice(build, layout, seed=5)
    init = compare_params(parallel, reference, grads=False)
    parallel.train()
    reference.train()
    batch = next(iter(fields.values()))[0].shape[0]
    replicated = record_replicated_outputs(parallel, layout, batch)
    losses_p = parallel(**{k: place(a, layout, stage) for k, (a, stage) in fields.items()})
    losses_r = reference(**{k: flow.tensor(a) for k, (a, _) in fields.items()})
    sum(losses_p.values()).backward()
    sum(losses_r.values()).backward()
    return {
        "losses": {k: [float(full(v)), float(losses_r[k].numpy())] for k, v in losses_p.items()},
        "loss_sbp": sbp_names(next(iter(losses_p.values()))),
        "replicated": replicated,
        "grads": compare_params(parallel, reference, grads=True),
        "init": init,
        "grad_norm": float(np.sqrt(sum((p.grad.numpy() ** 2).sum() for p in reference.parameters()))),
    }


def main():
    out, layouts = sys.argv[1], sys.argv[2:]
    results = {}
    for spec in layouts:
        layout_name, _, cases = spec.partition(":")
        for case in cases.split(",") if cases else CASES:
            results[f"{layout_name}/{case}"] = run_case(layout_name, case)
    write_results(results, out)


if __name__ == "__main__":
    main()
