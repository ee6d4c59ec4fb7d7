"""Instruction and chat datasets: labels only on responses, truncation rules, bad input named."""
import json
import logging
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from sft_helpers import load_tokenizer, train_tokenizer  # noqa: E402

from libai.data.datasets import ChatDataset, InstructionDataset  # noqa: E402
from libai.data.datasets.sft import IGNORE_INDEX  # noqa: E402

SYSTEM = {"role": "system", "content": "You are a helpful assistant."}
TURNS = [
    {"role": "user", "content": "What does math.sqrt do?"},
    {"role": "assistant", "content": "Return the square root of x."},
    {"role": "user", "content": "And abs?"},
    {"role": "assistant", "content": "Return the absolute value of the argument."},
]


@pytest.fixture(scope="module")
def tok(tmp_path_factory):
    return load_tokenizer(train_tokenizer(str(tmp_path_factory.mktemp("sft_tok"))))


def _trained_and_prompt(tok, sample):
    """(text of the tokens whose prediction is trained, text of the others)."""
    ids, labels = sample.input_ids, sample.labels
    for t, label in enumerate(labels):  # a label is the next token or the ignore index
        assert label in (IGNORE_INDEX, ids[t + 1] if t + 1 < len(ids) else None)
    trained = [t + 1 for t, label in enumerate(labels) if label != IGNORE_INDEX]
    prompt = [t for t in range(len(ids)) if t not in set(trained)]
    return tok.decode([ids[t] for t in trained]), tok.decode([ids[t] for t in prompt])


@pytest.mark.parametrize("system", [False, True], ids=["no_system", "system"])
def test_chat_labels_are_the_assistant_turns_exactly(tok, system):
    messages = ([SYSTEM] if system else []) + TURNS
    sample = ChatDataset([{"messages": messages}], tok, 256).samples[0]
    trained, prompt = _trained_and_prompt(tok, sample)
    assert trained == "Return the square root of x.<|end|>\nReturn the absolute value of the argument.<|end|>\n"
    rendered = tok.apply_chat_template(messages, tokenize=False)
    assert tok.decode(sample.input_ids) == rendered
    expected_prompt = "<s>" + ("<|system|>\nYou are a helpful assistant.<|end|>\n" if system else "") + \
        "<|user|>\nWhat does math.sqrt do?<|end|>\n<|assistant|>\n<|user|>\nAnd abs?<|end|>\n<|assistant|>\n"
    assert prompt == expected_prompt


@pytest.mark.parametrize("use_chat", [False, True], ids=["template", "chat_template"])
@pytest.mark.parametrize("system", [None, "Answer briefly."], ids=["no_system", "system"])
def test_instruction_labels_are_the_output_exactly(tok, use_chat, system):
    rows = [{"instruction": "What does math.sqrt do?", "input": "x = 4", "output": "Return the square root of x."}]
    data = InstructionDataset(rows, tok, 256, use_chat_template=use_chat, system_prompt=system)
    trained, prompt = _trained_and_prompt(tok, data.samples[0])
    if use_chat:
        assert trained == "Return the square root of x.<|end|>\n"
        assert prompt == "<s>" + (f"<|system|>\n{system}<|end|>\n" if system else "") + \
            "<|user|>\nWhat does math.sqrt do?\n\nx = 4<|end|>\n<|assistant|>\n"
    else:
        assert trained == "Return the square root of x.</s>"
        assert prompt == "<s>### Instruction:\nWhat does math.sqrt do?\n\n### Input:\nx = 4\n\n### Response:\n"


def test_train_on_input_trains_every_next_token(tok):
    rows = [{"instruction": "Explain", "output": "Join paths."}]
    sample = InstructionDataset(rows, tok, 64, train_on_input=True).samples[0]
    assert sample.labels == sample.input_ids[1:] + [IGNORE_INDEX]


def test_instance_is_padded_to_max_seq_length_and_padding_is_ignored(tok):
    data = InstructionDataset([{"instruction": "Explain", "output": "Join paths."}], tok, 64)
    item, n = data[0], len(data.samples[0].input_ids)
    assert tuple(item.input_ids.tensor.shape) == (64,) and item.labels.placement_idx == -1
    assert item.input_ids.tensor[n:].tolist() == [tok.pad_token_id] * (64 - n)
    assert item.labels.tensor[n - 1:].tolist() == [IGNORE_INDEX] * (65 - n)


