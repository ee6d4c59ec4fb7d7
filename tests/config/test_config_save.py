"""LazyConfig.save (YAML round trip, unserializable values) and LazyConfig.to_py."""
import logging
import os
import types

import yaml
from omegaconf import DictConfig, OmegaConf

from libai.config import LazyCall, LazyConfig, get_config, instantiate, locate


class Block:
    def __init__(self, width, act="relu"):
        self.width, self.act = width, act


def _dotted(obj):
    return f"{obj.__module__}.{obj.__qualname__}"


CONFIG_SOURCE = f"""
from libai.config import LazyCall
from configs.common.train import train
from configs.common.models.graph import graph

train.train_iter = 50
train.output_dir = "${{paths.out}}/run"
paths = dict(out="/tmp/x", missing="???")
model = LazyCall("{_dotted(Block)}")(width=4, extra=dict(scale=1e-4, flags=[True, None], name="n"))
blocks = [LazyCall("{_dotted(Block)}")(width=i) for i in range(2)]
"""


def test_py_to_yaml_to_load_round_trip_is_equal(write, tmp_path):
    cfg = LazyConfig.load(write("cfg.py", CONFIG_SOURCE))
    path = str(tmp_path / "out" / "config.yaml")
    assert LazyConfig.save(cfg, path) == []
    assert not os.path.exists(path + ".pkl")
    loaded = LazyConfig.load(path)
    assert loaded == cfg
    assert OmegaConf.is_missing(loaded.paths, "missing")
    assert loaded.train.output_dir == "/tmp/x/run"  # interpolation kept, still resolves
    assert yaml.safe_load(open(path))["train"]["output_dir"] == "${paths.out}/run"
    assert instantiate(loaded.blocks[1]).width == 1


def test_class_targets_are_saved_as_import_paths_that_build_the_same(tmp_path):
    cfg = DictConfig({"model": LazyCall(Block)(width=3), "opt": LazyCall(os.path.join)(a="x")},
                     flags={"allow_objects": True})
    path = str(tmp_path / "c.yaml")
    assert LazyConfig.save(cfg, path) == []
    loaded = LazyConfig.load(path)
    assert loaded.model._target_ == _dotted(Block)
    assert isinstance(loaded.opt._target_, str) and locate(loaded.opt._target_) is os.path.join
    built = instantiate(loaded.model)
    assert isinstance(built, Block) and built.width == 3
    # and the saved form is stable: saving the reloaded config gives the same text
    again = str(tmp_path / "again.yaml")
    LazyConfig.save(loaded, again)
    assert open(again).read() == open(path).read()


def test_builtin_defaults_round_trip(tmp_path):
    for name in ("common/train.py", "common/optim.py", "common/models/graph.py"):
        cfg = get_config(name)
        path = str(tmp_path / (name.replace("/", "_") + ".yaml"))
        LazyConfig.save(cfg, path)
        loaded = LazyConfig.load(path)
        assert LazyConfig.diff(cfg, loaded) == []


def test_unserializable_values_warn_with_paths_and_are_pickled(tmp_path, caplog):
    def local_function():
        return 1

    cfg = DictConfig(
        {
            "model": {"_target_": lambda width: width, "width": 2},
            "hooks": [{"_target_": local_function}],
            "obj": types.SimpleNamespace(a=1),
            "fine": 3,
        },
        flags={"allow_objects": True},
    )
    path = str(tmp_path / "config.yaml")
    with caplog.at_level(logging.WARNING, logger="libai.config.export"):
        problems = LazyConfig.save(cfg, path)
    assert problems == ["model._target_", "hooks[0]._target_", "obj"]
    warning = caplog.text
    assert "model._target_" in warning and "hooks[0]._target_" in warning and "obj" in warning
    assert path + ".pkl" in warning
    assert yaml.safe_load(open(path))["fine"] == 3
    restored = LazyConfig.load(path + ".pkl")
    assert instantiate(restored.model) == 2 and instantiate(restored.hooks[0]) == 1
    assert restored.obj.a == 1
    # a later save without problems removes the stale pickle
    LazyConfig.save(DictConfig({"fine": 3}), path)
    assert not os.path.exists(path + ".pkl")


