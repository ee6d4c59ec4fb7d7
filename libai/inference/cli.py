"""The command lines of ``tools/generate.py``, ``tools/chat.py`` and ``tools/predict.py``.

Both build a pipeline from a model directory (a libai training ``output_dir`` or a Hugging Face
directory), feed it the inputs in batches behind a progress bar, and print one line per input
(``--json``: one JSON record per line). Launched over several processes
(``python -m oneflow.distributed.launch --nproc_per_node 2 tools/generate.py ... --tp 2``),
every rank computes and rank 0 prints.
"""
import argparse
import json
import os
import sys
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence

import oneflow as flow

from libai.inference.chat import ChatSession, read_messages
from libai.inference.image_classification import ImageClassificationPipeline
from libai.inference.text_classification import TextClassificationPipeline
from libai.inference.text_generation import TextGenerationPipeline
from libai.tokenizer.chat_template import ChatTemplateError
from libai.utils.distributed import get_rank

__all__ = ["generate_main", "chat_main", "predict_main"]


def _parallel_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("parallelism (launched runs)")
    group.add_argument("--tp", type=int, default=None, help="tensor parallel size")
    group.add_argument("--pp", type=int, default=None, help="pipeline parallel size")
    group.add_argument("--device", default=None, help="cpu or cuda (default: what the machine has)")


def _sampling_args(parser: argparse.ArgumentParser, max_new_tokens: int) -> None:
    parser.add_argument("--max-new-tokens", type=int, default=max_new_tokens)
    parser.add_argument("--do-sample", action="store_true")
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--top-k", type=int, default=50)
    parser.add_argument("--top-p", type=float, default=1.0)
    parser.add_argument("--repetition-penalty", type=float, default=1.0)
    parser.add_argument("--eos-token-id", type=int, action="append", default=None,
                        help="a stop id (repeatable; default: generation_config.json's eos_token_id)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the sampling generator")
    parser.add_argument("--no-cache", action="store_true", help="recompute every step (slow; a check)")


def _sampling_kwargs(args: argparse.Namespace) -> Dict[str, Any]:
    """generate()'s keywords from the options of :func:`_sampling_args`."""
    generator = flow.Generator()
    generator.manual_seed(args.seed)
    return dict(max_new_tokens=args.max_new_tokens, do_sample=args.do_sample,
                temperature=args.temperature, top_k=args.top_k, top_p=args.top_p,
                repetition_penalty=args.repetition_penalty, use_cache=not args.no_cache,
                generator=generator)


def _read_lines(path: Optional[str]) -> List[str]:
    if path is None:
        return []
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f if line.strip()]


def _ids(text: str) -> List[int]:
    try:
        return [int(t) for t in text.replace(",", " ").split()]
    except ValueError:
        raise SystemExit(f"--ids takes whitespace-separated integers, got {text!r}") from None


def _run(pipe: Any, inputs: Sequence[Any], batch_size: int, quiet: bool, **kwargs: Any) -> List[Any]:
    """The pipeline over ``inputs`` in batches, with a progress bar on rank 0."""
    from tqdm import tqdm

    with tqdm(total=len(inputs), unit="input", disable=quiet or get_rank() != 0,
              file=sys.stderr) as bar:
        return pipe(list(inputs), batch_size=batch_size, progress=bar.update, **kwargs)


def _emit(records: Iterable[Any], as_json: bool, line: Any) -> None:
    if get_rank() != 0:
        return
    for record in records:
        print(json.dumps(record) if as_json else line(record), flush=True)


# --------------------------------------------------------------------------------- generate
def _generate_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="tools/generate.py",
        description="Continue prompts with a causal or encoder-decoder model.",
    )
    p.add_argument("model", help="a libai training output_dir or a Hugging Face model directory")
    p.add_argument("--prompt", action="append", default=[], help="a prompt (repeatable)")
    p.add_argument("--prompts-file", help="a file of prompts, one per line")
    p.add_argument("--ids", action="append", default=[],
                   help="a prompt as token ids, e.g. '83 33 80' (repeatable; no tokenizer needed)")
    _sampling_args(p, max_new_tokens=20)
    p.add_argument("--num-beams", type=int, default=1)
    p.add_argument("--new-text-only", action="store_true", help="print only the continuation")
    p.add_argument("--chat", action="store_true",
                   help="each prompt is a user message: apply the chat template, stream the "
                        "reply, stop at the template's end token(s)")
    p.add_argument("--system", default=None, help="a system message (with --chat)")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--json", action="store_true", help="one JSON record per line")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    _parallel_args(p)
    return p


def generate_main(argv: Optional[Sequence[str]] = None) -> int:
    """``tools/generate.py``: print the generated text (or ids) of every prompt."""
    args = _generate_parser().parse_args(argv)
    prompts: List[Any] = list(args.prompt) + _read_lines(args.prompts_file)
    prompts += [_ids(i) for i in args.ids]
    if not prompts:
        raise SystemExit("no prompts: give --prompt TEXT, --prompts-file FILE or --ids '1 2 3'")
    pipe = TextGenerationPipeline(args.model, tensor_parallel=args.tp, pipeline_parallel=args.pp,
                                  device=args.device)
    if args.chat:
        return _chat_prompts(pipe, prompts, args)
    eos = args.eos_token_id[0] if args.eos_token_id and len(args.eos_token_id) == 1 else args.eos_token_id
    records = _run(
        pipe, prompts, args.batch_size, args.quiet, num_beams=args.num_beams, eos_token_id=eos,
        return_full_text=not args.new_text_only, **_sampling_kwargs(args),
    )
    _emit(records, args.json, lambda r: r.get("generated_text", " ".join(map(str, r["generated_token_ids"]))))
    return 0


