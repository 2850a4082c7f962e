"""Gradient accumulation inside one `train_step`: a batch of K * B examples is split into K
micro-batches of B, run one after the other (a `tf.while_loop`, so only one micro-batch's
activations are alive at a time), and their gradients averaged into ONE optimizer update.

One step of `fit` is then one optimizer update: the learning-rate schedule, `iterations`,
`steps_per_epoch`, checkpoints and resumed runs all count updates, and the data stream
yields batches of K * B exactly as it would for a run without accumulation at that batch
size. Clipping (`global_clipnorm`), loss scaling (`LossScaleOptimizer` unscales and checks
the averaged gradients: an overflow in any micro-batch skips the whole update) and
`tf.distribute` (each replica splits its share and accumulates locally; the optimizer
all-reduces once per update) see the accumulated gradients as if they came from one batch.

Keras' own `gradient_accumulation_steps` (Keras 3.15) is not used: it evaluates the
learning-rate schedule at the micro-batch count (`schedule(optimizer._iterations)`: the first
update runs at `schedule(K - 1)` and the schedule ends K times too early), and under
MirroredStrategy `fit` fails (its `ops.cond` wraps the optimizer's `merge_call`s:
"`merge_call` called while defining a new graph"). Both measured with TF 2.21.

Two implementations of the same step, one per backend whose `train_step` it replaces:
TensorFlow's (a `tf.while_loop`, `tf.GradientTape`) and JAX's (a `jax.lax.scan` over Keras'
stateless `compute_loss_and_updates`, the function Keras' own JAX step differentiates).
Each imports its framework only when called, so the networks import without TensorFlow.
"""

from __future__ import annotations

import keras
from keras import ops

from keras_bert.backend import is_jax, is_tensorflow, name


def accumulated_train_step(model: keras.Model, *args, steps: int):
    """The running backend's accumulated step: `model.train_step(*args)` with the batch
    split into `steps` micro-batches and one optimizer update (`args` is the backend's
    `train_step` signature: `(data,)` on TensorFlow, `(state, data)` on JAX)."""
    if is_tensorflow():
        return tensorflow_accumulated_step(model, *args, steps=steps)
    if is_jax():
        return jax_accumulated_step(model, *args, steps=steps)
    raise NotImplementedError(
        f"gradient accumulation (accumulation_steps={steps}) runs on Keras' TensorFlow and "
        f"JAX backends, not {name()!r}")


