"""Data and config mistakes that make OneFlow abort the process (SIGABRT, no traceback) raise
a Python error naming what to change instead (libai.engine.hooks.input_check)."""
import os
import subprocess
import sys

import numpy as np
import oneflow as flow
import pytest

from libai.engine.hooks.input_check import InputCheckError, install_input_checks
from libai.models import GPTForPreTraining
from libai.utils.distributed import ParallelLayout
from projects.MNIST.modeling.model import MNISTClassifier

BODY = dict(vocab_size=96, hidden_size=32, hidden_layers=1, num_attention_heads=4, intermediate_size=64,
            max_seq_length=16, hidden_dropout_prob=0.0, attention_dropout_prob=0.0, embedding_dropout_prob=0.0)


def tiny_gpt() -> GPTForPreTraining:
    with ParallelLayout.from_config({"device_type": "cpu"}, world_size=1, rank=0):
        model = GPTForPreTraining(BODY)
    install_input_checks(model)
    return model


def mnist() -> MNISTClassifier:
    model = MNISTClassifier()
    assert install_input_checks(model) == 1  # its CrossEntropyLoss
    return model


def test_labels_beyond_num_classes_name_num_classes():
    model = mnist().train()
    with pytest.raises(InputCheckError, match=r"received label 12, but the model predicts 10 classes.*"
                                              r"raise model.num_classes .* to at least 13"):
        model(flow.randn(4, 784), flow.tensor([0, 3, 12, 9]))


def test_negative_labels_and_float_labels_are_refused():
    model = mnist().train()
    with pytest.raises(InputCheckError, match=r"received label -1.*\[0, 10\)"):
        model(flow.randn(2, 784), flow.tensor([-1, 3]))
    with pytest.raises(InputCheckError, match=r"labels of dtype oneflow.float32.*must be integers"):
        model(flow.randn(2, 784), flow.tensor([1.0, 3.0]))


def test_good_labels_pass_and_the_checks_stop_after_their_budget():
    model = MNISTClassifier()
    install_input_checks(model, calls=2)
    model.train()
    for _ in range(2):
        model(flow.randn(2, 784), flow.tensor([1, 9]))
    # the budget is spent: no check (and no host sync) any more
    assert model.loss_func.libai_input_checked


def test_token_ids_outside_the_vocabulary_name_vocab_size():
    model = tiny_gpt().train()
    ids = flow.tensor(np.array([[1, 2, 96, 3]]), dtype=flow.long)
    with pytest.raises(InputCheckError, match=r"token id 96, outside the vocabulary \[0, 96\).*"
                                              r"model.cfg.vocab_size to at least 97"):
        model(ids, labels=flow.ones(1, 4, dtype=flow.long))


def test_sequences_longer_than_the_position_table_name_both_fixes():
    model = tiny_gpt().eval()
    with pytest.raises(ValueError, match=r"max_position_embeddings"):  # the model's own check
        model(flow.ones(1, 20, dtype=flow.long))

    class Positions(flow.nn.Module):  # a model that looks positions up without checking
        def __init__(self):
            super().__init__()
            self.position_embeddings = flow.nn.Embedding(16, 4)

        def forward(self, ids):
            return self.position_embeddings(flow.arange(ids.shape[1]).unsqueeze(0))

    positions = Positions()
    install_input_checks(positions)
    with pytest.raises(InputCheckError, match=r"sequences are 20 tokens long but the position table holds 16.*"
                                              r"max_seq_length.*max_position_embeddings"):
        positions(flow.ones(1, 20, dtype=flow.long))


def test_float_token_ids_are_refused():
    model = tiny_gpt().eval()
    with pytest.raises(InputCheckError, match=r"ids of dtype oneflow.float32; ids must be integers"):
        model(flow.ones(1, 4))


def test_ignored_targets_pass():
    model = tiny_gpt().train()
    labels = flow.tensor(np.array([[1, -100, 5, 7]]), dtype=flow.long)
    model.loss_func.cross_entropy.ignore_index = -100
    out = model(flow.ones(1, 4, dtype=flow.long), labels=labels)
    assert np.isfinite(float(out["lm_loss" if "lm_loss" in out else list(out)[0]].mean().numpy()))
