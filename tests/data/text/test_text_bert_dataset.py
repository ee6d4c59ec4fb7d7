"""BertDataset: sample layout, the 80/10/10 masking rule, NSP/SOP pairs, determinism."""
import numpy as np
import pytest

from libai.data.datasets.bert_dataset import BertDataset, truncate_pair

SEQ = 48
FIELDS = ["input_ids", "attention_mask", "tokentype_ids", "ns_labels", "lm_labels", "loss_mask"]


def _arrays(sample):
    return {name: sample.get(name).tensor.numpy() for name in FIELDS}


def _find(haystack, needle):
    """Start of ``needle`` in ``haystack`` (lists of ids), or -1."""
    n = len(needle)
    for i in range(len(haystack) - n + 1):
        if haystack[i : i + n] == needle:
            return i
    return -1


def _decompose(ds, sample, tok):
    """(original tokens with masks undone, A, B) of one sample."""
    a = _arrays(sample)
    n = int(a["attention_mask"].sum())
    original = a["input_ids"].copy()
    picked = a["loss_mask"] == 1
    original[picked] = a["lm_labels"][picked]
    tokens = original[:n].tolist()
    seps = [i for i, t in enumerate(tokens) if t == tok.sep_id]
    return tokens, tokens[1 : seps[0]], tokens[seps[0] + 1 : n - 1]


@pytest.fixture(scope="module")
def nsp(corpus, tmp_path_factory, tokenizer):
    return BertDataset("bert", tokenizer, data_prefix=corpus.sent_prefix, max_seq_length=SEQ,
                       num_samples=500, seed=11, cache_dir=str(tmp_path_factory.mktemp("bert")))


def test_fields_shapes_and_placement(nsp):
    sample = nsp[0]
    assert list(sample.get_fields()) == FIELDS
    for name in FIELDS:
        shape = () if name == "ns_labels" else (SEQ,)
        assert tuple(sample.get(name).tensor.shape) == shape, name
    assert [sample.get(n).placement_idx for n in FIELDS] == [0, 0, 0, -1, -1, -1]


def test_layout_cls_a_sep_b_sep_padding(nsp, tokenizer):
    for idx in range(0, 300, 7):
        a = _arrays(nsp[idx])
        n = int(a["attention_mask"].sum())
        assert a["attention_mask"][:n].all() and not a["attention_mask"][n:].any()
        assert (a["input_ids"][n:] == tokenizer.pad_id).all()
        tokens, seg_a, seg_b = _decompose(nsp, nsp[idx], tokenizer)
        assert tokens[0] == tokenizer.cls_id and tokens[-1] == tokenizer.sep_id
        assert len(seg_a) >= 1 and len(seg_b) >= 1
        expected_types = [0] * (len(seg_a) + 2) + [1] * (len(seg_b) + 1) + [0] * (SEQ - n)
        assert a["tokentype_ids"].tolist() == expected_types
        assert a["loss_mask"][[0, len(seg_a) + 1, n - 1]].sum() == 0  # specials never picked
        assert (a["lm_labels"][a["loss_mask"] == 0] == 0).all()


def test_masking_counts_and_80_10_10_rule(nsp, tokenizer):
    kinds = {"mask": 0, "same": 0, "random": 0}
    specials = {tokenizer.cls_id, tokenizer.sep_id, tokenizer.mask_id, tokenizer.pad_id}
    total_candidates = total_picked = 0
    for idx in range(len(nsp)):
        a = _arrays(nsp[idx])
        candidates = int(a["attention_mask"].sum()) - 3
        picked = a["loss_mask"] == 1
        # 15% of the text tokens, rounded half up, at least one: exact for every sample.
        assert picked.sum() == max(1, int(np.floor(candidates * 0.15 + 0.5)))
        total_candidates += candidates
        total_picked += int(picked.sum())
        for shown, label in zip(a["input_ids"][picked], a["lm_labels"][picked]):
            if shown == tokenizer.mask_id:
                kinds["mask"] += 1
            elif shown == label:
                kinds["same"] += 1
            else:
                kinds["random"] += 1
                assert shown not in specials and 0 <= shown < tokenizer.vocab_size
    n = sum(kinds.values())
    assert n == total_picked and n > 2000
    assert 0.14 < total_picked / total_candidates < 0.17  # rounding half up adds < 0.5 token/sample
    # Binomial standard deviations with n > 2000: 0.009 (80%) and 0.007 (10%); tolerances >= 4 SD.
    # "same" also gets the random draws that hit the original id (1/vocab of 10%: under 0.2%).
    assert abs(kinds["mask"] / n - 0.8) < 0.04
    assert abs(kinds["same"] / n - 0.1) < 0.03
    assert abs(kinds["random"] / n - 0.1) < 0.03


