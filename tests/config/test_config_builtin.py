"""get_config and the built-in default configs, the argument parser, and key accessors."""
import os
import shutil

import pytest
from omegaconf import DictConfig

from libai.config import (
    ConfigError,
    ConfigKeyError,
    default_argument_parser,
    get_config,
    get_key,
    try_get_key,
)
from libai.config.resources import find_configs_root, list_configs

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

TRAIN_DEFAULTS = {
    "output_dir": "./output", "train_micro_batch_size": 32, "global_batch_size": None,
    "num_accumulation_steps": None, "train_iter": 10000, "train_epoch": 0, "train_samples": None,
    "warmup_ratio": 0.0, "start_iter": 0, "consumed_train_samples": 0, "consumed_valid_samples": 0,
    "amp.enabled": False, "activation_checkpoint.enabled": False, "nccl_fusion_threshold_mb": 16,
    "nccl_fusion_max_ops": 24, "zero_optimization.enabled": False, "zero_optimization.stage": 1,
    "checkpointer.period": 5000, "checkpointer.max_to_keep": 100, "test_micro_batch_size": 32,
    "evaluation.enabled": True, "evaluation.evaluator._target_": "libai.evaluation.ClsEvaluator",
    "evaluation.eval_period": 5000, "evaluation.eval_iter": 100000, "evaluation.eval_metric": "Acc@1",
    "evaluation.eval_mode": "max", "load_weight": "", "log_period": 20,
    "scheduler._target_": "libai.scheduler.WarmupCosineLR", "scheduler.warmup_factor": 0.001,
    "scheduler.alpha": 0.01, "scheduler.warmup_method": "linear",
    "dist.data_parallel_size": None, "dist.tensor_parallel_size": 1,
    "dist.pipeline_parallel_size": 1, "dist.pipeline_num_layers": None,
    "dist.custom_pipeline_stage_id": None, "dist.device_type": None, "seed": 1234,
    "ema.enabled": False, "ema.decay": 0.9999, "nan_check.enabled": True, "nan_check.action": "stop",
    "early_stopping.enabled": False, "early_stopping.patience": 5,
}


def test_train_defaults_hold_every_documented_field():
    train = get_config("common/train.py").train
    for key, expected in TRAIN_DEFAULTS.items():
        value = get_key(train, key)
        assert value == expected and type(value) is type(expected), key
    assert list(train.evaluation.evaluator.topk) == [1, 5]


def test_optim_and_graph_defaults():
    import oneflow as flow

    optim = get_config("common/optim.py").optim
    assert optim._target_ is flow.optim.AdamW
    assert optim.params._target_ == "libai.optim.get_default_optimizer_params"
    assert dict(optim.params) == {
        "_target_": "libai.optim.get_default_optimizer_params", "clip_grad_max_norm": 1.0,
        "clip_grad_norm_type": 2.0, "weight_decay_norm": 0.0, "weight_decay_bias": 0.0,
    }
    assert (optim.lr, optim.weight_decay, optim.eps) == (1e-4, 0.01, 1e-8)
    assert list(optim.betas) == [0.9, 0.999]
    assert optim.do_bias_correction is True
    graph = get_config("configs/common/models/graph.py").graph
    assert (graph.enabled, graph.debug) == (False, -1)
    assert dict(graph.train_graph) == {"_target_": "libai.engine.graph.GraphBase", "is_train": True}
    assert dict(graph.eval_graph) == {"_target_": "libai.engine.graph.GraphBase", "is_train": False}


def test_get_config_returns_a_fresh_copy_each_time():
    first = get_config("common/train.py")
    first.train.train_iter = 1
    assert get_config("common/train.py").train.train_iter == 10000


def test_missing_builtin_config_lists_what_exists():
    with pytest.raises(ConfigError) as info:
        get_config("common/trian.py")
    message = str(info.value)
    assert "No built-in config 'common/trian.py'" in message
    assert "Did you mean common/train.py" in message
    assert "common/optim.py" in message and "common/models/graph.py" in message
    with pytest.raises(ConfigError, match="No built-in config"):
        get_config("../setup.py")  # nothing outside configs/


