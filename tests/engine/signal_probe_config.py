"""The MNIST quickstart with the probes of signal_probe.py (slow data, slow saves), loader
workers on, for tests/engine/test_stop_signals.py. Probes are set by overrides
(``dataloader.test.0.dataset.delay=0.02``, ``model.save_marker=...``)."""
from libai.config import LazyCall, LazyConfig
from tests.engine.signal_probe import SlowDigits, SlowSaveMNIST

_quickstart = LazyConfig.load_rel("../../projects/MNIST/configs/config.py")
train, optim, graph, dataloader = (_quickstart.train, _quickstart.optim, _quickstart.graph,
                                   _quickstart.dataloader)
model = LazyCall(SlowSaveMNIST)(input_size=28 * 28, hidden_sizes=(256, 128), num_classes=10, dropout=0.1,
                                save_marker="", save_seconds=0.0)
dataloader.train.dataset = [LazyCall(SlowDigits)(root="data/mnist", train=True, image_field="inputs",
                                                 delay=0.0, marker="", init_marker="", init_seconds=0.0)]
dataloader.train.num_workers = 2
dataloader.test[0].dataset = LazyCall(SlowDigits)(root="data/mnist", train=False, image_field="inputs",
                                                  delay=0.0, marker="")
dataloader.test[0].num_workers = 2
