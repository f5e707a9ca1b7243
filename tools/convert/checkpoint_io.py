"""Reading and writing checkpoint files for the converters and the PyTorch references: safetensors
(read and written here: the format is an 8-byte little-endian header length, a JSON header, then the
data) and published Hugging Face checkpoint folders (config.json with pytorch_model*.bin or
*.safetensors, sharded or not). Files are untrusted: problems raise CheckpointError with the path."""
import json
import os
import struct
import tempfile

import torch

DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "F64": torch.float64,
          "I32": torch.int32, "I64": torch.int64}
NAMES = {v: k for k, v in DTYPES.items()}


class CheckpointError(Exception):
    pass


def read_safetensors(path):
    """(name -> tensor, metadata). U32 tensors come back as int64."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise CheckpointError("cannot read '%s': %s" % (path, e.strerror))
    if len(data) < 8:
        raise CheckpointError("'%s' is not a safetensors file (%d bytes)" % (path, len(data)))
    (header_len,) = struct.unpack_from("<Q", data, 0)
    if header_len > len(data) - 8:
        raise CheckpointError("'%s': the header length %d runs past the end of the file" % (path, header_len))
    try:
        header = json.loads(data[8:8 + header_len])
    except (ValueError, RecursionError) as e:
        raise CheckpointError("'%s': the header is not JSON (%s)" % (path, e))
    if not isinstance(header, dict):
        raise CheckpointError("'%s': the header is not a JSON object" % path)
    base, out = 8 + header_len, {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        dtype_name, shape, (begin, end) = _checked_entry(path, name, entry)
        if not 0 <= begin <= end <= len(data) - base:
            raise CheckpointError("'%s': tensor '%s' lies outside the file" % (path, name))
        raw = data[base + begin:base + end]
        size = 4 if dtype_name == "U32" else torch.empty(0, dtype=DTYPES[dtype_name]).element_size()
        count = 1
        for dim in shape:
            count *= dim
        if len(raw) != count * size:
            raise CheckpointError("'%s': tensor '%s' holds %d bytes, its shape %s of %s needs %d" %
                                  (path, name, len(raw), shape, dtype_name, count * size))
        if dtype_name == "U32":
            t = torch.tensor(struct.unpack("<%dI" % count, raw), dtype=torch.int64)
        else:
            dtype = DTYPES[dtype_name]
            t = torch.frombuffer(bytearray(raw), dtype=dtype) if raw else torch.zeros(0, dtype=dtype)
        out[name] = t.reshape(shape)
    metadata = header.get("__metadata__", {})
    if not isinstance(metadata, dict):
        raise CheckpointError("'%s': __metadata__ is not a JSON object" % path)
    return out, metadata


def _checked_entry(path, name, entry):
    """(dtype name, shape, data offsets) of a header entry, each of the right type."""
    def is_count(v):  # below 2^62: no size product of a real tensor overflows torch's 64-bit sizes
        return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2 ** 62
    if not isinstance(entry, dict):
        raise CheckpointError("'%s': entry '%s' is not a JSON object" % (path, name))
    dtype_name, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    if dtype_name != "U32" and dtype_name not in DTYPES:
        raise CheckpointError("'%s': tensor '%s' has dtype %s" % (path, name, dtype_name))
    if not isinstance(shape, list) or not all(is_count(d) for d in shape):
        raise CheckpointError("'%s': tensor '%s' has shape %r, not a list of sizes" % (path, name, shape))
    if not isinstance(offsets, list) or len(offsets) != 2 or not all(is_count(o) for o in offsets):
        raise CheckpointError("'%s': tensor '%s' has data_offsets %r, not two offsets" % (path, name, offsets))
    return dtype_name, shape, offsets


def write_safetensors(path, tensors, metadata=None, dtypes=None):
    """Writes name -> tensor atomically (a temporary file renamed over `path`), each stored as
    dtypes[name] if given, else its own dtype. Tensors are converted one at a time while writing, so a
    whole converted copy of a large model is never in memory."""
    dtypes = dtypes or {}
    header, offset = {}, 0
    if metadata:
        header["__metadata__"] = {k: str(v) for k, v in metadata.items()}
    for name, t in tensors.items():
        dtype = dtypes.get(name, t.dtype)
        size = t.numel() * torch.empty(0, dtype=dtype).element_size()
        header[name] = {"dtype": NAMES[dtype], "shape": list(t.shape), "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the data starts 8-byte aligned

    def write(f):
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for name, t in tensors.items():
            stored = t.detach().to(dtypes.get(name, t.dtype)).contiguous().cpu()
            if stored.numel():
                f.write(stored.view(torch.uint8).numpy().tobytes())

    _write_atomic(path, "wb", write)


def _write_atomic(path, mode, write):
    """Calls write(file) on a temporary file next to `path`, synced, then renamed over it."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".tmp.", dir=folder)
    try:
        # mkstemp makes the file private (0600): give it the mode a plain open() would.
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, mode) as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def write_text_atomic(path, text):
    _write_atomic(path, "w", lambda f: f.write(text))


def write_bytes_atomic(path, data):
    _write_atomic(path, "wb", lambda f: f.write(data))


def load_published(folder):
    """(config dict, state dict) of a Hugging Face checkpoint folder."""
    config_path = os.path.join(folder, "config.json")
    try:
        with open(config_path) as f:
            config = json.load(f)
    except OSError as e:
        raise CheckpointError("cannot read '%s': %s" % (config_path, e.strerror))
    except (ValueError, RecursionError) as e:
        raise CheckpointError("'%s' is not JSON: %s" % (config_path, e))
    if not isinstance(config, dict):
        raise CheckpointError("'%s' is not a JSON object" % config_path)
    names = sorted(os.listdir(folder))
    safetensors = [n for n in names if n.endswith(".safetensors") and n.startswith("model")]
    bins = [n for n in names if n.startswith("pytorch_model") and n.endswith(".bin")]
    if not safetensors and not bins:
        raise CheckpointError("'%s' holds no weights (model*.safetensors or pytorch_model*.bin)" % folder)
    state = {}
    for name in safetensors or bins:
        path = os.path.join(folder, name)
        if name.endswith(".safetensors"):
            part, _ = read_safetensors(path)
        else:
            try:
                part = torch.load(path, map_location="cpu", weights_only=True)  # no code runs from the file
            except Exception as e:  # noqa: BLE001  (pickle and zip errors of every kind)
                raise CheckpointError("cannot load '%s': %s" % (path, e))
            if not isinstance(part, dict):
                raise CheckpointError("'%s' does not hold a state dict" % path)
        for key, value in part.items():
            if key in state:
                raise CheckpointError("tensor '%s' appears in two weight files of '%s'" % (key, folder))
            if not isinstance(value, torch.Tensor):
                raise CheckpointError("'%s': entry '%s' is not a tensor" % (path, key))
            state[key] = value
    return config, state