def test_truncation_keeps_the_response_and_cuts_the_oldest_prompt(tok, caplog):
    long_prompt = "What does math.sqrt do? " * 10
    rows = [{"instruction": long_prompt, "output": "Return the square root of x."},
            {"instruction": "Explain", "output": "Join paths."}]
    full, short = InstructionDataset(rows, tok, 512).samples
    size = len(short.input_ids)  # the short sample just fits
    with caplog.at_level(logging.INFO):
        data = InstructionDataset(rows, tok, size)
    cut = data.samples[0]
    assert len(cut.input_ids) == size and data.report.truncated == 1
    assert data.samples[1].input_ids == short.input_ids
    assert cut.input_ids[0] == tok.bos_token_id  # the BOS stays
    assert cut.input_ids[1:] == full.input_ids[len(full.input_ids) - size + 1:]  # oldest prompt tokens go
    assert _trained_and_prompt(tok, cut)[0] == "Return the square root of x.</s>"
    assert "2 samples, 1 truncated" in caplog.text
    right = InstructionDataset(rows, tok, len(full.input_ids) - 3, truncation="right").samples[0]
    assert right.input_ids == full.input_ids[:-3]
    with caplog.at_level(logging.INFO):
        assert len(InstructionDataset(rows, tok, size, truncation="right")) == 1
    assert f"list row 0: truncation='right' to {size} tokens cut off the whole response" in caplog.text


def test_bad_input_is_named_skipped_and_counted(tok, tmp_path, caplog):
    path = tmp_path / "train.jsonl"
    good = {"messages": TURNS[:2]}
    lines = [
        json.dumps(good),
        "{not json",
        json.dumps({"messages": [TURNS[0]]}),  # no response
        json.dumps({"messages": [{"role": "tool", "content": "42"}] + TURNS[:2]}),  # unknown role
        json.dumps({"messages": [TURNS[0], {"role": "assistant", "content": "word " * 200}]}),  # too long
        "",
        json.dumps(good),
    ]
    path.write_text("\n".join(lines) + "\n")
    with caplog.at_level(logging.INFO):
        data = ChatDataset(str(path), tok, 64)
    assert len(data) == 2
    assert f"{path}:2: the line is not valid JSON" in caplog.text
    assert f"{path}:3: the conversation has no non-empty 'assistant' turn" in caplog.text
    assert f"{path}:4: the chat template raised" in caplog.text and "Unknown role: tool" in caplog.text
    assert f"{path}:5: the sample has" in caplog.text and "raise max_seq_length" in caplog.text
    assert data.report.skipped == {"JSON does not parse": 1, "no response": 1, "template error": 1,
                                   "too long": 1}
    assert "2 samples, 0 truncated, 4 skipped" in caplog.text


def test_a_template_that_drops_a_role_or_raises_is_named(tok):
    drops = "{% for m in messages %}{% if m['role'] != 'tool' %}{{ m['content'] }}\n{% endif %}{% endfor %}"
    rows = [{"messages": [{"role": "tool", "content": "forty-two"}] + TURNS[:2]}]
    with pytest.raises(ValueError, match=r"row 0: message 0 \(role 'tool'\) does not appear"):
        ChatDataset(rows, tok, 64, chat_template=drops)
    with pytest.raises(ValueError, match="row 0: the conversation starts with an 'assistant' turn"):
        ChatDataset([{"messages": TURNS[1:2]}], tok, 64)
    with pytest.raises(ValueError, match="no usable sample.*the chat template raised"):
        ChatDataset([{"messages": TURNS}], tok, 64, chat_template="{{ nothing.here }}")


def test_instruction_without_output_and_all_skipped_is_an_error(tok):
    rows = [{"instruction": "Explain", "output": ""}, {"instruction": "Explain"}]
    with pytest.raises(ValueError, match=r"no usable sample.*list row 0: the sample's 'output' is "
                                         r"missing or empty"):
        InstructionDataset(rows, tok, 64)
    data = InstructionDataset([{"q": "Explain", "a": "Join paths."}], tok, 64,
                              instruction_key="q", output_key="a", input_key=None)
    assert len(data) == 1


def test_a_datasets_dataset_is_a_source_and_its_rows_are_named(tok):
    datasets = pytest.importorskip("datasets")
    rows = datasets.Dataset.from_list([{"instruction": "Explain", "output": "Join paths."},
                                       {"instruction": "Explain", "output": ""}])
    data = InstructionDataset(rows, tok, 64)
    assert len(data) == 1 and data.samples[0].input_ids == InstructionDataset(
        [rows[0]], tok, 64).samples[0].input_ids
    assert data.report.examples[0].where == "Dataset row 1"


@pytest.mark.parametrize("family", ["llama2_sp", "qwen2_bpe", "gemma_bpe", "mistral_unigram",
                                    "phi3_wordpiece"])
