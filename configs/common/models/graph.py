"""Default static-graph settings: ``from configs.common.models.graph import graph``.

``enabled=False`` trains eagerly; ``True`` compiles the step into an ``nn.Graph`` (the wrappers
are ``libai.models.utils.GraphBase``, named by string so this file loads without them).
"""
from libai.config import LazyCall

graph = dict(
    enabled=False,  # True: run training and evaluation as static nn.Graphs
    debug=-1,  # nn.Graph debug verbosity (-1 = quiet)
    # the graph wrappers; the trainer fills in the model (and the optimizer for training)
    train_graph=LazyCall("libai.models.utils.GraphBase")(is_train=True),
    eval_graph=LazyCall("libai.models.utils.GraphBase")(is_train=False),
)
