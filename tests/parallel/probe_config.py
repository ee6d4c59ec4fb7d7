"""The MNIST quickstart config with :class:`ProbeMNIST` as its model (see probe_model.py).
Run tools/train_net.py from the repository root with it; the probes are set by overrides
(``model.fail_on_rank=1 model.fail_at_step=3``, ``model.loss_log=...``)."""
from libai.config import LazyCall, LazyConfig
from tests.parallel.probe_model import ProbeMNIST

_quickstart = LazyConfig.load_rel("../../projects/MNIST/configs/config.py")
train, optim, graph, dataloader = (_quickstart.train, _quickstart.optim, _quickstart.graph,
                                   _quickstart.dataloader)
model = LazyCall(ProbeMNIST)(input_size=28 * 28, hidden_sizes=(256, 128), num_classes=10, dropout=0.1,
                             loss_log="", fail_on_rank=-1, fail_at_step=-1, step_seconds=0.0, mode_log="",
                             kill_on_rank=-1, kill_at_step=-1, kill_marker="")
