"""A 2020-style GAN trainer built from train-step mixins, written for TF 2.1 on a TPU: @tf.function
step methods that pick `strategy.run` or `experimental_run_v2` by a version read from
`tf.__version__`, two Keras models and two Adam optimizers made in `strategy.scope()` (their
slots in the first step), and a trainer local to a function, held in a reference cycle (a bound
method of its own in a list of hooks).  Once `train_gan()` returns, the trainer and its
optimizers are garbage that only Python's cyclic collector frees, at a moment that differs from
run to run: the program collects it at once here, which a run may as well have done on its own.
verify must record the optimizers' variables whatever the collector did (tests/verify/
test_verify_gan_trainer.py)."""
import gc

import numpy as np
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)

tf_version = float(".".join(tf.__version__.split(".")[:2]))
params = {"tf_version": tf_version}

LATENT, FEATURES, BATCH, STEPS = 8, 4, 16, 4

with strategy.scope():
    generator = tf.keras.Sequential([
        tf.keras.layers.Dense(16, activation="relu", input_shape=(LATENT,)),
        tf.keras.layers.Dense(FEATURES),
    ])
    discriminator = tf.keras.Sequential([
        tf.keras.layers.Dense(16, activation="relu", input_shape=(FEATURES,)),
        tf.keras.layers.Dense(1),
    ])


class DiscriminatorTrainStep(object):
    def train_discriminator(self, features):
        noise = tf.random.normal([tf.shape(features)[0], LATENT], seed=1)
        with tf.GradientTape() as tape:
            fake = self.generator(noise, training=True)
            real_logits = self.discriminator(features, training=True)
            fake_logits = self.discriminator(fake, training=True)
            loss = tf.reduce_mean(tf.nn.softplus(-real_logits)) + tf.reduce_mean(tf.nn.softplus(fake_logits))
            loss = loss / self.strategy.num_replicas_in_sync
        variables = self.discriminator.trainable_variables
        self.d_optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss

    @tf.function
    def distributed_discriminator_train_step(self, features):
        run_function = self.strategy.run if self.params["tf_version"] > 2.1 else self.strategy.experimental_run_v2
        per_replica_losses = run_function(fn=self.train_discriminator, kwargs={"features": features})
        return self.strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica_losses, axis=None)


class GeneratorTrainStep(object):
    def train_generator(self, features):
        noise = tf.random.normal([tf.shape(features)[0], LATENT], seed=2)
        with tf.GradientTape() as tape:
            fake_logits = self.discriminator(self.generator(noise, training=True), training=True)
            loss = tf.reduce_mean(tf.nn.softplus(-fake_logits)) / self.strategy.num_replicas_in_sync
        variables = self.generator.trainable_variables
        self.g_optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss

    @tf.function
    def distributed_generator_train_step(self, features):
        run_function = self.strategy.run if self.params["tf_version"] > 2.1 else self.strategy.experimental_run_v2
        per_replica_losses = run_function(fn=self.train_generator, kwargs={"features": features})
        return self.strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica_losses, axis=None)


class GANTrainer(DiscriminatorTrainStep, GeneratorTrainStep):
    def __init__(self, strategy, params, generator, discriminator):
        self.strategy = strategy
        self.params = params
        self.generator = generator
        self.discriminator = discriminator
        with strategy.scope():
            self.g_optimizer = tf.keras.optimizers.Adam(learning_rate=1e-3)
            self.d_optimizer = tf.keras.optimizers.Adam(learning_rate=1e-3)
        self.history = {"discriminator": [], "generator": []}
        self.step_end_hooks = [self.log_losses]

    def log_losses(self, step, d_loss, g_loss):
        self.history["discriminator"].append(float(d_loss))
        self.history["generator"].append(float(g_loss))
        print("step", step, float(d_loss), float(g_loss))

    def train(self, dataset, steps):
        iterator = iter(self.strategy.experimental_distribute_dataset(dataset))
        for step in range(steps):
            features = next(iterator)
            d_loss = self.distributed_discriminator_train_step(features)
            g_loss = self.distributed_generator_train_step(features)
            for hook in self.step_end_hooks:
                hook(step, d_loss, g_loss)
        return self.history


def train_gan():
    data = np.random.RandomState(0).normal(size=(256, FEATURES)).astype("float32")
    dataset = tf.data.Dataset.from_tensor_slices(data).repeat().batch(BATCH, drop_remainder=True)
    trainer = GANTrainer(strategy, params, generator, discriminator)
    return trainer.train(dataset, STEPS)


history = train_gan()
gc.collect()
print("final losses", history["discriminator"][-1], history["generator"][-1])
