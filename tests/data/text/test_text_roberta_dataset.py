"""RobertaDataset: BERT's single-segment masked-LM sample without the pair task, checked
against the corpus it was made from."""
import numpy as np
import pytest

from libai.data.datasets import RobertaDataset

SEQ = 40
FIELDS = ["input_ids", "attention_mask", "tokentype_ids", "lm_labels", "loss_mask"]


@pytest.fixture(scope="module")
def dataset(corpus, tokenizer, tmp_path_factory):
    return RobertaDataset("roberta", tokenizer, data_prefix=corpus.sent_prefix,
                          max_seq_length=SEQ, max_num_samples=200, seed=5,
                          cache_dir=str(tmp_path_factory.mktemp("roberta")))


def _arrays(sample):
    return {name: sample.get(name).tensor.numpy() for name in FIELDS}


def _contains(haystack, needle):
    n = len(needle)
    return any(haystack[i:i + n] == needle for i in range(len(haystack) - n + 1))


def test_fields_placement_and_no_pair_label(dataset):
    sample = dataset[0]
    assert list(sample.get_fields()) == FIELDS
    assert [sample.get(n).placement_idx for n in FIELDS] == [0, 0, 0, -1, -1]
    assert all(tuple(sample.get(n).tensor.shape) == (SEQ,) for n in FIELDS)
    assert len(dataset) == 200


def test_text_is_a_run_of_one_documents_sentences(dataset, corpus, tokenizer):
    documents = [sum(corpus.sentence_tokens(d), []) for d in range(len(corpus.docs))]
    for idx in range(0, 200, 9):
        a = _arrays(dataset[idx])
        n = int(a["attention_mask"].sum())
        assert a["attention_mask"][:n].all() and not a["attention_mask"][n:].any()
        assert (a["input_ids"][n:] == tokenizer.pad_id).all()
        assert not a["tokentype_ids"].any()  # RoBERTa has one token type
        original = a["input_ids"].copy()
        picked = a["loss_mask"] == 1
        original[picked] = a["lm_labels"][picked]
        tokens = original[:n].tolist()
        assert tokens[0] == tokenizer.cls_id and tokens[-1] == tokenizer.sep_id
        assert tokenizer.sep_id not in tokens[1:-1]  # one segment only
        text = tokens[1:-1]
        assert any(_contains(doc, text) for doc in documents), idx
        assert not picked[[0, n - 1]].any()
        assert picked.sum() == max(1, int(np.floor((n - 2) * 0.15 + 0.5)))
        assert (a["lm_labels"][~picked] == 0).all()


def test_deterministic_and_options_checked(dataset, corpus, tokenizer, tmp_path):
    again = RobertaDataset("roberta", tokenizer, data_prefix=corpus.sent_prefix,
                           max_seq_length=SEQ, num_samples=200, seed=5, cache_dir=str(tmp_path))
    for idx in (0, 17, 199):
        assert all((x == y).all() for x, y in zip(_arrays(dataset[idx]).values(),
                                                   _arrays(again[idx]).values()))
    with pytest.raises(ValueError, match="only 'bert' masking"):
        RobertaDataset("r", tokenizer, data_prefix=corpus.sent_prefix, masking_style="t5")
