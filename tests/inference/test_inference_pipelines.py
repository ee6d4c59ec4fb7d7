"""The inference pipelines on the Hugging Face fixtures and on a libai training directory.

Scores are checked against the softmax of the logits ``transformers`` computed
(reference.npz), generated tokens against ``transformers``' ``generate``.
"""
import os
import shutil

import numpy as np
import pytest
from PIL import Image

from libai.config import LazyCall, LazyConfig
from libai.inference import (
    BasePipeline, ImageClassificationPipeline, TextClassificationPipeline, TextGenerationPipeline,
)
from libai.inference.image_classification import PixelTransform
from libai.models import GPTForPreTraining
from libai.utils.checkpoint import Checkpointer
from tiny_models import BODY, tiny_gpt

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "hf")


def _softmax(logits):
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _copy_with_vocab(name, tmp_path):
    """The fixture directory plus a vocab.txt whose token i is "w{i}" (ids 0-4 special)."""
    folder = tmp_path / name
    shutil.copytree(os.path.join(FIXTURES, name), folder)
    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    words = special + [f"w{i}" for i in range(len(special), 96)]
    (folder / "vocab.txt").write_text("\n".join(words) + "\n")
    return str(folder)


# ----------------------------------------------------------------------------- classification
@pytest.fixture(scope="module")
def bert_ref():
    return np.load(os.path.join(FIXTURES, "bert_classifier", "reference.npz"))


def _encoded(ref, row):
    keep = ref["attention_mask"][row] == 1
    return {"input_ids": ref["input_ids"][row][keep].tolist(),
            "token_type_ids": ref["token_type_ids"][row][keep].tolist()}


def test_text_classification_scores_equal_transformers_softmax(bert_ref):
    pipe = TextClassificationPipeline(os.path.join(FIXTURES, "bert_classifier"))
    expected = _softmax(bert_ref["logits"].astype(np.float64))
    records = pipe([_encoded(bert_ref, 0), _encoded(bert_ref, 1)], return_all_scores=True)
    for row, record in enumerate(records):
        assert [r["label"] for r in record] == ["negative", "neutral", "positive"]
        np.testing.assert_allclose([r["score"] for r in record], expected[row], atol=1e-5)
    best = pipe(_encoded(bert_ref, 1))  # one input -> one record, the best label
    assert best["label"] == ["negative", "neutral", "positive"][int(expected[1].argmax())]
    assert best["score"] == pytest.approx(expected[1].max(), abs=1e-5)
    top2 = pipe(_encoded(bert_ref, 0), top_k=2)
    assert [r["label"] for r in top2] == ["positive", "neutral"]


def test_text_classification_of_text_uses_the_vocab_beside_the_weights(tmp_path):
    pipe = TextClassificationPipeline(_copy_with_vocab("bert_classifier", tmp_path))
    texts = ["w10 w20 w30", "w40 w50"]
    by_text = pipe(texts, batch_size=1, return_all_scores=True)
    ids = [[2, 10, 20, 30, 3], [2, 40, 50, 3]]  # [CLS] ... [SEP]
    by_ids = pipe([{"input_ids": i} for i in ids], return_all_scores=True)
    for a, b in zip(by_text, by_ids):
        np.testing.assert_allclose([r["score"] for r in a], [r["score"] for r in b], atol=1e-6)


def test_batching_and_progress_do_not_change_results(bert_ref):
    pipe = TextClassificationPipeline(os.path.join(FIXTURES, "bert_classifier"))
    items = [_encoded(bert_ref, 0), _encoded(bert_ref, 1), _encoded(bert_ref, 0)]
    done = []
    one_by_one = pipe(items, batch_size=1, progress=done.append)
    assert done == [1, 1, 1]
    together = pipe(items)
    for a, b in zip(one_by_one, together):
        assert a["label"] == b["label"] and a["score"] == pytest.approx(b["score"], abs=1e-6)


@pytest.fixture(scope="module")
def vit_ref():
    return np.load(os.path.join(FIXTURES, "vit", "reference.npz"))


@pytest.mark.parametrize("family", ["vit", "swin", "swinv2"])
def test_image_classification_scores_equal_transformers_softmax(family):
    ref = np.load(os.path.join(FIXTURES, family, "reference.npz"))
    pipe = ImageClassificationPipeline(os.path.join(FIXTURES, family))
    expected = _softmax(ref["logits"].astype(np.float64))
    records = pipe(list(ref["pixel_values"]), return_all_scores=True)
    for row, record in enumerate(records):
        assert [r["label"] for r in record] == [f"LABEL_{i}" for i in range(expected.shape[1])]
        np.testing.assert_allclose([r["score"] for r in record], expected[row], atol=1e-5)


