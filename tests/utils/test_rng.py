"""Dropout layers draw from the seeded default generator after use_default_generators."""
import numpy as np
import oneflow as flow

from libai.utils.rng import use_default_generators


def _two_dropouts():
    return flow.nn.Sequential(flow.nn.Dropout(0.5), flow.nn.Dropout(0.5))


def test_dropout_layers_follow_the_seed_and_differ_from_each_other():
    model = _two_dropouts()
    assert use_default_generators(model) == 2
    x = flow.ones(64)
    flow.manual_seed(3)
    first = [m(x).numpy() for m in model]
    flow.manual_seed(3)
    again = [m(x).numpy() for m in model]
    flow.manual_seed(4)
    other = model[0](x).numpy()
    assert np.array_equal(first[0], again[0]) and np.array_equal(first[1], again[1])
    assert not np.array_equal(first[0], first[1]), "two layers must not share one mask"
    assert not np.array_equal(first[0], other), "another seed gives another mask"


def test_without_it_oneflow_gives_every_dropout_the_same_mask():
    # Documents the OneFlow 0.9 behaviour the helper exists for; if this starts failing,
    # OneFlow changed and the helper may no longer be needed.
    model = _two_dropouts()
    x = flow.ones(64)
    assert np.array_equal(model[0](x).numpy(), model[1](x).numpy())


def test_rng_state_lives_here_and_checkpoint_re_exports_it():
    import random

    from libai.utils import checkpoint
    from libai.utils.rng import RNGState

    assert checkpoint.RNGState is RNGState
    state = RNGState()
    saved = state.state_dict()
    expected = [random.random(), float(np.random.rand()), float(flow.rand(1).numpy()[0])]
    random.random(), np.random.rand(), flow.rand(1)  # move every stream on
    state.load_state_dict(saved)
    assert [random.random(), float(np.random.rand()), float(flow.rand(1).numpy()[0])] == expected
