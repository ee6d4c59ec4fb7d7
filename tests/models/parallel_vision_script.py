"""Launched script: tiny ViT and Swin, forward + backward under parallel layouts, each compared
with the same model built from the same seed under a one-process layout.

Usage: python -m oneflow.distributed.launch --nproc_per_node 2 parallel_vision_script.py \
           OUT.json LAYOUT [LAYOUT ...]      (LAYOUT among tp2, dp2, pp2)
Rank 0 writes {"<layout>/<model>": {"loss": [parallel, one-process], "grads": {param: rel err},
"init": {param: rel err}, "grad_norms": {param: [parallel, one-process]}, "loss_sbp": [...],
"replicated": [modules whose output holds the whole batch on every data-parallel rank]}}.
ViT is trained on hard labels, Swin on soft (MixUp-style) targets.
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
from libai.models.swin import SwinTransformer  # noqa: E402
from libai.models.vit import VisionTransformer  # noqa: E402

BATCH, CLASSES = 4, 10
# parameters whose gradient norms are reported: the first layer, a middle one, the head
WATCH = {
    "vit": ["patch_embed.proj.weight", "blocks.1.self_attention.query_key_value.weight", "head.weight"],
    "swin": ["patch_embed.proj.weight", "layers.0.blocks.1.attn.relative_position_bias_table",
             "layers.1.blocks.0.mlp.dense_h_to_4h.weight", "head.weight"],
}


def vit_case(rng):
    images = rng.randn(BATCH, 3, 16, 16).astype(np.float32)
    labels = rng.randint(0, CLASSES, size=(BATCH,))
    build = lambda: VisionTransformer(  # noqa: E731
        img_size=16, patch_size=4, embed_dim=32, depth=2, num_heads=4, num_classes=CLASSES)
    return build, 2, images, labels


def swin_case(rng):
    images = rng.randn(BATCH, 3, 32, 32).astype(np.float32)
    soft = rng.rand(BATCH, CLASSES).astype(np.float32)
    soft /= soft.sum(1, keepdims=True)
    build = lambda: SwinTransformer(  # noqa: E731
        img_size=32, patch_size=2, embed_dim=16, depths=(2, 2), num_heads=(2, 4), window_size=4,
        drop_path_rate=0.0, num_classes=CLASSES)
    return build, 4, images, soft


CASES = {"vit": vit_case, "swin": swin_case}


def run_case(layout_name, case):
    build, num_layers, images, labels = CASES[case](np.random.RandomState(7))
    layout = global_layout(pipeline_num_layers=num_layers, **LAYOUTS[layout_name])
    parallel, reference = build_twice(build, layout, seed=11)
    init = compare_params(parallel, reference, grads=False)
    replicated = record_replicated_outputs(parallel, layout, BATCH)
    loss_p = parallel(place(images, layout, 0), place(labels, layout, -1))["losses"]
    loss_r = reference(flow.tensor(images), flow.tensor(labels))["losses"]
    loss_p.backward()
    loss_r.backward()
    params_p, params_r = dict(parallel.named_parameters()), dict(reference.named_parameters())
    norms = {
        name: [float(np.linalg.norm(full(params_p[name].grad))),
               float(np.linalg.norm(params_r[name].grad.numpy()))]
        for name in WATCH[case]
    }
    return {
        "loss": [float(full(loss_p)), float(loss_r.numpy())],
        "loss_sbp": sbp_names(loss_p),
        "replicated": replicated,
        "grads": compare_params(parallel, reference, grads=True),
        "grad_norms": norms,
        "init": init,
    }


def main():
    out, layouts = sys.argv[1], sys.argv[2:]
    results = {}
    for layout_name in layouts:
        for case in CASES:
            results[f"{layout_name}/{case}"] = run_case(layout_name, case)
    write_results(results, out)


if __name__ == "__main__":
    main()
