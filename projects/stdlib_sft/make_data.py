"""Make the project's data from Python's own standard library: nothing is downloaded.

For every public function and method with a docstring in a fixed list of pure-Python modules
(read with :mod:`ast`, nothing imported), the question "What does ``module.name`` do?" is
answered by the first sentence of its docstring. Functions are split by a hash of their
qualified name, so the held-out functions are unseen in fine-tuning:

- ``docstrings.jsonl``: ``{"text": "module.name: docstring"}`` for *every* function: the base
  model's pretraining text (it learns what each name's documentation says);
- ``train.jsonl`` / ``valid.jsonl``: chat samples ``{"messages": [user, assistant]}`` of the
  training and held-out functions (fine-tuning and its response-only loss);
- ``test.jsonl``: the lm_eval task's documents for the held-out functions: the chat prompt,
  four candidate answers (the right one and three other held-out functions') and the answer's
  index; ``task/stdlib_qa.yaml`` reads it (``dataset_path: json``, local files);
- ``tokenizer/``: a byte-level BPE learned on the pretraining text (``tokenizers``), written as
  a Hugging Face tokenizer directory with the chat template below.

    python projects/stdlib_sft/make_data.py --output data/stdlib_sft
"""
import argparse
import ast
import hashlib
import json
import os
import random
import re
import sysconfig
from typing import Dict, Iterator, List, Tuple

from libai.data.synthetic_files import write_bpe_tokenizer

MODULES = (
    "argparse", "base64", "bisect", "calendar", "collections/__init__", "colorsys", "copy", "csv",
    "datetime", "difflib", "fnmatch", "fractions", "ftplib", "functools", "genericpath",
    "gettext", "glob", "gzip", "heapq", "hmac", "imaplib", "inspect", "ipaddress", "json/__init__",
    "logging/__init__", "mailbox", "ntpath", "operator", "optparse", "pathlib", "pickle",
    "posixpath", "pprint", "quopri", "random", "shlex", "shutil", "smtplib", "statistics",
    "string", "subprocess", "tarfile", "tempfile", "textwrap", "threading", "tokenize",
    "typing", "urllib/parse", "uuid", "warnings", "zipfile",
)
SPECIALS = ["<pad>", "<|endoftext|>", "<|user|>", "<|assistant|>", "<|end|>"]
#: The chat template of the project's tokenizer (Jinja2, as in a tokenizer_config.json).
CHAT_TEMPLATE = (
    "{% for m in messages %}"
    "{% if m['role'] not in ['user', 'assistant'] %}"
    "{{ raise_exception('this template knows the roles user and assistant, not ' + m['role']) }}"
    "{% endif %}<|{{ m['role'] }}|>\n{{ m['content'] }}<|end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)


def functions() -> Iterator[Tuple[str, str]]:
    """``(qualified name, docstring)`` of public functions and methods, in a fixed order."""
    stdlib = sysconfig.get_paths()["stdlib"]
    seen = set()
    for module in MODULES:
        path = os.path.join(stdlib, module + ".py")
        if not os.path.isfile(path):
            continue
        name = module.replace("/__init__", "").replace("/", ".")
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
        for node in tree.body:
            children = [(node, "")] if not isinstance(node, ast.ClassDef) else \
                [(child, node.name + ".") for child in node.body]
            for child, prefix in children:
                if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                if child.name.startswith("_") or prefix.startswith("_"):
                    continue
                doc = ast.get_docstring(child)
                qualified = f"{name}.{prefix}{child.name}"
                if doc and qualified not in seen:
                    seen.add(qualified)
                    yield qualified, " ".join(doc.split())


def first_sentence(doc: str) -> str:
    match = re.match(r"(.+?[.!?])(\s|$)", doc)
    return (match.group(1) if match else doc).strip()


def split_of(name: str) -> str:
    bucket = int(hashlib.md5(name.encode()).hexdigest(), 16) % 10
    return "test" if bucket == 0 else "valid" if bucket == 1 else "train"


def usable(name: str, answer: str) -> bool:
    """Short, prose answers (not a signature or a 200-character paragraph)."""
    return 12 <= len(answer) <= 120 and not answer.startswith(name.rsplit(".", 1)[-1] + "(")


def question(name: str) -> str:
    return f"What does {name} do?"


def render_prompt(name: str) -> str:
    """The chat prompt of a question (the template above, generation prompt added)."""
    return f"<|user|>\n{question(name)}<|end|>\n<|assistant|>\n"


def write_jsonl(path: str, rows: List[Dict]) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")


def train_tokenizer(texts: List[str], directory: str, vocab_size: int) -> None:
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|endoftext|>",
              "pad_token": "<pad>", "bos_token": None, "chat_template": CHAT_TEMPLATE,
              "model_max_length": 256, "clean_up_tokenization_spaces": False}
    write_bpe_tokenizer(texts, directory, vocab_size, SPECIALS, config)


