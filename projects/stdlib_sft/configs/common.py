"""What the project's two stages share: the data folder, the tokenizer and the tiny Llama.

Model: libai's ``LlamaForCausalLM`` with 4 blocks of width 128, 4 query heads sharing 2
key/value heads, SwiGLU 352, RMSNorm, rotary positions, an untied head; vocabulary 2048 (the
byte-level BPE ``make_data.py`` learned on the docstrings), context 128.
"""
from omegaconf import OmegaConf

from libai.config import LazyCall
from libai.models import LlamaForCausalLM

from configs.common.models.llama import llama_cfg

DATA = "data/stdlib_sft"
SEQ = 128

tokenization = OmegaConf.create()
tokenization.tokenizer = LazyCall("libai.tokenizer.AutoTokenizer.from_pretrained")(
    pretrained_model_name_or_path=f"{DATA}/tokenizer",
)

model = LazyCall(LlamaForCausalLM)(
    cfg=dict(llama_cfg("tiny"), vocab_size=2048, max_position_embeddings=SEQ)
)
