"""OneFlow's classic AlexNet example, end to end on tiny data: images -> OFRecord parts ->
configs/alexnet_imagenet_ofrecord.py (shrunken) -> DefaultTrainer training with evaluation and
checkpoints -> resume (what ``--resume`` does) continues exactly, and ``train.load_weight``
initialises a new run with the saved weights."""
import os

import numpy as np
import pytest
from PIL import Image

from libai.config import LazyConfig
from libai.data.datasets.ofrecord import convert_image_folder_to_ofrecord
from libai.engine import DefaultTrainer

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RECIPE = os.path.join(REPO, "configs", "alexnet_imagenet_ofrecord.py")
ITERS = 4


@pytest.fixture(scope="module")
def ofrecord_dirs(tmp_path_factory):
    """Two classes of 32×32 images (bright red squares vs dark blue ones), as OFRecord parts."""
    root = tmp_path_factory.mktemp("alexnet_data")
    rng = np.random.RandomState(0)
    for split, count in (("train", 8), ("val", 4)):
        for label, colour in enumerate(((220, 40, 40), (30, 30, 160))):
            folder = root / "images" / split / f"class{label}"
            folder.mkdir(parents=True)
            for i in range(count // 2):
                pixels = np.clip(np.array(colour) + rng.randint(-20, 20, (32, 32, 3)), 0, 255)
                Image.fromarray(pixels.astype(np.uint8)).save(folder / f"{i}.png")
        convert_image_folder_to_ofrecord(str(root / "images" / split), str(root / split), num_parts=2)
    return str(root / "train"), str(root / "val")


def _cfg(data, output_dir, **extra):
    train_dir, val_dir = data
    overrides = {
        "model.channels": "[8, 16, 16, 16, 16]", "model.hidden_size": 32, "model.pool_size": 2,
        "model.num_classes": 2, "model.dropout": 0.0,
        "dataloader.train.dataset.0.root": repr(train_dir),
        "dataloader.train.dataset.0.transform.size": 64,
        "dataloader.test.0.dataset.root": repr(val_dir),
        "dataloader.test.0.dataset.transform.size": 64,
        "dataloader.train.num_workers": 0, "dataloader.test.0.num_workers": 0,
        "train.train_micro_batch_size": 4, "train.test_micro_batch_size": 4,
        "train.train_epoch": 0, "train.train_iter": ITERS, "train.log_period": 1,
        "train.checkpointer.period": 2, "train.evaluation.eval_period": ITERS,
        "train.evaluation.evaluator.topk": "[1]", "train.evaluation.eval_metric": "'Acc@1'",
        "train.output_dir": repr(output_dir), "train.dist.device_type": "'cpu'",
    }
    overrides.update(extra)
    cfg = LazyConfig.load(RECIPE)
    return LazyConfig.apply_overrides(cfg, [f"{k}={v}" for k, v in overrides.items()])


def _weights(trainer):
    return {k: v.numpy().copy() for k, v in trainer.model.state_dict().items()}


def _run(cfg, resume=False):
    trainer = DefaultTrainer(cfg)
    trainer.resume_or_load(resume=resume)
    start = (trainer.start_iter, _weights(trainer))
    results = trainer.train()
    return trainer, start, results


def test_alexnet_trains_from_ofrecord_saves_resumes_and_loads(ofrecord_dirs, tmp_path):
    straight, _, results = _run(_cfg(ofrecord_dirs, str(tmp_path / "straight")))
    assert type(straight.model).__name__ == "AlexNet"
    assert set(results) >= {"Acc@1"} and 0.0 <= results["Acc@1"] <= 100.0
    saved = sorted(os.listdir(tmp_path / "straight"))
    assert {"model_0000001", "model_final", "last_checkpoint"} <= set(saved), saved
    final = _weights(straight)

    # --resume from the mid-run checkpoint (iteration 2) reproduces the last two steps exactly
    resumed_dir = tmp_path / "resumed"
    resumed_dir.mkdir()
    os.symlink(tmp_path / "straight" / "model_0000001", resumed_dir / "model_0000001")
    (resumed_dir / "last_checkpoint").write_text("model_0000001")
    resumed, (start_iter, _), _ = _run(_cfg(ofrecord_dirs, str(resumed_dir)), resume=True)
    assert start_iter == 2
    for key, value in final.items():
        np.testing.assert_allclose(_weights(resumed)[key], value, rtol=1e-5, atol=1e-7, err_msg=key)

    # train.load_weight: a fresh run (iteration 0) starting from the saved weights
    path = str(tmp_path / "straight" / "model_final")
    cfg = _cfg(ofrecord_dirs, str(tmp_path / "loaded"), **{"train.load_weight": repr(path)})
    loaded = DefaultTrainer(cfg)
    loaded.resume_or_load(resume=False)
    assert loaded.start_iter == 0
    for key, value in final.items():
        np.testing.assert_array_equal(_weights(loaded)[key], value, err_msg=key)
