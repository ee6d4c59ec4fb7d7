"""OneFlow's OFRecord files: writing them from an image folder and reading them by index.

An OFRecord *part file* (``part-00000``, ``part-00001``, ...) is a sequence of records, each an
8-byte little-endian signed length followed by that many bytes of a serialized ``OFRecord``
protobuf message (``oneflow/core/record/record.proto``: a map from feature name to a list of
bytes, floats, doubles, int32 or int64). This is the framing ``flow.nn.OFRecordReader`` reads.

OneFlow's own reader streams batches from inside the runtime; a training loop built on
samplers needs random access by index instead, so :class:`OFRecordImageDataset` scans the part
files once for record offsets and then reads single records on demand (no protobuf runtime in
the loop beyond one ``ParseFromString`` per sample). The image convention is the one OneFlow's
ImageNet OFRecords use: the encoded image file under ``"encoded"`` (bytes) and the class under
``"class/label"`` (int32).
"""
import io
import os
import struct
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np
from PIL import Image

from libai.data.datasets.image_base import ImageClassificationDataset
from libai.data.datasets.imagefolder import IMAGE_EXTENSIONS, scan_image_folder

__all__ = [
    "OFRecordImageDataset",
    "OFRecordPartWriter",
    "part_name",
    "iter_ofrecord_file",
    "index_ofrecord_file",
    "write_image_records",
    "convert_image_folder_to_ofrecord",
    "CLASSES_FILE",
]

_LENGTH = struct.Struct("<q")
CLASSES_FILE = "classes.txt"


def _record_pb2() -> Any:
    # OneFlow ships the generated protobuf module; imported lazily so that reading this module
    # does not pay for it.
    from oneflow.core.record import record_pb2

    return record_pb2


# ---------------------------------------------------------------------------------------------
# Framing
# ---------------------------------------------------------------------------------------------
def index_ofrecord_file(path: str) -> List[Tuple[int, int]]:
    """``(offset, length)`` of every record payload in one part file.

    Only the length prefixes are read, so indexing is cheap even for large parts. A file that
    ends inside a record is reported as corrupt.
    """
    entries: List[Tuple[int, int]] = []
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        pos = 0
        while pos < size:
            head = f.read(_LENGTH.size)
            if len(head) != _LENGTH.size:
                raise ValueError(f"{path}: truncated record header at byte {pos}")
            (length,) = _LENGTH.unpack(head)
            start = pos + _LENGTH.size
            if length < 0 or start + length > size:
                raise ValueError(
                    f"{path}: record at byte {pos} claims {length} bytes but only "
                    f"{size - start} remain; the file is truncated or not an OFRecord part file"
                )
            entries.append((start, length))
            pos = start + length
            f.seek(pos)
    return entries


def iter_ofrecord_file(path: str) -> Iterator[Any]:
    """Parsed ``OFRecord`` messages of one part file, in order."""
    pb = _record_pb2()
    with open(path, "rb") as f:
        for offset, length in index_ofrecord_file(path):
            f.seek(offset)
            record = pb.OFRecord()
            record.ParseFromString(f.read(length))
            yield record


