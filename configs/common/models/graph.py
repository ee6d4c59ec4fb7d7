"""Default static-graph settings: ``from configs.common.models.graph import graph``.

``enabled=False`` trains eagerly; ``True`` compiles the step into an ``nn.Graph`` (the wrappers
are ``libai.engine.graph.GraphBase``, named by string so this file loads without the engine;
LiBai's name for the class, ``libai.models.utils.GraphBase``, works too).
"""
from libai.config import LazyCall

graph = dict(
    enabled=False,  # True: run training and evaluation as static nn.Graphs
    debug=-1,  # nn.Graph.debug(level) on every graph built: -1 = quiet, 0-3 = more verbose
    # the graph wrappers; the trainer fills in the model (and the optimizer for training)
    train_graph=LazyCall("libai.engine.graph.GraphBase")(is_train=True),
    eval_graph=LazyCall("libai.engine.graph.GraphBase")(is_train=False),
)
