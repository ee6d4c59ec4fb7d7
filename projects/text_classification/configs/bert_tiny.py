"""The small BERT shared by this project's two configs, where the project's data lives, and the
run settings both steps share (:func:`share_run_settings`).

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


def share_run_settings(tokenization, dataloader, train, output_dir: str, **train_fields) -> None:
    """Set what pretraining and fine-tuning have in common on one config's sections: the
    learned vocabulary, loaders in the main process (the data are small), logging every 20
    steps, one checkpoint kept, and the pipeline depth; ``train_fields`` are each step's own
    (batch sizes, length of the run, warm-up)."""
    tokenization.tokenizer.vocab_file = VOCAB  # handed to every dataset by the trainer
    # the 2,000-token vocabulary is already a multiple of 8: the model keeps vocab_size=2000
    tokenization.make_vocab_size_divisible_by = 8
    dataloader.train.num_workers = 0
    dataloader.test[0].num_workers = 0
    train.update(dict(output_dir=f"output/text_classification/{output_dir}", log_period=20,
                      checkpointer=dict(period=1000, max_to_keep=1), **train_fields))
    train.dist.pipeline_num_layers = encoder_cfg["hidden_layers"]
