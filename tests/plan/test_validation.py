"""Each validation error of the preflight, with its message; and all of them at once."""
import os

import oneflow as flow
import pytest
from oneflow.utils.data import Dataset

import libai
from libai.config import LazyCall
from libai.data.structures import DistTensorData, Instance
from tests.plan.conftest import TINY


def errors(plan):
    return [str(p) for p in plan.errors]


def one_error(plan, *fragments):
    """The plan has an error whose text holds every fragment."""
    found = [e for e in errors(plan) if all(f in e for f in fragments)]
    assert found, f"no error with {fragments} among:\n" + "\n".join(errors(plan))
    return found[0]


def test_a_valid_config_has_no_problem_and_reads_its_samples(tiny_cfg):
    plan = libai.plan(tiny_cfg)
    assert plan.ok and plan.problems == []
    assert plan.run.seq == 32 and plan.iters_per_epoch == 2048 // 8


def test_unknown_train_key_names_the_closest_known_one(tiny_cfg):
    tiny_cfg.train.train_iters = 5
    assert "Did you mean 'train.train_iter'" in one_error(libai.plan(tiny_cfg), "train.train_iters")


def test_unknown_argument_of_a_lazycall_node_suggests_the_argument(tiny_cfg):
    tiny_cfg.optim.lrr = 0.1
    one_error(libai.plan(tiny_cfg), "optim.lrr", "takes no argument 'lrr'", "did you mean 'lr'")


def test_unknown_override_is_listed_with_the_others(tiny_cfg):
    plan = libai.plan(tiny_cfg, overrides=["train.train_micro_batch_sz=4", "optim.lrr=3"])
    one_error(plan, "train.train_micro_batch_sz", "Did you mean train.train_micro_batch_size")
    one_error(plan, "optim.lrr", "does not exist")


def test_inconsistent_batch_triple(tiny_cfg):
    tiny_cfg.train.global_batch_size = 30
    tiny_cfg.train.num_accumulation_steps = 2
    one_error(libai.plan(tiny_cfg, world_size=2), "global_batch_size (30) must equal",
              "train_micro_batch_size (8) × num_accumulation_steps (2) × data_parallel_size (2) = 32")


def test_global_batch_not_a_multiple_of_micro_times_dp(tiny_cfg):
    tiny_cfg.train.global_batch_size = 20
    one_error(libai.plan(tiny_cfg, world_size=2), "20 is not a multiple of", "= 16")


def test_parallel_sizes_against_the_world_size(tiny_cfg):
    tiny_cfg.train.dist.tensor_parallel_size = 4
    one_error(libai.plan(tiny_cfg, world_size=6), "world size 6 is not divisible", "= 4")
    tiny_cfg.train.dist.data_parallel_size = 2
    one_error(libai.plan(tiny_cfg, nodes=2, devices_per_node=8),
              "data_parallel_size (2) × tensor_parallel_size (4) × pipeline_parallel_size (1) = 8",
              "the launch has 16 device(s)")


def test_nodes_times_devices_must_equal_world_size(tiny_cfg):
    one_error(libai.plan(tiny_cfg, world_size=8, nodes=2, devices_per_node=8), "--nodes 2 × --devices-per-node 8 = 16")


def test_heads_hidden_and_vocabulary_against_tensor_parallelism(tiny_cfg):
    tiny_cfg.train.dist.tensor_parallel_size = 3
    plan = libai.plan(tiny_cfg, world_size=3)
    one_error(plan, "num_attention_heads=4", "not divisible by tensor_parallel_size=3")
    one_error(plan, "vocabulary 128", "pad it to a multiple of 3")
    one_error(plan, "input size 64", "tensor_parallel_size=3")


def test_layers_against_pipeline_stages(tiny_cfg):
    tiny_cfg.train.dist.pipeline_parallel_size = 8
    one_error(libai.plan(tiny_cfg, world_size=8), "8 stages for 4 layers")
    tiny_cfg.train.dist.pipeline_parallel_size = 2
    tiny_cfg.train.dist.pipeline_num_layers = None
    one_error(libai.plan(tiny_cfg, world_size=2), "pipeline_num_layers=4")
    tiny_cfg.train.dist.pipeline_num_layers = 3
    one_error(libai.plan(tiny_cfg, world_size=2), "is 3 but the model has layers up to index 3")


