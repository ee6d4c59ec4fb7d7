"""Training samples/s of every model in the zoo at a tiny size, in Eager and in Graph mode.

    python benchmarks/bench_zoo.py                    # all models, about 2 minutes on 2 CPU cores
    python benchmarks/bench_zoo.py --models gpt vit --iters 10

Each model is built at a tiny size (listed in ``TINY`` below and printed in the table) under a
one-process CPU layout and trained on one fixed random batch of ``--batch-size`` samples with
AdamW: in Eager mode (forward, backward, step) and compiled as libai's training ``GraphBase``.
After ``--warmup`` untimed steps (the first Graph step compiles), ``--iters`` steps are timed by
the wall clock and by this process's CPU time; ``graph / eager`` is the ratio of samples/s
measured in the same run. The numbers measure the model's own step (no data loading, no hooks):
the trainer's overhead is ``bench_trainer_overhead.py``'s subject. docs/model_zoo.md has the
results.
"""
import argparse
import json
import os
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import format_table  # noqa: E402

Batch = Dict[str, Any]
# name -> (description, builder of (model, batch maker)); imports stay inside the builders so
# that --help is instant.
TINY: Dict[str, Tuple[str, Callable[[int], Tuple[Any, Callable[[Any], Batch]]]]] = {}


def model_case(name: str, description: str):
    def register(fn):
        TINY[name] = (description, fn)
        return fn

    return register


def _tokens(rng, batch: int, seq: int, vocab: int):
    return rng.randint(0, vocab, size=(batch, seq))


BODY = dict(hidden_size=64, hidden_layers=2, num_attention_heads=4, intermediate_size=256,
            hidden_dropout_prob=0.0, attention_dropout_prob=0.0)


@model_case("gpt", "GPT-2: 2 blocks, width 64, seq 32, vocab 512")
def _gpt(batch: int):
    from libai.models import GPTForPreTraining

    def data(rng):
        ids = _tokens(rng, batch, 33, 512)
        return {"input_ids": ids[:, :-1], "labels": ids[:, 1:]}

    return GPTForPreTraining(dict(BODY, vocab_size=512, max_seq_length=32, embedding_dropout_prob=0.0)), data


@model_case("bert", "BERT: 2 blocks, width 64, seq 32, vocab 512")
def _bert(batch: int):
    import numpy as np

    from libai.models import BertForPreTraining

    def data(rng):
        return {"input_ids": _tokens(rng, batch, 32, 512),
                "attention_mask": np.ones((batch, 32), dtype=np.int64),
                "tokentype_ids": np.zeros((batch, 32), dtype=np.int64),
                "ns_labels": rng.randint(0, 2, size=(batch,)),
                "lm_labels": _tokens(rng, batch, 32, 512),
                "loss_mask": (rng.rand(batch, 32) < 0.15).astype(np.int64)}

    return BertForPreTraining(dict(BODY, vocab_size=512, max_position_embeddings=32)), data


@model_case("t5", "T5: 2+2 blocks, width 64, seq 32/16, vocab 512")
def _t5(batch: int):
    import numpy as np

    from libai.models import T5ForPreTraining

    def data(rng):
        enc = np.ones((batch, 32, 32), dtype=np.int64)
        return {"encoder_input_ids": _tokens(rng, batch, 32, 512),
                "decoder_input_ids": _tokens(rng, batch, 16, 512),
                "encoder_attn_mask": enc,
                "decoder_attn_mask": np.tril(np.ones((16, 16), dtype=np.int64))[None].repeat(batch, 0),
                "encoder_decoder_attn_mask": enc[:, :16, :],
                "lm_labels": _tokens(rng, batch, 16, 512),
                "loss_mask": np.ones((batch, 16), dtype=np.int64)}

    return T5ForPreTraining(dict(BODY, vocab_size=512, max_position_embeddings=32,
                                 embedding_dropout_prob=0.0)), data


def _images(rng, batch: int, size: int, classes: int = 10):
    return {"images": rng.randn(batch, 3, size, size).astype("float32"),
            "labels": rng.randint(0, classes, size=(batch,))}


@model_case("vit", "ViT: 32x32 images, patch 4, width 64, 2 blocks")
def _vit(batch: int):
    from libai.models import VisionTransformer

    model = VisionTransformer(img_size=32, patch_size=4, embed_dim=64, depth=2, num_heads=4,
                              num_classes=10)
    return model, lambda rng: _images(rng, batch, 32)


@model_case("swin", "Swin: 32x32 images, patch 2, width 32, depths (2, 2), window 4")
def _swin(batch: int):
    from libai.models import SwinTransformer

    model = SwinTransformer(img_size=32, patch_size=2, embed_dim=32, depths=(2, 2), num_heads=(2, 4),
                            window_size=4, drop_path_rate=0.0, num_classes=10)
    return model, lambda rng: _images(rng, batch, 32)


@model_case("roberta", "RoBERTa: 2 blocks, width 64, seq 32, vocab 512")
def _roberta(batch: int):
    import numpy as np

    from libai.models import RobertaForPreTraining

    def data(rng):
        return {"input_ids": _tokens(rng, batch, 32, 512) + 2,  # above the padding id (1)
                "attention_mask": np.ones((batch, 32), dtype=np.int64),
                "lm_labels": _tokens(rng, batch, 32, 512),
                "loss_mask": (rng.rand(batch, 32) < 0.15).astype(np.int64)}

    model = RobertaForPreTraining(dict(BODY, vocab_size=514, max_position_embeddings=34,
                                       pad_token_id=1))
    return model, data


