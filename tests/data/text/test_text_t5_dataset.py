"""T5Dataset: span corruption that reconstructs the text, its statistics, and the masks."""
import numpy as np
import pytest

from libai.data.data_utils.masking import random_spans_noise_mask, span_corrupt, t5_input_length
from libai.data.datasets.t5_dataset import T5Dataset

ENC = 40
FIELDS = ["encoder_input_ids", "decoder_input_ids", "encoder_attn_mask", "decoder_attn_mask",
          "encoder_decoder_attn_mask", "lm_labels", "loss_mask"]


@pytest.fixture(scope="module")
def t5(corpus, tokenizer, tmp_path_factory):
    return T5Dataset("t5", tokenizer, data_prefix=corpus.sent_prefix, max_seq_length=ENC, num_samples=300,
                     seed=4, cache_dir=str(tmp_path_factory.mktemp("t5")))


def _arrays(sample):
    return {name: sample.get(name).tensor.numpy() for name in FIELDS}


def _reconstruct(encoder, labels, sentinels):
    """Undo span corruption: put each sentinel's hidden tokens back in the encoder input."""
    hidden, current = {}, None
    for token in labels:
        if token in sentinels:
            current = token
            hidden[current] = []
        else:
            hidden[current].append(token)
    text = []
    for token in encoder:
        text.extend(hidden[token] if token in sentinels else [token])
    return text


def test_shapes_fields_and_placement(t5):
    raw, dec, _ = t5_input_length(ENC, 0.15, 3.0)
    assert t5.max_seq_length_dec == dec
    sample = t5[0]
    assert list(sample.get_fields()) == FIELDS
    shapes = {"encoder_input_ids": (ENC,), "decoder_input_ids": (dec,), "encoder_attn_mask": (ENC, ENC),
              "decoder_attn_mask": (dec, dec), "encoder_decoder_attn_mask": (dec, ENC),
              "lm_labels": (dec,), "loss_mask": (dec,)}
    assert {n: tuple(sample.get(n).tensor.shape) for n in FIELDS} == shapes
    assert [sample.get(n).placement_idx for n in FIELDS] == [0, 0, 0, 0, 0, -1, -1]


def test_corruption_reconstructs_the_sample_text(t5, corpus, tokenizer):
    flat = [s for d in range(len(corpus.docs)) for s in corpus.sentence_tokens(d)]
    sentinels = set(tokenizer.additional_special_tokens_ids)
    for idx in range(0, 300, 5):
        a = _arrays(t5[idx])
        n_enc, n_dec = int(a["encoder_attn_mask"][0].sum()), int(a["loss_mask"].sum())
        encoder = a["encoder_input_ids"][:n_enc].tolist()
        labels = a["lm_labels"][:n_dec].tolist()
        assert encoder[-1] == tokenizer.sep_id and labels[-1] == tokenizer.sep_id  # EOS defaults to [SEP]
        assert a["decoder_input_ids"][:n_dec].tolist() == [tokenizer.cls_id] + labels[:-1]
        first, end, target = (int(v) for v in t5.mapping[idx])
        expected = sum(flat[first:end], [])[:target]
        assert _reconstruct(encoder[:-1], labels[:-1], sentinels) == expected
        used = [t for t in encoder if t in sentinels]
        assert used == tokenizer.additional_special_tokens_ids[: len(used)]  # in order, from the first


def test_noise_density_and_mean_span_length(t5, tokenizer):
    sentinels = set(tokenizer.additional_special_tokens_ids)
    noise = raw = spans = 0
    for idx in range(300):
        a = _arrays(t5[idx])
        labels = a["lm_labels"][: int(a["loss_mask"].sum()) - 1]
        n_spans = int(np.isin(labels, list(sentinels)).sum())
        n_enc = int(a["encoder_attn_mask"][0].sum()) - 1
        spans += n_spans
        noise += len(labels) - n_spans
        raw += n_enc - n_spans + len(labels) - n_spans
    # Per-sample counts are rounded to whole tokens/spans; over ~300 samples of ~30 tokens the
    # means land within a few percent of the targets.
    assert abs(noise / raw - 0.15) < 0.02
    assert abs(noise / spans - 3.0) < 0.4


def test_masks_follow_padding_and_causality(t5):
    for idx in range(0, 300, 30):
        a = _arrays(t5[idx])
        n_enc, n_dec = int(a["encoder_attn_mask"][0].sum()), int(a["loss_mask"].sum())
        enc_real = np.arange(ENC) < n_enc
        dec_real = np.arange(t5.max_seq_length_dec) < n_dec
        np.testing.assert_array_equal(a["encoder_attn_mask"], np.outer(enc_real, enc_real))
        causal = np.tril(np.ones((len(dec_real), len(dec_real)), dtype=bool))
        np.testing.assert_array_equal(a["decoder_attn_mask"], np.outer(dec_real, dec_real) & causal)
        np.testing.assert_array_equal(a["encoder_decoder_attn_mask"], np.outer(dec_real, enc_real))
        assert (a["lm_labels"][n_dec:] == 0).all()


def test_noise_mask_statistics_directly():
    rng = np.random.default_rng(0)
    masks = [random_spans_noise_mask(100, 0.15, 3.0, rng) for _ in range(200)]
    assert all(m.sum() == 15 for m in masks)
    starts = [int((m & ~np.concatenate([[False], m[:-1]])).sum()) for m in masks]
    assert all(s == 5 for s in starts)  # round(15 / 3) spans, each 1+ tokens
    assert not any(m[0] for m in masks)  # the text starts with kept tokens


def test_span_corrupt_example():
    tokens = np.array([10, 11, 12, 13, 14, 15, 16, 17])
    noise = np.array([0, 0, 1, 1, 0, 0, 1, 0], dtype=bool)
    encoder, target = span_corrupt(tokens, noise, [90, 91])
    assert encoder.tolist() == [10, 11, 90, 14, 15, 91, 17]
    assert target.tolist() == [90, 12, 13, 91, 16]


def test_sentinel_and_length_errors(corpus, tokenizer, tmp_path):
    class NoSentinels:
        cls_id, sep_id, pad_id = 2, 3, 0

    with pytest.raises(ValueError, match="needs sentinel token ids"):
        T5Dataset(tokenizer=NoSentinels(), data_prefix=corpus.sent_prefix, cache_dir=str(tmp_path))
    with pytest.raises(ValueError, match="1 sentinel ids, but max_seq_length=40 can need up to 2 spans"):
        T5Dataset(tokenizer=tokenizer, data_prefix=corpus.sent_prefix, max_seq_length=40,
                  sentinel_ids=[50], cache_dir=str(tmp_path))
    with pytest.raises(ValueError, match="max_seq_length_dec=4 cannot hold"):
        T5Dataset(tokenizer=tokenizer, data_prefix=corpus.sent_prefix, max_seq_length=40,
                  max_seq_length_dec=4, cache_dir=str(tmp_path))


def test_same_seed_same_samples(corpus, tokenizer, tmp_path):
    def build(cache):
        return T5Dataset(tokenizer=tokenizer, data_prefix=corpus.sent_prefix, max_seq_length=ENC,
                         num_samples=20, seed=8, cache_dir=str(tmp_path / cache))

    a, b = build("a"), build("b")
    for k in range(20):
        assert all(np.array_equal(x, y) for x, y in zip(_arrays(a[k]).values(), _arrays(b[k]).values()))
