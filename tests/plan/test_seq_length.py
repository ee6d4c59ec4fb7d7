"""The planned sequence length: the data's, else the training dataset's in the config, else a
bare model's positions capped at a default the plan names, never a 128k-token preset's positions;
and the sliding window, a mask over the full product, planned as full attention."""
import os

import libai
from libai.config import LazyConfig
from libai.plan.sequence import DEFAULT_SEQ_LENGTH

from configs.common.models.llm_families import gemma_7b, mistral_7b

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _bare(model):
    """The MNIST project's config (it trains no text) with ``model`` instead: no text dataset."""
    cfg = LazyConfig.load(os.path.join(REPO, "projects", "MNIST", "configs", "config.py"))
    cfg.model = model
    return cfg


def test_a_bare_model_config_plans_the_default_and_says_so():
    """Gemma-7B's preset (8,192 positions; Qwen2-7B's 131,072 plan the same way, but building
    its rotary tables costs OneFlow 13 s of CPU)."""
    plan = libai.plan(_bare(gemma_7b()), check_data=False, overrides=["train.train_micro_batch_size=1"])
    assert plan.run.seq == DEFAULT_SEQ_LENGTH == 4096  # not the model's positions
    text = "\n".join(map(str, plan.problems))
    assert "sequence length 4,096 assumed: no dataset in the config" in text
    assert "8,192 positions" in text and "--seq-length N" in text
    chosen = libai.plan(_bare(gemma_7b()), check_data=False, seq_length=1024,
                        overrides=["train.train_micro_batch_size=1"])
    assert chosen.run.seq == 1024 and "assumed" not in "\n".join(map(str, chosen.problems))
    # the activations scale with the tokens planned (attention scores with their square)
    assert chosen.memory[0].activations < plan.memory[0].activations / 4


def test_the_training_datasets_length_in_the_config_is_planned_without_the_data():
    plan = libai.plan(LazyConfig.load(os.path.join(REPO, "configs", "bert_classification.py")),
                      check_data=False)
    assert plan.run.seq == 128  # its dataset's max_seq_length, not BERT's 512 positions
    # at most the model's positions: the samples a run can feed it
    small = libai.plan(LazyConfig.load(os.path.join(REPO, "configs", "bert_classification.py")),
                       check_data=False, overrides=["dataloader.train.dataset.0.max_seq_length=4096"])
    assert small.run.seq == 512


def test_the_command_line_plans_the_length_it_is_given():
    from libai.config.arguments import default_argument_parser
    from libai.plan.cli import plan_from_args

    args = default_argument_parser().parse_args([
        "--config-file", os.path.join(REPO, "configs", "bert_classification.py"), "--dry-run",
        "--no-data-check", "--seq-length", "64"])
    assert plan_from_args(args).run.seq == 64


def test_a_sliding_window_is_planned_as_the_full_product():
    """libai's attention applies Mistral's window as a mask over the full q·kᵀ (it saves no
    arithmetic and no memory), so the plan's attention FLOPs and scores are the full ones."""
    windowed, full = mistral_7b(), mistral_7b()
    full.cfg.sliding_window = None
    for m in (windowed, full):
        m.cfg.max_position_embeddings = 8192  # rotary tables of 8k positions: cheap to build
    a, b = (libai.plan(_bare(m), check_data=False, seq_length=8192,
                       overrides=["train.train_micro_batch_size=1"]) for m in (windowed, full))
    assert a.time.flops_per_rank == b.time.flops_per_rank
    assert a.memory[0].activations == b.memory[0].activations
