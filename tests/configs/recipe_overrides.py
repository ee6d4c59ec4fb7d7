"""Shrink overrides for every ready-to-launch recipe in ``configs/`` (read by test_recipes.py).

One entry per recipe file name (without ``.py``; ``examples/<name>`` for ``configs/examples``).
Each value is a list of ordinary ``key=value`` overrides that make the recipe tiny: few layers,
small widths, small images/sequences, small batches. Keep this file a plain dict literal: other
recipes add their entry with a small edit.

Placeholders in braces are filled by the harness with tiny data it builds once per session:

- ``{bert_vocab}``: a WordPiece vocabulary file (BertTokenizer); ``{bert_prefix}``: a sentence-level
  indexed corpus tokenized with it (``tools/preprocess_data.py --split-sentences`` layout);
- ``{gpt_vocab}``, ``{gpt_merges}``: a byte-level GPT-2 vocabulary and merges file;
  ``{gpt_prefix}``: a corpus tokenized with them (with end-of-document tokens);
- ``{image_train}``, ``{image_val}``: class-per-folder trees of 32x32 RGB images (10 classes);
- ``{cifar_root}``: a folder holding ``cifar-100-python/`` batches (a few images);
- ``{ofrecord_train}``, ``{ofrecord_val}``: OFRecord parts of the same images;
- ``{text_cls_train}``, ``{text_cls_val}``: JSON-lines files of ``{"text", "label"}`` (2 labels);
- ``{output_dir}``: a fresh output folder (the harness sets ``train.output_dir`` itself).

The harness itself adds ``train.train_iter``, the output folder, evaluation and checkpoint
periods, and ``graph.enabled``; entries here need not.
"""

