"""A tiny real tokenizer (byte-level BPE trained in-process by ``tokenizers``) with a chat
template, for the fine-tuning dataset tests. Written as a Hugging Face tokenizer directory
(``tokenizer.json`` + ``tokenizer_config.json``), the format libai's AutoTokenizer reads."""
import json
import os

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

SPECIALS = ["<pad>", "<s>", "</s>", "<|system|>", "<|user|>", "<|assistant|>", "<|end|>"]

#: ChatML-like; unknown roles raise, as many real templates do.
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}"
    "{% if m['role'] not in ['system', 'user', 'assistant'] %}"
    "{{ raise_exception('Unknown role: ' + m['role']) }}{% endif %}"
    "<|{{ m['role'] }}|>\n{{ m['content'] }}<|end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)

CORPUS = [
    "Return the absolute value of the argument.",
    "What does the function math.sqrt do?",
    "Return the square root of x. Split the string into a list of words.",
    "You are a helpful assistant that answers questions about Python.",
    "Explain what os.path.join returns, in one sentence, please.",
] * 4


def train_tokenizer(directory, vocab_size=300):
    """Write a byte-level BPE ``tokenizer.json`` and a ``tokenizer_config.json`` with the chat
    template into ``directory``; return the directory."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(CORPUS, trainer)
    os.makedirs(directory, exist_ok=True)
    tok.save(os.path.join(directory, "tokenizer.json"))
    config = {"bos_token": "<s>", "eos_token": "</s>", "pad_token": "<pad>",
              "chat_template": CHAT_TEMPLATE, "tokenizer_class": "PreTrainedTokenizerFast",
              "add_bos_token": False}
    with open(os.path.join(directory, "tokenizer_config.json"), "w") as handle:
        json.dump(config, handle)
    return directory


class TinyChatTokenizer:
    """Stand-in with libai's tokenizer interface until AutoTokenizer reads the directory."""

    def __init__(self, directory):
        self.tok = Tokenizer.from_file(os.path.join(directory, "tokenizer.json"))
        with open(os.path.join(directory, "tokenizer_config.json")) as handle:
            self.config = json.load(handle)
        self.bos_token, self.eos_token = self.config["bos_token"], self.config["eos_token"]
        self.bos_token_id = self.tok.token_to_id(self.bos_token) if self.bos_token else None
        self.eos_token_id = self.tok.token_to_id(self.eos_token)
        self.pad_token_id = self.tok.token_to_id(self.config["pad_token"])
        self.chat_template = self.config["chat_template"]

    def encode(self, text, add_special_tokens=False):
        return self.tok.encode(text, add_special_tokens=False).ids

    def decode(self, ids, skip_special_tokens=False):
        return self.tok.decode(list(ids), skip_special_tokens=skip_special_tokens)

    def apply_chat_template(self, messages, add_generation_prompt=False, tokenize=True,
                            chat_template=None):
        from libai.tokenizer.chat_template import render_chat_template

        text = render_chat_template(chat_template or self.chat_template, messages,
                                    add_generation_prompt=add_generation_prompt,
                                    bos_token=self.bos_token, eos_token=self.eos_token)
        return self.encode(text) if tokenize else text


def load_tokenizer(directory):
    """libai's AutoTokenizer when it exists, else the stand-in."""
    try:
        from libai.tokenizer import AutoTokenizer
    except ImportError:
        return TinyChatTokenizer(directory)
    return AutoTokenizer.from_pretrained(directory)
