"""The MNIST quickstart: an MLP on 28×28 handwritten digits.

Data: MNIST IDX files under ``data/mnist`` (``make quickstart`` writes scikit-learn's real
handwritten digits there with ``tools/make_digits_mnist.py``; the real MNIST files work too).
Run from the repository root:

    python tools/train_net.py --config-file projects/MNIST/configs/config.py
"""
from omegaconf import OmegaConf

from libai.config import LazyCall, get_config
from libai.data.build import build_image_test_loader, build_image_train_loader
from libai.data.datasets import MNISTDataset
from libai.evaluation import ClsEvaluator
from projects.MNIST.modeling.model import MNISTClassifier

# Defaults for every run, then what this project changes.
train = get_config("common/train.py").train
optim = get_config("common/optim.py").optim
graph = get_config("common/models/graph.py").graph

DATA_ROOT = "data/mnist"

model = LazyCall(MNISTClassifier)(input_size=28 * 28, hidden_sizes=(256, 128), num_classes=10, dropout=0.1)

dataloader = OmegaConf.create()
dataloader.train = LazyCall(build_image_train_loader)(
    dataset=[LazyCall(MNISTDataset)(root=DATA_ROOT, train=True, image_field="inputs")],
    num_workers=0,
)
dataloader.test = [
    LazyCall(build_image_test_loader)(
        dataset=LazyCall(MNISTDataset)(root=DATA_ROOT, train=False, image_field="inputs"),
        num_workers=0,
    )
]

optim.lr = 2e-3
optim.weight_decay = 1e-4

graph.enabled = False

train.update(
    dict(
        output_dir="output/mnist",
        train_micro_batch_size=64,
        test_micro_batch_size=128,
        train_epoch=30,
        train_iter=0,
        warmup_ratio=0.05,
        log_period=20,
        checkpointer=dict(period=200, max_to_keep=3),
        # A partial dict: the other evaluation defaults (evaluator, eval_iter, ...) are kept.
        evaluation=dict(
            enabled=True,
            evaluator=LazyCall(ClsEvaluator)(topk=(1, 5)),
            eval_period=200,
            eval_metric="Acc@1",
            eval_mode="max",
        ),
    )
)
