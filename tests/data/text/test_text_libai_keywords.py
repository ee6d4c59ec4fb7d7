"""LiBai's dataset keywords: ``max_num_samples``, ``masking_style`` (with Chinese whole-word
masking), ``masked_lm_prob``, and what a tiny held-out split gives."""
import os

import numpy as np
import pytest

from libai.data.datasets.bert_dataset import BertDataset, chinese_wwm_tables, mask_whole_words
from libai.data.datasets.gpt_dataset import GPT2Dataset
from libai.data.datasets.t5_dataset import T5Dataset


def _fields(sample):
    return {name: sample.get(name).tensor.numpy() for name in sample.get_fields()}


def test_max_num_samples_is_the_sample_count(corpus, tokenizer, tmp_path):
    gpt = GPT2Dataset(data_prefix=corpus.doc_prefix, max_seq_length=8, max_num_samples=7,
                      cache_dir=str(tmp_path))
    same = GPT2Dataset(data_prefix=corpus.doc_prefix, max_seq_length=8, num_samples=7,
                       cache_dir=str(tmp_path))
    assert len(gpt) == 7
    np.testing.assert_array_equal(gpt.tokens(3), same.tokens(3))
    bert = BertDataset("bert", tokenizer, data_prefix=corpus.sent_prefix, max_seq_length=32,
                       max_num_samples=11, cache_dir=str(tmp_path))
    t5 = T5Dataset("t5", tokenizer, data_prefix=corpus.sent_prefix, max_seq_length=32,
                   max_num_samples=5, cache_dir=str(tmp_path))
    assert (len(bert), len(t5)) == (11, 5)
    with pytest.raises(ValueError, match="num_samples=3 and max_num_samples=4"):
        GPT2Dataset(data_prefix=corpus.doc_prefix, max_seq_length=8, num_samples=3,
                    max_num_samples=4, cache_dir=str(tmp_path))


def test_positional_arguments_follow_libais_order(corpus, tokenizer, tmp_path):
    # LiBai: (name, tokenizer, data_prefix, indexed_dataset, max_num_samples, max_seq_length, seed)
    gpt = GPT2Dataset("gpt", tokenizer, corpus.doc_prefix, None, 6, 8, 99, cache_dir=str(tmp_path))
    assert (len(gpt), gpt.max_seq_length, gpt.seed) == (6, 8, 99)
    # LiBai: (name, tokenizer, indexed_dataset, data_prefix, max_num_samples, mask_lm_prob,
    #         max_seq_length, short_seq_prob, seed, binary_head, masking_style)
    bert = BertDataset("bert", tokenizer, None, corpus.sent_prefix, 9, 0.2, 24, 0.0, 5, False,
                       "bert", cache_dir=str(tmp_path))
    assert (len(bert), bert.mask_lm_prob, bert.max_seq_length, bert.binary_head) == (9, 0.2, 24, False)


def test_t5_masked_lm_prob_is_the_noise_density(corpus, tokenizer, tmp_path):
    libai_name = T5Dataset("t5", tokenizer, data_prefix=corpus.sent_prefix, max_seq_length=32,
                           max_num_samples=4, masked_lm_prob=0.3, cache_dir=str(tmp_path))
    ours = T5Dataset("t5", tokenizer, data_prefix=corpus.sent_prefix, max_seq_length=32,
                     num_samples=4, noise_density=0.3, cache_dir=str(tmp_path))
    assert libai_name.noise_density == 0.3
    for name, value in _fields(libai_name[2]).items():
        np.testing.assert_array_equal(value, _fields(ours[2])[name], err_msg=name)
    with pytest.raises(ValueError, match="set the same thing"):
        T5Dataset("t5", tokenizer, data_prefix=corpus.sent_prefix, noise_density=0.2,
                  masked_lm_prob=0.3, cache_dir=str(tmp_path))


def test_unknown_masking_style_names_the_known_ones(corpus, tokenizer, tmp_path):
    with pytest.raises(ValueError, match="known styles are bert, bert-cn-wwm"):
        BertDataset("bert", tokenizer, data_prefix=corpus.sent_prefix, masking_style="span",
                    cache_dir=str(tmp_path))


