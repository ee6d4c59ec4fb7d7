"""Side-by-side check of checkpoints between upstream LiBai and libai, both directions.

    python tools/libai_checkpoint_check.py --libai-ref /path/to/libai_ref [--work DIR] [--json OUT]

``--libai-ref`` (or ``$LIBAI_REF``) is a LiBai build kept outside this repository: its source in
``src/`` and its own Python environment in ``venv/``, run through ``run_libai.py`` (the CPU shims,
``--shims``, default ``../shared/libai_reference`` beside the repository). Nothing of LiBai is copied here: its own
``configs/gpt2_pretrain.py`` is used as it is, shrunk by command-line overrides, on a tiny corpus
this script writes in Megatron's format (``tools/preprocess_data.py``).

What runs (about five minutes on two CPU cores):

1. LiBai trains GPT-2 for 6 iterations, in graph mode (the config's default) and in eager mode,
   saving every 3 iterations (``model_0000002``, ``model_0000005``, ``model_final``).
2. **LiBai -> libai, weights**: LiBai computes logits (and the training loss) of its checkpoints
   on a fixed batch; libai loads the same directories through ``Checkpointer.load``,
   ``train.load_weight`` (a ``DefaultTrainer``) and ``GPT2LoaderLiBai`` and computes them on the
   same batch. With ``--checks families``: BERT, T5, ViT, Swin, SwinV2 and ResMLP, each built by
   LiBai from its own config file, moved by seeded noise and saved by its ``Checkpointer``,
   loaded by libai's ``Checkpointer.load`` and the family's ``*LoaderLiBai``.
3. **LiBai -> libai, resume**: libai's ``tools/train_net.py --resume`` continues LiBai's run from
   ``model_0000002`` (graph and eager): the iterations it runs and their learning rates must be
   LiBai's own (3, 4, 5).
4. **libai -> LiBai**: libai trains the same config; ``tools/convert_checkpoint.py --to
   libai-upstream`` exports its ``model_0000002``; LiBai loads it (logits, with its Checkpointer
   and its ``GPT2LoaderLiBai``) and resumes from it (graph and eager) with libai's learning rates.

Logits must agree within ``--tol`` (1e-5); learning rates within 1e-12 relative. Losses of the
resumed runs are printed for information (they also depend on each library's data order).
Exit status 0 when every check passes.
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import textwrap
from typing import Any, Dict, List, Optional, Sequence, Tuple

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG = "configs/gpt2_pretrain.py"
ITERS, PERIOD, MICRO_BATCH, SEQ = 6, 3, 2, 16
RESUME_FROM = "model_0000002"


# ---------------------------------------------------------------------------------------------
# Data and overrides
# ---------------------------------------------------------------------------------------------
def _byte_chars() -> List[str]:
    """GPT-2's byte-to-unicode table (the 256 symbols of a byte-level BPE vocabulary)."""
    kept = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    codes, extra = [], 0
    for b in range(256):
        if b in kept:
            codes.append(b)
        else:
            codes.append(256 + extra)
            extra += 1
    order = kept + [b for b in range(256) if b not in kept]
    return [chr(codes[b]) for b in order]


