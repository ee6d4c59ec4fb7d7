"""Tidying decoded text of tokenizers that lose the original spacing (WordPiece)."""

__all__ = ["clean_up_tokenization"]

_REPLACEMENTS = (
    (" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
    (" 'm", "'m"), (" do not", " don't"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"),
)


def clean_up_tokenization(text: str) -> str:
    """Remove the spaces a token-by-token join puts before English punctuation and
    contractions: ``"hello , world ! it 's"`` -> ``"hello, world! it's"``.

    The rules are LiBai's (and Hugging Face's), in their order, so decoded text matches theirs;
    that includes their odd ``" do not"`` -> ``" don't"``.
    """
    for spaced, joined in _REPLACEMENTS:
        text = text.replace(spaced, joined)
    return text