def test_whole_word_masking_hides_whole_words_and_strips_markers():
    # ids: 0 [PAD] 1 [CLS] 2 [SEP] 3 [MASK] 4 天 5 ##天 6 地 7 ##地 8 river
    continuation = np.array([0, 0, 0, 0, 0, 1, 0, 1, 0], dtype=bool)
    strip_to = np.array([0, 1, 2, 3, 4, 4, 6, 6, 8])
    tokens = np.array([1, 4, 5, 8, 6, 7, 7, 8, 4, 5, 2])  # words: 天天 river 地地地 river 天天
    candidates = np.arange(1, 10)
    for seed in range(40):
        rng = np.random.default_rng(seed)
        shown, positions, labels = mask_whole_words(tokens, candidates, rng, 0.5, 3, 9,
                                                    continuation, strip_to, special_ids=(0, 1, 2, 3))
        picked = set(positions.tolist())
        for word in ([1, 2], [3], [4, 5, 6], [7], [8, 9]):
            assert set(word) <= picked or not set(word) & picked, (seed, word, picked)
        np.testing.assert_array_equal(labels, tokens[positions])  # labels keep the ## ids
        unpicked = [i for i in range(len(tokens)) if i not in picked]
        np.testing.assert_array_equal(shown[unpicked], strip_to[tokens[unpicked]])
        assert not np.isin(shown[unpicked], [5, 7]).any()  # markers only mark word boundaries


def test_bert_cn_wwm_dataset_over_a_chinese_corpus(tmp_path):
    """A corpus as LiBai's preprocessing stores it with ``do_chinese_wwm=True``: the later
    characters of a word as their ``##`` ids."""
    from libai.data.data_utils.indexed_dataset import make_builder
    from libai.tokenizer import BertTokenizer

    chars = list("天地人山水火木金")
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "。"] + chars
                               + ["##" + c for c in chars]) + "\n", encoding="utf-8")
    tok = BertTokenizer(str(vocab), chinese_word_segmenter=lambda t: [t])
    first, later = 6, 6 + len(chars)  # id of 天, id of ##天
    rng = np.random.default_rng(0)
    builder = make_builder(str(tmp_path / "zh.bin"), "mmap", vocab_size=len(tok))
    for _ in range(30):
        for _ in range(3):  # sentences of two-character words
            words = rng.integers(0, len(chars), size=(4, 2))
            builder.add_item([i for a, b in words for i in (first + a, later + b)] + [5])
        builder.end_document()
    builder.finalize(str(tmp_path / "zh.idx"))
    ds = BertDataset("bert", tok, data_prefix=str(tmp_path / "zh"), max_seq_length=40,
                     max_num_samples=30, mask_lm_prob=0.3, masking_style="bert-cn-wwm",
                     splits_string="1,0,0", cache_dir=str(tmp_path))
    continuation, strip_to = chinese_wwm_tables(tok, len(tok))
    assert continuation[later:later + len(chars)].all() and not continuation[:later].any()
    np.testing.assert_array_equal(strip_to[later:later + len(chars)], np.arange(first, later))
    continuation_labels = 0
    for i in range(len(ds)):
        f = _fields(ds[i])
        assert not continuation[f["input_ids"][f["loss_mask"] == 0]].any()
        for pos in np.flatnonzero(f["loss_mask"]):
            label = f["lm_labels"][pos]
            if continuation[label] and f["input_ids"][pos - 1] not in (tok.cls_id, tok.sep_id):
                continuation_labels += 1
                assert f["loss_mask"][pos - 1] == 1  # the word's first character is hidden too
            elif first <= label < later and f["input_ids"][pos + 1] not in (tok.sep_id, tok.pad_id):
                assert f["loss_mask"][pos + 1] == 1  # and its second one with the first
    assert continuation_labels > 0


def test_tiny_held_out_split_gives_no_pairs_instead_of_failing(corpus, tokenizer, tmp_path):
    # a test part of one document: not enough for sentence pairs, as happens with [949, 50, 1]
    ratios = f"{len(corpus.docs) - 2},1,1"
    single = [d for d in range(len(corpus.docs)) if len(corpus.docs[d]) == 1]
    assert single, "the shared corpus has one-sentence documents"
    held_out = BertDataset("bert", tokenizer, data_prefix=corpus.sent_prefix, split="test",
                           splits_string=ratios, max_seq_length=32, cache_dir=str(tmp_path))
    doc = len(corpus.docs) - 1
    expected_pairs = len(corpus.docs[doc]) >= 2
    assert (len(held_out) > 0) == expected_pairs
