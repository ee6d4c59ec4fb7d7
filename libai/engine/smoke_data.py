"""``--smoke`` on a fresh clone: tiny synthetic stand-ins for the data a recipe names but that
is not there yet.

A shipped recipe points at placeholder paths (``./data_test/gpt_data/...``, ``./data/imagenet/
train``) that a new user has not filled. :func:`make_stand_ins` looks at every tokenizer and
dataset node of a config, and for each file or folder that is missing writes a tiny synthetic
one *of the same format* (a vocabulary trained on a synthetic corpus, that corpus tokenized into
a Megatron indexed dataset, an image tree, CIFAR batches, OFRecord parts, MNIST IDX files, a
JSON-lines classification file, a Hugging Face tokenizer directory with a chat template, chat or
instruction JSON lines) and points the node at it. The recipe's real tokenizer and
loading code then run on it, so a first run shows the whole pipeline working; one log line names
what was made and where. What exists is used as it is: a path the user set (in the recipe or
with an override) is never replaced.

Stand-ins live in one temporary folder per process, removed at exit (or in ``root``); a stand-in
already made there for the same original path is reused, so one process that runs several
recipes (the recipe tests) makes each kind once. What the formats look like is
:mod:`libai.data.synthetic_files`' business; this module only decides what is missing.
"""
import atexit
import hashlib
import json
import logging
import os
import re
import shutil
import tempfile
from typing import Any, Callable, Dict, List, Optional, Tuple

from omegaconf import OmegaConf

from libai.config.targets import locate
from libai.data import synthetic_files as files
from libai.engine.smoke import config_nodes

logger = logging.getLogger(__name__)

__all__ = ["make_stand_ins"]

_BPE_VOCAB_SIZE = 320  # the 256 bytes, the end-of-text token and some merges
_WORDPIECE_VOCAB_SIZE = 200
_ROOT: Optional[str] = None
# what each image stand-in is called in the log line (the others are text)
_IMAGE_TREE, _CIFAR, _OFRECORD, _MNIST = ("a class-per-folder image tree", "CIFAR pickle batches",
                                          "OFRecord image parts", "MNIST IDX files")
_IMAGE_KINDS = (_IMAGE_TREE, _CIFAR, _OFRECORD, _MNIST)
_HF_TOKENIZER = "a Hugging Face tokenizer directory with a chat template"
_SFT_KINDS = (_HF_TOKENIZER, "chat JSON lines", "instruction JSON lines")


def _process_root() -> str:
    """This process's stand-in folder, made on first use and removed at exit."""
    global _ROOT
    if _ROOT is None or not os.path.isdir(_ROOT):
        _ROOT = tempfile.mkdtemp(prefix="libai-smoke-data-")
        atexit.register(shutil.rmtree, _ROOT, True)
    return _ROOT


def _slug(text: str) -> str:
    """A short file name for ``text`` (an original path): readable tail plus a digest."""
    tail = re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_")[-40:]
    return f"{tail}_{hashlib.sha1(text.encode()).hexdigest()[:8]}"


def _target(node: Any) -> Optional[type]:
    target = node.get("_target_", None) if hasattr(node, "get") else None
    if isinstance(target, str):
        try:
            target = locate(target)
        except Exception:  # an unknown target: building the node will say so
            return None
    return target if isinstance(target, type) else None


def _is_subclass(target: Optional[type], *classes: type) -> bool:
    return target is not None and issubclass(target, classes)


