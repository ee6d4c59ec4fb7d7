"""The body every supervised fine-tuning recipe shares: ``configs/<family>_sft.py`` (full
fine-tuning) and ``configs/<family>_lora_sft.py`` (LoRA) are one call each::

    model, train, optim, graph, dataloader, tokenization = full_sft(
        qwen2_7b(), model_dir="./models/Qwen2-7B-Instruct", name="qwen2_sft")

``model_dir`` is the model's Hugging Face directory, read for three things: the weights
(``config.json`` + ``*.safetensors``: ``train.load_weight`` for full fine-tuning,
``model.base_weights`` for LoRA), the tokenizer (``tokenizer.json`` or ``tokenizer.model``) and
the chat template (``tokenizer_config.json`` or ``chat_template.jinja``). The recipes name a
placeholder under ``./models/``; a run whose folder is not there stops with a message naming
the path, and ``--smoke`` makes a tiny stand-in tokenizer directory instead (docs/sft.md).

Data (configs/common/data/sft.py): chat JSON lines, labels on assistant turns only, packed into
2,048-token sequences; the held-out split's response-only loss is the evaluation.
"""
from libai.config import LazyCall
from libai.models.utils.lora import lora_model

from .data.sft import SEQ, response_loss_evaluation, sft_data
from .models.graph import graph
from .optim import optim
from .train import train

# LoRA's targets, by libai's module names, which are the same in every family built on the
# Llama skeleton (Llama, Qwen2, Qwen3, Mistral, Gemma, Phi-3). A Hugging Face checkpoint's
# q_proj is ``query``; k_proj and v_proj are one ``key_value``; o_proj is ``dense``; gate_proj,
# up_proj and down_proj are ``dense_h_to_4h``, ``dense_h_to_4h_linear`` and ``dense_4h_to_h``.
# Phi-3's fused qkv_proj is split on import into ``query`` + ``key_value`` and its gate_up_proj
# into ``dense_h_to_4h`` + ``dense_h_to_4h_linear`` (libai.models.pretrained.families.phi3), so
# the same list adapts every projection of every family.
LORA_TARGETS = ["query", "key_value", "dense", "dense_h_to_4h", "dense_h_to_4h_linear", "dense_4h_to_h"]


def _common(model_dir: str, name: str):
    """The training settings both methods share; returns ``(tokenization, dataloader)``."""
    tokenization, dataloader = sft_data(model_dir)
    optim.weight_decay = 0.0
    train.update(dict(output_dir=f"./output/{name}", train_epoch=3, train_iter=0, warmup_ratio=0.03,
                      log_period=10))
    train.activation_checkpoint.enabled = True
    train.amp.enabled = True  # bfloat16/float16 on CUDA; the CPU runs float32
    train.evaluation.update(response_loss_evaluation(200))
    return tokenization, dataloader


def full_sft(model, model_dir: str, name: str):
    """Full fine-tuning of ``model`` (a model node at its published size) from the weights in
    ``model_dir``: data parallel over every rank with ZeRO stage 2 (a Graph-mode feature in
    OneFlow 0.9), micro-batches of 1 × 8 accumulation steps, lr 2e-5. Returns ``(model, train,
    optim, graph, dataloader, tokenization)``."""
    tokenization, dataloader = _common(model_dir, name)
    model.cfg.max_position_embeddings = SEQ
    optim.lr = 2e-5
    train.update(dict(load_weight=model_dir, train_micro_batch_size=1, num_accumulation_steps=8,
                      test_micro_batch_size=1))
    graph.enabled = True
    train.zero_optimization.enabled = True
    train.zero_optimization.stage = 2
    train.dist.pipeline_num_layers = model.cfg.hidden_layers
    return model, train, optim, graph, dataloader, tokenization


def lora_sft(base, model_dir: str, name: str, rank: int = 16):
    """LoRA fine-tuning of ``base`` (a model node at its published size) loaded from
    ``model_dir``: rank-``rank`` adapters (alpha 2 × rank, dropout 0.05) on every projection
    (:data:`LORA_TARGETS`), everything else frozen; micro-batches of 2 × 4 accumulation steps,
    lr 2e-4. Returns ``(model, train, optim, graph, dataloader, tokenization)``."""
    tokenization, dataloader = _common(model_dir, name)
    base.cfg.max_position_embeddings = SEQ
    model = LazyCall(lora_model)(model=base, target_modules=list(LORA_TARGETS), rank=rank,
                                 alpha=2.0 * rank, dropout=0.05, base_weights=model_dir)
    optim.lr = 2e-4
    train.update(dict(train_micro_batch_size=2, num_accumulation_steps=4, test_micro_batch_size=2))
    train.dist.pipeline_num_layers = base.cfg.hidden_layers
    return model, train, optim, graph, dataloader, tokenization
