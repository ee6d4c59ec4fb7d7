"""LazyConfig.load: Python configs and their imports, YAML/JSON, keys, and load errors."""
import json
import sys

import pytest
from omegaconf import DictConfig, ListConfig

from libai.config import ConfigKeyError, ConfigLoadError, LazyConfig, instantiate

class Widget:
    def __init__(self, size):
        self.size = size


WIDGET = f"{Widget.__module__}.{Widget.__qualname__}"


def test_python_config_keeps_config_values_and_drops_tools(write):
    path = write(
        "cfg.py",
        f"""
        import fractions
        import math
        import os.path
        from libai.config import LazyCall
        from omegaconf import OmegaConf

        def helper(x):
            return x * 2

        class Local:
            pass

        _private = dict(a=1)
        size = helper(21)
        ratio = math.sqrt(2.0)
        names = ["a", "b"]
        opts = dict(nested=dict(flag=True), pair=(1, 2))
        model = LazyCall(fractions.Fraction)(numerator=6, denominator=LazyCall(helper)(x=2))
        other = LazyCall(Local)()
        empty = OmegaConf.create()
        """,
    )
    cfg = LazyConfig.load(path)
    assert isinstance(cfg, DictConfig)
    # numbers and strings at the top level are the file's own constants: not in the config,
    # but still reachable by name
    assert list(cfg.keys()) == ["names", "opts", "model", "other", "empty"]
    assert LazyConfig.load(path, keys=("size", "ratio")) == (42, pytest.approx(2.0 ** 0.5))
    assert isinstance(cfg.opts, DictConfig) and cfg.opts.nested.flag is True
    assert isinstance(cfg.opts.pair, ListConfig) and list(cfg.opts.pair) == [1, 2]
    import fractions

    assert cfg.model._target_ is fractions.Fraction  # classes and functions inside nodes are kept
    assert cfg.model.denominator._target_.__name__ == "helper"
    assert cfg.other._target_.__name__ == "Local"
    assert instantiate(cfg.model) == fractions.Fraction(6, 4)


def test_keys_selects_one_or_several_values(write):
    path = write("cfg.py", "a = dict(x=1)\nb = 2\nc = [3]\n")
    assert LazyConfig.load(path, keys="b") == 2
    a, c = LazyConfig.load(path, keys=("a", "c"))
    assert a.x == 1 and list(c) == [3]
    with pytest.raises(ConfigKeyError, match=r"defines no 'bb'.*defines: a, b, c"):
        LazyConfig.load(path, keys="bb")


def test_relative_imports_of_sibling_parent_and_folder_configs(write):
    write("common/train.py", "train = dict(train_iter=100, amp=dict(enabled=False))\n")
    write("common/models/base.py", "model = dict(hidden=8, layers=2)\n")
    write("proj/base.py", "from ..common.train import train\nlr = 0.5\n")
    path = write(
        "proj/cfg.py",
        """
        from .base import train, lr
        from ..common.models.base import model
        from ..common import models
        from .. import common

        train.amp.enabled = True   # imported dicts are configs: attribute access works
        model.hidden = 16
        deep = models.base.model.layers
        iters = common.train.train.train_iter
        """,
    )
    cfg = LazyConfig.load(path)
    assert cfg.train.amp.enabled is True and cfg.train.train_iter == 100
    assert cfg.model.hidden == 16
    assert LazyConfig.load(path, keys=("lr", "deep", "iters")) == (0.5, 2, 100)


def test_load_rel_loads_relative_to_the_calling_file_afresh(write, monkeypatch, tmp_path):
    write("parts/my base-1.py", "train = dict(n=1)\nname = 'base'\n")
    write("parts/user.py", "from .other import edited\n")
    write("parts/other.py", "from libai.config import LazyConfig\n"
          "edited = LazyConfig.load_rel('my base-1.py', 'train')\nedited.n = 5\n")
    path = write(
        "parts/cfg.py",
        """
        from libai.config import LazyConfig
        from .user import edited
        train, name = LazyConfig.load_rel("my base-1.py", ("train", "name"))
        """,
    )
    monkeypatch.chdir(tmp_path / "parts" / "..")  # the working directory plays no part
    cfg = LazyConfig.load(path)
    assert cfg.edited.n == 5 and cfg.train.n == 1  # each load_rel is a fresh load
    assert LazyConfig.load(path, keys="name") == "base"
    from libai.config import ConfigError

    with pytest.raises(ConfigError, match=r"load_rel\('x.py'\) must be called from a config file"):
        exec("from libai.config import LazyConfig\nLazyConfig.load_rel('x.py')", {})


def test_each_load_runs_config_files_afresh(write):
    write("base.py", "train = dict(n=1)\n")
    path = write("cfg.py", "from .base import train\ntrain.n += 1\n")
    assert LazyConfig.load(path).train.n == 2
    assert LazyConfig.load(path).train.n == 2  # not 3: the first load's edit did not leak
    assert not any("base.py" in name for name in sys.modules)


def test_a_file_imported_twice_in_one_load_runs_once(write):
    write("shared.py", "counter = dict(runs=1)\n")
    write("a.py", "from .shared import counter\ncounter.runs += 10\n")
    path = write("cfg.py", "from .a import counter as first\nfrom .shared import counter as second\n")
    cfg = LazyConfig.load(path)
    assert cfg.first.runs == 11 and cfg.second.runs == 11


