"""Rounding a vocabulary size up so that the embedding splits evenly.

Tensor parallelism splits the embedding's vocabulary rows across ranks, so the row count must
divide evenly; GPUs also run faster on sizes that are multiples of 64 or 128. A model therefore
allocates ``tokenizer.padded_vocab_size`` rows. The extra rows are never produced by the
tokenizer and simply go unused.
"""

__all__ = ["pad_vocab_size", "PaddedVocabSize"]


def pad_vocab_size(size: int, multiple: int) -> int:
    """The smallest multiple of ``multiple`` that is >= ``size``.

    >>> pad_vocab_size(30522, 128)
    30592
    """
    for name, value, low in (("size", size, 0), ("multiple", multiple, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"pad_vocab_size: {name} must be an int >= {low}, got {value!r}")
    return -(-size // multiple) * multiple


class PaddedVocabSize(int):
    """``tokenizer.padded_vocab_size``: an int (the rows to allocate) that LiBai code may also
    call, ``tokenizer.padded_vocab_size(multiple)``, to pad ``len(tokenizer)`` to a multiple."""

    def __new__(cls, value: int, unpadded: int) -> "PaddedVocabSize":
        instance = super().__new__(cls, value)
        instance._unpadded = unpadded
        return instance

    def __call__(self, multiple: int = 1) -> int:
        return pad_vocab_size(self._unpadded, multiple)

    def __reduce__(self) -> tuple:
        return int, (int(self),)  # pickles and copies as a plain int
