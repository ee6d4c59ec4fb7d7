"""active_dropout: skips the dropout call only where it would return its input untouched;
output_dropout, the branch-closing dropout of attention and MLP built on it."""
import numpy as np
import oneflow as flow
from oneflow import nn

from libai.layers.utils import active_dropout, output_dropout


def test_skipped_in_eval_and_at_zero_probability_without_drawing_random_numbers():
    x = flow.ones(4, 16)
    for p, training in ((0.5, False), (0.0, True)):
        dropout = nn.Dropout(p)
        dropout.train(training)
        flow.manual_seed(3)
        expected_draw = flow.rand(8).numpy()
        flow.manual_seed(3)
        assert active_dropout(dropout, x) is x
        np.testing.assert_array_equal(flow.rand(8).numpy(), expected_draw)


def test_applied_in_training_through_the_module():
    class Recording(nn.Dropout):
        def forward(self, x):
            self.result = super().forward(x)
            return self.result

    x = flow.ones(4, 16)
    dropout = Recording(0.5)
    dropout.train(True)
    got = active_dropout(dropout, x)
    assert got is dropout.result
    values = got.numpy()
    assert (values == 0).any() and (values == 2).any()


def test_output_dropout_unfused_is_active_dropout_and_a_bias_free_pair_needs_no_fusion():
    x = flow.ones(2, 8)
    dropout = nn.Dropout(0.5)
    dropout.eval()
    assert output_dropout(dropout, x, fused=False) is x
    # a skip_bias_add Linear without bias hands over (x, None): nothing to fuse with
    assert output_dropout(dropout, (x, None), fused=True) is x