def test_configs_imports_resolve_to_the_builtin_configs_from_any_directory(write, monkeypatch, tmp_path):
    path = write(
        "elsewhere/cfg.py",
        """
        from configs.common.train import train
        from configs.common.models.graph import graph
        import configs.common.optim
        train.train_iter = 7
        lr = configs.common.optim.optim.lr
        """,
    )
    monkeypatch.chdir(tmp_path)
    cfg = LazyConfig.load(path)
    assert cfg.train.train_iter == 7 and cfg.train.evaluation.eval_period == 5000
    assert cfg.graph.enabled is False and LazyConfig.load(path, keys="lr") == 1e-4


def test_configs_imports_fall_back_to_the_working_directory(write, monkeypatch, tmp_path):
    write("configs/my_base.py", "model = dict(width=3)\n")
    path = write("cfg.py", "from configs.my_base import model\n")
    monkeypatch.chdir(tmp_path)
    assert LazyConfig.load(path).model.width == 3


def test_project_modules_import_from_the_working_directory(write, tmp_path, run_python):
    write("proj/modeling/__init__.py", "")
    write(
        "proj/modeling/model.py",
        "class Net:\n    def __init__(self, width):\n        self.width = width\n",
    )
    write(
        "proj/configs/net.py",
        "from libai.config import LazyCall\nfrom modeling.model import Net\nmodel = LazyCall(Net)(width=5)\n",
    )
    result = run_python(
        """
        import os, sys
        assert os.getcwd() not in sys.path and "" not in sys.path
        from libai.config import LazyConfig, instantiate
        cfg = LazyConfig.load("configs/net.py")
        net = instantiate(cfg.model)
        print(type(net).__module__, net.width)
        """,
        cwd=str(tmp_path / "proj"),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["modeling.model", "5"]


def test_yaml_and_json_configs(write):
    yaml_path = write("c.yaml", f"model:\n  _target_: {WIDGET}\n  size: 1.0e-4\nflags: [1, 2]\n")
    json_path = write("c.json", json.dumps({"model": {"_target_": WIDGET, "size": 3}}))
    from_yaml = LazyConfig.load(yaml_path)
    assert from_yaml.model.size == pytest.approx(1e-4) and list(from_yaml.flags) == [1, 2]
    assert instantiate(from_yaml.model).size == pytest.approx(1e-4)
    assert instantiate(LazyConfig.load(json_path, keys="model")).size == 3


def test_runtime_error_reports_file_line_and_cause(write):
    path = write("bad.py", "a = dict(x=1)\n\nb = a['missing']\n")
    with pytest.raises(ConfigLoadError) as info:
        LazyConfig.load(path)
    message = str(info.value)
    assert f"'{path}', line 3" in message and "KeyError" in message and "missing" in message
    assert info.value.lineno == 3 and isinstance(info.value.__cause__, KeyError)


def test_syntax_error_reports_file_and_line(write):
    path = write("bad.py", "a = 1\nb = (2\nc = 3\n")
    with pytest.raises(ConfigLoadError, match=r"bad\.py', line \d+: SyntaxError") as info:
        LazyConfig.load(path)
    assert info.value.lineno in (2, 3)  # CPython points at the unclosed bracket or the next line


def test_error_in_an_imported_config_names_it_and_its_importer(write):
    base = write("base.py", "x = 1\ny = undefined_name\n")
    path = write("cfg.py", "z = 0\nfrom .base import x\n")
    with pytest.raises(ConfigLoadError) as info:
        LazyConfig.load(path)
    message = str(info.value)
    assert f"'{base}', line 2: NameError" in message
    assert f"imported from '{path}', line 2" in message


def test_missing_relative_import_names_the_expected_file(write, tmp_path):
    path = write("cfg.py", "x0 = 1\nfrom .nope import x\n")
    with pytest.raises(ConfigLoadError) as info:
        LazyConfig.load(path)
    assert "line 2" in str(info.value) and str(tmp_path / "nope.py") in str(info.value)


def test_missing_builtin_config_names_the_searched_places(write):
    path = write("cfg.py", "from configs.common.trian import train\n")
    expected = r"line 1: ModuleNotFoundError: no config 'configs/common/trian\.py'"
    with pytest.raises(ConfigLoadError, match=expected):
        LazyConfig.load(path)


def test_circular_config_imports_are_reported(write):
    write("a.py", "from .b import y\nx = 1\n")
    write("b.py", "from .a import x\ny = 2\n")
    with pytest.raises(ConfigLoadError, match="cycle"):
        LazyConfig.load(write("cfg.py", "from .a import x\n"))


def test_missing_file_and_unknown_suffix(write, tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        LazyConfig.load(str(tmp_path / "nothing.py"))
    with pytest.raises(Exception, match=r"unknown file type '\.toml'"):
        LazyConfig.load(write("c.toml", "a = 1\n"))


def test_data_files_that_are_not_configs(write):
    with pytest.raises(ConfigLoadError, match=r"c\.json'.*JSONDecodeError"):
        LazyConfig.load(write("c.json", "{not json"))
    with pytest.raises(ConfigLoadError, match=r"l\.yaml'.*top level must map names to values, got list"):
        LazyConfig.load(write("l.yaml", "- 1\n- 2\n"))