class OFRecordPartWriter:
    """Append records to one part file (use as a context manager).

    ``write(features)`` takes a dict ``name -> value`` where a value is ``bytes`` (a bytes
    list of one), a list of ``bytes``, or integers / floats (stored as int32 / float lists).
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._file = open(path, "wb")
        self.count = 0

    def write(self, features: Dict[str, Any]) -> None:
        record = _record_pb2().OFRecord()
        for name, value in features.items():
            _set_feature(record.feature[name], value, name)
        payload = record.SerializeToString()
        self._file.write(_LENGTH.pack(len(payload)))
        self._file.write(payload)
        self.count += 1

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> "OFRecordPartWriter":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _set_feature(feature: Any, value: Any, name: str) -> None:
    if isinstance(value, (bytes, bytearray)):
        feature.bytes_list.value.append(bytes(value))
        return
    values = list(value) if isinstance(value, (list, tuple, np.ndarray)) else [value]
    if values and all(isinstance(v, (bytes, bytearray)) for v in values):
        feature.bytes_list.value.extend(bytes(v) for v in values)
    elif values and all(isinstance(v, (int, np.integer)) for v in values):
        feature.int32_list.value.extend(int(v) for v in values)
    elif values and all(isinstance(v, (int, float, np.number)) for v in values):
        feature.float_list.value.extend(float(v) for v in values)
    else:
        raise TypeError(
            f"feature {name!r}: store bytes, a list of bytes, or numbers; "
            f"got {type(value).__name__}"
        )


# ---------------------------------------------------------------------------------------------
# Writing image records
# ---------------------------------------------------------------------------------------------
def part_name(index: int, prefix: str = "part-") -> str:
    """``part-00000`` style names: the zero-padded 5-digit suffix OneFlow's reader expects with
    ``part_name_suffix_length=5``."""
    return f"{prefix}{index:05d}"


def write_image_records(
    samples: Sequence[Tuple[bytes, int]],
    output_dir: str,
    num_parts: int = 1,
    image_key: str = "encoded",
    label_key: str = "class/label",
) -> List[str]:
    """Write ``(encoded image bytes, label)`` pairs into ``num_parts`` part files.

    Samples are cut into contiguous, nearly equal runs, so reading the parts in name order gives
    the samples back in their original order. Returns the part paths.
    """
    if int(num_parts) < 1:
        raise ValueError(f"num_parts must be >= 1, got {num_parts}")
    if len(samples) < num_parts:
        raise ValueError(
            f"{len(samples)} samples cannot fill {num_parts} part files; use --num-parts "
            f"{max(1, len(samples))} or fewer"
        )
    os.makedirs(output_dir, exist_ok=True)
    existing = [n for n in os.listdir(output_dir) if n.startswith("part-")]
    if existing:
        raise FileExistsError(
            f"{output_dir!r} already holds part files ({sorted(existing)[:3]}...); choose an "
            "empty output folder so that old and new records do not mix"
        )
    bounds = np.linspace(0, len(samples), int(num_parts) + 1).round().astype(int)
    paths = []
    for part in range(int(num_parts)):
        path = os.path.join(output_dir, part_name(part))
        with OFRecordPartWriter(path) as writer:
            for encoded, label in samples[bounds[part] : bounds[part + 1]]:
                writer.write({image_key: encoded, label_key: [int(label)]})
        paths.append(path)
    return paths


def convert_image_folder_to_ofrecord(
    input_dir: str,
    output_dir: str,
    num_parts: int = 1,
    shuffle: bool = False,
    seed: int = 0,
    extensions: Sequence[str] = IMAGE_EXTENSIONS,
    verify: bool = False,
    jpeg_quality: Optional[int] = None,
) -> Dict[str, Any]:
    """Turn a class-per-folder tree into OFRecord parts plus a ``classes.txt``.

    By default the encoded image files are stored unchanged (no quality loss), which is all
    :class:`OFRecordImageDataset` needs. OneFlow's in-graph ``OFRecordImageDecoder`` decodes
    JPEG only; give ``jpeg_quality`` (1-95) to re-encode every image as an RGB JPEG for it.
    With ``shuffle`` the samples are permuted with ``seed`` first (OneFlow's streaming reader
    reads parts in order, so shuffled parts help it). ``verify`` decodes every image first and
    fails on the first unreadable one, naming it. Returns a summary dict.
    """
    if jpeg_quality is not None and not 1 <= int(jpeg_quality) <= 95:
        raise ValueError(f"jpeg_quality must be within 1..95, got {jpeg_quality}")
    classes, entries = scan_image_folder(input_dir, extensions)
    if shuffle:
        order = np.random.default_rng(seed).permutation(len(entries))
        entries = [entries[i] for i in order]
    samples = []
    for path, label in entries:
        with open(path, "rb") as f:
            encoded = f.read()
        if verify or jpeg_quality is not None:
            encoded = _check_or_reencode(path, encoded, jpeg_quality)
        samples.append((encoded, label))
    parts = write_image_records(samples, output_dir, num_parts)
    with open(os.path.join(output_dir, CLASSES_FILE), "w") as f:
        f.write("".join(name + "\n" for name in classes))
    return {"num_samples": len(samples), "classes": classes, "parts": parts}


def _check_or_reencode(path: str, encoded: bytes, jpeg_quality: Optional[int]) -> bytes:
    try:
        with Image.open(io.BytesIO(encoded)) as img:
            img.load()
            if jpeg_quality is None:
                return encoded
            out = io.BytesIO()
            img.convert("RGB").save(out, format="JPEG", quality=int(jpeg_quality))
            return out.getvalue()
    except OSError as err:
        raise ValueError(f"cannot decode image {path}: {err}") from err


# ---------------------------------------------------------------------------------------------
# Reading image records by index
# ---------------------------------------------------------------------------------------------
def _find_parts(root: str, prefix: str) -> List[str]:
    if not os.path.isdir(root):
        raise FileNotFoundError(
            f"OFRecord folder {root!r} does not exist; create it from an image folder with\n"
            f"  python tools/images_to_ofrecord.py --input-dir IMAGES --output-dir {root}"
        )
    parts = sorted(
        os.path.join(root, n)
        for n in os.listdir(root)
        if n.startswith(prefix) and os.path.isfile(os.path.join(root, n))
    )
    if not parts:
        raise FileNotFoundError(
            f"no part files named {prefix}* in {root!r}; create them with\n"
            f"  python tools/images_to_ofrecord.py --input-dir IMAGES --output-dir {root}"
        )
    return parts


class OFRecordImageDataset(ImageClassificationDataset):
    """Map-style dataset over image OFRecord part files.

    Args:
        root: folder of ``part-*`` files (e.g. written by ``tools/images_to_ofrecord.py``).
        transform: called on a PIL RGB image (see :class:`ImageClassificationDataset`).
        image_key: feature holding the encoded image (bytes).
        label_key: feature holding the class (int32 or int64 list of one).
        part_name_prefix: name prefix of the part files.
        image_field / label_field: sample field names.

    ``classes`` lists the class names when ``classes.txt`` sits next to the parts, else ``None``.
    """

    def __init__(
        self,
        root: str,
        transform: Optional[Callable[[Any], Any]] = None,
        image_key: str = "encoded",
        label_key: str = "class/label",
        part_name_prefix: str = "part-",
        image_field: str = "images",
        label_field: str = "labels",
    ) -> None:
        super().__init__(transform, image_field, label_field)
        self.root = root
        self.image_key = image_key
        self.label_key = label_key
        self.parts = _find_parts(root, part_name_prefix)
        index = [
            (p, off, n) for p, path in enumerate(self.parts) for off, n in index_ofrecord_file(path)
        ]
        # Compact arrays: ImageNet has 1.28 M records and every worker holds a copy.
        self._part = np.array([e[0] for e in index], dtype=np.int32)
        self._offset = np.array([e[1] for e in index], dtype=np.int64)
        self._length = np.array([e[2] for e in index], dtype=np.int64)
        classes_path = os.path.join(root, CLASSES_FILE)
        self.classes: Optional[List[str]] = None
        if os.path.isfile(classes_path):
            with open(classes_path) as f:
                self.classes = [line.rstrip("\n") for line in f if line.strip()]

    def __len__(self) -> int:
        return len(self._offset)

    def read_record(self, index: int) -> Any:
        """The parsed ``OFRecord`` at ``index``."""
        if not -len(self) <= index < len(self):
            raise IndexError(f"index {index} is outside the {len(self)} records in {self.root!r}")
        path = self.parts[int(self._part[index])]
        with open(path, "rb") as f:
            f.seek(int(self._offset[index]))
            payload = f.read(int(self._length[index]))
        record = _record_pb2().OFRecord()
        record.ParseFromString(payload)
        return record

    def decode(self, record: Any) -> Tuple[Image.Image, int]:
        """``(RGB PIL image, label)`` of one record."""
        for key in (self.image_key, self.label_key):
            if key not in record.feature:
                raise KeyError(
                    f"record has no feature {key!r} (it has {sorted(record.feature)}); set "
                    "image_key / label_key to the names used when the records were written"
                )
        with Image.open(io.BytesIO(record.feature[self.image_key].bytes_list.value[0])) as img:
            image = img.convert("RGB")
        label_feature = record.feature[self.label_key]
        kind = label_feature.WhichOneof("kind")
        if kind not in ("int32_list", "int64_list") or not getattr(label_feature, kind).value:
            raise ValueError(f"feature {self.label_key!r} must hold one integer, it holds {kind}")
        return image, int(getattr(label_feature, kind).value[0])

    def __getitem__(self, index: int) -> Any:
        image, label = self.decode(self.read_record(index))
        return self.make_sample(image, label)
