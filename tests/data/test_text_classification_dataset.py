"""TextClassificationDataset: [CLS] a [SEP] (b [SEP]) ids, masks and labels from JSON lines."""
import json

import pytest

from libai.data.datasets.text_classification import TextClassificationDataset
from libai.tokenizer import BertTokenizer

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad", "film", "plot", "a", "very"]
ID = {token: i for i, token in enumerate(VOCAB)}


@pytest.fixture
def tokenizer(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(VOCAB) + "\n")
    return BertTokenizer(vocab_file=str(path), do_lower_case=True)


def write(tmp_path, records):
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + "\n")  # a blank line is skipped
    return str(path)


def test_single_sentences_are_wrapped_padded_and_labelled(tmp_path, tokenizer):
    path = write(tmp_path, [{"text": "A good film", "label": 1}, {"text": "bad", "label": 0}])
    dataset = TextClassificationDataset(path, tokenizer, max_seq_length=6)
    assert len(dataset) == 2
    sample = dataset[0]
    assert list(sample.get_fields()) == ["input_ids", "attention_mask", "tokentype_ids", "labels"]
    assert sample.input_ids.tensor.tolist() == [ID["[CLS]"], ID["a"], ID["good"], ID["film"], ID["[SEP]"], 0]
    assert sample.attention_mask.tensor.tolist() == [1, 1, 1, 1, 1, 0]
    assert sample.tokentype_ids.tensor.tolist() == [0] * 6
    assert sample.labels.tensor.item() == 1 and sample.labels.placement_idx == -1
    assert dataset[1].input_ids.tensor.tolist() == [2, ID["bad"], 3, 0, 0, 0]


def test_pairs_cut_the_longer_text_first_and_mark_the_second_segment(tmp_path, tokenizer):
    path = write(tmp_path, [{"text": "good film", "text_b": "a very very bad plot", "label": 0.5}])
    dataset = TextClassificationDataset(path, tokenizer, max_seq_length=8, text_pair_key="text_b",
                                        label_dtype="float")
    sample = dataset[0]
    # 8 ids = 3 specials + 5 tokens: "good film" keeps 2, the longer "a very very bad plot" 3
    assert sample.input_ids.tensor.tolist() == [2, ID["good"], ID["film"], 3, ID["a"], ID["very"], ID["very"], 3]
    assert sample.tokentype_ids.tensor.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    assert sample.attention_mask.tensor.tolist() == [1] * 8
    assert sample.labels.tensor.item() == pytest.approx(0.5)


def test_errors_name_the_file_and_the_missing_key(tmp_path, tokenizer):
    with pytest.raises(FileNotFoundError, match="one JSON object per line with keys 'text' and 'label'"):
        TextClassificationDataset(str(tmp_path / "none.jsonl"), tokenizer)
    path = write(tmp_path, [{"text": "good", "label": 1}, {"sentence": "bad", "label": 0}])
    with pytest.raises(KeyError, match=r"line 2 lacks the key\(s\) \['text'\]"):
        TextClassificationDataset(path, tokenizer)
