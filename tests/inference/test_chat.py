"""Chatting with the tiny Llama fixture and a tokenizer fixture of matching vocabulary: the chat
template feeds the model, streamed text is the reply's decoding, generation stops at the stop
ids of generation_config.json (a list), and tools/generate.py --chat / tools/chat.py print it."""
import json
import os
import shutil

import oneflow as flow
import pytest

from libai.inference import TextGenerationPipeline
from libai.inference.chat import ChatSession, stop_token_ids
from libai.inference.cli import chat_main, generate_main
from libai.inference.streaming import TextStreamer
from libai.tokenizer import AutoTokenizer

HERE = os.path.dirname(__file__)
LLAMA = os.path.join(HERE, "..", "fixtures", "hf", "llama")
TOKENIZERS = os.path.join(HERE, "..", "fixtures", "hf_tokenizers")
QUESTION = "What is the capital of France?"


def _model_dir(target, eos):
    os.makedirs(target, exist_ok=True)
    for name in ("config.json", "model.safetensors"):
        shutil.copy(os.path.join(LLAMA, name), target)
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        shutil.copy(os.path.join(TOKENIZERS, "mistral_unigram", name), target)
    with open(os.path.join(target, "generation_config.json"), "w") as f:
        json.dump({"eos_token_id": eos, "pad_token_id": 0}, f)
    return target


def _plain_greedy(pipe, ids, n):
    """The model's greedy continuation without streamer or stop ids."""
    out = pipe.model.generate(flow.tensor([ids]), attention_mask=flow.ones(1, len(ids), dtype=flow.int64),
                              max_new_tokens=n, eos_token_id=None, pad_token_id=0)
    return out[0, len(ids):].tolist()


@pytest.fixture(scope="module")
def chat_setup(tmp_path_factory):
    """A model directory whose generation_config.json stops on [</s>, the 4th greedy token]."""
    folder = _model_dir(str(tmp_path_factory.mktemp("chat_model")), eos=2)
    pipe = TextGenerationPipeline(folder)
    prompt = pipe.tokenizer.apply_chat_template([{"role": "user", "content": QUESTION}],
                                                add_generation_prompt=True)
    free = _plain_greedy(pipe, prompt, 10)
    stop = next(t for t in free[3:] if t not in free[:3])
    cut = free.index(stop)
    _model_dir(folder, eos=[2, stop])
    return folder, TextGenerationPipeline(folder), prompt, free, stop, cut


def test_stop_ids_come_from_generation_config_lists(chat_setup):
    folder, pipe, _, _, stop, _ = chat_setup
    assert stop_token_ids(folder, pipe.tokenizer) == [2, stop]


def test_reply_streams_the_template_prompt_continuation_and_stops_at_a_listed_id(chat_setup):
    _, pipe, prompt, free, stop, cut = chat_setup
    pieces = []
    session = ChatSession(pipe, max_new_tokens=10)
    reply = session.send(QUESTION, on_text=pieces.append)
    assert "".join(pieces) == reply == pipe.tokenizer.decode(free[:cut], skip_special_tokens=True)
    assert session.messages == [{"role": "user", "content": QUESTION},
                                {"role": "assistant", "content": reply}]
    # the second turn's prompt is the template over the whole history
    second = pipe.tokenizer.apply_chat_template(session.messages + [{"role": "user", "content": "And?"}],
                                                add_generation_prompt=True)
    free_second = _plain_greedy(pipe, second, 10)
    ends = [i for i, t in enumerate(free_second) if t in (2, stop)]
    want = pipe.tokenizer.decode(free_second[:ends[0] if ends else 10], skip_special_tokens=True)
    assert session.send("And?") == want and len(session.messages) == 4


def test_a_refusing_template_keeps_the_history(chat_setup):
    _, pipe, *_ = chat_setup
    session = ChatSession(pipe, system="Be brief.", max_new_tokens=2)
    with pytest.raises(ValueError, match="refused this conversation: Conversation roles must alternate"):
        session.send("Hi")
    assert session.messages == [{"role": "system", "content": "Be brief."}]


