"""The Dockerfiles agree with the repository (docker/verify_dockerfile.py's static checks), and
the checker itself finds what it claims to find."""
import importlib.util
import os

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_spec = importlib.util.spec_from_file_location(
    "verify_dockerfile", os.path.join(REPO, "docker", "verify_dockerfile.py"))
verify = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(verify)


@pytest.mark.parametrize("name", ["Dockerfile", "Dockerfile.cuda"])
def test_shipped_dockerfiles_pass_the_static_checks(name):
    assert verify.static_check(os.path.join(REPO, "docker", name)) == []


def test_the_image_runs_train_net_and_installs_the_pinned_requirements():
    instructions = verify.parse(os.path.join(REPO, "docker", "Dockerfile"))
    keywords = [i.keyword for i in instructions]
    assert keywords[0] == "FROM" and "python:3.10" in instructions[0].argument
    runs = " ".join(i.argument for i in instructions if i.keyword == "RUN")
    assert "pip install -r requirements.txt" in runs and "-e ." in runs
    entry = next(i for i in instructions if i.keyword == "ENTRYPOINT")
    assert entry.argument == '["python", "tools/train_net.py"]'
    # requirements are copied (and installed) before the code, so code edits keep the layer
    copies = [i for i in instructions if i.keyword == "COPY"]
    assert copies[0].argument.startswith("requirements.txt")
    assert keywords.index("RUN", keywords.index("COPY")) < instructions.index(copies[1])


def test_parse_joins_continuations_and_drops_comments(tmp_path):
    path = tmp_path / "Dockerfile"
    path.write_text("# comment\nFROM base\nRUN a \\\n  # inner comment\n  && b\nENV X=1 Y=2\n")
    parsed = verify.parse(str(path))
    assert [(i.keyword, i.line) for i in parsed] == [("FROM", 2), ("RUN", 3), ("ENV", 6)]
    assert parsed[1].argument.split() == ["a", "&&", "b"]
    assert verify._env_of(parsed) == {"X": "1", "Y": "2"}


def test_static_check_reports_each_problem(tmp_path):
    (tmp_path / ".dockerignore").write_text("data\n**/__pycache__\n")
    (tmp_path / "data").mkdir()
    (tmp_path / "run.py").write_text("")
    path = tmp_path / "Dockerfile"
    path.write_text('FROM a\nFROM b\nCOPY missing.txt ./\nCOPY data ./data\nENTRYPOINT python run.py\n')
    problems = verify.static_check(str(path), context=str(tmp_path))
    assert "expected one FROM, found 2" in problems
    assert any("'missing.txt' is not in the context" in p for p in problems)
    assert any("'data' is excluded by .dockerignore" in p for p in problems)
    assert any("exec form" in p for p in problems)
    assert any("/mnt/config is not a VOLUME" in p for p in problems)


def test_dockerignore_patterns():
    patterns = ["output", "**/__pycache__", "*.egg-info"]
    assert verify.ignored("output/run1/metrics.json", patterns)
    assert verify.ignored(os.path.join("libai", "__pycache__", "x.pyc"), patterns)
    assert verify.ignored("libai.egg-info", patterns)
    assert not verify.ignored(os.path.join("libai", "engine", "trainer.py"), patterns)
