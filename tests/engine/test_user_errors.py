"""A user's mistake ends the run with its message once and no traceback; LIBAI_FULL_ERROR=1 and
bugs inside libai (or OneFlow) still show the traceback."""
import os
import subprocess
import sys

import pytest

from libai.config.errors import InstantiationError
from libai.engine.user_errors import is_user_error, user_error_message
from libai.tokenizer.vocab_files import load_bpe_vocab

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _wrapped(cause: BaseException) -> InstantiationError:
    """What libai's instantiate raises around a failure while building a node."""
    try:
        try:
            raise cause
        except BaseException as error:
            raise InstantiationError(f"Error building 'model': {type(error).__name__}: {error}") from error
    except InstantiationError as outer:
        return outer


def _raised_by_libai_code() -> ValueError:
    from libai.config.paths import split_path

    try:
        split_path("a..b")
    except Exception as error:
        return error


def test_the_root_of_the_chain_decides():
    try:
        load_bpe_vocab("/nonexistent/vocab.json")
    except FileNotFoundError as missing:
        assert is_user_error(_wrapped(missing))
    assert not is_user_error(_wrapped(AttributeError("'NoneType' object has no attribute 'size'")))
    assert not is_user_error(_wrapped(RuntimeError("Check failed: shape")))
    assert is_user_error(_raised_by_libai_code())  # libai refusing a value on purpose
    assert not is_user_error(ValueError("raised outside libai"))  # e.g. a bug in OneFlow


def test_the_message_is_the_error_once_and_the_switch_brings_the_traceback_back(monkeypatch):
    try:
        load_bpe_vocab("/nonexistent/vocab.json")
    except FileNotFoundError as missing:
        error = _wrapped(missing)
    text = user_error_message(error)
    assert text.startswith("Error building 'model': FileNotFoundError: BPE vocabulary file")
    assert text.count("not found: '/nonexistent/vocab.json'") == 1
    assert "LIBAI_FULL_ERROR=1 shows the full traceback" in text
    monkeypatch.setenv("LIBAI_FULL_ERROR", "1")
    assert user_error_message(error) is None
    monkeypatch.delenv("LIBAI_FULL_ERROR")
    assert user_error_message(_wrapped(AttributeError("bug"))) is None


def _train_net(tmp_path, *args, **env):
    full_env = dict(os.environ, PYTHONPATH=REPO, **env)
    full_env.pop("LIBAI_FULL_ERROR", None) if "LIBAI_FULL_ERROR" not in env else None
    return subprocess.run([sys.executable, os.path.join(REPO, "tools", "train_net.py"), *args,
                           f"train.output_dir={tmp_path / 'out'}"], cwd=str(tmp_path), env=full_env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("full", [False, True])
def test_train_net_with_a_missing_vocabulary(tmp_path, full):
    proc = _train_net(tmp_path, "--config-file", os.path.join(REPO, "configs", "gpt2_pretrain.py"),
                      "tokenization.tokenizer.vocab_file=missing-vocab.json",
                      **({"LIBAI_FULL_ERROR": "1"} if full else {}))
    assert proc.returncode == 1
    assert "not found: 'missing-vocab.json'" in proc.stderr
    if full:
        assert "Traceback (most recent call last)" in proc.stderr
    else:
        assert "Traceback" not in proc.stderr and proc.stderr.count("not found: 'missing-vocab.json'") == 1


def test_a_bug_inside_the_code_still_shows_its_traceback(tmp_path):
    config = tmp_path / "broken.py"
    config.write_text(
        "from configs.common.train import train\n"
        "from libai.config import LazyCall\n"
        "from libai.engine.user_errors import is_user_error\n"
        "model = LazyCall(is_user_error)(error=None)  # IndexError inside libai: a bug\n"
        "graph = dict(enabled=False)\noptim = dict()\ndataloader = dict()\n")
    proc = _train_net(tmp_path, "--config-file", str(config))
    assert proc.returncode != 0
    assert "Traceback (most recent call last)" in proc.stderr and "IndexError" in proc.stderr