def write_corpus(folder: str, documents: int = 3000) -> Tuple[str, str, str, int]:
    """A byte-level BPE vocabulary, its merges and a JSON-lines corpus; returns the three paths
    and the vocabulary size padded as LiBai pads it (to a multiple of 128)."""
    os.makedirs(folder, exist_ok=True)
    vocab = {c: i for i, c in enumerate(_byte_chars())}
    merges = ["t h", "th e", "Ġ t", "Ġt he", "i n", "a n", "e r", "o n"]
    for merge in merges:
        vocab[merge.replace(" ", "")] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    paths = [os.path.join(folder, n) for n in ("vocab.json", "merges.txt", "corpus.jsonl")]
    with open(paths[0], "w") as f:
        json.dump(vocab, f)
    with open(paths[1], "w") as f:
        f.write("#version: 0.2\n" + "\n".join(merges) + "\n")
    words = "the cat sat on the mat and then a dog ran in the sun under one tree near the river".split()
    rng = random.Random(0)
    with open(paths[2], "w") as f:
        for _ in range(documents):
            text = " ".join(rng.choice(words) for _ in range(rng.randint(8, 30)))
            f.write(json.dumps({"text": text}) + "\n")
    padded = -(-len(vocab) // 128) * 128
    return paths[0], paths[1], paths[2], padded


def overrides(data: str, vocab: str, merges: str, output_dir: str) -> List[str]:
    """The command-line overrides that shrink LiBai's gpt2_pretrain.py for the CPU."""
    prefix = os.path.join(data, "corpus_text_document")
    return [
        f"tokenization.tokenizer.vocab_file={vocab}", f"tokenization.tokenizer.merges_file={merges}",
        f"dataloader.train.dataset.0.data_prefix={prefix}",
        f"dataloader.train.dataset.0.indexed_dataset.data_prefix={prefix}",
        f"dataloader.train.dataset.0.max_seq_length={SEQ}", "dataloader.train.num_workers=0",
        f"dataloader.test.0.dataset.data_prefix={prefix}",
        f"dataloader.test.0.dataset.indexed_dataset.data_prefix={prefix}",
        "model.cfg.hidden_layers=2", "model.cfg.hidden_size=32", "model.cfg.ffn_hidden_size=64",
        "model.cfg.num_attention_heads=2", f"model.cfg.max_seq_length={SEQ}",
        "model.cfg.bias_gelu_fusion=False", "model.cfg.bias_dropout_fusion=False",
        "model.cfg.scale_mask_softmax_fusion=False", "model.cfg.embedding_dropout_prob=0.0",
        "model.cfg.attention_dropout_prob=0.0", "train.dist.pipeline_num_layers=2",
        f"train.train_micro_batch_size={MICRO_BATCH}", f"train.train_iter={ITERS}",
        f"train.checkpointer.period={PERIOD}", "train.log_period=1", "train.warmup_ratio=0.5",
        "train.evaluation.enabled=False", "train.rdma_enabled=False",
        f"train.output_dir={output_dir}",
    ]


# ---------------------------------------------------------------------------------------------
# Running the two libraries
# ---------------------------------------------------------------------------------------------
class Runner:
    def __init__(self, ref: str, shims: str, work: str, verbose: bool) -> None:
        self.ref, self.shims, self.work, self.verbose = ref, shims, work, verbose
        self.up_python = os.path.join(ref, "venv", "bin", "python")
        self.config = os.path.join(ref, "src", CONFIG)
        for need in (self.up_python, self.config, os.path.join(shims, "run_libai.py")):
            if not os.path.exists(need):
                raise SystemExit(f"missing {need}: --libai-ref must hold src/ and venv/ of a LiBai "
                                 "build, --shims the folder of run_libai.py")

    def _run(self, cmd: Sequence[str], env: Dict[str, str], log: str, cwd: Optional[str] = None) -> None:
        with open(os.path.join(self.work, log), "w") as out:
            proc = subprocess.run(list(cmd), env=env, stdout=out, stderr=subprocess.STDOUT,
                                  cwd=cwd, timeout=1800)
        if proc.returncode != 0:
            with open(os.path.join(self.work, log)) as f:
                tail = f.read()[-3000:]
            raise RuntimeError(f"{' '.join(cmd[:4])} ... failed ({log}):\n{tail}")

    def upstream_env(self) -> Dict[str, str]:
        env = dict(os.environ, LIBAI_REF=self.ref, LIBAI_REF_CAUSAL="1")
        env["PATH"] = os.path.join(self.ref, "venv", "bin") + os.pathsep + env.get("PATH", "")
        env.pop("PYTHONPATH", None)
        return env

    def upstream_train(self, opts: List[str], log: str, resume: bool = False) -> None:
        cmd = [self.up_python, os.path.join(self.shims, "run_libai.py"), "--config-file", self.config]
        cmd += ["--resume"] if resume else []
        self._run(cmd + opts + ["+train.dist.device_type=cpu"], self.upstream_env(), log, cwd=self.work)

    def upstream_script(self, code: str, spec: Dict[str, Any], log: str) -> None:
        script = os.path.join(self.work, "upstream_step.py")
        with open(script, "w") as f:
            f.write(code)
        spec_path = os.path.join(self.work, "upstream_spec.json")
        with open(spec_path, "w") as f:
            json.dump(spec, f)
        self._run([self.up_python, script, spec_path], self.upstream_env(), log, cwd=self.work)

    def libai_train(self, opts: List[str], log: str, resume: bool = False) -> None:
        cmd = [sys.executable, os.path.join(REPO, "tools", "train_net.py"), "--config-file", self.config]
        cmd += ["--resume"] if resume else []
        self._run(cmd + opts + ["train.dist.device_type=cpu"], dict(os.environ), log, cwd=self.work)

    def libai_tool(self, args: List[str], log: str) -> None:
        self._run([sys.executable] + args, dict(os.environ), log, cwd=self.work)


# LiBai's side of the logits check, run in LiBai's environment (written into the work folder).
UPSTREAM_LOGITS = textwrap.dedent('''
    import json, os, sys
    spec = json.load(open(sys.argv[1]))
    sys.path.insert(0, spec["shims"])
    import run_libai  # noqa: F401  (CPU shims, causal GPT-2)
    import numpy as np
    import oneflow as flow
    from libai.config import LazyConfig, instantiate
    from libai.models import GPTForPreTraining
    from libai.models.utils.model_loader.gpt_loader import GPT2LoaderLiBai
    from libai.utils import distributed as dist
    from libai.utils.checkpoint import Checkpointer

    cfg = LazyConfig.apply_overrides(LazyConfig.load(spec["config"]), spec["overrides"])
    dist.setup_dist_util(cfg.train.dist)
    ids = flow.tensor(np.load(spec["batch"]), dtype=flow.long).to_global(
        placement=flow.placement("cpu", ranks=[0]), sbp=flow.sbp.broadcast)

    def logits(model):
        model.eval()
        with flow.no_grad():
            return model(ids)["prediction_scores"].to_local().numpy()

    for tag, path in spec["checkpoints"].items():
        model = instantiate(cfg.model)
        model._apply(dist.convert_to_distributed_default_setting)
        Checkpointer(model).load(path, checkpointables=[])
        np.save(os.path.join(spec["out"], tag + ".npy"), logits(model))
        model.train()  # no dropout in these runs: the training loss on the same batch
        labels = flow.tensor(np.roll(np.load(spec["batch"]), 1, axis=1), dtype=flow.long).to_global(
            placement=ids.placement, sbp=ids.sbp)
        loss = model(ids, labels)["lm_loss"].to_local().numpy()
        np.save(os.path.join(spec["out"], tag + "_loss.npy"), loss)
    for tag, path in spec.get("loader", {}).items():
        model = GPT2LoaderLiBai(GPTForPreTraining, cfg.model.cfg, path).load()
        np.save(os.path.join(spec["out"], tag + ".npy"), logits(model))
''')


# Other model families: LiBai builds each from its own config file (shrunk), moves every parameter
# by seeded noise (so that zero-initialised biases count), saves it with its Checkpointer and
# computes its outputs on fixed inputs; libai loads the checkpoint and computes the same outputs.
FAMILIES = {
    # name: (LiBai config, node, loader class, shrink)
    "BERT": ("configs/common/models/bert.py", "pretrain_model", "BertLoaderLiBai",
             dict(hidden_layers=2, hidden_size=16, intermediate_size=32, num_attention_heads=2,
                  vocab_size=64, max_position_embeddings=16, hidden_dropout_prob=0.0,
                  attention_probs_dropout_prob=0.0)),
    "T5": ("configs/common/models/t5.py", "pretrain_model", "T5LoaderLiBai",
           dict(hidden_layers=2, hidden_size=16, intermediate_size=32, num_attention_heads=2,
                vocab_size=64, max_position_embeddings=16, hidden_dropout_prob=0.0,
                attention_probs_dropout_prob=0.0, embedding_dropout_prob=0.0)),
    "ViT": ("configs/common/models/vit/vit_tiny_patch16_224.py", "model", "ViTLoaderLiBai",
            dict(img_size=32, patch_size=16, embed_dim=16, depth=2, num_heads=2, num_classes=10)),
    "Swin": ("configs/common/models/swin/swin_tiny_patch4_window7_224.py", "model", "SwinLoaderLiBai",
             dict(img_size=32, embed_dim=16, depths=[1, 1], num_heads=[1, 2], window_size=4,
                  num_classes=10, drop_path_rate=0.0)),
    "SwinV2": ("configs/common/models/swinv2/swinv2_tiny_patch4_window8_256.py", "model",
               "SwinV2LoaderLiBai",
               dict(img_size=32, embed_dim=16, depths=[1, 1], num_heads=[1, 2], window_size=4,
                    num_classes=10, drop_path_rate=0.0, pretrained_window_sizes=[0, 0])),
    "ResMLP": ("configs/common/models/resmlp/resmlp_12.py", "model", None,
               dict(img_size=32, embed_dim=16, depth=2, num_classes=10, drop_path_rate=0.0)),
}


def family_inputs() -> Dict[str, Dict[str, Any]]:
    import numpy as np

    rng = np.random.RandomState(0)
    attention = np.ones((2, 8), dtype=bool)
    attention[1, 6:] = False
    text = {"input_ids": rng.randint(0, 64, (2, 8)), "attention_mask": attention,
            "tokentype_ids": (np.arange(8)[None, :] >= 4).repeat(2, 0).astype(np.int64)}
    t5 = {"encoder_input_ids": rng.randint(0, 64, (2, 8)), "decoder_input_ids": rng.randint(0, 64, (2, 6)),
          "encoder_attn_mask": np.ones((2, 8, 8), bool),
          "decoder_attn_mask": np.tril(np.ones((6, 6), bool))[None].repeat(2, 0),
          "encoder_decoder_attn_mask": np.ones((2, 6, 8), bool)}
    image = {"images": rng.randn(2, 3, 32, 32).astype(np.float32)}
    return {"BERT": text, "T5": t5, "ViT": image, "Swin": image, "SwinV2": image, "ResMLP": image}


UPSTREAM_FAMILIES = textwrap.dedent('''
    import json, os, sys, zlib
    spec = json.load(open(sys.argv[1]))
    sys.path.insert(0, spec["shims"])
    import run_libai  # noqa: F401
    import numpy as np
    import oneflow as flow
    from libai.config import LazyConfig, instantiate
    from libai.utils import distributed as dist
    from libai.utils.checkpoint import Checkpointer

    train = LazyConfig.load(os.path.join(spec["src"], "configs/common/train.py")).train
    train.dist.device_type = "cpu"
    dist.setup_dist_util(train.dist)

    # CPU shim: LiBai's Swin models ask for CUDA-only fused kernels whatever the config says;
    # build those layers unfused (the same formula, computed by separate ops).
    import inspect
    from libai.layers import mlp
    from libai.models import swin_transformer, swin_transformer_v2
    FUSED = ("bias_gelu_fusion", "bias_dropout_fusion", "fused_bias_add_dropout")

    def unfused(cls):
        original = cls.__init__
        names = list(inspect.signature(original).parameters)

        def init(self, *args, **kwargs):
            for key in FUSED:
                if key in names:
                    position = names.index(key) - 1  # without self
                    if position < len(args):
                        args = args[:position] + (False,) + args[position + 1:]
                    else:
                        kwargs[key] = False
            original(self, *args, **kwargs)
        cls.__init__ = init

    unfused(mlp.MLP)
    for module in (swin_transformer, swin_transformer_v2):
        for value in vars(module).values():
            if inspect.isclass(value) and value.__module__ == module.__name__ and any(
                    key in inspect.signature(value.__init__).parameters for key in FUSED):
                unfused(value)
    place = dict(placement=flow.placement("cpu", ranks=[0]), sbp=flow.sbp.broadcast)
    for name, (config, node, _, shrink) in spec["families"].items():
        cfg = LazyConfig.load(os.path.join(spec["src"], config))[node]
        for key, value in shrink.items():
            cfg.cfg[key] = value
        for key in ("bias_gelu_fusion", "bias_dropout_fusion", "scale_mask_softmax_fusion"):
            if key in cfg.cfg:
                cfg.cfg[key] = False
        model = instantiate(cfg)
        model._apply(dist.convert_to_distributed_default_setting)
        if spec.get("load"):  # the export of libai's model, read back by LiBai
            Checkpointer(model).load(os.path.join(spec["load"], name, "model_0000000"), checkpointables=[])
        else:
            with flow.no_grad():
                for key, tensor in model.named_parameters():  # buffers are computed: kept
                    noise = np.random.RandomState(zlib.crc32(key.encode())).randn(*tensor.shape)
                    tensor.copy_(flow.tensor((tensor.numpy() + 0.1 * noise).astype(np.float32)).to_global(**place))
            Checkpointer(model, os.path.join(spec["out"], name)).save("model_0000000")
        inputs = {k: flow.tensor(v).to_global(**place) for k, v in np.load(os.path.join(spec["out"], name + "_inputs.npz")).items()}
        model.eval()
        with flow.no_grad():
            out = model(**inputs)
        np.savez(os.path.join(spec["out"], name + spec.get("suffix", "") + "_outputs.npz"),
                 **{k: v.to_local().numpy() for k, v in out.items() if isinstance(v, flow.Tensor)})
''')


def libai_family_outputs(ref_src: str, name: str, folder: str) -> Dict[str, Dict[str, Any]]:
    """libai's outputs for the LiBai checkpoint of family ``name``, per route."""
    import numpy as np
    import oneflow as flow

    import libai.models.utils.model_loader as loaders
    from libai.config import LazyConfig, instantiate
    from libai.utils import distributed as dist
    from libai.utils.checkpoint import Checkpointer

    config, node, loader, shrink = FAMILIES[name]
    cfg = LazyConfig.load(os.path.join(ref_src, config))[node]
    for key, value in shrink.items():
        cfg.cfg[key] = value
    for key in ("bias_gelu_fusion", "bias_dropout_fusion", "scale_mask_softmax_fusion"):
        if key in cfg.cfg:
            cfg.cfg[key] = False
    path = os.path.join(folder, name, "model_0000000")
    inputs = dict(np.load(os.path.join(folder, name + "_inputs.npz")))
    results = {}
    with dist.ParallelLayout.from_config({"device_type": "cpu"}):
        built = {"Checkpointer.load": instantiate(cfg)}
        Checkpointer(built["Checkpointer.load"]).load(path)
        # libai's own checkpoint of it, exported to LiBai's layout for the way back
        ours = Checkpointer(built["Checkpointer.load"], os.path.join(folder, "ours", name)).save(
            "model_0000000", iteration=0)
        from libai.utils.checkpoint_convert import export_to_libai_upstream

        export_to_libai_upstream(ours, os.path.join(folder, "exported", name))
        if loader:
            built[loader] = getattr(loaders, loader)(cfg, cfg.cfg, path).load()
        for route, model in built.items():
            model.eval()
            with flow.no_grad():
                out = model(**{k: flow.tensor(v) for k, v in inputs.items()})
            results[route] = {k: dist.ttol(v).numpy() for k, v in out.items() if isinstance(v, flow.Tensor)}
    return results


def libai_logits(config: str, opts: List[str], batch: Any, routes: Dict[str, Tuple[str, str]]) -> Dict[str, Any]:
    """libai's logits on ``batch`` for each ``{tag: (route, path)}``; route is ``load``
    (Checkpointer.load), ``load_weight`` (a DefaultTrainer with train.load_weight) or
    ``loader`` (GPT2LoaderLiBai)."""
    import numpy as np
    import oneflow as flow

    from libai.config import LazyConfig
    from libai.engine import DefaultTrainer
    from libai.engine.setup import complete_config
    from libai.models import GPTForPreTraining
    from libai.models.utils.model_loader import GPT2LoaderLiBai
    from libai.utils import distributed as dist
    from libai.utils.checkpoint import Checkpointer

    def logits(model: Any) -> Any:
        model.eval()
        with flow.no_grad():
            return dist.ttol(model(flow.tensor(batch, dtype=flow.long))["prediction_scores"]).numpy()

    out = {}
    for tag, (route, path) in routes.items():
        cfg = LazyConfig.apply_overrides(complete_config(LazyConfig.load(config)), opts)
        layout = dist.ParallelLayout.from_config(cfg.train.dist)
        with layout:
            if route == "load":
                model = DefaultTrainer.build_model(cfg)
                Checkpointer(model).load(path, checkpointables=[])
                model.train()  # the training loss on the same batch, labels shifted by one
                labels = flow.tensor(np.roll(batch, 1, axis=1), dtype=flow.long)
                loss = model(flow.tensor(batch, dtype=flow.long), labels)["lm_loss"]
                out[tag.split("/")[0] + "_loss"] = dist.ttol(loss).numpy()
            elif route == "load_weight":
                cfg.train.load_weight = path
                trainer = DefaultTrainer(cfg)
                trainer.resume_or_load(resume=False)
                model = trainer.model
            else:
                model = GPT2LoaderLiBai(GPTForPreTraining, cfg.model.cfg, path).load()
            out[tag] = logits(model)
    return out


def metrics(output_dir: str) -> Dict[int, Dict[str, float]]:
    """``{iteration: {"lr": ..., "total_loss": ...}}`` from a run's metrics.json."""
    rows: Dict[int, Dict[str, float]] = {}
    with open(os.path.join(output_dir, "metrics.json")) as f:
        for line in f:
            row = json.loads(line)
            if "lr" in row:
                rows[int(row["iteration"])] = {"lr": row["lr"], "loss": row.get("total_loss")}
    return rows


def copy_resume_point(src_dir: str, dst_dir: str, name: str = RESUME_FROM) -> None:
    """``dst_dir`` as a run stopped right after saving ``name``: that checkpoint and a
    ``last_checkpoint`` naming it."""
    shutil.rmtree(dst_dir, ignore_errors=True)
    os.makedirs(dst_dir)
    shutil.copytree(os.path.join(src_dir, name), os.path.join(dst_dir, name))
    with open(os.path.join(dst_dir, "last_checkpoint"), "w") as f:
        f.write(name)


# ---------------------------------------------------------------------------------------------
# The check
# ---------------------------------------------------------------------------------------------
class Report:
    def __init__(self) -> None:
        self.rows: List[Dict[str, Any]] = []

    def add(self, check: str, ok: bool, value: str, note: str = "") -> None:
        self.rows.append({"check": check, "ok": bool(ok), "value": value, "note": note})
        print(f"{'ok  ' if ok else 'FAIL'} {check}: {value} {note}".rstrip(), flush=True)

    @property
    def ok(self) -> bool:
        return all(r["ok"] for r in self.rows)


def compare_logits(report: Report, name: str, ours: Any, theirs: Any, tol: float) -> None:
    import numpy as np

    if ours.shape != theirs.shape:
        report.add(name, False, f"shapes {ours.shape} vs {theirs.shape}")
        return
    diff = float(np.abs(ours - theirs).max())
    report.add(name, diff <= tol, f"max |diff| {diff:.2e}", f"(tol {tol:g})")


def compare_resume(report: Report, name: str, resumed: Dict[int, Dict[str, float]],
                   reference: Dict[int, Dict[str, float]]) -> None:
    expected = sorted(i for i in reference if i > int(RESUME_FROM.split("_")[1]))
    ran = sorted(resumed)
    report.add(f"{name}: iterations run", ran == expected, f"{ran}", f"(expected {expected})")
    worst = max(abs(resumed[i]["lr"] - reference[i]["lr"]) / abs(reference[i]["lr"])
                for i in expected if i in resumed) if set(expected) <= set(ran) else float("inf")
    lrs = ", ".join(f"{resumed[i]['lr']:.4e}" for i in ran)
    report.add(f"{name}: learning rates", worst <= 1e-12, lrs, f"(max rel. diff {worst:.1e})")
    losses = [abs(resumed[i]["loss"] - reference[i]["loss"]) for i in expected if i in resumed]
    if losses:
        print(f"     {name}: loss |diff| per iteration (information): "
              + ", ".join(f"{d:.2e}" for d in losses), flush=True)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--libai-ref", default=os.environ.get("LIBAI_REF"),
                        help="LiBai build folder with src/ and venv/ (default: $LIBAI_REF)")
    shared = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                          "shared", "libai_reference")
    parser.add_argument("--shims", default=shared,
                        help="folder of run_libai.py (LiBai's CPU shims; default: the shared folder "
                        "beside the repository)")
    parser.add_argument("--work", default=None, help="scratch folder (default: a new temporary one)")
    parser.add_argument("--json", default=None, help="write the results here")
    parser.add_argument("--tol", type=float, default=1e-5, help="largest logits difference allowed")
    parser.add_argument("--checks", nargs="+", choices=("gpt", "families"), default=["gpt", "families"],
                        help="gpt: GPT-2 training, weights, resume and export both ways; families: "
                        "BERT, T5, ViT, Swin, SwinV2 and ResMLP weights LiBai saved, loaded by libai")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    if not args.libai_ref:
        parser.error("give --libai-ref (or set LIBAI_REF) to a LiBai build kept outside this repo")
    import tempfile

    work = os.path.abspath(args.work or tempfile.mkdtemp(prefix="libai-ckpt-check-"))
    os.makedirs(work, exist_ok=True)
    runner = Runner(os.path.abspath(args.libai_ref), os.path.abspath(args.shims), work, args.verbose)
    report = Report()
    print(f"work folder: {work}", flush=True)

    vocab, merges, corpus, padded_vocab = write_corpus(os.path.join(work, "text"))
    sides = {}
    for side in ("up", "lb"):  # each library builds its own index caches next to the data
        data = os.path.join(work, f"data_{side}")
        os.makedirs(data, exist_ok=True)
        runner.libai_tool([os.path.join(REPO, "tools", "preprocess_data.py"), "--input", corpus,
                           "--output-prefix", os.path.join(data, "corpus"), "--tokenizer-name",
                           "GPT2Tokenizer", "--vocab-file", vocab, "--merges-file", merges,
                           "--append-eod"], f"preprocess_{side}.log")
        sides[side] = data

    def opts(side: str, out: str, *more: str) -> List[str]:
        return overrides(sides[side], vocab, merges, os.path.join(work, out)) + list(more)

    import numpy as np

    if "families" in args.checks:
        print("Other families: LiBai saves, libai loads ...", flush=True)
        fam_dir = os.path.join(work, "families")
        os.makedirs(fam_dir, exist_ok=True)
        for name, inputs in family_inputs().items():
            np.savez(os.path.join(fam_dir, name + "_inputs.npz"), **inputs)
        runner.upstream_script(UPSTREAM_FAMILIES, {
            "shims": runner.shims, "src": os.path.join(runner.ref, "src"), "out": fam_dir,
            "families": FAMILIES}, "up_families.log")
        mine: Dict[str, Dict[str, Any]] = {}
        for name in FAMILIES:
            theirs = dict(np.load(os.path.join(fam_dir, name + "_outputs.npz")))
            inputs = dict(np.load(os.path.join(fam_dir, name + "_inputs.npz")))
            try:
                routes = libai_family_outputs(os.path.join(runner.ref, "src"), name, fam_dir)
            except Exception as exc:  # report and go on: one family must not hide the others
                report.add(f"LiBai -> libai {name}", False, f"{type(exc).__name__}: {str(exc)[:300]}")
                continue
            mine[name] = routes["Checkpointer.load"]
            for route, outputs in routes.items():
                for key in sorted(theirs):
                    if key not in outputs:
                        report.add(f"LiBai -> libai {name} {route} {key}", False, "output missing")
                        continue
                    ours_out, theirs_out = outputs[key], theirs[key]
                    if "attention_mask" in inputs and ours_out.ndim == 3:
                        # outputs at padding positions mean nothing (LiBai also masks the
                        # padded queries, libai only the keys): compare the real tokens
                        real = inputs["attention_mask"]
                        ours_out, theirs_out = ours_out[real], theirs_out[real]
                    compare_logits(report, f"LiBai -> libai {name} {route} {key}",
                                   ours_out, theirs_out, args.tol)

        runner.upstream_script(UPSTREAM_FAMILIES, {
            "shims": runner.shims, "src": os.path.join(runner.ref, "src"), "out": fam_dir,
            "families": {n: FAMILIES[n] for n in mine}, "load": os.path.join(fam_dir, "exported"),
            "suffix": "_export"}, "up_families_export.log")
        for name, outputs in mine.items():
            theirs = dict(np.load(os.path.join(fam_dir, name + "_export_outputs.npz")))
            inputs = dict(np.load(os.path.join(fam_dir, name + "_inputs.npz")))
            for key in sorted(theirs):
                ours_out, theirs_out = outputs[key], theirs[key]
                if "attention_mask" in inputs and ours_out.ndim == 3:
                    real = inputs["attention_mask"]
                    ours_out, theirs_out = ours_out[real], theirs_out[real]
                compare_logits(report, f"libai -> LiBai {name} (exported, LiBai Checkpointer.load) {key}",
                               ours_out, theirs_out, args.tol)

    if "gpt" in args.checks:
        eager = "graph.enabled=False"
        print("LiBai trains (graph mode, eager mode) ...", flush=True)
        runner.upstream_train(opts("up", "up_graph"), "up_graph.log")
        runner.upstream_train(opts("up", "up_eager", eager), "up_eager.log")

        batch = np.random.RandomState(0).randint(0, 265, size=(2, SEQ)).astype(np.int64)
        np.save(os.path.join(work, "batch.npy"), batch)
        logits_dir = os.path.join(work, "logits")
        os.makedirs(logits_dir, exist_ok=True)
        vocab_opt = f"model.cfg.vocab_size={padded_vocab}"
        up_ckpts = {"graph_0000002": os.path.join(work, "up_graph", RESUME_FROM),
                    "eager_final": os.path.join(work, "up_eager", "model_final")}
        runner.upstream_script(UPSTREAM_LOGITS, {
            "shims": runner.shims, "config": runner.config, "batch": os.path.join(work, "batch.npy"),
            "overrides": opts("up", "up_logits", vocab_opt, "+train.dist.device_type=cpu"),
            "checkpoints": up_ckpts, "out": logits_dir}, "up_logits.log")

        print("libai loads LiBai's checkpoints ...", flush=True)
        lb_opts = opts("lb", "lb_logits", vocab_opt, "train.dist.device_type=cpu")
        routes = {}
        for tag, path in up_ckpts.items():
            routes[f"{tag}/Checkpointer.load"] = ("load", path)
            routes[f"{tag}/train.load_weight"] = ("load_weight", path)
            routes[f"{tag}/GPT2LoaderLiBai"] = ("loader", path)
            routes[f"{tag}/GPT2LoaderLiBai(model part)"] = ("loader", os.path.join(path, "model"))
        ours = libai_logits(runner.config, lb_opts, batch, routes)
        for name, value in ours.items():
            if name.endswith("_loss"):
                theirs = np.load(os.path.join(logits_dir, name + ".npy"))
                compare_logits(report, f"LiBai -> libai training loss on the same batch, "
                               f"{name[:-5]}", value, theirs, args.tol)
                continue
            theirs = np.load(os.path.join(logits_dir, name.split("/")[0] + ".npy"))
            compare_logits(report, f"LiBai -> libai logits, {name}", value, theirs, args.tol)

        print("libai resumes LiBai's runs ...", flush=True)
        for mode, extra in (("graph", []), ("eager", [eager])):
            resumed = os.path.join(work, f"lb_resume_{mode}")
            copy_resume_point(os.path.join(work, f"up_{mode}"), resumed)
            runner.libai_train(opts("lb", f"lb_resume_{mode}", *extra), f"lb_resume_{mode}.log", resume=True)
            compare_resume(report, f"LiBai {mode} run resumed by libai", metrics(resumed),
                           metrics(os.path.join(work, f"up_{mode}")))

        print("libai trains; its checkpoint goes back to LiBai ...", flush=True)
        runner.libai_train(opts("lb", "lb_run"), "lb_run.log")
        exported = os.path.join(work, "exported")
        runner.libai_tool([os.path.join(REPO, "tools", "convert_checkpoint.py"), "--to", "libai-upstream",
                           os.path.join(work, "lb_run", RESUME_FROM), exported], "export.log")
        export_ckpt = os.path.join(exported, RESUME_FROM)
        runner.upstream_script(UPSTREAM_LOGITS, {
            "shims": runner.shims, "config": runner.config, "batch": os.path.join(work, "batch.npy"),
            "overrides": opts("up", "up_logits", vocab_opt, "+train.dist.device_type=cpu"),
            "checkpoints": {"exported": export_ckpt},
            "loader": {"exported_loader": os.path.join(export_ckpt, "model")}, "out": logits_dir},
            "up_logits_exported.log")
        mine = libai_logits(runner.config, lb_opts, batch, {"ours": ("load", os.path.join(work, "lb_run", RESUME_FROM))})["ours"]
        compare_logits(report, "libai -> LiBai logits, LiBai Checkpointer.load of the export", mine,
                       np.load(os.path.join(logits_dir, "exported.npy")), args.tol)
        compare_logits(report, "libai -> LiBai logits, LiBai GPT2LoaderLiBai of the export's model", mine,
                       np.load(os.path.join(logits_dir, "exported_loader.npy")), args.tol)
        for mode, extra in (("graph", []), ("eager", [eager])):
            target = os.path.join(work, f"up_resume_{mode}")
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(exported, target)
            runner.upstream_train(opts("up", f"up_resume_{mode}", *extra), f"up_resume_{mode}.log", resume=True)
            compare_resume(report, f"libai run resumed by LiBai ({mode})", metrics(target),
                           metrics(os.path.join(work, "lb_run")))

    if args.json:
        with open(args.json, "w") as f:
            json.dump({"ok": report.ok, "rows": report.rows, "work": work}, f, indent=1)
    print(f"{sum(r['ok'] for r in report.rows)}/{len(report.rows)} checks passed", flush=True)
    return 0 if report.ok else 1


if __name__ == "__main__":
    if REPO not in sys.path:
        sys.path.insert(0, REPO)
    sys.exit(main())
