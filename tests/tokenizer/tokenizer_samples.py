"""Sample vocabulary and corpus shared by the tokenizer tests (imported by name: this folder
is on sys.path while its tests run)."""

# A small vocabulary whose pieces are chosen so that expected encodings can be worked out by
# hand (see test_tokenizer_bert.py). Ids are the line numbers.
BERT_TOKENS = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",        # 0-4
    "un", "##aff", "##able", "hello", "world",           # 5-9
    "!", ",", ".", "'", "run",                           # 10-14
    "##ning", "cafe", "naive", "今", "天",                # 15-19
    "气", "##天", "[", "]", "a",                          # 20-24
    "##a", "$", "5", "##0", "emoji",                     # 25-29
]

# Multilingual text so that a trained byte-level vocabulary has merges inside multi-byte
# characters as well as in ASCII words.
CORPUS = [
    "Hello world! Hello there, world. The quick brown fox jumps over the lazy dog.",
    "Tokenizers turn text into ids; ids turn back into text.",
    "Café naïve résumé — accents are bytes too. 2024-01-01 costs $5.00!!!",
    "今天天气很好。我们去公园吧！中文没有空格。",
    "Emoji: 😀😀 👍🏽 and tabs\tand  double  spaces\nnew lines.",
    "<|endoftext|>",
    "Hello world! Hello again; the world says hello back.",
]


def write_lines(path, lines):
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    return str(path)
