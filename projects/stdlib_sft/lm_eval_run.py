"""Run the local lm_eval task on a model directory through libai or through transformers.

The same task (data/stdlib_sft/task/stdlib_qa.yaml) on the same Hugging Face directory, two
backends: libai's adapter (``--backend libai``, this repository's Python) and lm_eval's own
``hf`` model (``--backend hf``, an environment with torch, transformers and lm_eval 0.4.13,
e.g. /work/hfenv). Each run writes the metrics and every choice's log-likelihood to
``results/<backend>_<name>.json``; ``--compare`` prints the largest difference between them.

    HF_DATASETS_OFFLINE=1 python projects/stdlib_sft/lm_eval_run.py --backend libai \\
        --model output/stdlib_sft/sft_hf --name sft
    HF_DATASETS_OFFLINE=1 /work/hfenv/bin/python projects/stdlib_sft/lm_eval_run.py --backend hf \\
        --model output/stdlib_sft/sft_hf --name sft
    python projects/stdlib_sft/lm_eval_run.py --compare sft
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")
TASK = "stdlib_qa"


def evaluate(backend: str, model_dir: str, task_dir: str, batch_size: int) -> dict:
    import lm_eval
    from lm_eval.tasks import TaskManager

    if backend == "libai":
        sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))
        from libai.inference.lm_eval_cli import PretrainedLibaiLM

        model, args = PretrainedLibaiLM(pretrained=model_dir, batch_size=batch_size), None
    else:
        model, args = "hf", f"pretrained={model_dir},dtype=float32,device=cpu"
    out = lm_eval.simple_evaluate(
        model=model, model_args=args, tasks=[TASK], batch_size=batch_size, log_samples=True,
        task_manager=TaskManager(include_path=task_dir, include_defaults=False))
    samples = sorted(out["samples"][TASK], key=lambda s: s["doc_id"])
    metrics = {k.split(",")[0]: v for k, v in out["results"][TASK].items()
               if k in ("acc,none", "acc_norm,none")}
    return {"metrics": metrics,
            "loglikelihoods": [[resp[0][0] for resp in s["resps"]] for s in samples]}


def compare(name: str) -> None:
    runs = {}
    for backend in ("libai", "hf"):
        with open(os.path.join(RESULTS, f"{backend}_{name}.json")) as handle:
            runs[backend] = json.load(handle)
    pairs = [(a, b) for la, lb in zip(runs["libai"]["loglikelihoods"], runs["hf"]["loglikelihoods"])
             for a, b in zip(la, lb)]
    worst = max(abs(a - b) for a, b in pairs)
    print(f"{name}: libai {runs['libai']['metrics']}  hf {runs['hf']['metrics']}  "
          f"largest log-likelihood difference {worst:.2e} over {len(pairs)} choices")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=("libai", "hf"))
    parser.add_argument("--model", help="a Hugging Face model directory")
    parser.add_argument("--name", help="the results' name (base, sft)")
    parser.add_argument("--task-dir", default="data/stdlib_sft/task")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--compare", metavar="NAME")
    args = parser.parse_args()
    if args.compare:
        compare(args.compare)
        return
    result = evaluate(args.backend, args.model, args.task_dir, args.batch_size)
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, f"{args.backend}_{args.name}.json"), "w") as handle:
        json.dump(result, handle)
    print(args.backend, args.name, result["metrics"])


if __name__ == "__main__":
    main()
