"""AutoTokenizer on Hugging Face tokenizer directories: the same ids, tokens, decodings, padding,
special-token ids and chat renderings as transformers (or, for Llama-2's tokenizer.model,
sentencepiece with LlamaTokenizer's legacy rules) recorded in each fixture's reference.json by
tests/fixtures/hf_tokenizers/make_tokenizer_fixtures.py."""
import json
import os

import pytest

from libai.tokenizer import AutoTokenizer, JSONTokenizer, LlamaSentencePieceTokenizer
from libai.tokenizer.chat_template import ChatTemplateError

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "hf_tokenizers")
JSON_DIRS = ["qwen2_bpe", "mistral_unigram", "gemma_bpe", "phi3_wordpiece"]
ALL_DIRS = JSON_DIRS + ["llama2_sp"]

_CACHE = {}


def load(name):
    if name not in _CACHE:
        with open(os.path.join(FIXTURES, name, "reference.json"), encoding="utf-8") as f:
            _CACHE[name] = (AutoTokenizer.from_pretrained(os.path.join(FIXTURES, name)), json.load(f))
    return _CACHE[name]


@pytest.mark.parametrize("name", ALL_DIRS)
def test_ids_tokens_and_special_ids_equal_the_reference(name):
    tok, ref = load(name)
    expected_class = LlamaSentencePieceTokenizer if name == "llama2_sp" else JSONTokenizer
    assert type(tok) is expected_class
    for text, want in zip(ref["texts"], ref["encode"]):
        assert tok.encode(text) == want["ids"], text
        assert tok.encode(text, add_special_tokens=False) == want["ids_plain"], text
        assert tok.convert_ids_to_tokens(want["ids_plain"]) == want["tokens"], text
        assert tok.decode(want["ids"], skip_special_tokens=True) == want["decode_skip"], text
        if "decode" in want:
            assert tok.decode(want["ids"]) == want["decode"], text
    for role, want in ref["special_ids"].items():
        assert getattr(tok, f"{role}_token_id") == want, role
    assert len(tok) == ref["len"] and tok.vocab_size == ref["vocab_size"]


@pytest.mark.parametrize("name", JSON_DIRS)
def test_padding_sides_and_truncation_equal_transformers(name):
    tok, ref = load(name)
    assert tok.padding_side == ref["padding_side"]
    assert tok.encode(ref["texts"][2], truncation=True, max_length=5) == ref["truncated"]
    if "batch" not in ref:
        with pytest.raises(ValueError, match="no pad token"):
            tok.batch_encode(ref["texts"][:3])
        return
    assert tok.batch_encode(ref["texts"][:3]) == ref["batch"]
    flipped = AutoTokenizer.from_pretrained(os.path.join(FIXTURES, name),
                                            padding_side=ref["batch_flipped"]["padding_side"])
    assert flipped.batch_encode(ref["texts"][:3])["input_ids"] == ref["batch_flipped"]["input_ids"]


@pytest.mark.parametrize("name", ALL_DIRS)
def test_chat_template_text_and_ids_equal_the_reference(name):
    tok, ref = load(name)
    for key, want in ref["chat"].items():
        if key == "with_kwargs":
            got = tok.apply_chat_template(ref["chats"]["system_user"], tokenize=False, **want["kwargs"])
            assert got == want["text"]
            continue
        chat, _, gen = key.partition("+")
        if "error" in want:
            with pytest.raises(ChatTemplateError, match="refused this conversation: " + want["error"][:20]):
                tok.apply_chat_template(ref["chats"][chat], add_generation_prompt=bool(gen))
            continue
        text = tok.apply_chat_template(ref["chats"][chat], add_generation_prompt=bool(gen), tokenize=False)
        assert text == want["text"], key
        assert tok.apply_chat_template(ref["chats"][chat], add_generation_prompt=bool(gen)) == want["ids"], key


@pytest.mark.parametrize("name", JSON_DIRS)
def test_added_pad_and_special_tokens_get_transformers_ids(name):
    tok = AutoTokenizer.from_pretrained(os.path.join(FIXTURES, name))
    want = load(name)[1]["added"]
    created = 0
    if tok.pad_token is None:
        created += tok.add_special_tokens({"pad_token": "<pad>"})
    created += tok.add_tokens(["<extra>"], special_tokens=True)
    assert (created, len(tok), tok.pad_token_id) == (want["created"], want["len"], want["pad_id"])
    ids = tok.encode(want["text"], add_special_tokens=False)
    assert ids == want["ids"]
    assert tok.decode(ids, skip_special_tokens=True) == want["decode_skip"]


def test_save_pretrained_round_trips_a_json_tokenizer(tmp_path):
    tok, ref = load("qwen2_bpe")
    tok.save_pretrained(str(tmp_path))
    again = AutoTokenizer.from_pretrained(str(tmp_path))
    assert again.encode(ref["texts"][3]) == ref["encode"][3]["ids"]
    assert again.apply_chat_template(ref["chats"]["user"], tokenize=False) == ref["chat"]["user"]["text"]


