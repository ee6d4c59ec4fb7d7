#!/usr/bin/env python
"""Chat with a model through its chat template.

    python tools/chat.py MODEL_DIR [--system "..."] [--max-new-tokens N] [--do-sample ...]
    python tools/chat.py MODEL_DIR --messages chat.json [--json]

Interactive by default (``/reset`` starts over, ``/exit`` or Ctrl-D leaves); with ``--messages``
it prints the assistant's reply to the conversation in the file and exits. Replies stream as
they are generated and stop at the template's end token(s). Everything happens in
``libai.inference`` (see docs/generate_and_predict.md).
"""
import os
import sys

# Run from a checkout without installing: make the repository importable.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import libai  # noqa: E402,F401  (makes OneFlow's libraries loadable; must precede oneflow)
from libai.inference.cli import chat_main  # noqa: E402

if __name__ == "__main__":
    sys.exit(chat_main())
