"""The check's inputs and how each library is run: a tiny corpus in Megatron's format, the
overrides that shrink LiBai's ``gpt2_pretrain.py`` for the CPU, and :class:`Runner`."""
import json
import os
import random
import subprocess
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
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
