"""Install libai: ``pip install -e .`` inside the project's virtual environment.

The built-in configs under ``configs/`` are installed as package data of ``libai.config``
(under ``libai/config/configs``) so that ``get_config("common/train.py")`` works from any
directory after installation.

``libai/csrc/cblas_vector.c`` becomes ``libai/_cblas_vector*.so``, the adapter through which
OneFlow's CPU matrix products reach the OpenBLAS of ``scipy-openblas32`` (see ``libai._blas.route_matrix_products``).
It is optional: without a C compiler the build says so and libai keeps OneFlow's own sgemm.

``libai_import_hook.pth`` goes to the root of site-packages with the top-level module
``libai_import_hook``: at interpreter start-up it makes the first ``import oneflow`` import libai
first, so that libai's process-wide choices apply whatever order a script imports them in (see
that module). ``tools/setup_env.sh`` writes the same file for its editable install.
"""
import os
import shutil

from setuptools import Extension, find_packages, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


class BuildWithConfigs(build_py):
    """Copy the top-level ``configs/`` tree into the built ``libai/config/configs``."""

    def run(self) -> None:
        super().run()
        src = os.path.join(HERE, "configs")
        dst = os.path.join(self.build_lib, "libai", "config", "configs")
        if os.path.isdir(src):
            shutil.rmtree(dst, ignore_errors=True)
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))
        # at the root of the build, the .pth lands at the root of site-packages (purelib)
        shutil.copy(os.path.join(HERE, "libai_import_hook.pth"), self.build_lib)


setup(
    name="libai",
    version="0.1.0",
    description="Lazy-config training library on OneFlow: eager and graph, data/tensor/pipeline parallel",
    packages=find_packages(exclude=("tests", "tests.*", "projects", "projects.*", "benchmarks")),
    py_modules=["libai_import_hook"],  # with libai_import_hook.pth (BuildWithConfigs)
    python_requires=">=3.7,<3.11",
    install_requires=[
        "oneflow==0.9.0",
        "numpy<2",
        "nvidia-cublas-cu11",
        "nvidia-cudnn-cu11<9",
        "omegaconf>=2.1",
        "hydra-core==1.3.2",  # key=value overrides in hydra's grammar
        "tabulate",
        "termcolor",
        "pyyaml",
        "cloudpickle",
        "iopath==0.1.10",
        "safetensors==0.4.5",
        "sentencepiece==0.2.0",  # T5Tokenizer, Llama-2 tokenizer.model
        "tokenizers==0.23.3",  # Hugging Face tokenizer.json
        "jinja2==3.1.6",  # chat templates
        "xxhash==4.1.0",  # checkpoint checksums
        "flowvision==0.2.1",  # image transforms (0.2.2 fails to import with OneFlow 0.9.0)
        "opencv-python-headless==4.11.0.86",  # libai.data.augmentation; 4.12+ needs numpy>=2
        "pillow",
        "tqdm==4.70.1",  # progress bars of tools/generate.py and tools/predict.py
        "scipy==1.15.3",  # RegEvaluator (Pearson/Spearman)
        "scipy-openblas32==0.3.34.481.3",  # OneFlow's CPU matrix products (libai._blas)
        "nltk==3.10.4",  # BLEUEvaluator (corpus BLEU)
        "graphviz==0.21",  # tools/visualize_model.py (drawing also needs the system `dot`)
    ],
    extras_require={
        "tensorboard": ["tensorboardX==2.6.5"],
        "plot": ["matplotlib"],
        "chinese": ["jieba"],  # BertTokenizer(do_chinese_wwm=True)
        "gpu": ["pynvml"],
        "eval": ["lm_eval==0.4.13", "datasets==5.2.0"],  # the lm-evaluation-harness adapter
        "onnx": ["onnx==1.14.1", "onnxruntime==1.20.1", "oneflow-onnx==0.6.2", "onnxsim==0.7.3"],
        "dev": ["lm_eval==0.4.13", "datasets==5.2.0", "pytest", "pytest-xdist==3.8.0", "hypothesis", "scikit-learn", "textblob==0.20.1", "pillow", "tensorboardX==2.6.5", "matplotlib",
                "import-linter==2.15", "onnx==1.14.1", "onnxruntime==1.20.1", "oneflow-onnx==0.6.2",
                "onnxsim==0.7.3"],
    },
    # A plain shared library (no Python module in it): libai loads it with ctypes.
    ext_modules=[Extension("libai._cblas_vector", ["libai/csrc/cblas_vector.c"],
                           extra_compile_args=["-O2"], optional=True)],
    cmdclass={"build_py": BuildWithConfigs},
)
