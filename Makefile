# One-command entry points. Each sets up .venv first (once; a second run installs nothing).
#   make quickstart   train the MNIST-digits quickstart (data generated offline)
#   make test         run the test suite
PY := .venv/bin/python
OUT ?= output/mnist_quickstart

.PHONY: setup quickstart test bench clean

setup:
	@bash tools/setup_env.sh

data/mnist/train-images-idx3-ubyte: | setup
	$(PY) tools/make_digits_mnist.py --output-dir data/mnist

quickstart: setup data/mnist/train-images-idx3-ubyte
	$(PY) tools/train_net.py --config-file projects/MNIST/configs/config.py train.output_dir=$(OUT)

test: setup
	bash tools/run_tests.sh $(PYTEST_ARGS)

bench: setup
	$(PY) benchmarks/run_all.py

clean:
	rm -rf output .pytest_cache
