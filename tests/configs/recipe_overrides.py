"""Data overrides for every ready-to-launch recipe in ``configs/`` (read by test_recipes.py).

One entry per recipe file name (without ``.py``; ``examples/<name>`` for ``configs/examples``).
The recipe is shrunk by ``--smoke`` (:func:`libai.engine.smoke.apply_smoke`: few layers, small
widths, images, sequences and batches, a few iterations), as a user would; each value here is a
list of ordinary ``key=value`` overrides pointing the recipe at the harness's tiny data (and the
class count or vocabulary of that data). Keep this file a plain dict literal: other recipes add
their entry with a small edit.

Placeholders in braces are filled by the harness with tiny data it builds once per session:

- ``{bert_vocab}``: a WordPiece vocabulary file (BertTokenizer); ``{bert_prefix}``: a sentence-level
  indexed corpus tokenized with it (``tools/preprocess_data.py --split-sentences`` layout);
- ``{gpt_vocab}``, ``{gpt_merges}``: a byte-level GPT-2 vocabulary and merges file;
  ``{gpt_prefix}``: a corpus tokenized with them (with end-of-document tokens);
- ``{image_train}``, ``{image_val}``: class-per-folder trees of 32x32 RGB images (10 classes);
- ``{cifar_root}``: a folder holding ``cifar-100-python/`` batches (a few images);
- ``{ofrecord_train}``, ``{ofrecord_val}``: OFRecord parts of the same images;
- ``{text_cls_train}``, ``{text_cls_val}``: JSON-lines files of ``{"text", "label"}`` (2 labels);
- ``{sft_tokenizer}``: a Hugging Face tokenizer directory with a chat template;
  ``{sft_train}``, ``{sft_valid}``: JSON-lines chats ``{"messages": [user, assistant]}``;
- ``{output_dir}``: a fresh output folder (the harness sets ``train.output_dir`` itself).

The harness itself applies ``--smoke`` and sets the output folder and ``graph.enabled``; entries
here need not shrink anything.
"""