@pytest.mark.parametrize("family", ["t5", "mt5"])
def test_encoder_decoder_generation_pipeline_equals_transformers(family):
    ref = np.load(os.path.join(FIXTURES, family, "reference.npz"))
    pipe = TextGenerationPipeline(os.path.join(FIXTURES, family))
    prompts = [ref["input_ids"][i][ref["attention_mask"][i] == 1].tolist() for i in range(2)]
    for key, extra in (("greedy", {}), ("beam3", {"num_beams": 3})):
        records = pipe(prompts, max_new_tokens=6, eos_token_id=2, **extra)
        # transformers' sequences start with the decoder start token; the pipeline returns
        # only what was generated
        assert [r["generated_token_ids"] for r in records] == ref[key][:, 1:].tolist(), key


def test_image_files_are_resized_and_normalised(tmp_path, vit_ref):
    pipe = ImageClassificationPipeline(os.path.join(FIXTURES, "vit"))
    rng = np.random.RandomState(0)
    path = str(tmp_path / "img.png")
    Image.fromarray(rng.randint(0, 256, (48, 40, 3), dtype=np.uint8)).save(path)
    resized = np.asarray(Image.open(path).convert("RGB").resize((32, 32), Image.BILINEAR), np.float32)
    pixels = (resized.transpose(2, 0, 1) / 255.0 - 0.5) / 0.5  # HF ViT defaults
    from_file = pipe(path, return_all_scores=True)
    from_pixels = pipe(pixels, return_all_scores=True)
    np.testing.assert_allclose([r["score"] for r in from_file], [r["score"] for r in from_pixels],
                               atol=1e-5)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        pipe(str(tmp_path / "missing.png"))
    assert isinstance(pipe.transform, PixelTransform)


# ----------------------------------------------------------------------------- generation
def test_text_generation_from_a_hugging_face_directory():
    ref = np.load(os.path.join(FIXTURES, "gpt2", "reference.npz"))
    pipe = TextGenerationPipeline(os.path.join(FIXTURES, "gpt2"), max_new_tokens=6)
    prompts = [ref["padded_prompts"][0].tolist(), ref["padded_prompts"][1, 2:].tolist()]
    records = pipe(prompts, eos_token_id=2)
    assert records[0]["generated_token_ids"] == ref["padded_greedy"][0].tolist()
    assert records[1]["generated_token_ids"] == ref["padded_greedy"][1, 2:].tolist()
    new_only = pipe(prompts[0], eos_token_id=2, return_full_text=False)
    assert new_only["generated_token_ids"] == ref["padded_greedy"][0, 5:].tolist()


def test_text_generation_of_text(tmp_path):
    ref = np.load(os.path.join(FIXTURES, "gpt2", "reference.npz"))
    pipe = TextGenerationPipeline(_copy_with_vocab("gpt2", tmp_path))
    prompt = " ".join(f"w{i}" for i in ref["prompt"][0])
    record = pipe(prompt, max_new_tokens=6, eos_token_id=2)
    assert record["generated_token_ids"] == ref["greedy"][0].tolist()
    # pad ids (0 = [PAD]) are special tokens: skipped in the text
    words = [f"w{i}" for i in ref["greedy"][0] if i >= 5]
    assert record["generated_text"].split() == words


def _training_dir(tmp_path):
    """What a libai training leaves: config.yaml and model_final/ (here from a tiny GPT)."""
    out = str(tmp_path / "run")
    model = tiny_gpt(seed=4)
    Checkpointer(model, out).save("model_final")
    cfg = LazyConfig.load(os.path.join(os.path.dirname(__file__), "..", "..", "configs",
                                       "common", "train.py"))
    cfg.model = LazyCall(GPTForPreTraining)(cfg=dict(BODY, max_seq_length=64, embedding_dropout_prob=0.0))
    LazyConfig.save(cfg, os.path.join(out, "config.yaml"))
    return out, model


def test_text_generation_from_a_libai_training_directory(tmp_path):
    out, model = _training_dir(tmp_path)
    pipe = TextGenerationPipeline(out)
    prompt = [5, 6, 7, 8]
    expected = model.generate([prompt], max_new_tokens=5).numpy()[0].tolist()
    assert pipe(prompt, max_new_tokens=5)["generated_token_ids"] == expected
    assert pipe.source.mode == "libai"
    assert isinstance(pipe, BasePipeline)


def test_pipelines_built_around_objects_in_memory():
    model = tiny_gpt(seed=2)
    pipe = TextGenerationPipeline(model=model)
    expected = model.generate([[9, 8, 7]], max_new_tokens=3).numpy()[0].tolist()
    assert pipe([9, 8, 7], max_new_tokens=3)["generated_token_ids"] == expected


def test_source_errors_say_what_is_missing(tmp_path):
    with pytest.raises(FileNotFoundError, match="neither config.yaml"):
        TextGenerationPipeline(str(tmp_path))
    (tmp_path / "config.yaml").write_text("model: {}\n")
    with pytest.raises(FileNotFoundError, match="model_final"):
        TextGenerationPipeline(str(tmp_path))
    with pytest.raises(ValueError, match="cannot run as text generation"):
        TextGenerationPipeline(os.path.join(FIXTURES, "vit"))
    with pytest.raises(ValueError, match="no tokenizer"):
        TextGenerationPipeline(model=tiny_gpt())("some text")
