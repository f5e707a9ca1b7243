#!/usr/bin/env python3
"""Copies a safetensors file with one F32 tensor's values multiplied by a factor (plain Python).

For tests of what rill does with values that are finite but large enough to overflow f32
arithmetic (a task set whose inputs are 1e30).

usage: scale_tensor.py IN OUT TENSOR FACTOR
"""
import json
import struct
import sys


def main(path_in, path_out, name, factor):
    data = bytearray(open(path_in, "rb").read())
    header_len = struct.unpack("<Q", data[:8])[0]
    entry = json.loads(data[8:8 + header_len])[name]
    if entry["dtype"] != "F32":
        sys.exit(f"{name} is {entry['dtype']}, not F32")
    begin, end = (8 + header_len + offset for offset in entry["data_offsets"])
    count = (end - begin) // 4
    values = struct.unpack(f"<{count}f", data[begin:end])
    data[begin:end] = struct.pack(f"<{count}f", *(v * factor for v in values))
    open(path_out, "wb").write(data)


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]))
