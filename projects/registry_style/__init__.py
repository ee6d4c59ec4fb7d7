"""A project written in the registry style: named model, dataset, transforms and losses, a YAML
config, trained by tools/train_net.py. See README.md."""
