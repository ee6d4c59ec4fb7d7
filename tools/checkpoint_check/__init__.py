"""The parts of ``tools/libai_checkpoint_check.py`` (see its docstring for what is checked).

``setup`` writes the tiny corpus and runs each library's commands; ``upstream`` holds the
scripts LiBai runs in its own environment and the model families they build; ``libai_side``
computes libai's outputs of the same checkpoints; ``report`` compares and prints; ``checks``
strings them together, one function per direction.
"""