class _StandIns:
    """What has been made in ``root``: the files, and one description per original path."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.made: Dict[str, str] = {}  # original path -> what stands in for it

    def make(self, name: str, write: Callable[[str], Any]) -> str:
        """``root/name``, written by ``write(tmp)`` into a temporary name and renamed into
        place unless already there (so a half-written stand-in is never reused)."""
        dest = os.path.join(self.root, name)
        if not os.path.exists(dest):
            tmp = dest + ".partial"
            shutil.rmtree(tmp, ignore_errors=True)
            os.makedirs(tmp)
            write(tmp)
            os.replace(tmp, dest)
        return dest

    def corpus(self) -> str:
        folder = self.make("corpus", lambda d: files.write_text_corpus(os.path.join(d, "corpus.jsonl")))
        return os.path.join(folder, "corpus.jsonl")

    def vocabulary(self, kind: str) -> str:
        """A ``kind`` ("wordpiece" or "bpe") vocabulary trained on the synthetic corpus."""
        from libai.tokenizer.trainers import train_vocab

        size = _BPE_VOCAB_SIZE if kind == "bpe" else _WORDPIECE_VOCAB_SIZE
        corpus = self.corpus()
        return self.make(f"vocab_{kind}", lambda d: train_vocab(corpus, d, kind=kind, vocab_size=size,
                                                                  json_key="text", min_frequency=1))

    def chat_tokenizer(self) -> str:
        """A Hugging Face tokenizer directory (``tokenizer.json`` + a chat template)."""
        return self.make("hf_tokenizer", files.write_chat_tokenizer)

    def note(self, original: str, what: str) -> None:
        self.made.setdefault(str(original), what)


def _fill_tokenizer(node: Any, target: type, stand_ins: _StandIns) -> None:
    """A BERT (WordPiece) or GPT-2/RoBERTa (byte-level BPE) tokenizer whose files are missing
    gets a vocabulary of the same kind."""
    from libai.tokenizer import BertTokenizer, GPT2Tokenizer

    kind = "wordpiece" if _is_subclass(target, BertTokenizer) else "bpe" if _is_subclass(target, GPT2Tokenizer) else None
    keys = ("vocab_file",) if kind == "wordpiece" else ("vocab_file", "merges_file")
    if kind is None or not all(isinstance(node.get(k, None), str) for k in keys):
        return
    if all(os.path.isfile(node[k]) for k in keys):
        return
    from libai.tokenizer.vocab_files import MERGES_TXT, VOCAB_JSON, VOCAB_TXT

    folder = stand_ins.vocabulary(kind)  # the files train_vocab writes
    names = {"vocab_file": VOCAB_TXT if kind == "wordpiece" else VOCAB_JSON, "merges_file": MERGES_TXT}
    what = "a WordPiece vocabulary" if kind == "wordpiece" else "a byte-level BPE vocabulary and merges"
    for key in keys:
        stand_ins.note(node[key], what)
        node[key] = os.path.join(folder, names[key])


def _fill_hf_tokenizer(node: Any, stand_ins: _StandIns) -> None:
    """``AutoTokenizer.from_pretrained(dir)`` (an SFT recipe's model directory) whose folder is
    missing gets a tokenizer directory with a chat template."""
    path = node.get("pretrained_model_name_or_path", None)
    if not isinstance(path, str) or os.path.isdir(path):
        return
    stand_ins.note(path, _HF_TOKENIZER)
    node.pretrained_model_name_or_path = stand_ins.chat_tokenizer()


def _fill_sft_source(node: Any, target: type, stand_ins: _StandIns) -> None:
    """A chat or instruction dataset whose JSON-lines file is missing gets one of its format."""
    from libai.data.datasets import InstructionDataset

    path = node.get("source", None)
    if not isinstance(path, str) or os.path.exists(path):
        return
    kind = "instruction" if _is_subclass(target, InstructionDataset) else "chat"
    folder = stand_ins.make(f"{kind}_" + _slug(path), lambda d: files.write_sft_jsonl(
        os.path.join(d, "data.jsonl"), count=24, kind=kind))
    stand_ins.note(path, f"{kind} JSON lines")
    node.source = os.path.join(folder, "data.jsonl")


def _corpus_tokenizer(cfg: Any, node: Any) -> Tuple[Any, bool]:
    """The tokenizer that reads ``node``'s corpus (the ``tokenization`` one, which the trainer
    hands to every dataset, else the node's own) and whether documents end with an EOD token."""
    from libai.tokenizer import build_tokenizer

    section = cfg.get("tokenization", None)
    if section is not None and section.get("tokenizer", None) is not None:
        return build_tokenizer(section, tensor_parallel_size=1), bool(section.get("append_eod", False))
    if node.get("tokenizer", None) is not None:
        return build_tokenizer(OmegaConf.create({"tokenizer": node.tokenizer}), tensor_parallel_size=1), False
    return None, False


def _fill_indexed_corpus(cfg: Any, node: Any, stand_ins: _StandIns) -> None:
    from libai.data.data_utils.indexed_dataset import data_file_path, index_file_path

    prefix = node.get("data_prefix", None)
    if not isinstance(prefix, str) or (os.path.isfile(data_file_path(prefix)) and os.path.isfile(index_file_path(prefix))):
        return
    tokenizer, append_eod = _corpus_tokenizer(cfg, node)
    if tokenizer is None:
        return
    section = cfg.get("tokenization", None) or {"tokenizer": node.get("tokenizer")}
    spec = json.dumps(OmegaConf.to_container(OmegaConf.create(dict(section)), resolve=True), sort_keys=True, default=str)
    corpus = stand_ins.corpus()
    folder = stand_ins.make("indexed_" + hashlib.sha1(spec.encode()).hexdigest()[:12], lambda d: files.write_indexed_corpus(
        corpus, os.path.join(d, "synthetic"), tokenizer, append_eod))
    stand_ins.note(prefix, "an indexed corpus (.bin/.idx)")
    node.data_prefix = _prefix_in(folder)


def _prefix_in(folder: str) -> str:
    """The one ``.bin``/``.idx`` prefix in ``folder``."""
    names = sorted(name[: -len(".bin")] for name in os.listdir(folder) if name.endswith(".bin"))
    return os.path.join(folder, names[0])


def _fill_data_file(node: Any, stand_ins: _StandIns) -> None:
    path = node.get("data_file", None)
    if not isinstance(path, str) or os.path.isfile(path):
        return
    folder = stand_ins.make("jsonl_" + _slug(path), lambda d: files.write_classification_jsonl(
        os.path.join(d, "data.jsonl"), count=32))
    stand_ins.note(path, "a JSON-lines classification file")
    node.data_file = os.path.join(folder, "data.jsonl")


def _fill_image_root(node: Any, target: type, stand_ins: _StandIns) -> None:
    from libai.data.datasets import ImageFolderDataset, MNISTDataset, OFRecordImageDataset
    from libai.data.datasets.cifar import _CIFARDataset

    root = node.get("root", None)
    if not isinstance(root, str):
        return
    name = _slug(root)
    if _is_subclass(target, ImageFolderDataset) and not os.path.isdir(root):
        node.root = stand_ins.make("images_" + name, lambda d: files.write_image_folder(d))
        stand_ins.note(root, _IMAGE_TREE)
    elif _is_subclass(target, _CIFARDataset) and not _has_cifar(root, target):
        counts = {file: 8 for file in tuple(target.train_files) + tuple(target.test_files)}
        node.root = stand_ins.make(f"{target.folder}_{name}", lambda d: files.write_cifar_batches(
            d, target.folder, target.label_key, counts))
        stand_ins.note(root, _CIFAR)
    elif _is_subclass(target, OFRecordImageDataset) and not os.path.isdir(root):
        def write(d: str) -> None:
            files.write_ofrecord_parts(d, files.write_image_folder(d + ".images"))
            shutil.rmtree(d + ".images")

        node.root = stand_ins.make("ofrecord_" + name, write)
        stand_ins.note(root, _OFRECORD)
    elif _is_subclass(target, MNISTDataset) and not os.path.isdir(root):
        node.root = stand_ins.make("mnist_" + name, files.write_mnist_files)
        stand_ins.note(root, _MNIST)


def _has_cifar(root: str, dataset: Any) -> bool:
    names = tuple(dataset.train_files) + tuple(dataset.test_files)
    return any(all(os.path.isfile(os.path.join(base, n)) for n in names)
               for base in (os.path.join(root, dataset.folder), root))


def make_stand_ins(cfg: Any, root: Optional[str] = None) -> Dict[str, str]:
    """Point every missing vocabulary, corpus, data file or image folder of ``cfg`` (changed in
    place) at a tiny synthetic stand-in of the same format made in ``root`` (default: a
    temporary folder of this process, removed at exit). Returns ``{original path: what stands
    in for it}`` (empty when everything was there) and logs it in one line."""
    from libai.data.datasets import SFTDataset
    from libai.data.datasets.text_classification import TextClassificationDataset

    stand_ins = _StandIns(root or _process_root())
    sections = [(key, cfg[key]) for key in ("tokenization", "dataloader") if key in cfg]
    for key, section in sections:  # vocabularies first: the corpora are tokenized with them
        for _, node in config_nodes(section, key):
            if "vocab_file" in node:
                _fill_tokenizer(node, _target(node), stand_ins)
            if "pretrained_model_name_or_path" in node and str(node.get("_target_", "")).endswith(
                    "AutoTokenizer.from_pretrained"):
                _fill_hf_tokenizer(node, stand_ins)
    for key, section in sections:
        for _, node in config_nodes(section, key):
            target = _target(node)
            if "data_prefix" in node:
                _fill_indexed_corpus(cfg, node, stand_ins)
            if "data_file" in node and _is_subclass(target, TextClassificationDataset):
                _fill_data_file(node, stand_ins)
            if "source" in node and _is_subclass(target, SFTDataset):
                _fill_sft_source(node, target, stand_ins)
            if "root" in node and target is not None:
                _fill_image_root(node, target, stand_ins)
    if stand_ins.made:
        logger.info(_describe(stand_ins.made, stand_ins.root, removed=root is None))
    return dict(stand_ins.made)


def _guide(kind: str) -> str:
    """The page that says how to prepare the real data a stand-in of ``kind`` replaces."""
    if kind in _IMAGE_KINDS:
        return "docs/prepare_image_data.md"
    if kind in _SFT_KINDS:
        return "docs/sft.md"
    return "docs/prepare_text_data.md"


def _describe(made: Dict[str, str], root: str, removed: bool) -> str:
    """One line: what was made, for which of the recipe's paths, where, and what to read next."""
    by_kind: Dict[str, List[str]] = {}
    for original, what in made.items():
        by_kind.setdefault(what, []).append(repr(original))
    listing = "; ".join(f"{what} for {', '.join(paths)}" for what, paths in by_kind.items())
    guides = sorted({_guide(kind) for kind in by_kind})
    return (f"--smoke: the recipe's data is not here, so tiny synthetic stand-ins of the same format "
            f"were made in {root}{' (removed at exit)' if removed else ''}: {listing}. "
            f"Prepare the real data for a real run ({', '.join(guides)})")
