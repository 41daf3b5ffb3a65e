"""Writes a program's synthetic Cloud Storage files (its "gcs_files") into a folder.

Run by fetch.py under a TensorFlow interpreter (JPEG encoding and TFRecords need
TensorFlow; any TF 2.x does):

    python make_gcs.py SPEC.json DIR

SPEC.json is the program's "gcs_files" list; each entry writes `count` files (default 1)
at DIR/<path>, where <path> is the bucket and object name of gs://<path> (`migrate-tpu run
--gcs DIR` reads gs://BUCKET/NAME as DIR/BUCKET/NAME). In `path` and in text records,
`{i}` is the file's number, `{n}` a record's number and `{choice}` the entry's `choices`
item for that number (`choices[i % len]` in a path, `choices[n % len]` in a record). An
entry is one of:

    {"path": ..., "jpeg": [H, W]}                 a JPEG of random pixels (3 channels)
    {"path": ..., "records": N, "record": R}      a TFRecord file of N records, R one of:
        {"jpeg": [H, W]}                          the bytes of a random JPEG
        {"text": "..."}                           a string (placeholders as above)
        {"example": {NAME: F, ...}}               a serialized tf.train.Example, F one of
            {"jpeg": [H, W]}  {"int": [LOW, HIGH]}  {"float": [LOW, HIGH]}  {"text": "..."}
                                                  (an int is drawn in [LOW, HIGH))

Everything is drawn from numpy's RandomState(`seed`, default 0), so a folder is the same
each time it is written.
"""

import json
import os
import sys

import numpy as np
import tensorflow as tf


def jpeg(rng, size):
    height, width = size
    pixels = rng.randint(0, 256, (height, width, 3)).astype(np.uint8)
    return tf.io.encode_jpeg(tf.constant(pixels)).numpy()


def text(template, entry, i, n):
    choices = entry.get("choices") or [""]
    return template.format(i=i, n=n, choice=choices[n % len(choices)])


def feature(rng, spec, entry, i, n):
    if "jpeg" in spec:
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=[jpeg(rng, spec["jpeg"])]))
    if "text" in spec:
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=[text(spec["text"], entry, i, n).encode("utf-8")]))
    if "int" in spec:
        low, high = spec["int"]
        return tf.train.Feature(int64_list=tf.train.Int64List(value=[int(rng.randint(low, high))]))
    if "float" in spec:
        low, high = spec["float"]
        return tf.train.Feature(float_list=tf.train.FloatList(value=[float(rng.uniform(low, high))]))
    raise ValueError("unknown feature: {!r}".format(spec))


def record(rng, spec, entry, i, n):
    if "jpeg" in spec:
        return jpeg(rng, spec["jpeg"])
    if "text" in spec:
        return text(spec["text"], entry, i, n).encode("utf-8")
    if "example" in spec:
        features = {name: feature(rng, value, entry, i, n) for name, value in spec["example"].items()}
        return tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString()
    raise ValueError("unknown record: {!r}".format(spec))


def write(entries, folder):
    written = 0
    for entry in entries:
        rng = np.random.RandomState(entry.get("seed", 0))
        choices = entry.get("choices") or [""]
        for i in range(entry.get("count", 1)):
            name = entry["path"].format(i=i, n=i, choice=choices[i % len(choices)])
            target = os.path.join(folder, name)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            if "jpeg" in entry:
                with open(target, "wb") as handle:
                    handle.write(jpeg(rng, entry["jpeg"]))
            elif "records" in entry:
                with tf.io.TFRecordWriter(target) as writer:
                    for n in range(entry["records"]):
                        writer.write(record(rng, entry["record"], entry, i, n))
            else:
                raise ValueError("an entry needs jpeg or records: {!r}".format(entry))
            written += 1
    return written


if __name__ == "__main__":
    with open(sys.argv[1]) as handle:
        spec = json.load(handle)
    print("{} files in {}".format(write(spec, sys.argv[2]), sys.argv[2]))
