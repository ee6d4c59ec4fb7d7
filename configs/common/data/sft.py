"""Supervised fine-tuning data: chat (or instruction) JSON lines, responses-only labels, packing.

``dataloader.train`` packs the training conversations into full sequences
(:class:`~libai.data.datasets.PackedDataset`: each sample attends only to itself, positions
restart per sample); ``dataloader.test`` holds the held-out conversations unpacked, padded to
the same length, for :func:`response_loss_evaluation` (loss and perplexity on response tokens).
The tokenizer is the model's own (a Hugging Face directory: ``tokenizer.json`` or
``tokenizer.model`` with the chat template in ``tokenizer_config.json``).

The paths are placeholders; docs/sft.md describes the formats. For instruction data
(``{"instruction", "input", "output"}``) swap :class:`ChatDataset` for
:class:`InstructionDataset` (same arguments, plus ``prompt_template`` / ``use_chat_template``).
"""
from omegaconf import OmegaConf

from libai.config import LazyCall
from libai.data.build import build_nlp_test_loader, build_nlp_train_loader
from libai.data.datasets import ChatDataset, PackedDataset

SEQ = 2048


def sft_dataset(source: str, packed: bool, tokenizer, max_seq_length: int = SEQ):
    """A chat dataset node over ``source`` (packed into full sequences when ``packed``)."""
    chats = LazyCall(ChatDataset)(
        source=source, tokenizer=tokenizer, max_seq_length=max_seq_length,
        train_on_input=False, truncation="keep_response",
    )
    return LazyCall(PackedDataset)(dataset=chats) if packed else chats


def sft_data(model_dir: str, max_seq_length: int = SEQ):
    """``(tokenization, dataloader)`` for a model whose tokenizer and chat template are in the
    Hugging Face directory ``model_dir`` (the trainer hands ``tokenization.tokenizer`` to both
    chat datasets, the packed one's included, so overriding its path is enough)."""
    tokenization = OmegaConf.create()
    tokenization.tokenizer = LazyCall("libai.tokenizer.AutoTokenizer.from_pretrained")(
        pretrained_model_name_or_path=model_dir,
    )
    dataloader = OmegaConf.create()
    dataloader.train = LazyCall(build_nlp_train_loader)(
        dataset=[sft_dataset("./data/sft/train.jsonl", True, tokenization.tokenizer, max_seq_length)],
        num_workers=0,
    )
    dataloader.test = [
        LazyCall(build_nlp_test_loader)(
            dataset=sft_dataset("./data/sft/valid.jsonl", False, tokenization.tokenizer, max_seq_length),
            num_workers=0,
        ),
    ]
    return tokenization, dataloader


tokenization, dataloader = sft_data("./models/Llama-2-7b-chat-hf")


def response_loss_evaluation(eval_period: int) -> dict:
    """``train.evaluation``: response-only loss every ``eval_period`` iterations, lower is
    better (``train.evaluation.update(response_loss_evaluation(200))``)."""
    from libai.evaluation import ResponseLossEvaluator

    return dict(enabled=True, evaluator=LazyCall(ResponseLossEvaluator)(),
                eval_period=eval_period, eval_metric="response_loss", eval_mode="min")