def test_to_py_loadable_with_empty_prefix_is_a_config_file(write, tmp_path):
    cfg = LazyConfig.load(write("cfg.py", CONFIG_SOURCE))
    cfg.model.klass = LazyCall(Block)(width=1)
    cfg.model.klass._target_ = Block  # an object target, written by import path
    source = LazyConfig.to_py(cfg, prefix="", loadable=True)
    assert "LazyCall(" in source and f"'{_dotted(Block)}'" in source
    path = str(tmp_path / "generated.py")
    with open(path, "w") as handle:
        handle.write(source)
    loaded = LazyConfig.load(path)
    assert LazyConfig.diff(cfg, loaded) == []


def test_to_py_loadable_with_cfg_prefix_runs_against_a_namespace():
    cfg = DictConfig(
        {"train": {"lr": 0.1, "steps": [1, 2], "odd keys": {"a-b": 1}, "inf": float("inf")},
         "fn": os.path.join},
        flags={"allow_objects": True},
    )
    source = LazyConfig.to_py(cfg, loadable=True)
    assert "cfg.train = " in source and "cfg.fn = locate(" in source
    namespace = {"cfg": types.SimpleNamespace()}
    exec(source, namespace)
    rebuilt = namespace["cfg"]
    assert rebuilt.train == {"lr": 0.1, "steps": [1, 2], "odd keys": {"a-b": 1}, "inf": float("inf")}
    assert rebuilt.fn is os.path.join


def test_to_py_loadable_marks_values_it_cannot_express():
    cfg = DictConfig({"m": {"_target_": lambda: 0}}, flags={"allow_objects": True})
    source = LazyConfig.to_py(cfg, loadable=True)
    assert "placeholders" in source and "#   m._target_" in source
    compile(source, "<to_py>", "exec")  # still valid Python


# The readable form: reference text written out by hand, with black's layout rules
# (88 columns; a literal with several items is exploded; a call's arguments stay on one
# indented line when they fit there; exploded items end with a comma).
READABLE_REFERENCE = """\
cfg.data["odd key"].x = None
cfg.data.ratio = float("inf")
cfg.data.splits = [0.9, 0.05, 0.05]
cfg.data.title = 'it\\'s a "test"'
cfg.empty = {}
cfg.fn = posixpath.join
cfg.model = test_config_save.Block(
    act="gelu_with_a_long_name_to_pass_the_line", width=test_config_save.Block(width=3)
)
cfg.net = test_config_save.Block(
    act={
        "first": [1, 2, 3],
        "second": test_config_save.Block(width=1),
        "third": "a string long enough to split",
    },
    width=2,
)
cfg.paths.root = "/out"
cfg.tiny = test_config_save.Block(width=1)
cfg.train.lr = 0.001
cfg.train.output_dir = "/out/run"
"""


def test_to_py_readable_matches_a_reference_text():
    cfg = DictConfig(
        {
            "train": {"output_dir": "${paths.root}/run", "lr": 1e-3},
            "paths": {"root": "/out"},
            "tiny": LazyCall(Block)(width=1),
            "model": LazyCall(Block)(
                width=LazyCall(Block)(width=3), act="gelu_with_a_long_name_to_pass_the_line"
            ),
            "net": LazyCall(Block)(
                width=2,
                act={"second": LazyCall(Block)(width=1), "first": [1, 2, 3],
                     "third": "a string long enough to split"},
            ),
            "data": {"splits": [0.9, 0.05, 0.05], "ratio": float("inf"),
                     "title": 'it\'s a "test"', "odd key": {"x": None}},
            "empty": {},
            "fn": os.path.join,
        },
        flags={"allow_objects": True},
    )
    text = LazyConfig.to_py(cfg)
    assert text == READABLE_REFERENCE
    assert all(len(line) <= 88 for line in text.splitlines())


def test_saved_yaml_is_the_text_omegaconf_writes():
    """save_yaml dumps the plain containers directly: the text must be OmegaConf.to_yaml's for
    strings YAML would read back as something else, interpolations, '???', unicode, nesting."""
    from libai.config.export import plain_to_yaml

    data = {"a": {"yes": "yes", "null": "null", "num": "1e-3", "interp": "${b.c}", "missing": "???",
                  "empty": "", "colon": "a: b", "multi": "two\nlines", "unicode": "κατά"},
            "b": {"c": [1, 2.5, None, True, [], {}], "inf": float("inf"), "neg": -0.0},
            "list": [{"x": 1}, ["y", "${a.num}"]], "tab": "\tx", "int_key": {1: "one"}}
    assert plain_to_yaml(data) == OmegaConf.to_yaml(OmegaConf.create(data))
