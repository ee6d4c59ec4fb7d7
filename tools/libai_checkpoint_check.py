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
import sys
from typing import Dict, List, Optional

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:  # run as a script: make "tools.checkpoint_check" importable
    sys.path.insert(0, REPO)

# The parts live in tools/checkpoint_check/; their names stay importable from here.
from tools.checkpoint_check.checks import (  # noqa: E402
    Workspace, check_families, check_libai_loads_libai_gpt, check_libai_resumes_libai,
    check_libai_to_libai)
from tools.checkpoint_check.libai_side import (  # noqa: E402,F401
    copy_resume_point, libai_family_outputs, libai_logits, metrics)
from tools.checkpoint_check.report import (  # noqa: E402,F401
    Report, compare_logits, compare_outputs, compare_resume)
from tools.checkpoint_check.setup import (  # noqa: E402,F401
    CONFIG, ITERS, MICRO_BATCH, PERIOD, RESUME_FROM, SEQ, Runner, overrides, write_corpus)
from tools.checkpoint_check.upstream import (  # noqa: E402,F401
    FAMILIES, UPSTREAM_FAMILIES, UPSTREAM_LOGITS, family_inputs)


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
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
    return args


def prepare(args: argparse.Namespace) -> Workspace:
    """The work folder, the runner, and the corpus preprocessed once for each library (each
    builds its own index caches next to the data)."""
    import tempfile

    work = os.path.abspath(args.work or tempfile.mkdtemp(prefix="libai-ckpt-check-"))
    os.makedirs(work, exist_ok=True)
    runner = Runner(os.path.abspath(args.libai_ref), os.path.abspath(args.shims), work, args.verbose)
    report = Report()
    print(f"work folder: {work}", flush=True)

    vocab, merges, corpus, padded_vocab = write_corpus(os.path.join(work, "text"))
    sides: Dict[str, str] = {}
    for side in ("up", "lb"):
        data = os.path.join(work, f"data_{side}")
        os.makedirs(data, exist_ok=True)
        runner.libai_tool([os.path.join(REPO, "tools", "preprocess_data.py"), "--input", corpus,
                           "--output-prefix", os.path.join(data, "corpus"), "--tokenizer-name",
                           "GPT2Tokenizer", "--vocab-file", vocab, "--merges-file", merges,
                           "--append-eod"], f"preprocess_{side}.log")
        sides[side] = data
    return Workspace(work, runner, report, sides, vocab, merges, padded_vocab, args.tol)


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    ws = prepare(args)
    if "families" in args.checks:
        check_families(ws)
    if "gpt" in args.checks:
        gpt = check_libai_loads_libai_gpt(ws)
        check_libai_resumes_libai(ws)
        check_libai_to_libai(ws, gpt)

    report = ws.report
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"ok": report.ok, "rows": report.rows, "work": ws.work}, f, indent=1)
    print(f"{sum(r['ok'] for r in report.rows)}/{len(report.rows)} checks passed", flush=True)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
