"""The registry-style project, run as its README says (shrunken): its YAML config trains through
tools/train_net.py, both weighted losses are logged and fall, and the digits are learned."""
import json
import os
import subprocess
import sys

import numpy as np
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIG = os.path.join(REPO, "projects", "registry_style", "configs", "digits.yaml")


def test_yaml_config_trains_with_two_logged_losses(tmp_path):
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, os.path.join(REPO, "tools", "train_net.py"), "--config-file", CONFIG,
         "train.train_iter=200", "train.evaluation.eval_period=200", "train.log_period=10",
         f"train.output_dir={out}"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    with open(out / "metrics.json") as f:
        records = [json.loads(line) for line in f if line.strip()]
    steps = [r for r in records if "cls_loss" in r]
    assert len(steps) == 20
    assert all("recon_loss" in r and "total_loss" in r for r in steps)
    first, last = steps[0], steps[-1]
    assert last["cls_loss"] < 0.5 * first["cls_loss"]
    assert last["recon_loss"] < 0.8 * first["recon_loss"]
    accuracy = [r["Acc@1"] for r in records if "Acc@1" in r]
    assert len(accuracy) == 1 and accuracy[0] > 90.0, accuracy  # 10 classes: chance is 10
    with open(out / "config.yaml") as f:
        saved = yaml.safe_load(f)
    assert saved["train"]["ema"]["enable"] is True and saved["train"]["ema"]["decay_rate"] == 0.99
    assert (out / "model_final").is_dir()


def test_dataset_runs_its_augmentation_pipeline():
    from libai.config import LazyConfig, instantiate

    cfg = LazyConfig.load(CONFIG)
    train = instantiate(cfg.dataloader.train.dataset[0])
    test = instantiate(cfg.dataloader.test[0].dataset)
    assert (len(train), len(test)) == (1438, 359)  # sklearn's 1,797 digits, 20% held out
    image = test[5].get("images").tensor.numpy()
    assert image.shape == (1, 16, 16) and 0.0 <= image.min() and image.max() <= 1.0
    np.testing.assert_array_equal(image, test[5].get("images").tensor.numpy())  # test: no randomness
    draws = [train[0].get("images").tensor.numpy() for _ in range(8)]
    assert all(d.shape == (1, 16, 16) for d in draws)
    assert any(not np.array_equal(draws[0], d) for d in draws[1:])  # colour jitter is applied