# --------------------------------------------------------------------------------- chat
def _printer(quiet_rank: bool) -> Callable[[str], None]:
    """Streamed text goes to stdout as it comes (rank 0 only)."""
    if quiet_rank:
        return lambda text: None
    return lambda text: print(text, end="", flush=True)


def _session(pipe: Any, args: argparse.Namespace) -> ChatSession:
    if pipe.tokenizer is None:
        raise SystemExit(f"{args.model} has no tokenizer files (tokenizer.json or tokenizer.model "
                         "with tokenizer_config.json); chatting needs one")
    stops = args.eos_token_id
    return ChatSession(pipe, system=args.system, stop_token_ids=stops, **_sampling_kwargs(args))


def _chat_prompts(pipe: Any, prompts: Sequence[Any], args: argparse.Namespace) -> int:
    """``generate.py --chat``: every prompt is a new one-turn conversation."""
    session = _session(pipe, args)
    show = _printer(get_rank() != 0 or args.json)
    for prompt in prompts:
        if not isinstance(prompt, str):
            raise SystemExit("--chat takes text prompts (--prompt / --prompts-file), not --ids")
        session.reset()
        reply = session.send(prompt, on_text=show)
        show("\n")
        if args.json:
            _emit([{"prompt": prompt, "reply": reply, "messages": session.messages}], True, str)
    return 0


def _chat_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="tools/chat.py",
        description="Chat with a model through its chat template: interactive (type /reset to "
                    "start over, /exit or Ctrl-D to leave) or --messages FILE for one reply.",
    )
    p.add_argument("model", help="a Hugging Face model directory with its tokenizer files")
    p.add_argument("--messages", help="a JSON file with a conversation ([{role, content}, ...]); "
                                      "prints the assistant's next message and exits")
    p.add_argument("--system", default=None, help="a system message starting the conversation")
    p.add_argument("--json", action="store_true",
                   help="with --messages: print the whole conversation, reply included, as JSON")
    _sampling_args(p, max_new_tokens=128)
    _parallel_args(p)
    return p


def chat_main(argv: Optional[Sequence[str]] = None, input_fn: Callable[[str], str] = input) -> int:
    """``tools/chat.py``: a chat loop over :class:`~libai.inference.chat.ChatSession`."""
    args = _chat_parser().parse_args(argv)
    pipe = TextGenerationPipeline(args.model, tensor_parallel=args.tp, pipeline_parallel=args.pp,
                                  device=args.device)
    session = _session(pipe, args)
    show = _printer(get_rank() != 0)
    if args.messages:
        session.messages = list(read_messages(args.messages))
        if args.system and not (session.messages and session.messages[0].get("role") == "system"):
            session.messages.insert(0, {"role": "system", "content": args.system})
        try:
            session.reply(on_text=None if args.json else show)
        except ChatTemplateError as error:
            raise SystemExit(f"--messages {args.messages}: {error}") from None
        if args.json:
            _emit([{"messages": session.messages}], True, str)
        else:
            show("\n")
        return 0
    while True:
        try:
            line = input_fn("> ")
        except EOFError:
            show("\n")
            return 0
        if line.strip() in ("/exit", "/quit"):
            return 0
        if line.strip() == "/reset":
            session.reset()
            continue
        if not line.strip():
            continue
        try:
            session.send(line, on_text=show)
        except ChatTemplateError as error:
            show(f"[{error}]")
        show("\n")


# --------------------------------------------------------------------------------- predict
_TASKS = {"text-classification": TextClassificationPipeline,
          "image-classification": ImageClassificationPipeline}


def _guess_task(model: str) -> str:
    config = os.path.join(model, "config.json")
    if os.path.isfile(config):
        with open(config) as f:
            names = " ".join(json.load(f).get("architectures") or [])
        if "ImageClassification" in names:
            return "image-classification"
        if "SequenceClassification" in names:
            return "text-classification"
    raise SystemExit(f"cannot tell the task of {model}; pass --task {' or '.join(_TASKS)}")


def _predict_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="tools/predict.py",
        description="Classify texts or images; prints the best label and its score per input.",
    )
    p.add_argument("model", help="a libai training output_dir or a Hugging Face model directory")
    p.add_argument("inputs", nargs="*", help="texts, or image paths")
    p.add_argument("--task", choices=sorted(_TASKS), help="default: from config.json")
    p.add_argument("--inputs-file", help="a file of inputs (texts or image paths), one per line")
    p.add_argument("--ids", action="append", default=[],
                   help="a text as token ids, special tokens included (repeatable)")
    p.add_argument("--top-k", type=int, default=None, help="print the k best labels")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--json", action="store_true", help="one JSON record per line")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    _parallel_args(p)
    return p


def _label_line(record: Any) -> str:
    records = record if isinstance(record, list) else [record]
    return "  ".join(f"{r['label']}\t{r['score']:.4f}" for r in records)


def predict_main(argv: Optional[Sequence[str]] = None) -> int:
    """``tools/predict.py``: print the labels and scores of every input."""
    args = _predict_parser().parse_args(argv)
    task = args.task or _guess_task(args.model)
    inputs: List[Any] = list(args.inputs) + _read_lines(args.inputs_file)
    inputs += [{"input_ids": _ids(i)} for i in args.ids]
    if not inputs:
        raise SystemExit("no inputs: give them as arguments, with --inputs-file or --ids")
    pipe = _TASKS[task](args.model, tensor_parallel=args.tp, pipeline_parallel=args.pp,
                        device=args.device)
    extra: Dict[str, Any] = {} if args.top_k is None else {"top_k": args.top_k}
    records = _run(pipe, inputs, args.batch_size, args.quiet, **extra)
    _emit(records, args.json, _label_line)
    return 0