RECIPE_OVERRIDES = {
    'bert_large_pretrain': [
        'model.cfg.vocab_size=128',
        "tokenization.tokenizer.vocab_file='{bert_vocab}'",
        "dataloader.train.dataset.0.tokenizer.vocab_file='{bert_vocab}'",
        "dataloader.test.0.dataset.tokenizer.vocab_file='{bert_vocab}'",
        "dataloader.train.dataset.0.data_prefix='{bert_prefix}'",
        "dataloader.test.0.dataset.data_prefix='{bert_prefix}'",
    ],
    'bert_classification': [
        'model.cfg.vocab_size=128',
        "tokenization.tokenizer.vocab_file='{bert_vocab}'",
        "dataloader.train.dataset.0.tokenizer.vocab_file='{bert_vocab}'",
        "dataloader.test.0.dataset.tokenizer.vocab_file='{bert_vocab}'",
        "dataloader.train.dataset.0.data_file='{text_cls_train}'",
        "dataloader.test.0.dataset.data_file='{text_cls_val}'",
    ],
    'gpt2_pretrain': [
        'model.cfg.vocab_size=384',
        "tokenization.tokenizer.vocab_file='{gpt_vocab}'",
        "tokenization.tokenizer.merges_file='{gpt_merges}'",
        "dataloader.train.dataset.0.data_prefix='{gpt_prefix}'",
        "dataloader.test.0.dataset.data_prefix='{gpt_prefix}'",
    ],
    'gpt3_175b_pretrain': [  # GPT-3's 8×8 tensor × pipeline layout and 1536 batch, undone
        'model.cfg.vocab_size=384',
        "tokenization.tokenizer.vocab_file='{gpt_vocab}'",
        "tokenization.tokenizer.merges_file='{gpt_merges}'",
        "dataloader.train.dataset.0.data_prefix='{gpt_prefix}'",
        "dataloader.test.0.dataset.data_prefix='{gpt_prefix}'",
        'train.dist.tensor_parallel_size=1', 'train.dist.pipeline_parallel_size=1',
        'train.global_batch_size=None',
    ],
    't5_large_pretrain': [
        'model.cfg.vocab_size=256',
        "tokenization.tokenizer.vocab_file='{bert_vocab}'",
        "dataloader.train.dataset.0.tokenizer.vocab_file='{bert_vocab}'",
        "dataloader.test.0.dataset.tokenizer.vocab_file='{bert_vocab}'",
        "dataloader.train.dataset.0.data_prefix='{bert_prefix}'",
        "dataloader.test.0.dataset.data_prefix='{bert_prefix}'",
    ],
    't5_v1_1_pretrain': [
        "tokenization.tokenizer.vocab_file='{bert_vocab}'",
        "dataloader.train.dataset.0.data_prefix='{bert_prefix}'",
        "dataloader.test.0.dataset.data_prefix='{bert_prefix}'",
    ],
    'vit_imagenet': [
        'model.num_classes=4',
        'dataloader.train.mixup_func.num_classes=4',
        "dataloader.train.dataset.0.root='{image_train}'",
        "dataloader.test.0.dataset.root='{image_val}'",
    ],
    'swin_imagenet': [
        'model.num_classes=4',
        'dataloader.train.mixup_func.num_classes=4',
        "dataloader.train.dataset.0.root='{image_train}'",
        "dataloader.test.0.dataset.root='{image_val}'",
    ],
    'swin_cifar100': [
        "dataloader.train.dataset.0.root='{cifar_root}'",
        "dataloader.test.0.dataset.root='{cifar_root}'",
    ],
    'roberta_pretrain': [
        'model.cfg.vocab_size=384',
        "tokenization.tokenizer.vocab_file='{gpt_vocab}'",
        "tokenization.tokenizer.merges_file='{gpt_merges}'",
        "dataloader.train.dataset.0.tokenizer.vocab_file='{gpt_vocab}'",
        "dataloader.train.dataset.0.tokenizer.merges_file='{gpt_merges}'",
        "dataloader.test.0.dataset.tokenizer.vocab_file='{gpt_vocab}'",
        "dataloader.test.0.dataset.tokenizer.merges_file='{gpt_merges}'",
        "dataloader.train.dataset.0.data_prefix='{gpt_prefix}'",
        "dataloader.test.0.dataset.data_prefix='{gpt_prefix}'",
    ],
    'swinv2_cifar100': [
        "dataloader.train.dataset.0.root='{cifar_root}'",
        "dataloader.test.0.dataset.root='{cifar_root}'",
    ],
    'swinv2_imagenet': [
        'model.num_classes=4',
        'dataloader.train.mixup_func.num_classes=4',
        "dataloader.train.dataset.0.root='{image_train}'",
        "dataloader.test.0.dataset.root='{image_val}'",
    ],
    'alexnet_imagenet_ofrecord': [
        'model.num_classes=10',
        "dataloader.train.dataset.0.root='{ofrecord_train}'",
        "dataloader.test.0.dataset.root='{ofrecord_val}'",
    ],
    'resnet50_imagenet': [
        'model.num_classes=10',
        'dataloader.train.mixup_func.num_classes=10',
        "dataloader.train.dataset.0.root='{image_train}'",
        "dataloader.test.0.dataset.root='{image_val}'",
    ],
    'resmlp_imagenet': [
        'model.num_classes=10',
        'dataloader.train.mixup_func.num_classes=10',
        "dataloader.train.dataset.0.root='{image_train}'",
        "dataloader.test.0.dataset.root='{image_val}'",
    ],
    'examples/gpt_tiny_synthetic': [],
    'llama_lora_finetune': [
        'model.model.cfg.vocab_size=384',
        'model.rank=4',
        "tokenization.tokenizer.vocab_file='{gpt_vocab}'",
        "tokenization.tokenizer.merges_file='{gpt_merges}'",
        "dataloader.train.dataset.0.data_prefix='{gpt_prefix}'",
        "dataloader.test.0.dataset.data_prefix='{gpt_prefix}'",
    ],
    'llama_sft': [
        'model.cfg.vocab_size=320',
        "tokenization.tokenizer.pretrained_model_name_or_path='{sft_tokenizer}'",
        "dataloader.train.dataset.0.dataset.tokenizer.pretrained_model_name_or_path='{sft_tokenizer}'",
        "dataloader.train.dataset.0.dataset.source='{sft_train}'",
        "dataloader.test.0.dataset.tokenizer.pretrained_model_name_or_path='{sft_tokenizer}'",
        "dataloader.test.0.dataset.source='{sft_valid}'",
    ],
    'llama_lora_sft': [
        'model.model.cfg.vocab_size=320',
        "tokenization.tokenizer.pretrained_model_name_or_path='{sft_tokenizer}'",
        "dataloader.train.dataset.0.dataset.tokenizer.pretrained_model_name_or_path='{sft_tokenizer}'",
        "dataloader.train.dataset.0.dataset.source='{sft_train}'",
        "dataloader.test.0.dataset.tokenizer.pretrained_model_name_or_path='{sft_tokenizer}'",
        "dataloader.test.0.dataset.source='{sft_valid}'",
    ],
}
