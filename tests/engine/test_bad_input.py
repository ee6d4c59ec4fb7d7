"""Bad input gets an error that names the problem and the fix."""
import os

import pytest

from libai.config import LazyCall
from libai.config.errors import ConfigKeyError, InstantiationError
from libai.engine import DefaultTrainer

from toy import NoLossModel, toy_cfg


def _run(cfg):
    trainer = DefaultTrainer(cfg)
    trainer.resume_or_load(resume=False)
    return trainer.train()


def test_a_model_whose_training_output_has_no_loss(tmp_path):
    cfg = toy_cfg(str(tmp_path), model=LazyCall(NoLossModel)())
    with pytest.raises(ValueError, match=r"keys \['prediction_scores'\] but no loss"):
        _run(cfg)


def test_instance_fields_that_do_not_match_forward_list_both(tmp_path):
    cfg = toy_cfg(str(tmp_path), field="pixels")
    with pytest.raises(TypeError, match=r"batch fields \['pixels', 'labels'\] do not match ToyModel.forward\(inputs, labels\).*no argument for \['pixels'\].*no field for required \['inputs'\]"):
        _run(cfg)


def test_an_empty_dataset(tmp_path):
    with pytest.raises(InstantiationError, match=r"building 'dataloader.train'.*ValueError: the training "
                                                 r"dataset is empty \(0 samples\); check its path"):
        _run(toy_cfg(str(tmp_path), n=0))


def test_a_batch_larger_than_the_dataset(tmp_path):
    with pytest.raises(InstantiationError, match=r"ValueError: .* = 8 samples per step, but the training "
                                                 r"dataset has only 5; .* lower the batch size or use more data"):
        _run(toy_cfg(str(tmp_path), n=5))


def test_an_output_dir_that_cannot_be_written(tmp_path):
    from libai.engine.default import default_setup

    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    cfg = toy_cfg(os.path.join(str(blocker), "out"))
    with pytest.raises(PermissionError, match="is not writable.*train.output_dir="):
        default_setup(cfg)


def test_a_missing_top_level_field_is_named(tmp_path):
    cfg = toy_cfg(str(tmp_path))
    del cfg["optim"]
    with pytest.raises(ConfigKeyError, match=r"lacks required top-level field\(s\) optim:\n  optim: the "
                                             r"optimizer node, e.g. from configs.common.optim import optim"):
        DefaultTrainer(cfg)


def test_unknown_and_legacy_train_keys_warn_once_and_do_not_crash(tmp_path, caplog):
    from libai.engine.setup import reset_warnings

    reset_warnings()
    cfg = toy_cfg(str(tmp_path), eval_period=3, recompute_grad=False, train_itr=5)
    caplog.set_level("WARNING", logger="libai")
    _run(cfg)
    text = caplog.text
    assert "evaluation.eval_period" in text and "activation_checkpoint.enabled" in text
    assert "train_iter" in text
    assert text.count("recompute_grad") == 1
