"""How a run ends on an error (libai.engine.user_errors, libai.engine.cli.launch_main): a user's
mistake prints its message once without a traceback, LIBAI_FULL_ERROR=1 shows the traceback,
and a bug (an error Python raises inside libai, or one from a project's own code) keeps it."""
import os

import pytest
from omegaconf import OmegaConf

from libai.config import LazyCall, default_argument_parser, instantiate
from libai.config.errors import InstantiationError
from libai.engine import cli
from libai.engine.cli import launch_main, load_config
from libai.engine.smoke import apply_smoke
from libai.engine.user_errors import FULL_ERROR_ENV, is_user_error, root_cause
from libai.tokenizer import GPT2Tokenizer

from mnist_helpers import MNIST_CONFIG, REPO, run_train_net

HINT = f"Set {FULL_ERROR_ENV}=1 to see it.)"


def _raised(fn):
    with pytest.raises(Exception) as info:
        fn()
    return info.value


def _missing_vocabulary():
    node = LazyCall(GPT2Tokenizer)(vocab_file="no/such/vocab.json", merges_file="no/such/merges.txt")
    return _raised(lambda: instantiate(node))


def test_a_missing_vocabulary_a_bad_key_and_a_word_for_a_number_are_the_users():
    error = _missing_vocabulary()
    assert isinstance(error, InstantiationError) and isinstance(root_cause(error), FileNotFoundError)
    assert is_user_error(error)
    parse = default_argument_parser().parse_args
    for override in ("train.train_itr=3", "train.train_iter=ten"):
        assert is_user_error(_raised(lambda: load_config(parse(["--config-file", MNIST_CONFIG, override]))))


def test_an_error_python_raises_inside_libai_or_in_a_projects_code_is_a_bug():
    cfg = OmegaConf.create({"train": {"train_micro_batch_size": "x"}})
    crash = _raised(lambda: apply_smoke(cfg))  # int('x') deep in libai: not a message for users
    assert isinstance(crash, ValueError) and not is_user_error(crash)
    assert not is_user_error(_raised(lambda: apply_smoke(None)))  # TypeError from Python, in libai

    def projects_own_check():
        raise ValueError("the project's own check")  # not libai's: its traceback is wanted

    assert not is_user_error(_raised(projects_own_check))
    assert not is_user_error(_raised(lambda: instantiate(LazyCall(projects_own_check)())))


@pytest.mark.parametrize("argv, first_line", [
    (["train.train_itr=3"], "OverrideKeyError: Override 'train.train_itr=3': key 'train.train_itr' does not "
                            "exist in the config. Did you mean train.train_iter?"),
    (["train.train_iter=ten"], "ValueError: Override train.train_iter='ten': train.train_iter is a number"),
])
def test_the_command_line_prints_a_users_mistake_once_without_a_traceback(argv, first_line, capsys, monkeypatch):
    monkeypatch.delenv(FULL_ERROR_ENV, raising=False)
    with pytest.raises(SystemExit) as ended:
        launch_main(argv=["--config-file", MNIST_CONFIG, *argv])
    assert ended.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith(first_line) and err.count(first_line) == 1, err
    assert err.rstrip().endswith(HINT) and "Traceback" not in err


def test_a_missing_config_file_lists_the_configs_there_are(capsys, tmp_path, monkeypatch):
    monkeypatch.delenv(FULL_ERROR_ENV, raising=False)
    monkeypatch.chdir(REPO)
    with pytest.raises(SystemExit):
        launch_main(argv=["--config-file", "configs/gpt2_pretrian.py"])
    err = capsys.readouterr().err
    assert err.startswith("FileNotFoundError: --config-file configs/gpt2_pretrian.py: no such file")
    assert "Available configs:\n  configs/gpt2_pretrain.py" in err and "Traceback" not in err


def test_full_error_raises_a_users_mistake_and_a_bug_always_raises(capsys, monkeypatch):
    monkeypatch.setenv(FULL_ERROR_ENV, "1")
    with pytest.raises(KeyError, match="train.train_itr"):  # Python prints its traceback
        launch_main(argv=["--config-file", MNIST_CONFIG, "train.train_itr=3"])
    monkeypatch.delenv(FULL_ERROR_ENV)
    monkeypatch.setattr(cli, "load_config", lambda args: apply_smoke(None))  # a crash inside libai
    with pytest.raises(TypeError):
        launch_main(argv=["--config-file", MNIST_CONFIG])
    assert HINT not in capsys.readouterr().err


def test_train_net_on_a_missing_vocabulary_says_it_once_and_the_full_error_on_request(tmp_path):
    """The README's first command without the data: one message, not two chained tracebacks;
    LIBAI_FULL_ERROR=1 gives them back. The run's log.txt has the message too."""
    config = os.path.join(REPO, "configs", "gpt2_pretrain.py")
    args = ["--config-file", config, f"train.output_dir='{tmp_path / 'out'}'"]
    env = {key: value for key, value in os.environ.items() if key != FULL_ERROR_ENV}
    short = run_train_net(args, cwd=str(tmp_path), env=env)
    full = run_train_net(args, cwd=str(tmp_path), env={**env, FULL_ERROR_ENV: "1"})
    message = "BPE vocabulary file (vocab.json) not found: './data_test/gpt_data/gpt2-vocab.json'"
    assert short.returncode == 1 and full.returncode == 1, short.stderr[-3000:]
    assert short.stderr.count(message) == 1 and "Traceback" not in short.stderr, short.stderr[-3000:]
    assert short.stderr.rstrip().endswith(HINT)
    lines = short.stderr.splitlines()
    first = next(i for i, line in enumerate(lines) if message in line)
    assert lines[first].startswith("InstantiationError: Error building 'tokenization.tokenizer'")
    assert full.stderr.count("Traceback (most recent call last)") == 2, full.stderr[-3000:]
    assert "The above exception was the direct cause" in full.stderr and HINT not in full.stderr
    with open(tmp_path / "out" / "log.txt", encoding="utf-8") as log:
        assert message in log.read()
