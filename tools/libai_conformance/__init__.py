"""LiBai conformance runner: LiBai's own configs and projects, unchanged, trained by libai.

    python -m tools.libai_conformance --libai /path/to/libai/checkout [--mode configs|projects|all]
        [--only NAME ...] [--engine libai|upstream] [--scratch DIR] [--markdown]

The LiBai checkout stays outside this repository; everything is copied into a scratch folder.
``common`` holds the runner (copy, run, read the result, print the table), ``data`` the tiny
data writers, ``configs`` the ready-config cases and ``projects`` the project registry.
"""
