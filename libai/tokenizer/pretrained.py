"""``save_pretrained`` / ``from_pretrained``: a tokenizer as a directory of files.

The directory layout is LiBai's (and Hugging Face's), so directories move between them:

- the vocabulary files, under the names in the class's ``vocab_files_names``
  (``vocab.txt``; ``vocab.json`` + ``merges.txt``; ``spiece.model``);
- ``tokenizer_config.json``: the constructor's keyword arguments other than files and special
  tokens (e.g. ``{"do_lower_case": false}``);
- ``special_tokens_map.json``: role -> token, plus ``additional_special_tokens``;
- ``added_tokens.json``: token -> id for every token appended after the vocabulary files
  (written only when there is one). Ids must run on from the base vocabulary without gaps.

Nothing is ever downloaded: a published name such as ``"bert-base-uncased"`` is answered with
the URLs to fetch by hand.
"""
import json
import logging
import os
from typing import Any, Dict, Optional, Tuple, Type, TypeVar

from libai.tokenizer.special_tokens import SPECIAL_TOKENS_ATTRIBUTES

__all__ = [
    "PretrainedFilesMixin",
    "SPECIAL_TOKENS_MAP_FILE",
    "ADDED_TOKENS_FILE",
    "TOKENIZER_CONFIG_FILE",
    "CHAT_TEMPLATE_FILE",
]

SPECIAL_TOKENS_MAP_FILE = "special_tokens_map.json"
ADDED_TOKENS_FILE = "added_tokens.json"
TOKENIZER_CONFIG_FILE = "tokenizer_config.json"
#: A chat template kept as its own file (it then wins over tokenizer_config.json's).
CHAT_TEMPLATE_FILE = "chat_template.jinja"

logger = logging.getLogger(__name__)

T = TypeVar("T", bound="PretrainedFilesMixin")


def _read_json(path: Optional[str]) -> Any:
    if path is None or not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as handle:
        try:
            return json.load(handle)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path} is not valid JSON ({error})") from None


def _write_json(path: str, value: Any) -> str:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(value, ensure_ascii=False))
    return path


def _is_json(key: str, value: Any) -> bool:
    """Whether a constructor argument can go into tokenizer_config.json (a segmenter function
    cannot: it must be passed again to from_pretrained)."""
    try:
        json.dumps(value)
        return True
    except (TypeError, ValueError):
        logger.warning(f"save_pretrained: {key}={value!r} cannot be stored in "
                       f"{TOKENIZER_CONFIG_FILE}; pass it to from_pretrained() again")
        return False