def test_real_chat_templates_give_apply_chat_templates_ids_with_prompts_masked(family):
    """The tokenizer fixtures transformers made (tests/fixtures/hf_tokenizers): the sample's ids
    are exactly ``apply_chat_template``'s, and the first trained target is the first token after
    the generation prompt (Phi-3's template also appends an end-of-conversation token)."""
    from libai.tokenizer import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(os.path.join(os.path.dirname(__file__), "..", "fixtures",
                                                     "hf_tokenizers", family))
    sample = ChatDataset([{"messages": TURNS}], tok, 512).samples[0]
    assert sample.input_ids == tok.apply_chat_template(TURNS)
    prompt = len(tok.apply_chat_template(TURNS[:1], add_generation_prompt=True))
    assert set(sample.labels[:prompt - 1]) == {IGNORE_INDEX} and sample.labels[prompt - 1] != IGNORE_INDEX
    second = len(tok.apply_chat_template(TURNS[:3], add_generation_prompt=True))
    assert sample.labels[second - 2] == IGNORE_INDEX and sample.labels[second - 1] != IGNORE_INDEX


@pytest.mark.parametrize("family", ["llama2_sp", "qwen2_bpe", "gemma_bpe", "mistral_unigram",
                                    "phi3_wordpiece"])
def test_real_chat_templates_with_a_system_turn_mask_it_or_name_the_refusal(family, caplog):
    """The SFT recipes' families (configs/<family>_sft.py) with a system turn: it is prompt
    (never trained) where the template renders it; Gemma's and Mistral-7B-Instruct-v0.1's
    templates have no system role and raise, so the conversation is skipped, counted and named
    with the template's message, and the conversation without it still trains."""
    from libai.tokenizer import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(os.path.join(os.path.dirname(__file__), "..", "fixtures",
                                                     "hf_tokenizers", family))
    turns = [SYSTEM] + TURNS
    rows = [{"messages": turns}, {"messages": TURNS}]
    with caplog.at_level(logging.INFO):
        data = ChatDataset(rows, tok, 512)
    refusal = {"gemma_bpe": "System role not supported",
               "mistral_unigram": "Conversation roles must alternate user/assistant"}.get(family)
    if refusal:
        assert len(data) == 1 and data.samples[0].input_ids == tok.apply_chat_template(TURNS)
        assert data.report.skipped == {"template error": 1}
        assert "list row 0: the chat template raised" in caplog.text and refusal in caplog.text
        return
    sample = data.samples[0]
    assert len(data) == 2 and sample.input_ids == tok.apply_chat_template(turns)
    trained, prompt = _trained_and_prompt(tok, sample)
    assert "helpful assistant" in prompt and "helpful assistant" not in trained
    # words each tiny fixture vocabulary keeps (the WordPiece one lower-cases, others lack "square")
    assert "root of x" in trained and "absolute value of the argument" in trained
    assert "does" in prompt and "does" not in trained


# Qwen3's chat format (ChatML with reasoning blocks), written for this test: the assistant turn
# after the last user message is rendered with its <think> block (empty when the sample has no
# reasoning), earlier assistant turns without it, so a conversation cut after an earlier turn
# renders that turn differently than the whole conversation does.
QWEN3_FORMAT = """{%- set ns = namespace(last_query=-1) -%}
{%- for m in messages %}{% if m.role == 'user' %}{% set ns.last_query = loop.index0 %}{% endif %}{% endfor -%}
{%- for m in messages -%}
{%- if m.role == 'assistant' -%}
{%- if loop.index0 > ns.last_query and loop.last -%}
{{- '<|im_start|>assistant\\n<think>\\n\\n</think>\\n\\n' + m.content + '<|im_end|>\\n' -}}
{%- else -%}
{{- '<|im_start|>assistant\\n' + m.content + '<|im_end|>\\n' -}}
{%- endif -%}
{%- else -%}
{{- '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' -}}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif -%}"""


@pytest.mark.parametrize("system", [False, True], ids=["no_system", "system"])
def test_qwen3_format_trains_every_assistant_turn_of_a_multi_turn_conversation(system):
    """configs/qwen3_sft.py: Qwen3's template renders earlier assistant turns without the empty
    reasoning block the last one gets, so an earlier turn is not a prefix of the whole; it is
    found in the whole right after its generation prompt and trained there (its content and
    end-of-turn), the last turn with its <think></think> block, as the whole renders them."""
    from libai.tokenizer import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(os.path.join(os.path.dirname(__file__), "..", "fixtures",
                                                     "hf_tokenizers", "qwen2_bpe"))
    turns = ([SYSTEM] if system else []) + TURNS
    sample = ChatDataset([{"messages": turns}], tok, 512, chat_template=QWEN3_FORMAT).samples[0]
    whole = tok.apply_chat_template(turns, chat_template=QWEN3_FORMAT, tokenize=False)
    assert sample.input_ids == tok.encode(whole)
    trained, prompt = _trained_and_prompt(tok, sample)
    first, last = TURNS[1]["content"], TURNS[3]["content"]
    assert trained == f"{first}<|im_end|>\n<think>\n\n</think>\n\n{last}<|im_end|>\n"
    assert "math.sqrt" in prompt and "And abs?" in prompt
