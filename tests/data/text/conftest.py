"""Shared corpora for the text-data tests: built once per session, in a temporary directory."""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from textdata_helpers import TinyTokenizer, make_documents, write_jsonl  # noqa: E402

from libai.data.data_utils.preprocess import preprocess_jsonl  # noqa: E402


class Corpus:
    """A preprocessed corpus: the source documents, the tokenizer and the output prefixes."""

    def __init__(self, root, docs, tokenizer):
        self.root, self.docs, self.tokenizer = root, docs, tokenizer
        self.jsonl = write_jsonl(os.path.join(root, "corpus.jsonl"), docs)
        quiet = lambda msg: None  # noqa: E731
        self.doc_prefix = preprocess_jsonl(
            self.jsonl, os.path.join(root, "docs"), tokenizer, append_eod=True, log=quiet
        ).outputs["text"]
        self.sent_prefix = preprocess_jsonl(
            self.jsonl, os.path.join(root, "sents"), tokenizer, split_sentences=True, log=quiet
        ).outputs["text"]

    def doc_tokens(self, d):
        """Reference tokens of document ``d`` at document level (with EOD), computed directly."""
        ids = self.tokenizer.encode(" ".join(self.docs[d]))
        return ids + [self.tokenizer.eod_id]

    def sentence_tokens(self, d):
        return [self.tokenizer.encode(s) for s in self.docs[d]]


@pytest.fixture(scope="session")
def tokenizer():
    return TinyTokenizer()


@pytest.fixture(scope="session")
def corpus(tmp_path_factory, tokenizer):
    """120 documents of 1-6 sentences; indices cached in the session's directory."""
    root = str(tmp_path_factory.mktemp("text_corpus"))
    return Corpus(root, make_documents(120, seed=3), tokenizer)
