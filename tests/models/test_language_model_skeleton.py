"""The shared skeleton pieces the language models configure (libai/models/transformer.py and
libai/models/language_model.py): what each one decides, checked on its own."""
import numpy as np
import oneflow as flow
import pytest

from libai.layers import Linear, LMLogits
from libai.models.language_model import constructor_arguments, lm_head, lm_logits
from libai.models.transformer import TextEmbedding, TransformerStack, block_args, run_blocks


def _ids(shape, seed=0, high=20):
    return flow.tensor(np.random.RandomState(seed).randint(0, high, size=shape))


def test_block_args_picks_the_block_settings_by_name():
    settings = dict(
        hidden_dropout_prob=0.3, attention_dropout_prob=0.2, bias_gelu_fusion=True,
        bias_dropout_fusion=False, scale_mask_softmax_fusion=True,
        apply_query_key_layer_scaling=True, apply_residual_post_layernorm=False,
        vocab_size=99, self=object(),  # a constructor's other locals are left out
    )
    args = block_args(settings, "init", "out_init")
    assert args == dict(
        attention_dropout_prob=0.2, output_dropout_prob=0.3, bias_gelu_fusion=True,
        bias_dropout_fusion=False, scale_mask_softmax_fusion=True,
        apply_query_key_layer_scaling=True, apply_residual_post_layernorm=False,
        init_method="init", output_layer_init_method="out_init",
    )


def test_constructor_arguments_drop_self_and_the_named_ones():
    def ctor(self, a, b=2, pad=1):
        return constructor_arguments(locals(), "pad")

    assert ctor(object(), 1) == {"a": 1, "b": 2}


def test_embedding_without_positions_is_word_embedding_and_any_length(local_layout):
    flow.manual_seed(0)
    emb = TextEmbedding(20, 8, max_seq_length=None).eval()
    assert not hasattr(emb, "position_embeddings")
    ids = _ids((2, 30))  # longer than any table: no position limit applies
    np.testing.assert_array_equal(
        emb(ids, past_length=5).numpy(), emb.word_embeddings(ids).numpy()
    )


def test_embedding_with_positions_numbers_from_the_cache_length(local_layout):
    flow.manual_seed(0)
    emb = TextEmbedding(20, 8, max_seq_length=6).eval()
    ids = _ids((1, 2))
    words = emb.word_embeddings(ids).numpy()
    table = emb.position_embeddings.weight.numpy()
    np.testing.assert_allclose(emb(ids, past_length=3).numpy(), words + table[3:5][None], rtol=1e-6)
    with pytest.raises(ValueError, match="exceeds the 6 learned positions"):
        emb(ids, past_length=5)


def test_run_blocks_threads_the_cache_and_checks_its_length(local_layout):
    flow.manual_seed(0)
    stack = TransformerStack(2, 8, 16, 2, attn_mask_type="causal", final_layernorm_idx=None).eval()
    x = flow.tensor(np.random.RandomState(1).standard_normal((1, 4, 8)).astype(np.float32))
    whole = run_blocks(stack.layers, x)
    first, cache = run_blocks(stack.layers, x[:, :3], use_cache=True)
    last, _ = run_blocks(stack.layers, x[:, 3:], past_key_values=cache, use_cache=True)
    np.testing.assert_allclose(last.numpy(), whole[:, 3:].numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(first.numpy(), whole[:, :3].numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="1 entries for 2 blocks"):
        run_blocks(stack.layers, x, past_key_values=cache[:1])


def test_lm_head_tied_uses_the_embedding_untied_owns_a_projection(local_layout):
    flow.manual_seed(0)
    tied = lm_head(20, 8, tied=True, bias=True)
    untied = lm_head(20, 8, tied=False)
    assert isinstance(tied, LMLogits) and isinstance(untied, Linear)
    assert [n for n, _ in tied.named_parameters()] == ["bias"]
    assert [n for n, _ in untied.named_parameters()] == ["weight"]
    hidden = flow.tensor(np.random.RandomState(2).standard_normal((1, 3, 8)).astype(np.float32))
    words = flow.tensor(np.random.RandomState(3).standard_normal((20, 8)).astype(np.float32))
    expected = hidden.numpy() @ words.numpy().T + tied.bias.numpy()
    np.testing.assert_allclose(lm_logits(tied, hidden, words).numpy(), expected, rtol=1e-5, atol=1e-5)
    assert lm_logits(untied, hidden, None).shape == (1, 3, 20)
