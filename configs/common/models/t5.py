"""T5 model config: ``from configs.common.models.t5 import model``.

The defaults are a small T5 that trains on a CPU; T5-base is hidden_size=768, hidden_layers=12
(encoder) and 12 decoder layers, num_attention_heads=12, intermediate_size=3072.
A pipelined run sets ``train.dist.pipeline_num_layers`` to encoder + decoder layers
(``2 * hidden_layers`` by default).
"""
from libai.config import LazyCall
from libai.models import T5ForPreTraining

cfg = dict(
    vocab_size=30522,  # LiBai's T5 uses the BERT vocabulary
    hidden_size=256,  # T5-base: 768
    hidden_layers=4,  # encoder layers (T5-base: 12)
    decoder_layers=None,  # None = as many as the encoder
    num_attention_heads=4,  # T5-base: 12
    intermediate_size=1024,  # T5-base: 3072
    embedding_dropout_prob=0.1,
    hidden_dropout_prob=0.1,
    attention_dropout_prob=0.1,
    max_position_embeddings=512,
    initializer_range=0.02,
    layernorm_epsilon=1e-5,
    bias_gelu_fusion=False,  # CUDA-only fusions; ignored on the CPU
    bias_dropout_fusion=False,
    scale_mask_softmax_fusion=False,
    apply_query_key_layer_scaling=False,
    apply_residual_post_layernorm=False,
    amp_enabled=False,
)

model = LazyCall(T5ForPreTraining)(cfg=cfg)