def test_evaluation_metric_must_be_one_the_evaluator_reports(tiny_cfg):
    tiny_cfg.train.evaluation.eval_metric = "Acc@1"
    one_error(libai.plan(tiny_cfg), "'Acc@1' is not a metric the evaluator reports (['PPL'])")
    tiny_cfg.train.evaluation.eval_metric = "PPL"
    tiny_cfg.train.evaluation.eval_mode = "max"
    one_error(libai.plan(tiny_cfg), "PPL is better when lower")


def test_evaluation_without_test_data(tiny_cfg):
    tiny_cfg.dataloader.test = []
    one_error(libai.plan(tiny_cfg), "evaluation is on but dataloader.test is empty")


class _Samples(Dataset):
    """Two samples whose fields the test chooses."""

    def __init__(self, fields):
        self.fields = fields

    def __len__(self):
        return 2

    def __getitem__(self, i):
        return Instance(**{k: DistTensorData(v) for k, v in self.fields.items()})


def _with_samples(cfg, fields):
    cfg.dataloader.train.dataset = [LazyCall(_Samples)(fields=fields)]
    cfg.dataloader.test = []
    cfg.train.evaluation.enabled = False
    return cfg


def test_sample_fields_against_the_forward_arguments(tiny_cfg):
    ids = flow.zeros(32, dtype=flow.long)
    plan = libai.plan(_with_samples(tiny_cfg, {"input_ids": ids, "label": ids}))
    one_error(plan, "samples carry 'label'", "not an argument of GPTForPreTraining.forward(input_ids, labels")


def test_sample_dtypes_token_range_and_length(tiny_cfg):
    fields = {"input_ids": flow.full((40,), 200, dtype=flow.long), "labels": flow.zeros(40)}
    plan = libai.plan(_with_samples(tiny_cfg, fields))
    one_error(plan, "token ids span [200, 200]", "vocabulary has 128 entries")
    one_error(plan, "'labels' is oneflow.float32; ids and labels must be integers")
    one_error(plan, "samples are 40 tokens long, more than the model's 32 positions")


def test_labels_beyond_the_vocabulary(tiny_cfg):
    fields = {"input_ids": flow.zeros(32, dtype=flow.long), "labels": flow.full((32,), 500, dtype=flow.long)}
    plan = libai.plan(_with_samples(tiny_cfg, fields))
    one_error(plan, "labels reach 500 but the model predicts 128 classes")


def test_image_size_and_classes_against_the_model():
    from libai.config import LazyConfig

    cfg = LazyConfig.load(os.path.join(os.path.dirname(TINY), os.pardir, "vit_imagenet.py"))
    cfg = LazyConfig.apply_overrides(cfg, ["model.embed_dim=16", "model.depth=1", "model.num_heads=2",
                                           "model.img_size=32", "model.patch_size=16", "model.num_classes=10"])
    fields = {"images": flow.zeros(3, 28, 28), "labels": flow.tensor(12, dtype=flow.long)}
    plan = libai.plan(_with_samples(cfg, fields))
    one_error(plan, "images are (28, 28) but the model expects 32×32")
    one_error(plan, "labels reach 12 but the model predicts 10 classes")


def test_iterations_per_epoch_needs_one_global_batch(tiny_cfg):
    tiny_cfg.dataloader.train.dataset[0].num_samples = 4
    tiny_cfg.train.train_epoch = 1
    one_error(libai.plan(tiny_cfg), "the training set has 4 samples, fewer than one global batch (8)")


def test_every_problem_is_listed_and_check_raises_them_all(tiny_cfg):
    tiny_cfg.train.dist.tensor_parallel_size = 3
    tiny_cfg.train.evaluation.eval_metric = "Acc@1"
    tiny_cfg.optim.lrr = 1
    plan = libai.plan(tiny_cfg, world_size=4)
    assert len(plan.errors) >= 4
    with pytest.raises(libai.plan.PlanProblems) as info:
        plan.check()
    for problem in plan.errors:
        assert str(problem) in str(info.value)


def test_missing_data_files_are_warnings_not_errors():
    import os

    from libai.config import LazyConfig

    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    plan = libai.plan(LazyConfig.load(os.path.join(repo, "configs", "gpt2_pretrain.py")))
    assert plan.ok
    assert any(p.severity == "warning" and "missing .idx file" in p.message for p in plan.problems)