def test_next_sentence_pairs(nsp, corpus, tokenizer):
    doc_streams = [sum(corpus.sentence_tokens(d), []) for d in range(len(corpus.docs))]
    flat = [s for d in range(len(corpus.docs)) for s in corpus.sentence_tokens(d)]
    labels = []
    for idx in range(0, 300, 3):
        first, end, _ = (int(v) for v in nsp.mapping[idx])
        text = sum(flat[first:end], [])
        own_doc = int(np.searchsorted(nsp.indexed.doc_idx, first, side="right") - 1)
        _, seg_a, seg_b = _decompose(nsp, nsp[idx], tokenizer)
        label = int(nsp[idx].ns_labels.tensor.item())
        labels.append(label)
        pos_a = _find(text, seg_a)
        assert pos_a >= 0
        if label == 0:  # B continues A in the same text
            assert _find(text[pos_a + len(seg_a) :], seg_b) >= 0
        else:  # B comes from another document
            assert any(_find(doc_streams[d], seg_b) >= 0 for d in range(len(doc_streams)) if d != own_doc)
    # 100 fair coin flips: standard deviation 0.05; 3 SD tolerance.
    assert abs(np.mean(labels) - 0.5) < 0.15


def test_sentence_order_pairs(corpus, tokenizer, tmp_path):
    ds = BertDataset(tokenizer=tokenizer, data_prefix=corpus.sent_prefix, max_seq_length=SEQ, sop=True,
                     seed=3, cache_dir=str(tmp_path))
    flat = [s for d in range(len(corpus.docs)) for s in corpus.sentence_tokens(d)]
    labels = []
    for idx in range(len(ds)):
        first, end, _ = (int(v) for v in ds.mapping[idx])
        text = sum(flat[first:end], [])
        _, seg_a, seg_b = _decompose(ds, ds[idx], tokenizer)
        label = int(ds[idx].ns_labels.tensor.item())
        labels.append(label)
        earlier, later = (seg_a, seg_b) if label == 0 else (seg_b, seg_a)
        pos = _find(text, earlier)
        assert pos >= 0 and _find(text[pos + len(earlier) :], later) >= 0
    assert 0 < np.mean(labels) < 1


def test_single_segment_without_binary_head(corpus, tokenizer, tmp_path):
    ds = BertDataset(tokenizer=tokenizer, data_prefix=corpus.sent_prefix, max_seq_length=SEQ,
                     binary_head=False, seed=3, cache_dir=str(tmp_path))
    for idx in range(0, len(ds), 5):
        a = _arrays(ds[idx])
        n = int(a["attention_mask"].sum())
        assert a["ns_labels"] == 0 and not a["tokentype_ids"].any()
        tokens, _, _ = _decompose(ds, ds[idx], tokenizer)
        assert tokens.count(tokenizer.sep_id) == 1 and tokens[-1] == tokenizer.sep_id
        assert a["loss_mask"].sum() == max(1, int(np.floor((n - 2) * 0.15 + 0.5)))


def test_same_seed_same_samples_and_cache_reuse(corpus, tokenizer, tmp_path):
    def build():
        return BertDataset(tokenizer=tokenizer, data_prefix=corpus.sent_prefix, max_seq_length=SEQ,
                           num_samples=40, seed=21, cache_dir=str(tmp_path))

    first, second = build(), build()
    assert not first.index_cache_hit and second.index_cache_hit
    for k in range(40):
        x, y = _arrays(first[k]), _arrays(second[k])
        assert all(np.array_equal(x[f], y[f]) for f in FIELDS)
    # Reading order does not matter: sample k alone equals sample k read after others.
    np.testing.assert_array_equal(_arrays(build()[17])["input_ids"], _arrays(first[17])["input_ids"])


def test_truncate_pair_trims_the_longer_segment():
    rng = np.random.default_rng(0)
    a, b = truncate_pair(np.arange(10), np.arange(100, 103), 8, rng)
    assert len(a) == 5 and list(b) == [100, 101, 102]
    assert _find(list(range(10)), a.tolist()) >= 0


def test_tokenizer_requirements(corpus):
    class NoMask:
        cls_id, sep_id, pad_id, vocab_size = 2, 3, 0, 10

    with pytest.raises(ValueError, match="BertDataset needs a tokenizer"):
        BertDataset(data_prefix=corpus.sent_prefix)
    with pytest.raises(ValueError, match="needs tokenizer.mask_id, which NoMask does not provide"):
        BertDataset(tokenizer=NoMask(), data_prefix=corpus.sent_prefix)


def test_document_level_corpus_cannot_make_pairs(corpus, tokenizer, tmp_path):
    with pytest.raises(ValueError, match="--split-sentences"):
        BertDataset(tokenizer=tokenizer, data_prefix=corpus.doc_prefix, max_seq_length=SEQ,
                    cache_dir=str(tmp_path))
