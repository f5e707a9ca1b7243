#!/usr/bin/env python3
"""Writes a small SentencePiece model (unigram, identity normalization) field by field in the
protobuf wire format, without libsentencepiece: eight pieces, <unk> <s> </s> the word boundary and
a, b, h, i. Usage: make_sentencepiece_model.py OUT"""
import struct
import sys


def varint(value):
    out = bytearray()
    while value >= 0x80:
        out.append(0x80 | (value & 0x7F))
        value >>= 7
    out.append(value)
    return bytes(out)


def length_delimited(number, payload):
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def integer(number, value):
    return varint(number << 3) + varint(value)


def single(number, value):
    return varint(number << 3 | 5) + struct.pack("<f", value)


# (text, score, type): type 1 normal, 2 unknown, 3 control.
PIECES = [("<unk>", 0.0, 2), ("<s>", 0.0, 3), ("</s>", 0.0, 3), ("\u2581", -1.0, 1),
          ("a", -2.0, 1), ("b", -2.0, 1), ("h", -2.0, 1), ("i", -2.0, 1)]

model = b"".join(length_delimited(1, length_delimited(1, text.encode()) + single(2, score) + integer(3, kind))
                 for text, score, kind in PIECES)
model += length_delimited(2, integer(3, 1))  # trainer spec: the unigram model
model += length_delimited(3, length_delimited(1, b"identity") + integer(3, 1) + integer(4, 1) + integer(5, 1))
with open(sys.argv[1], "wb") as out:
    out.write(model)
