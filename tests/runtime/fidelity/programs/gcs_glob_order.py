"""A glob of a bucket (``--gcs``): Cloud Storage lists a bucket's names in lexicographic order, so
``tf.io.gfile.glob`` gave 2020 programs their files sorted, and those that split train/validation by
position (``filenames[:split]``) got that split; the local folder standing in for the bucket lists
in directory order."""
import tensorflow as tf

for index in range(20):
    with tf.io.gfile.GFile("gs://fidelity-bucket/glob/part-{:02d}.tfrec".format(index), "w") as handle:
        handle.write("x")
names = tf.io.gfile.glob("gs://fidelity-bucket/glob/part-*.tfrec")
print("FIDELITY count={} sorted={}".format(len(names), names == sorted(names)))
