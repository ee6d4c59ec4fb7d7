"""One module per model family; importing this package registers them all."""
from libai.models.pretrained.families import gpt2  # noqa: F401
from libai.models.pretrained.families import bert  # noqa: F401
from libai.models.pretrained.families import vision  # noqa: F401
from libai.models.pretrained.families import roberta  # noqa: F401
from libai.models.pretrained.families import swinv2  # noqa: F401
from libai.models.pretrained.families import llama  # noqa: F401
from libai.models.pretrained.families import t5  # noqa: F401
from libai.models.pretrained.families import qwen2  # noqa: F401
from libai.models.pretrained.families import mistral  # noqa: F401
from libai.models.pretrained.families import qwen3  # noqa: F401
from libai.models.pretrained.families import gemma  # noqa: F401
from libai.models.pretrained.families import phi3  # noqa: F401
