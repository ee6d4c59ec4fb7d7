"""Write the fine-tuning corpus as JSON lines: docstrings of Python's own standard library.

The base model learns English from the documentation's help topics (``pydoc_data.topics``, see
projects/gpt2_tiny_pretrain); LoRA then adapts it to another register of text that also ships
with every Python: the docstrings of standard-library modules, classes and functions. They are
read from the modules' source files with :mod:`ast` (nothing is imported or downloaded), in a
fixed order, one document ``{"text": ...}`` per docstring of at least ``--min-chars``
characters.

    python projects/llama_lora/make_docstrings.py --output data/llama_lora/docstrings.jsonl
"""
import ast
import os
import sys
import sysconfig
from typing import Iterator, List, Optional

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

# the same command line and output as the base corpus' script
from projects.gpt2_tiny_pretrain.make_corpus import corpus_main  # noqa: E402

#: Standard-library modules whose docstrings form the corpus (pure-Python, in every CPython).
MODULES = (
    "argparse", "ast", "calendar", "collections/__init__", "configparser", "csv", "datetime",
    "difflib", "email/message", "fractions", "ftplib", "functools", "gettext", "heapq",
    "imaplib", "inspect", "ipaddress", "logging/__init__", "mailbox", "optparse", "pathlib",
    "pickle", "pydoc", "random", "shutil", "smtplib", "statistics", "string", "subprocess",
    "tarfile", "tempfile", "textwrap", "threading", "typing", "unittest/case", "urllib/parse",
    "uuid", "zipfile",
)


def docstrings(min_chars: int) -> Iterator[str]:
    stdlib = sysconfig.get_paths()["stdlib"]
    for module in MODULES:
        path = os.path.join(stdlib, module + ".py")
        if not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node)
                if doc:
                    text = " ".join(line.strip() for line in doc.splitlines() if line.strip())
                    if len(text) >= min_chars:
                        yield text


def main(argv: Optional[List[str]] = None) -> None:
    corpus_main(__doc__.split("\n\n")[0], docstrings, 60, "drop shorter docstrings", argv)


if __name__ == "__main__":
    main()