@model_case("swinv2", "SwinV2: 32x32 images, patch 2, width 32, depths (2, 2), window 4")
def _swinv2(batch: int):
    from libai.models import SwinTransformerV2

    model = SwinTransformerV2(img_size=32, patch_size=2, embed_dim=32, depths=(2, 2),
                              num_heads=(2, 4), window_size=4, drop_path_rate=0.0, num_classes=10)
    return model, lambda rng: _images(rng, batch, 32)


@model_case("llama", "Llama: 2 blocks, width 64, 4 heads / 2 kv heads, seq 32, vocab 512")
def _llama(batch: int):
    from libai.models import LlamaForCausalLM

    def data(rng):
        ids = _tokens(rng, batch, 33, 512)
        return {"input_ids": ids[:, :-1], "labels": ids[:, 1:]}

    model = LlamaForCausalLM(dict(vocab_size=512, hidden_size=64, hidden_layers=2,
                                  num_attention_heads=4, num_key_value_heads=2,
                                  intermediate_size=172, max_position_embeddings=32))
    return model, data


@model_case("resmlp", "ResMLP: 32x32 images, patch 4, width 64, 2 blocks")
def _resmlp(batch: int):
    from libai.models import ResMLP

    model = ResMLP(img_size=32, patch_size=4, embed_dim=64, depth=2, num_classes=10)
    return model, lambda rng: _images(rng, batch, 32)


@model_case("resnet18", "ResNet-18: 32x32 images, width 16, CIFAR stem")
def _resnet18(batch: int):
    from libai.models import ResNet

    model = ResNet(depth=18, width=16, num_classes=10, small_input=True)
    return model, lambda rng: _images(rng, batch, 32)


@model_case("alexnet", "AlexNet: 64x64 images, widths 16-48, hidden 128")
def _alexnet(batch: int):
    from libai.models import AlexNet

    model = AlexNet(num_classes=10, dropout=0.0, channels=(16, 32, 48, 32, 32), hidden_size=128)
    return model, lambda rng: _images(rng, batch, 64)


def measure(name: str, batch: int, warmup: int, iters: int, graph: bool) -> Dict[str, float]:
    import numpy as np
    import oneflow as flow

    from libai.engine.graph import GraphBase
    from libai.utils import distributed as dist

    layout = dist.ParallelLayout.from_config({"device_type": "cpu"}, world_size=1, rank=0)
    with layout:
        flow.manual_seed(0)
        model, make = TINY[name][1](batch)
        model.train()
        batch_np = make(np.random.RandomState(0))
        inputs = {k: flow.tensor(v) for k, v in batch_np.items()}
        optimizer = flow.optim.AdamW(model.parameters(), lr=1e-4)
        scheduler = flow.optim.lr_scheduler.StepLR(optimizer, step_size=10**9)
        if graph:
            step_graph = GraphBase(model, optimizer, scheduler, is_train=True, layout=layout)

            def step() -> Any:
                return step_graph(**inputs)
        else:
            def step() -> Any:
                losses = model(**inputs)
                total = sum(v for k, v in losses.items() if "loss" in k)
                total.backward()
                optimizer.step()
                optimizer.zero_grad()
                return losses

        def wait(out: Any) -> float:
            for value in out.values():
                value.numpy()
            return time.perf_counter()

        start = time.perf_counter()
        wait(step())
        first = time.perf_counter() - start
        for _ in range(warmup - 1):
            step()
        t0, c0 = wait(step()), time.process_time()
        for _ in range(iters - 1):
            step()
        t1, c1 = wait(step()), time.process_time()
        params = sum(p.numel() for p in model.parameters())
    return {"samples_per_s": batch * iters / (t1 - t0), "samples_per_cpu_s": batch * iters / (c1 - c0),
            "first_step_s": first, "parameters": params}


def main(argv: Optional[List[str]] = None) -> int:
    import libai  # noqa: F401  (before oneflow)

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="*", default=None, help=f"subset of {sorted(TINY)}")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps (default: %(default)s)")
    parser.add_argument("--iters", type=int, default=5, help="timed steps (default: %(default)s)")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args(argv)
    names = args.models or list(TINY)
    unknown = sorted(set(names) - set(TINY))
    if unknown:
        parser.error(f"unknown models {unknown}; choose from {sorted(TINY)}")
    rows, results = [], {}
    for name in names:
        eager = measure(name, args.batch_size, args.warmup, args.iters, graph=False)
        graph = measure(name, args.batch_size, args.warmup, args.iters, graph=True)
        results[name] = {"eager": eager, "graph": graph, "size": TINY[name][0]}
        rows.append([name, TINY[name][0], f"{eager['parameters'] / 1e6:.2f}M",
                     f"{eager['samples_per_s']:.1f}", f"{graph['samples_per_s']:.1f}",
                     f"{graph['samples_per_s'] / eager['samples_per_s']:.2f}",
                     f"{eager['samples_per_cpu_s']:.1f}", f"{graph['samples_per_cpu_s']:.1f}",
                     f"{graph['first_step_s']:.1f}"])
        print(f"{name}: eager {eager['samples_per_s']:.1f} samples/s, graph {graph['samples_per_s']:.1f}",
              flush=True)
    print(format_table(["model", "tiny size", "params", "eager samples/s", "graph samples/s",
                        "graph/eager", "eager samples/cpu-s", "graph samples/cpu-s",
                        "graph compile s"], rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
