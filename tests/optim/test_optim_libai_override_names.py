"""Parameter-group overrides that LiBai's configs write for models that have those parameters.

ConvNeXt's config keeps ViT's ``{"pos_embed": ..., "cls_token": ...}`` overrides although its
model has neither; LiBai ignores an override that matches nothing. A miss of one of those names
is a warning here, while any other name that matches nothing (a typo) stays an error.
"""
import logging

import oneflow as flow
import pytest

from libai.optim import get_default_optimizer_params


class TwoLayers(flow.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = flow.nn.Linear(3, 3)
        self.head = flow.nn.Linear(3, 2)


def test_libais_usual_names_that_match_nothing_are_ignored_with_a_warning(caplog):
    overrides = {"pos_embed": {"weight_decay": 0.0}, "cls_token": {"weight_decay": 0.0},
                 "head.weight": {"lr": 0.5}}
    with caplog.at_level(logging.WARNING):
        groups = get_default_optimizer_params(TwoLayers(), weight_decay=0.1, overrides=overrides)
    assert "['pos_embed', 'cls_token'] match no trainable parameter of TwoLayers" in caplog.text
    head_groups = [g for g in groups if g.get("lr") == 0.5]
    assert sum(len(g["params"]) for g in head_groups) == 1  # the override that matched works


def test_other_names_that_match_nothing_are_still_errors():
    with pytest.raises(ValueError, match=r"\['pos_embd'\] match no trainable parameter"):
        get_default_optimizer_params(TwoLayers(), overrides={"pos_embd": {"lr": 1.0}})