RECIPE_OVERRIDES = {
    "bert_large_pretrain": [
        "model.cfg.hidden_layers=2", "model.cfg.hidden_size=32", "model.cfg.num_attention_heads=2",
        "model.cfg.intermediate_size=64", "model.cfg.vocab_size=128", "model.cfg.max_position_embeddings=32",
        "tokenization.tokenizer.vocab_file='{bert_vocab}'",
        "dataloader.train.dataset.0.tokenizer.vocab_file='{bert_vocab}'",
        "dataloader.test.0.dataset.tokenizer.vocab_file='{bert_vocab}'",
        "dataloader.train.dataset.0.data_prefix='{bert_prefix}'", "dataloader.train.dataset.0.max_seq_length=32",
        "dataloader.test.0.dataset.data_prefix='{bert_prefix}'", "dataloader.test.0.dataset.max_seq_length=32",
        "train.dist.pipeline_num_layers=2", "train.train_micro_batch_size=2", "train.test_micro_batch_size=2",
    ],
    "bert_classification": [
        "model.cfg.hidden_layers=2", "model.cfg.hidden_size=32", "model.cfg.num_attention_heads=2",
        "model.cfg.intermediate_size=64", "model.cfg.vocab_size=128", "model.cfg.max_position_embeddings=32",
        "tokenization.tokenizer.vocab_file='{bert_vocab}'",
        "dataloader.train.dataset.0.tokenizer.vocab_file='{bert_vocab}'",
        "dataloader.test.0.dataset.tokenizer.vocab_file='{bert_vocab}'",
        "dataloader.train.dataset.0.data_file='{text_cls_train}'", "dataloader.train.dataset.0.max_seq_length=16",
        "dataloader.test.0.dataset.data_file='{text_cls_val}'", "dataloader.test.0.dataset.max_seq_length=16",
        "train.dist.pipeline_num_layers=2", "train.train_micro_batch_size=4", "train.test_micro_batch_size=4",
    ],
    "gpt2_pretrain": [
        "model.cfg.hidden_layers=2", "model.cfg.hidden_size=32", "model.cfg.num_attention_heads=2",
        "model.cfg.intermediate_size=64", "model.cfg.vocab_size=384", "model.cfg.max_seq_length=32",
        "tokenization.tokenizer.vocab_file='{gpt_vocab}'", "tokenization.tokenizer.merges_file='{gpt_merges}'",
        "dataloader.train.dataset.0.data_prefix='{gpt_prefix}'", "dataloader.train.dataset.0.max_seq_length=32",
        "dataloader.test.0.dataset.data_prefix='{gpt_prefix}'", "dataloader.test.0.dataset.max_seq_length=32",
        "train.dist.pipeline_num_layers=2", "train.train_micro_batch_size=2", "train.test_micro_batch_size=2",
    ],
    "t5_large_pretrain": [
        "model.cfg.hidden_layers=2", "model.cfg.decoder_layers=2", "model.cfg.hidden_size=32",
        "model.cfg.num_attention_heads=2", "model.cfg.intermediate_size=64", "model.cfg.vocab_size=256",
        "model.cfg.max_position_embeddings=64",
        "tokenization.tokenizer.vocab_file='{bert_vocab}'",
        "dataloader.train.dataset.0.tokenizer.vocab_file='{bert_vocab}'",
        "dataloader.test.0.dataset.tokenizer.vocab_file='{bert_vocab}'",
        "dataloader.train.dataset.0.data_prefix='{bert_prefix}'", "dataloader.train.dataset.0.max_seq_length=32",
        "dataloader.train.dataset.0.max_seq_length_dec=16",
        "dataloader.test.0.dataset.data_prefix='{bert_prefix}'", "dataloader.test.0.dataset.max_seq_length=32",
        "dataloader.test.0.dataset.max_seq_length_dec=16",
        "train.dist.pipeline_num_layers=4", "train.train_micro_batch_size=2", "train.test_micro_batch_size=2",
    ],
    "t5_v1_1_pretrain": [
        "model.cfg.hidden_layers=2", "model.cfg.decoder_layers=2", "model.cfg.hidden_size=32",
        "model.cfg.num_attention_heads=2", "model.cfg.head_size=16", "model.cfg.intermediate_size=64",
        "tokenization.tokenizer.vocab_file='{bert_vocab}'",
        "dataloader.train.dataset.0.data_prefix='{bert_prefix}'", "dataloader.train.dataset.0.max_seq_length=32",
        "dataloader.train.dataset.0.max_seq_length_dec=16",
        "dataloader.test.0.dataset.data_prefix='{bert_prefix}'", "dataloader.test.0.dataset.max_seq_length=32",
        "dataloader.test.0.dataset.max_seq_length_dec=16",
        "train.dist.pipeline_num_layers=4", "train.train_micro_batch_size=2", "train.test_micro_batch_size=2",
    ],
    "vit_imagenet": [
        "model.img_size=32", "model.patch_size=8", "model.embed_dim=32", "model.depth=2", "model.num_heads=2",
        "model.num_classes=4", "dataloader.train.mixup_func.num_classes=4",
        "dataloader.train.dataset.0.root='{image_train}'", "dataloader.train.dataset.0.transform.size=32",
        "dataloader.test.0.dataset.root='{image_val}'", "dataloader.test.0.dataset.transform.size=32",
        "train.dist.pipeline_num_layers=2", "train.train_micro_batch_size=4", "train.test_micro_batch_size=4",
    ],
    "swin_imagenet": [
        "model.img_size=32", "model.patch_size=2", "model.embed_dim=16", "model.depths=[2, 2]",
        "model.num_heads=[2, 4]", "model.window_size=4", "model.num_classes=4",
        "dataloader.train.mixup_func.num_classes=4",
        "dataloader.train.dataset.0.root='{image_train}'", "dataloader.train.dataset.0.transform.size=32",
        "dataloader.test.0.dataset.root='{image_val}'", "dataloader.test.0.dataset.transform.size=32",
        "train.dist.pipeline_num_layers=4", "train.train_micro_batch_size=4", "train.test_micro_batch_size=4",
    ],
    "swin_cifar100": [
        "model.img_size=32", "model.patch_size=2", "model.embed_dim=16", "model.depths=[2, 2]",
        "model.num_heads=[2, 4]", "model.window_size=4",
        "dataloader.train.dataset.0.root='{cifar_root}'", "dataloader.train.dataset.0.transform.size=32",
        "dataloader.test.0.dataset.root='{cifar_root}'", "dataloader.test.0.dataset.transform.size=32",
        "train.dist.pipeline_num_layers=4", "train.train_micro_batch_size=4", "train.test_micro_batch_size=4",
    ],
    "roberta_pretrain": [
        "model.cfg.hidden_layers=2", "model.cfg.hidden_size=32", "model.cfg.num_attention_heads=2",
        "model.cfg.intermediate_size=64", "model.cfg.vocab_size=384", "model.cfg.max_position_embeddings=34",
        "tokenization.tokenizer.vocab_file='{gpt_vocab}'", "tokenization.tokenizer.merges_file='{gpt_merges}'",
        "dataloader.train.dataset.0.tokenizer.vocab_file='{gpt_vocab}'",
        "dataloader.train.dataset.0.tokenizer.merges_file='{gpt_merges}'",
        "dataloader.test.0.dataset.tokenizer.vocab_file='{gpt_vocab}'",
        "dataloader.test.0.dataset.tokenizer.merges_file='{gpt_merges}'",
        "dataloader.train.dataset.0.data_prefix='{gpt_prefix}'", "dataloader.train.dataset.0.max_seq_length=32",
        "dataloader.test.0.dataset.data_prefix='{gpt_prefix}'", "dataloader.test.0.dataset.max_seq_length=32",
        "train.dist.pipeline_num_layers=2", "train.train_micro_batch_size=2", "train.test_micro_batch_size=2",
    ],
    "swinv2_cifar100": [
        "model.img_size=32", "model.patch_size=2", "model.embed_dim=16", "model.depths=[2, 2]",
        "model.num_heads=[2, 4]", "model.window_size=4",
        "dataloader.train.dataset.0.root='{cifar_root}'", "dataloader.train.dataset.0.transform.size=32",
        "dataloader.test.0.dataset.root='{cifar_root}'", "dataloader.test.0.dataset.transform.size=32",
        "train.dist.pipeline_num_layers=4", "train.train_micro_batch_size=4", "train.test_micro_batch_size=4",
    ],
    "swinv2_imagenet": [
        "model.img_size=32", "model.patch_size=2", "model.embed_dim=16", "model.depths=[2, 2]",
        "model.num_heads=[2, 4]", "model.window_size=4", "model.num_classes=4",
        "dataloader.train.mixup_func.num_classes=4",
        "dataloader.train.dataset.0.root='{image_train}'", "dataloader.train.dataset.0.transform.size=32",
        "dataloader.test.0.dataset.root='{image_val}'", "dataloader.test.0.dataset.transform.size=32",
        "train.dist.pipeline_num_layers=4", "train.train_micro_batch_size=4", "train.test_micro_batch_size=4",
    ],
    "alexnet_imagenet_ofrecord": [
        "model.channels=[8, 16, 16, 16, 16]", "model.hidden_size=32", "model.pool_size=2",
        "model.num_classes=10",
        "dataloader.train.dataset.0.root='{ofrecord_train}'", "dataloader.train.dataset.0.transform.size=64",
        "dataloader.test.0.dataset.root='{ofrecord_val}'", "dataloader.test.0.dataset.transform.size=64",
        "train.train_micro_batch_size=4", "train.test_micro_batch_size=4",
    ],
    "resnet50_imagenet": [
        "model.depth=18", "model.width=8", "model.small_input=True", "model.num_classes=10",
        "dataloader.train.mixup_func.num_classes=10",
        "dataloader.train.dataset.0.root='{image_train}'", "dataloader.train.dataset.0.transform.size=32",
        "dataloader.test.0.dataset.root='{image_val}'", "dataloader.test.0.dataset.transform.size=32",
        "train.train_micro_batch_size=4", "train.test_micro_batch_size=4",
    ],
    "resmlp_imagenet": [
        "model.img_size=32", "model.patch_size=8", "model.embed_dim=16", "model.depth=2",
        "model.num_classes=10", "dataloader.train.mixup_func.num_classes=10",
        "dataloader.train.dataset.0.root='{image_train}'", "dataloader.train.dataset.0.transform.size=32",
        "dataloader.test.0.dataset.root='{image_val}'", "dataloader.test.0.dataset.transform.size=32",
        "train.dist.pipeline_num_layers=2", "train.train_micro_batch_size=4", "train.test_micro_batch_size=4",
    ],
    "examples/gpt_tiny_synthetic": [],
    "llama_lora_finetune": [
        "model.model.cfg.hidden_layers=2", "model.model.cfg.hidden_size=32",
        "model.model.cfg.num_attention_heads=4", "model.model.cfg.num_key_value_heads=2",
        "model.model.cfg.intermediate_size=64", "model.model.cfg.vocab_size=384",
        "model.model.cfg.max_position_embeddings=32", "model.rank=4", "model.base_weights=''",
        "tokenization.tokenizer.vocab_file='{gpt_vocab}'", "tokenization.tokenizer.merges_file='{gpt_merges}'",
        "dataloader.train.dataset.0.data_prefix='{gpt_prefix}'", "dataloader.train.dataset.0.max_seq_length=32",
        "dataloader.test.0.dataset.data_prefix='{gpt_prefix}'", "dataloader.test.0.dataset.max_seq_length=32",
        "train.dist.pipeline_num_layers=2", "train.train_micro_batch_size=2", "train.test_micro_batch_size=2",
    ],
}