def task_yaml(data_dir: str) -> str:
    return (
        "task: stdlib_qa\n"
        "dataset_path: json\n"
        "dataset_kwargs:\n"
        f"  data_files:\n    test: {os.path.abspath(os.path.join(data_dir, 'test.jsonl'))}\n"
        "test_split: test\n"
        "output_type: multiple_choice\n"
        "doc_to_text: \"{{prompt}}\"\n"
        "doc_to_choice: \"{{choices}}\"\n"
        "doc_to_target: \"{{answer}}\"\n"
        "target_delimiter: \"\"\n"
        "metric_list:\n"
        "  - metric: acc\n    aggregation: mean\n    higher_is_better: true\n"
        "  - metric: acc_norm\n    aggregation: mean\n    higher_is_better: true\n"
        "metadata:\n  version: 1.0\n"
    )


def make(output: str, vocab_size: int = 2048) -> Dict[str, int]:
    """Write every file of the project's data into ``output``; return the split sizes."""
    os.makedirs(output, exist_ok=True)
    pretrain, splits = [], {"train": [], "valid": [], "test": []}
    for name, doc in functions():
        pretrain.append({"text": f"{name}: {doc}"})
        answer = first_sentence(doc)
        if usable(name, answer):
            splits[split_of(name)].append((name, answer))
    write_jsonl(os.path.join(output, "docstrings.jsonl"), pretrain)
    for split in ("train", "valid"):
        write_jsonl(os.path.join(output, f"{split}.jsonl"), [
            {"messages": [{"role": "user", "content": question(n)},
                          {"role": "assistant", "content": a}]} for n, a in splits[split]])
    write_jsonl(os.path.join(output, "test.jsonl"), multiple_choice(splits["test"]))
    os.makedirs(os.path.join(output, "task"), exist_ok=True)
    with open(os.path.join(output, "task", "stdlib_qa.yaml"), "w", encoding="utf-8") as handle:
        handle.write(task_yaml(output))
    train_tokenizer([row["text"] for row in pretrain], os.path.join(output, "tokenizer"), vocab_size)
    return {"docstrings": len(pretrain), **{k: len(v) for k, v in splits.items()}}


def multiple_choice(test: List[Tuple[str, str]]) -> List[Dict]:
    """The task's documents: the prompt, the right answer among three other held-out answers."""
    rng = random.Random(0)
    docs = []
    for index, (name, answer) in enumerate(test):
        others = [a for j, (_, a) in enumerate(test) if j != index and a != answer]
        choices = rng.sample(others, 3) + [answer]
        rng.shuffle(choices)
        docs.append({"name": name, "prompt": render_prompt(name), "choices": choices,
                     "answer": choices.index(answer)})
    return docs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", default="data/stdlib_sft")
    parser.add_argument("--vocab-size", type=int, default=2048)
    args = parser.parse_args()
    sizes = make(args.output, args.vocab_size)
    print(f"{sizes['docstrings']} docstrings; questions: train {sizes['train']}, valid "
          f"{sizes['valid']}, test {sizes['test']} -> {args.output}")


if __name__ == "__main__":
    main()