def test_a_directory_without_tokenizer_files_names_the_files_looked_for(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match="looked for tokenizer.json, tokenizer.model, vocab.txt"):
        AutoTokenizer.from_pretrained(str(tmp_path))


def test_legacy_false_sentencepiece_is_refused_with_the_field(tmp_path):
    source = os.path.join(FIXTURES, "llama2_sp")
    for f in os.listdir(source):
        data = open(os.path.join(source, f), "rb").read()
        (tmp_path / f).write_bytes(data)
    config = json.loads((tmp_path / "tokenizer_config.json").read_text())
    config["legacy"] = False
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match="legacy=false"):
        AutoTokenizer.from_pretrained(str(tmp_path))


def test_existing_vocabularies_still_load_through_auto(tmp_path, bpe_files, gpt2):
    gpt2.save_pretrained(str(tmp_path))
    auto = AutoTokenizer.from_pretrained(str(tmp_path))
    assert type(auto) is type(gpt2)
    assert auto.encode("the lazy dog") == gpt2.encode("the lazy dog")


def test_a_batch_of_conversations_and_an_empty_one():
    tok, ref = load("qwen2_bpe")
    batch = tok.apply_chat_template([ref["chats"]["user"], ref["chats"]["multi_turn"]], tokenize=False)
    assert batch == [ref["chat"]["user"]["text"], ref["chat"]["multi_turn"]["text"]]
    with pytest.raises(ChatTemplateError, match="empty"):
        tok.apply_chat_template([])
    bare = AutoTokenizer.from_pretrained(os.path.join(FIXTURES, "qwen2_bpe"), chat_template=None)
    with pytest.raises(ChatTemplateError, match="has no chat template"):
        bare.apply_chat_template(ref["chats"]["user"])


def test_preprocessing_takes_a_tokenizer_json_directory(tmp_path):
    """tools/preprocess_data.py --tokenizer-name JSONTokenizer --vocab-file DIR --append-eod."""
    import numpy as np

    from libai.data.data_utils.preprocess import preprocess_jsonl
    from libai.data.data_utils.indexed_dataset import MMapIndexedDataset

    tok, ref = load("qwen2_bpe")
    texts = [t for t in ref["texts"] if t]
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")
    built = JSONTokenizer(os.path.join(FIXTURES, "qwen2_bpe"))
    assert built.eod_id == ref["special_ids"]["eos"]
    summary = preprocess_jsonl(str(corpus), str(tmp_path / "out"), built, append_eod=True,
                               log_interval=0, log=lambda m: None)
    data = MMapIndexedDataset(summary.outputs["text"])
    for i, text in enumerate(texts):
        assert list(np.asarray(data[i])) == tok.encode(text, add_special_tokens=False) + [built.eod_id]


@pytest.mark.parametrize("name", JSON_DIRS)
def test_wrapping_ids_follows_the_post_processor(name):
    tok, ref = load(name)
    for want in ref["encode"]:
        assert tok.build_inputs_with_special_tokens(want["ids_plain"]) == want["ids"]
    if name == "phi3_wordpiece":
        assert tok.build_inputs_with_special_tokens([10], [11]) == [tok.cls_token_id, 10, tok.sep_token_id,
                                                                   11, tok.sep_token_id]
        assert tok.num_special_tokens_to_add(pair=True) == 3


@pytest.mark.parametrize("rows", [352, 100], ids=["more_rows", "fewer_rows"])
def test_a_model_directorys_embedding_rows_size_the_model_not_the_tokenizers_ids(tmp_path, rows):
    """Qwen2-7B's config.json has 152,064 embedding rows for 151,646 ids: the trainer, which
    sizes ``model.cfg.vocab_size`` by the tokenizer, must keep the checkpoint's rows or the
    weights do not load. Rows fewer than the ids cannot be (the ids would not fit): ignored."""
    from omegaconf import OmegaConf

    from libai.config import LazyCall
    from libai.engine.builders import ConfigBuilders

    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        (tmp_path / name).write_bytes(open(os.path.join(FIXTURES, "qwen2_bpe", name), "rb").read())
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "qwen2", "vocab_size": rows}))
    tok = AutoTokenizer.from_pretrained(str(tmp_path))
    assert len(tok) == 300 and tok.padded_vocab_size == max(rows, 300)
    cfg = OmegaConf.create({"model": {"cfg": {"vocab_size": 152}}, "tokenization": {
        "tokenizer": LazyCall(AutoTokenizer.from_pretrained)(pretrained_model_name_or_path=str(tmp_path))}})
    ConfigBuilders.build_tokenizer(cfg)
    assert cfg.model.cfg.vocab_size == max(rows, 300)