def split_micro_batches(data, steps: int):
    """`data` (a nest of tensors whose first dimension is `steps * B`) as the same nest of
    `[steps, B, ...]` tensors; raises when the batch does not divide by `steps`."""
    import tensorflow as tf

    def split(tensor):
        if tensor is None:
            return None
        tensor = tf.convert_to_tensor(tensor)
        batch = tensor.shape[0]
        if batch is not None and batch % steps:
            raise ValueError(f"a batch of {batch} examples does not split into "
                             f"{steps} micro-batches (per replica under tf.distribute)")
        shape = tf.shape(tensor)
        tf.debugging.assert_equal(shape[0] % steps, 0, message=(
            f"the batch does not split into {steps} micro-batches"))
        return tf.reshape(tensor, tf.concat([[steps, shape[0] // steps], shape[1:]], 0))
    return tf.nest.map_structure(split, data)


def tensorflow_accumulated_step(model: keras.Model, data, steps: int) -> dict:
    """Keras' TensorFlow `train_step` (forward, `compute_loss`, the `loss` tracker, loss
    scaling, `compute_metrics`) over `steps` micro-batches of `data`, then one
    `optimizer.apply` with the mean of their gradients.

    The update is the gradient of the mean of the micro-batch losses: for losses that are
    means over equally many items per micro-batch, the gradient of one batch of `steps * B`.
    """
    import tensorflow as tf

    x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
    micro = split_micro_batches((x, y, sample_weight), steps)
    variables = model.trainable_variables
    replicas = tf.distribute.get_strategy().num_replicas_in_sync
    compute_loss = getattr(model, "_compute_loss", model.compute_loss)

    unused: set[int] = set()  # variables without a gradient (None), as Keras skips them

    def body(i, sums):
        mx, my, msw = tf.nest.map_structure(lambda t: None if t is None else t[i], micro)
        with tf.GradientTape() as tape:
            y_pred = model(mx, training=True)
            loss = compute_loss(x=mx, y=my, y_pred=y_pred, sample_weight=msw, training=True)
            # As Keras' train_step: the tracker logs the loss before the per-replica division.
            model._loss_tracker.update_state(
                loss * tf.cast(replicas, loss.dtype),
                sample_weight=tf.shape(tf.nest.flatten(mx)[0])[0])
            scaled = model.optimizer.scale_loss(loss)
        grads = tape.gradient(scaled, variables)
        model.compute_metrics(mx, my, y_pred, sample_weight=msw)
        unused.update(k for k, g in enumerate(grads) if g is None)
        sums = [s if g is None else s + tf.cast(tf.convert_to_tensor(g), s.dtype)
                for s, g in zip(sums, grads, strict=True)]
        return i + 1, sums

    zeros = [tf.zeros(v.shape, v.dtype) for v in variables]
    _, sums = tf.while_loop(lambda i, _: i < steps, body, (tf.constant(0), zeros),
                            parallel_iterations=1)
    model.optimizer.apply_gradients(
        [(None if k in unused else total / steps, v)
         for k, (total, v) in enumerate(zip(sums, variables, strict=True))])
    return model.get_metrics_result()


def jax_accumulated_step(model: keras.Model, state, data, steps: int):
    """Keras' JAX `train_step` (stateless: `state` in, `(logs, state)` out) over `steps`
    micro-batches of `data`, one `optimizer.stateless_apply` with the mean gradient.

    The micro-batches run in a `jax.lax.scan`, so one micro-batch's activations are alive
    at a time and the step compiles once whatever `steps` is; the metrics (the loss
    tracker's included) see every micro-batch, as on TensorFlow. The loss is scaled inside
    `compute_loss_and_updates` and `LossScaleOptimizer.stateless_apply` unscales and checks
    the averaged gradients, so an overflow in any micro-batch skips the whole update.
    """
    import jax

    trainable, non_trainable, optimizer_variables, metrics_variables = state
    x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)

    def split(tensor):
        if tensor is None:
            return None
        batch = tensor.shape[0]
        if batch % steps:
            raise ValueError(f"a batch of {batch} examples does not split into {steps} "
                             "micro-batches")
        return ops.reshape(tensor, (steps, batch // steps, *tensor.shape[1:]))

    micro = keras.tree.map_structure(split, (x, y, sample_weight))
    gradient = jax.value_and_grad(model.compute_loss_and_updates, has_aux=True)

    def body(carry, batch):
        sums, non_trainable, metrics_variables = carry
        mx, my, msw = batch
        (_, aux), grads = gradient(trainable, non_trainable, metrics_variables, mx, my, msw,
                                   training=True, optimizer_variables=optimizer_variables)
        unscaled, y_pred, non_trainable, metrics_variables = aux
        _, metrics_variables = model._update_metrics_variables(
            metrics_variables, unscaled, mx, my, y_pred, msw)
        sums = [total + grad.astype(total.dtype) for total, grad in zip(sums, grads,
                                                                        strict=True)]
        return (sums, non_trainable, metrics_variables), None

    zeros = [jax.numpy.zeros(v.shape, v.dtype) for v in trainable]
    (sums, non_trainable, metrics_variables), _ = jax.lax.scan(
        body, (zeros, non_trainable, metrics_variables), micro)
    trainable, optimizer_variables = model.optimizer.stateless_apply(
        optimizer_variables, [total / steps for total in sums], trainable)
    with keras.StatelessScope(state_mapping=list(zip(model.metrics_variables,
                                                      metrics_variables, strict=True))):
        logs = model.get_metrics_result()
    return logs, (trainable, non_trainable, optimizer_variables, metrics_variables)


__all__ = ["accumulated_train_step", "jax_accumulated_step", "split_micro_batches",
           "tensorflow_accumulated_step"]