def test_streamer_holds_back_split_characters():
    tok = AutoTokenizer.from_pretrained(os.path.join(TOKENIZERS, "qwen2_bpe"))
    ids = tok.encode("naïve café ☕ 漢字", add_special_tokens=False)
    pieces = []
    streamer = TextStreamer(tok, pieces.append, stop_token_ids=[tok.eos_token_id])
    streamer.put(flow.tensor([[5, 6]]))  # the prompt: not shown
    for i in ids + [tok.eos_token_id, ids[0]]:
        streamer.put(flow.tensor([i]))
    streamer.end()
    assert "".join(pieces) == "naïve café ☕ 漢字" and not any("\ufffd" in p for p in pieces)
    assert streamer.token_ids == ids


def test_generate_chat_and_chat_tool_print_the_reply(chat_setup, tmp_path, capsys):
    folder, pipe, _, free, _, cut = chat_setup
    reply = pipe.tokenizer.decode(free[:cut], skip_special_tokens=True)
    assert generate_main([folder, "--chat", "--prompt", QUESTION, "--max-new-tokens", "10", "--quiet"]) == 0
    assert capsys.readouterr().out == reply + "\n"
    messages = tmp_path / "chat.json"
    messages.write_text(json.dumps([{"role": "user", "content": QUESTION}]))
    assert chat_main([folder, "--messages", str(messages), "--max-new-tokens", "10", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["messages"][-1] == {"role": "assistant", "content": reply}
    lines = iter([QUESTION, "/reset", QUESTION, "/exit"])
    assert chat_main([folder, "--max-new-tokens", "10"], input_fn=lambda _: next(lines)) == 0
    assert capsys.readouterr().out == (reply + "\n") * 2


def test_chat_tool_names_bad_message_files(chat_setup, tmp_path):
    folder = chat_setup[0]
    bad = tmp_path / "bad.json"
    bad.write_text("[{\"role\": \"user\"")
    with pytest.raises(SystemExit, match="bad.json is not JSON"):
        chat_main([folder, "--messages", str(bad)])
    bad.write_text(json.dumps([{"role": "assistant", "content": "first"}]))
    with pytest.raises(SystemExit, match="roles must alternate"):
        chat_main([folder, "--messages", str(bad)])


def test_streaming_is_refused_with_beam_search(chat_setup):
    pipe = chat_setup[1]
    with pytest.raises(ValueError, match="not beam search"):
        pipe.model.generate(flow.tensor([[1, 5, 6]]), max_new_tokens=2, num_beams=2,
                            streamer=TextStreamer(pipe.tokenizer))


@pytest.mark.parametrize("family", ["qwen2", "mistral", "qwen3", "gemma", "phi3"])
def test_every_imported_decoder_family_chats_through_the_pipeline(family, tmp_path):
    """A Hugging Face directory of each family (transformers' fixture and a tokenizer) loads in
    the text-generation pipeline by its architecture, and the chat reply is its greedy decoding."""
    folder = str(tmp_path / family)
    os.makedirs(folder)
    source = os.path.join(HERE, "..", "fixtures", "hf", family)
    for name in ("config.json", "model.safetensors"):
        shutil.copy(os.path.join(source, name), folder)
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        shutil.copy(os.path.join(TOKENIZERS, "mistral_unigram", name), folder)
    with open(os.path.join(folder, "generation_config.json"), "w") as f:
        json.dump({"eos_token_id": [], "pad_token_id": 0}, f)
    pipe = TextGenerationPipeline(folder)
    assert type(pipe.model).__name__.lower().startswith(family)
    prompt = pipe.tokenizer.apply_chat_template([{"role": "user", "content": QUESTION}],
                                                add_generation_prompt=True)
    expected = pipe.tokenizer.decode(_plain_greedy(pipe, prompt, 4), skip_special_tokens=True)
    assert ChatSession(pipe, max_new_tokens=4).send(QUESTION) == expected
