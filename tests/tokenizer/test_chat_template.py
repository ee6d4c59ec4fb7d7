"""render_chat_template renders Jinja features chat templates use (namespace, loop controls,
tojson options, trim/lstrip blocks, dict, missing keys, None-valued keys) to the exact text
transformers' renderer gave (tests/fixtures/hf_tokenizers/chat_templates.json)."""
import json
import os

import pytest

from libai.tokenizer.chat_template import ChatTemplateError, render_chat_template

REFS = os.path.join(os.path.dirname(__file__), "..", "fixtures", "hf_tokenizers", "chat_templates.json")
with open(REFS, encoding="utf-8") as _f:
    REF = json.load(_f)


@pytest.mark.parametrize("case", sorted(REF["cases"]))
def test_renders_what_transformers_renders(case):
    want = REF["cases"][case]
    text = render_chat_template(want["template"], REF["messages"], add_generation_prompt=case.endswith("+gen"),
                                tools=REF["tools"], bos_token="<s>", eos_token="</s>")
    assert text == want["text"]


def test_the_sandbox_refuses_python_internals_and_names_the_problem():
    with pytest.raises(ChatTemplateError, match="refused"):
        render_chat_template("{{ messages.__class__.__mro__ }}", [])
    with pytest.raises(ChatTemplateError, match="refused"):
        render_chat_template("{% set ns = namespace() %}{% set ns._x = 1 %}", [])
    with pytest.raises(ChatTemplateError, match="does not parse"):
        render_chat_template("{% for m in messages %}", [])
    with pytest.raises(TypeError, match="message 0 is a str"):
        render_chat_template("{{ messages }}", ["hello"])


def test_strftime_now_and_an_unknown_variable_render_like_jinja():
    text = render_chat_template("{{ strftime_now('%Y') }}|{{ unknown }}|", [])
    assert len(text.split("|")[0]) == 4 and text.endswith("||")