class PretrainedFilesMixin:
    """Class attributes naming a tokenizer's files, and the two directory methods.

    ``vocab_files_names`` maps each file parameter of ``__init__`` to its file name in a saved
    directory. ``pretrained_vocab_files_map`` and ``max_model_input_sizes`` list published
    vocabularies (name -> URL, name -> longest input), for the message that tells where to get
    them; ``pretrained_init_configuration`` holds their constructor arguments.
    """

    vocab_files_names: Dict[str, str] = {}
    pretrained_vocab_files_map: Dict[str, Dict[str, str]] = {}
    pretrained_init_configuration: Dict[str, Dict[str, Any]] = {}
    max_model_input_sizes: Dict[str, Optional[int]] = {}

    init_inputs: Tuple[Any, ...] = ()
    init_kwargs: Dict[str, Any] = {}

    # provided by the tokenizer
    special_tokens_map: Dict[str, Any]

    def save_vocabulary(self, save_directory: str, filename_prefix: Optional[str] = None) -> Tuple[str, ...]:
        raise NotImplementedError

    def get_added_vocab(self) -> Dict[str, int]:
        raise NotImplementedError

    def _restore_added_tokens(self, saved: Dict[str, int]) -> None:
        raise NotImplementedError

    @classmethod
    def from_pretrained(cls: Type[T], pretrained_model_name_or_path: str, *init_inputs: Any, **kwargs: Any) -> T:
        """Load a tokenizer from a directory written by :meth:`save_pretrained` (or by LiBai /
        Hugging Face), or from a single vocabulary file for one-file tokenizers.

        ``kwargs`` override the saved constructor arguments (e.g. ``unk_token="<unk>"``).
        ``cache_dir``, ``force_download`` and ``proxies`` are accepted and ignored.
        """
        for ignored in ("cache_dir", "force_download", "proxies"):
            kwargs.pop(ignored, None)
        path = os.fspath(pretrained_model_name_or_path)
        files = cls._vocab_file_paths(path)
        directory = path if os.path.isdir(path) else os.path.dirname(path)
        config = _read_json(os.path.join(directory, TOKENIZER_CONFIG_FILE)) or {}
        saved_inputs = tuple(config.pop("init_inputs", ()))
        init_kwargs: Dict[str, Any] = dict(config)
        special = _read_json(os.path.join(directory, SPECIAL_TOKENS_MAP_FILE)) or {}
        for key, value in special.items():
            init_kwargs.setdefault(key, value)
        template_file = os.path.join(directory, CHAT_TEMPLATE_FILE)
        if os.path.isfile(template_file):
            with open(template_file, encoding="utf-8") as handle:
                init_kwargs["chat_template"] = handle.read()
        init_kwargs.update(kwargs)
        for key, file_path in files.items():
            init_kwargs.setdefault(key, file_path)
        inputs = init_inputs or saved_inputs
        tokenizer = cls(*inputs, **init_kwargs)
        tokenizer.init_inputs = tuple(inputs)
        tokenizer.init_kwargs = init_kwargs
        added = _read_json(os.path.join(directory, ADDED_TOKENS_FILE)) or {}
        tokenizer._restore_added_tokens(added)
        return tokenizer

    @classmethod
    def _vocab_file_paths(cls, path: str) -> Dict[str, Optional[str]]:
        if os.path.isdir(path):
            found = {}
            for key, name in cls.vocab_files_names.items():
                candidate = os.path.join(path, name)
                found[key] = candidate if os.path.isfile(candidate) else None
            return {k: v for k, v in found.items() if v is not None}
        if os.path.isfile(path):
            if len(cls.vocab_files_names) > 1:
                raise ValueError(
                    f"{cls.__name__} needs {len(cls.vocab_files_names)} files "
                    f"({', '.join(cls.vocab_files_names.values())}); pass the directory that "
                    f"holds them instead of the single file {path!r}"
                )
            return {key: path for key in cls.vocab_files_names}
        urls = {key: table[path] for key, table in cls.pretrained_vocab_files_map.items()
                if path in table}
        if urls:
            listing = "\n".join(f"    {url}" for url in urls.values())
            raise FileNotFoundError(
                f"{path!r} is a published {cls.__name__} vocabulary, but libai never downloads. "
                f"Fetch these files on a machine with internet access:\n{listing}\ninto one "
                f"directory and pass that directory to from_pretrained()"
            )
        raise FileNotFoundError(
            f"no tokenizer directory or file at {path!r}; pass a directory written by "
            f"save_pretrained() (or one holding {', '.join(cls.vocab_files_names.values())})"
        )

    def save_pretrained(self, save_directory: str) -> Tuple[str, ...]:
        """Write the vocabulary files and the three JSON files into ``save_directory``
        (created if needed) so that :meth:`from_pretrained` rebuilds this tokenizer, added and
        special tokens included. Returns the paths written."""
        save_directory = os.fspath(save_directory)
        if os.path.exists(save_directory) and not os.path.isdir(save_directory):
            raise NotADirectoryError(f"save_pretrained needs a directory, got the file {save_directory!r}")
        os.makedirs(save_directory, exist_ok=True)
        config = {
            key: value for key, value in self.init_kwargs.items()
            if key not in self.vocab_files_names and key not in SPECIAL_TOKENS_ATTRIBUTES
            and _is_json(key, value)
        }
        if self.init_inputs:
            config["init_inputs"] = list(self.init_inputs)
        if getattr(self, "chat_template", None) is not None:
            config["chat_template"] = self.chat_template
        written = [_write_json(os.path.join(save_directory, TOKENIZER_CONFIG_FILE), config),
                   _write_json(os.path.join(save_directory, SPECIAL_TOKENS_MAP_FILE),
                               self.special_tokens_map)]
        added_path = os.path.join(save_directory, ADDED_TOKENS_FILE)
        added = self.get_added_vocab()
        if added:
            written.append(_write_json(added_path, added))
        elif os.path.isfile(added_path):
            os.remove(added_path)  # a stale file from an earlier save would add tokens back
        return tuple(self.save_vocabulary(save_directory)) + tuple(written)
