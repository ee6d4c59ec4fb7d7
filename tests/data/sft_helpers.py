"""A tiny real tokenizer (byte-level BPE trained in-process by ``tokenizers``) with a chat
template, for the fine-tuning dataset tests. Written as a Hugging Face tokenizer directory
(``tokenizer.json`` + ``tokenizer_config.json``), the format libai's AutoTokenizer reads."""
# the ChatML-like template raises on an unknown role, as many real templates do
from libai.data.synthetic_files import CHAT_SPECIALS as SPECIALS  # noqa: F401
from libai.data.synthetic_files import CHAT_TEMPLATE, write_bpe_tokenizer

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
    config = {"bos_token": "<s>", "eos_token": "</s>", "pad_token": "<pad>",
              "chat_template": CHAT_TEMPLATE, "tokenizer_class": "PreTrainedTokenizerFast",
              "add_bos_token": False}
    return write_bpe_tokenizer(CORPUS, directory, vocab_size, SPECIALS, config)


def load_tokenizer(directory):
    """libai's tokenizer of the directory (AutoTokenizer: tokenizer.json + the chat template)."""
    from libai.tokenizer import AutoTokenizer

    return AutoTokenizer.from_pretrained(directory)
