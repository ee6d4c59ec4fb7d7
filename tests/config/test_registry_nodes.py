"""instantiate() and dict(name=...) nodes: where each name is looked up, what stays plain data,
the errors, YAML, mixing with LazyCall, and the model's loss/ema keys."""
import pytest
from omegaconf import DictConfig

import oneflow as flow
from libai.config import (
    InstantiationError,
    LazyCall,
    LazyConfig,
    instantiate,
    instantiate_with,
    is_node,
    lift_model_ema,
)
from libai.config.name_nodes import section_of
from libai.config.registry import DATASET_REGISTRY, LOSS_REGISTRY, MODEL_REGISTRY, Registry


class Net(flow.nn.Module):
    def __init__(self, width: int = 2) -> None:
        super().__init__()
        self.fc = flow.nn.Linear(2, width)


class Wrapper(flow.nn.Module):
    def __init__(self, generator, loss=None, extra=None) -> None:
        super().__init__()
        self.generator, self.loss, self.extra = generator, loss, extra


class Points:
    def __init__(self, n: int = 3, transforms=None) -> None:
        self.n, self.transforms = n, transforms


@pytest.fixture
def registered():
    """Net and Wrapper in MODEL, Points in DATASET; removed afterwards."""
    MODEL_REGISTRY.register(Net, name="RegTestNet")
    MODEL_REGISTRY.register(Wrapper, name="RegTestWrapper")
    DATASET_REGISTRY.register(Points, name="RegTestPoints")
    yield
    MODEL_REGISTRY.unregister("RegTestNet")
    MODEL_REGISTRY.unregister("RegTestWrapper")
    DATASET_REGISTRY.unregister("RegTestPoints")


def test_section_of_reads_the_key_path():
    assert section_of("model") == ("MODEL", True)
    assert section_of("model.generator") == ("MODEL", False)
    assert section_of("dataloader.train.dataset[1]") == ("DATASET", True)
    assert section_of("dataloader.test[0].dataset") == ("DATASET", True)
    assert section_of("dataloader.train.dataset.transforms[2]") == ("TRANSFORM", True)
    assert section_of("train.scheduler") == ("SCHEDULER", True)
    assert section_of("optim") == ("OPTIMIZER", True)
    assert section_of("train.evaluation.evaluator") == ("EVALUATOR", True)
    assert section_of("train.output") is None
    assert section_of("") is None


def test_model_section_builds_nested_nodes_from_the_registry(registered):
    cfg = DictConfig({"model": {"name": "RegTestWrapper", "generator": {"name": "RegTestNet", "width": 5}}})
    model = instantiate(cfg.model)
    assert isinstance(model, Wrapper) and isinstance(model.generator, Net)
    assert model.generator.fc.out_features == 5


def test_unknown_name_at_a_section_key_is_an_error_with_suggestions(registered):
    cfg = DictConfig({"model": {"name": "RegTestWraper"}})
    with pytest.raises(InstantiationError) as info:
        instantiate(cfg.model)
    message = str(info.value)
    assert message.startswith("Cannot build 'model': no 'RegTestWraper' in the MODEL registry; "
                              "did you mean 'RegTestWrapper'")
    assert message.endswith("says so with _registry_=None.")


def test_plain_data_with_a_name_is_left_alone(registered):
    cfg = DictConfig({"model": {"name": "RegTestWrapper", "generator": {"name": "RegTestNet"},
                                "extra": {"name": "just a label", "size": 3}},
                      "meta": {"name": "experiment-7", "tags": ["a"]}})
    model = instantiate(cfg.model)
    assert model.extra == {"name": "just a label", "size": 3}
    assert instantiate(cfg.meta) == {"name": "experiment-7", "tags": ["a"]}
    assert not is_node(cfg.meta)


def test_registry_key_picks_the_registry_or_marks_data(registered):
    plain = {"model": {"name": "RegTestNet", "_registry_": None, "width": 4}}
    assert instantiate(DictConfig(plain).model) == {"name": "RegTestNet", "width": 4}
    other = Registry("REGTESTBACKBONE")
    other.register(Points, name="RegTestNet")  # same name, another registry
    try:
        node = DictConfig({"model": {"name": "RegTestNet", "_registry_": "regtestbackbone", "n": 9}}).model
        built = instantiate(node)
        assert isinstance(built, Points) and built.n == 9
    finally:
        other.unregister("RegTestNet")


def test_ambiguous_name_outside_sections_asks_for_registry_key(registered):
    other = Registry("REGTESTBACKBONE")
    other.register(Points, name="RegTestNet")
    with pytest.raises(InstantiationError) as info:
        instantiate({"thing": {"name": "RegTestNet"}})
    other.unregister("RegTestNet")
    assert str(info.value) == (
        "Cannot build 'thing': 'RegTestNet' is registered in several registries (MODEL, "
        "REGTESTBACKBONE) and its place in the config does not tell which is meant; add "
        "_registry_='MODEL' (or another of them) to the node"
    )
    # in the model section the section's registry wins
    assert isinstance(instantiate(DictConfig({"model": {"name": "RegTestNet"}}).model), Net)


def test_unique_name_resolves_anywhere(registered):
    built = instantiate({"anything": {"name": "RegTestPoints", "n": 2}})
    assert isinstance(built["anything"], Points) and built["anything"].n == 2


def test_dataset_and_transform_sections_with_lazycall_loader(registered):
    def loader(dataset, batch_size):
        return dataset, batch_size

    cfg = DictConfig({"dataloader": {"train": LazyCall(loader)(
        dataset=[{"name": "RegTestPoints", "n": 4,
                  "transforms": [{"name": "RandomFlip", "direction": "horizontal", "p": 1.0}]}],
        batch_size=2)}}, flags={"allow_objects": True})
    datasets, batch = instantiate(cfg.dataloader.train)
    assert batch == 2 and datasets[0].n == 4
    from libai.data.augmentation import RandomFlip

    assert isinstance(datasets[0].transforms[0], RandomFlip)


