"""The small BERT shared by this project's two configs, and where the project's data lives.

Width 128, 2 layers, 4 heads, 64 positions, the 2,000-token vocabulary that
``tools/train_vocab.py`` learns from the corpus (see the README for the commands).
"""
from configs.common.models.bert import cfg as _bert_defaults

DATA = "data/text_classification"
VOCAB = f"{DATA}/vocab/vocab.txt"
MAX_LEN = 64

encoder_cfg = dict(
    _bert_defaults,
    vocab_size=2000,
    hidden_size=128,
    hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=512,
    max_position_embeddings=MAX_LEN,
    hidden_dropout_prob=0.1,
    attention_dropout_prob=0.1,
)
encoder_cfg.pop("add_binary_head")  # a pretraining-head setting; each config sets its own