def test_get_config_from_a_directory_outside_the_repo(tmp_path, run_python):
    result = run_python(
        """
        from libai.config import get_config
        cfg = get_config("common/train.py")
        print(cfg.train.train_iter, cfg.train.evaluation.eval_metric)
        """,
        cwd=str(tmp_path),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["10000", "Acc@1"]


def _fake_install(site):
    """The layout 'pip install .' produces: configs/ copied into libai/config/configs."""
    package = os.path.join(site, "libai")
    shutil.copytree(os.path.join(REPO_ROOT, "libai", "config"), os.path.join(package, "config"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("__init__.py", "_runtime.py", "_blas.py", "_join.py"):
        shutil.copy(os.path.join(REPO_ROOT, "libai", name), package)
    shutil.copytree(os.path.join(REPO_ROOT, "configs"), os.path.join(package, "config", "configs"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    return package


def test_installed_copy_is_used_when_there_is_no_repository(tmp_path, run_python, write):
    package = _fake_install(str(tmp_path / "site"))
    assert find_configs_root(package) == os.path.join(package, "config", "configs")
    write("work/cfg.py", "from configs.common.train import train\ntrain.seed = 7\n")
    result = run_python(
        """
        import libai
        from libai.config import LazyConfig, get_config
        from libai.config.resources import find_configs_root
        print(libai.__file__)
        print(find_configs_root())
        print(get_config("common/train.py").train.log_period, LazyConfig.load("cfg.py").train.seed)
        """,
        cwd=str(tmp_path / "work"),
        env_extra={"PYTHONPATH": str(tmp_path / "site")},
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == os.path.join(package, "__init__.py")
    assert lines[1] == os.path.join(package, "config", "configs")
    assert lines[2].split() == ["20", "7"]


def test_configs_root_prefers_the_repository_and_ignores_unrelated_folders(tmp_path, write):
    write("src/libai/__init__.py", "")
    write("src/configs/common/train.py", "train = dict()\n")
    write("src/libai/config/configs/common/train.py", "train = dict(stale=True)\n")
    assert find_configs_root(str(tmp_path / "src" / "libai")) == str(tmp_path / "src" / "configs")
    write("site/configs/other.py", "")  # someone else's configs/ next to an installed libai
    write("site/libai/config/configs/common/train.py", "train = dict(installed=True)\n")
    package = str(tmp_path / "site" / "libai")
    assert find_configs_root(package) == os.path.join(package, "config", "configs")
    assert get_config("common/train.py", package_dir=package).train.installed is True
    assert list_configs(str(tmp_path / "src" / "configs")) == ["common/train.py"]
    with pytest.raises(ConfigError, match="Cannot find libai's built-in configs.*pip install"):
        find_configs_root(str(tmp_path / "nowhere" / "libai"))


def test_argument_parser_flags_and_trailing_overrides():
    parser = default_argument_parser()
    args = parser.parse_args(
        ["--config-file", "c.py", "--resume", "--fast-dev-run", "train.train_iter=5", "optim.lr=0.1"]
    )
    assert args.config_file == "c.py" and args.resume and args.fast_dev_run and not args.eval_only
    assert args.opts == ["train.train_iter=5", "optim.lr=0.1"]
    plain = parser.parse_args(["--config-file", "c.py", "--eval-only"])
    assert plain.eval_only and plain.opts == [] and not plain.resume
    help_text = parser.format_help()
    assert "--fast-dev-run" in help_text and "examples:" in help_text and "KEY=VALUE" in help_text
    with pytest.raises(SystemExit):
        parser.parse_args(["--resume"])  # --config-file is required
    assert default_argument_parser(require_config=False).parse_args([]).config_file == ""
    assert default_argument_parser(epilog="just this").epilog == "just this"


def test_flags_are_recognised_after_and_between_overrides():
    parser = default_argument_parser()
    args = parser.parse_args(
        ["train.train_iter=5", "--config-file", "c.py", "optim.lr=0.1", "--resume",
         "train.output_dir='--not-a-flag'", "--eval-only", "--fast-dev-run"]
    )
    assert args.config_file == "c.py" and args.resume and args.eval_only and args.fast_dev_run
    assert args.opts == ["train.train_iter=5", "optim.lr=0.1", "train.output_dir='--not-a-flag'"]
    # a misspelt flag is refused by name rather than read as an override
    with pytest.raises(SystemExit):
        parser.parse_args(["--config-file", "c.py", "a=1", "--resme-from-here"])


def test_try_get_key_is_lenient_and_get_key_is_strict():
    cfg = DictConfig({"a": {"b": [10, {"c": None}], "m": "???"}})
    assert try_get_key(cfg, "a.b[0]") == 10 and try_get_key(cfg, "a.b.1.c", default=5) is None
    assert try_get_key(cfg, "a.x", default=3) == 3 and try_get_key(cfg, "a.b[7]") is None
    assert try_get_key(cfg, "a.m", default="unset") == "unset"  # a '???' value counts as absent
    assert try_get_key({"plain": {"x": 1}}, "plain.x") == 1
    assert get_key(cfg, "a.b[1].c") is None
    with pytest.raises(ConfigKeyError, match=r"'a\.bb' does not exist\. Did you mean a\.b\?"):
        get_key(cfg, "a.bb")
    with pytest.raises(KeyError):  # still a KeyError for callers that expect one
        get_key(cfg, "zzz")
    with pytest.raises(ConfigKeyError, match="empty component"):
        try_get_key(cfg, "a..b")