def test_instantiate_with_fills_arguments_of_a_registry_node():
    cfg = DictConfig({"train": {"scheduler": {"name": "WarmupCosineLR", "max_iter": 100,
                                              "warmup_factor": 0.1, "warmup_iter": 10}}})
    assert is_node(cfg.train.scheduler)
    optimizer = flow.optim.SGD(flow.nn.Linear(2, 2).parameters(), lr=1.0)
    scheduler = instantiate_with(cfg.train.scheduler, optimizer=optimizer)
    from libai.scheduler import WarmupCosineLR

    assert isinstance(scheduler, WarmupCosineLR) and scheduler.max_iter == 100
    assert cfg.train.scheduler.name == "WarmupCosineLR" and "optimizer" not in cfg.train.scheduler


def test_model_loss_dict_becomes_a_loss_key_compose_and_ema_is_not_an_argument(registered):
    cfg = DictConfig({"model": {
        "name": "RegTestWrapper",
        "generator": {"name": "RegTestNet"},
        "loss": {"loss1": [{"name": "CrossEntropyLoss", "param": {"lambda_weight": 10.0}}],
                 "loss2": [{"name": "L1Loss", "param": {"lambda_weight": 1.0},
                            "input_name": ["pred", "target"]}]},
        "ema": {"enable": True, "decay_rate": 0.995},
    }})
    model = instantiate(cfg.model)  # Wrapper takes no ``ema``: it was not passed
    compose = model.loss
    assert isinstance(compose, LOSS_REGISTRY.get("LossKeyCompose"))
    assert compose.weights == {"loss1": [10.0], "loss2": [1.0]}
    assert compose.input_names == {"loss1": [("pred", "target")], "loss2": [("pred", "target")]}


def test_lift_model_ema_moves_it_to_train_ema_and_the_hook_reads_it():
    cfg = DictConfig({"model": {"name": "RegTestNet", "ema": {"enable": True, "decay_rate": 0.995}},
                      "train": {"ema": {"enabled": False, "decay": 0.9999, "enable": None,
                                        "decay_rate": None}}})
    assert lift_model_ema(cfg) is True
    assert "ema" not in cfg.model
    assert dict(cfg.train.ema) == {"enabled": False, "decay": 0.9999, "enable": True, "decay_rate": 0.995}
    assert lift_model_ema(cfg) is False  # nothing left to move
    from libai.engine.hooks import EMAHook

    hook = EMAHook.from_config(flow.nn.Linear(2, 2), cfg.train.ema)
    assert hook is not None and hook.decay == 0.995
    lazy = DictConfig({"model": LazyCall(Wrapper)(generator=None, extra={"ema": 1}), "train": {}},
                      flags={"allow_objects": True})
    assert lift_model_ema(lazy) is False  # a LazyCall model's arguments are its own


def test_yaml_config_with_name_nodes_and_custom_imports(tmp_path, write, monkeypatch):
    write("regtest_yaml_mod.py", """
        from libai.config import MODEL_REGISTRY

        @MODEL_REGISTRY.register()
        class RegTestYamlModel:
            def __init__(self, depth=1, head=None):
                self.depth, self.head = depth, head
    """)
    path = write("cfg.yaml", """
        custom_imports: [regtest_yaml_mod]
        model:
          name: RegTestYamlModel
          depth: 3
          head: {_target_: collections.OrderedDict, a: 1}
    """)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        cfg = LazyConfig.load(path)
        model = instantiate(cfg.model)
        assert model.depth == 3 and dict(model.head) == {"a": 1}
    finally:
        MODEL_REGISTRY.unregister("RegTestYamlModel")


def test_custom_imports_error_names_the_module(write):
    path = write("bad.yaml", "custom_imports: [no_such_module_xyz]\nmodel: {}\n")
    with pytest.raises(Exception) as info:
        LazyConfig.load(path)
    assert "custom_imports of" in str(info.value) and "'no_such_module_xyz'" in str(info.value)


def test_python_config_mixes_lazycall_and_name_nodes(write, registered):
    path = write("mixed.py", """
        from libai.config import LazyCall

        model = dict(
            name="RegTestWrapper",
            generator=dict(name="RegTestNet", width=6),
            extra=LazyCall("collections.OrderedDict")(a=1),
        )
    """)
    cfg = LazyConfig.load(path)
    model = instantiate(cfg.model)
    assert isinstance(model, Wrapper) and model.generator.fc.out_features == 6
    assert dict(model.extra) == {"a": 1}


def test_an_unresolved_name_close_to_a_registered_one_is_logged(registered, caplog):
    with caplog.at_level("WARNING", logger="libai.config.name_nodes"):
        assert instantiate({"notes": {"name": "RegTestPoint"}}) == {"notes": {"name": "RegTestPoint"}}
    assert "'notes' has name='RegTestPoint', which no registry knows, so it stays a plain dict; " \
           "did you mean 'RegTestPoints'?" in caplog.text


def test_filling_arguments_of_an_unregistered_name_is_an_error():
    with pytest.raises(TypeError) as info:
        instantiate({"name": "NoSuchRegisteredThing"}, x=1)
    assert str(info.value) == (
        "instantiate(cfg, **arguments) replaces arguments of a node; the config root has "
        "name='NoSuchRegisteredThing', which no registry knows, so it is plain data. Register "
        "the class, or set _registry_ to the registry that has it"
    )
