"""The command-line program (libai.engine.cli): defaults before overrides, one completion per
start, and a run stopped by the NaN check ending as a failure."""
import os
import textwrap

import pytest

import libai.engine.setup as engine_setup
from libai.config import LazyConfig, default_argument_parser
from libai.config.errors import ConfigKeyError
from libai.engine import cli
from libai.engine.cli import load_config, main

from mnist_helpers import run_train_net
from toy import toy_cfg

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _partial_evaluation_config(tmp_path):
    """A config whose ``train.evaluation`` is the partial dict LiBai's tutorial writes."""
    cfg = toy_cfg(str(tmp_path / "out"), train_iter=2)
    cfg.train.update(dict(evaluation=dict(enabled=True)))
    path = str(tmp_path / "partial.yaml")
    LazyConfig.save(cfg, path)
    return path


def test_an_override_reaches_a_key_the_partial_nested_dict_left_out(tmp_path):
    path = _partial_evaluation_config(tmp_path)
    assert dict(LazyConfig.load(path).train.evaluation) == {"enabled": True}  # really partial
    args = default_argument_parser().parse_args(["--config-file", path, "train.evaluation.eval_period=2"])
    cfg = load_config(args)
    assert cfg.train.evaluation.eval_period == 2
    assert cfg.train.evaluation.enabled is True
    assert cfg.train.evaluation.eval_metric == "Acc@1"  # the other defaults are back too
    # Why the order matters: the same override on the uncompleted config is an unknown key.
    with pytest.raises(ConfigKeyError, match="evaluation.eval_period"):
        LazyConfig.apply_overrides(LazyConfig.load(path), ["train.evaluation.eval_period=2"])


def test_an_unknown_key_is_still_refused_after_completion(tmp_path):
    args = default_argument_parser().parse_args(
        ["--config-file", _partial_evaluation_config(tmp_path), "train.evaluation.eval_perio=2"])
    with pytest.raises(ConfigKeyError, match=r"key 'train.evaluation.eval_perio' does not exist in the "
                       r"config. Did you mean train.evaluation.eval_period "):
        load_config(args)


def test_main_completes_the_config_once(tmp_path, monkeypatch):
    merges = []
    real_merge = engine_setup.merge_with_defaults

    def counting_merge(user, default, path="train"):
        merges.append(path)
        return real_merge(user, default, path=path)

    monkeypatch.setattr(engine_setup, "merge_with_defaults", counting_merge)
    args = default_argument_parser().parse_args(
        ["--config-file", _partial_evaluation_config(tmp_path), "train.evaluation.eval_period=1"])
    results = main(args)
    assert merges == ["train", "graph"]  # one completion (train and graph) for load, setup and trainer
    assert set(results) == {"Acc@1", "Acc@5"}  # the default evaluator, restored by the completion


def test_the_engine_default_module_keeps_libai_names():
    from libai.engine import default, default_trainer, setup

    assert default.main is cli.main and default.launch_main is cli.launch_main
    assert default.DefaultTrainer is default_trainer.DefaultTrainer
    assert default.default_setup is setup.default_setup
    assert default.exit_now_on_failure is cli.exit_now_on_failure
    assert default.default_argument_parser is default_argument_parser


def test_a_run_stopped_by_the_nan_check_exits_nonzero_with_the_reason_last(tmp_path):
    out = str(tmp_path / "out")
    config = tmp_path / "nan_config.py"
    config.write_text(textwrap.dedent(f"""
        from libai.config import LazyCall
        from tests.engine.toy import NaNFromModel, toy_cfg

        _cfg = toy_cfg({out!r}, model=LazyCall(NaNFromModel)(nan_from=2), train_iter=6,
                       checkpointer=dict(period=100), evaluation=dict(enabled=False))
        model, train, optim, graph, dataloader = _cfg.model, _cfg.train, _cfg.optim, _cfg.graph, _cfg.dataloader
    """))
    proc = run_train_net(["--config-file", str(config)], cwd=REPO)
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-3000:]
    reason = (
        "Training failed: the loss is nan at iteration 2. Training stops without saving the weights "
        f"of this or any later iteration. No checkpoint was saved in {out} before this, so there is "
        "nothing to resume from: start again after lowering the learning rate or checking the data."
    )
    last_lines = [line for line in proc.stderr.splitlines() if line.strip()][-2:]
    assert reason in last_lines, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr  # an expected failure, not a crash
    assert not os.path.exists(os.path.join(out, "last_checkpoint"))
