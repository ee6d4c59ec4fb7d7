"""LiBai's ``libai.inference.generator`` package: its module paths, mapped onto
:mod:`libai.models.utils.generation` (where generation lives, below the models)."""
