"""Keras 3 on JAX (or torch), logged for TensorBoard without TensorFlow.

    KERAS_BACKEND=jax python examples/keras_fit.py [logdir]
"""

import os
import sys

os.environ.setdefault("KERAS_BACKEND", "jax")  # before importing keras

import keras
import numpy as np

from summarylib.integrations.keras import TensorBoard

logdir = sys.argv[1] if len(sys.argv) > 1 else "logs/keras_fit"
rng = np.random.default_rng(0)
x = rng.normal(size=(512, 8)).astype("float32")
y = (x[:, :4].sum(axis=1) > 0).astype("int32")
model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(32, activation="relu"),
                          keras.layers.Dense(2, activation="softmax")])
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
model.fit(x, y, validation_split=0.2, epochs=5, batch_size=32, verbose=0,
          callbacks=[TensorBoard(logdir, histogram_freq=1, update_freq=5)])
print(f"wrote {logdir} (runs train/ and validation/)")
