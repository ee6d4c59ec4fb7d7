"""docs/registry_configs.md: its LossKeyCompose example computes what its comment says, and its
YAML config loads and builds (model, dataset, a sample through the pipeline)."""
import numpy as np

import oneflow as flow

from tests.doc_pages import REPO_ROOT as REPO
from tests.doc_pages import only_block

PAGE = "registry_configs.md"


def _block(lang, containing):
    return only_block(PAGE, lang, containing)


def test_loss_key_compose_example():
    rng = np.random.default_rng(0)
    logits, labels = rng.normal(size=(4, 3)).astype(np.float32), np.array([0, 2, 1, 2])
    pred, target = rng.normal(size=(4, 2)).astype(np.float32), rng.normal(size=(4, 2)).astype(np.float32)
    scope = {"logits": flow.tensor(logits), "labels": flow.tensor(labels), "pred": flow.tensor(pred),
             "target": flow.tensor(target)}
    exec(_block("python", "LossKeyCompose(dict("), scope)
    losses = scope["losses"]
    log_prob = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    ce = -log_prob[np.arange(4), labels].mean()
    np.testing.assert_allclose(losses["loss1"].numpy(), 10 * ce, rtol=1e-5)
    expected = np.abs(pred - target).mean() + 0.5 * ((pred - target) ** 2).mean()
    np.testing.assert_allclose(losses["loss2"].numpy(), expected, rtol=1e-5)


def test_yaml_example_builds(tmp_path, monkeypatch):
    from libai.config import LazyConfig, instantiate

    path = tmp_path / "example.yaml"
    path.write_text(_block("yaml", "DigitsNet"))
    monkeypatch.syspath_prepend(REPO)
    cfg = LazyConfig.load(str(path))
    model = instantiate(cfg.model)
    assert type(model).__name__ == "DigitsNet"
    assert model.loss.weights == {"cls_loss": [1.0], "recon_loss": [2.0]}
    dataset = instantiate(cfg.dataloader.train.dataset[0])
    assert tuple(dataset[0].get("images").tensor.shape) == (1, 16, 16)
