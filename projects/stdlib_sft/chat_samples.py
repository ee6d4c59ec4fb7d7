"""Three chats with a model directory: questions about held-out functions, answered by libai's
``generate`` (greedy) through the tokenizer's chat template, stopping at its end-of-turn token.

    python projects/stdlib_sft/chat_samples.py output/stdlib_sft/sft_hf
"""
import argparse
import json
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

import oneflow as flow  # noqa: E402

from libai.models import AutoModelForCausalLM  # noqa: E402
from libai.tokenizer import AutoTokenizer  # noqa: E402


def held_out_questions(test_file: str, count: int) -> list:
    with open(test_file, encoding="utf-8") as handle:
        docs = [json.loads(line) for line in handle]
    picked = [docs[i * len(docs) // count] for i in range(count)]  # spread over the modules
    return [(f"What does {doc['name']} do?", doc["choices"][doc["answer"]]) for doc in picked]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model_dir")
    parser.add_argument("--test-file", default="data/stdlib_sft/test.jsonl")
    parser.add_argument("--count", type=int, default=3)
    parser.add_argument("--max-new-tokens", type=int, default=40)
    args = parser.parse_args()
    tokenizer = AutoTokenizer.from_pretrained(args.model_dir)
    model = AutoModelForCausalLM.from_pretrained(args.model_dir).eval()
    end_of_turn = tokenizer.convert_tokens_to_ids("<|end|>")
    for question, docstring in held_out_questions(args.test_file, args.count):
        prompt = tokenizer.apply_chat_template([{"role": "user", "content": question}],
                                               add_generation_prompt=True)
        tokens = model.generate(flow.tensor([prompt]), max_new_tokens=args.max_new_tokens,
                                eos_token_id=[end_of_turn, tokenizer.eos_token_id],
                                pad_token_id=tokenizer.pad_token_id)
        answer = tokenizer.decode(tokens[0, len(prompt):].tolist(), skip_special_tokens=True)
        print(f"> {question}\n{answer.strip()}\n(docstring: {docstring})\n")


if __name__ == "__main__":
    main()
