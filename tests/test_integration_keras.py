"""summarylib.integrations.keras.TensorBoard: Keras 3 fit on the JAX and torch backends.

Keras's own callback needs TensorFlow (not installed here), so the expected layout is its
documented one (the runs, tags and steps its source writes) and the values are the ones
``fit`` reports in its History. Each backend runs in a fresh interpreter (Keras picks its
backend once per process).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.observe import observe
from tests.tbserver import TensorBoardServer

if importlib.util.find_spec("keras") is None:  # importing keras here would pick a backend
    pytest.skip("keras is not installed", allow_module_level=True)

FIT = '''
import json, os, sys, warnings
warnings.simplefilter("ignore")
import numpy as np
import keras
from summarylib.integrations.keras import TensorBoard

keras.utils.set_random_seed(0)
x = np.random.default_rng(0).normal(size=(64, 4)).astype("float32")
y = (x.sum(axis=1) > 0).astype("int32")
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"),
                          keras.layers.Dense(2, activation="softmax")])
model.compile(optimizer=keras.optimizers.SGD(0.05), loss="sparse_categorical_crossentropy",
              metrics=["accuracy"])
history = model.fit(x, y, validation_split=0.25, epochs=3, batch_size=8, verbose=0,
                    callbacks=[TensorBoard(sys.argv[1], histogram_freq=1, write_images=True,
                                           update_freq=2, write_steps_per_second=True)])
print(json.dumps({"history": history.history, "backend": keras.backend.backend(),
                  "tf": "tensorflow" in sys.modules,
                  "weights": [w.path for w in model.weights]}))
'''


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_fit_writes_kerass_layout(tmp_path: Path, backend: str) -> None:
    if importlib.util.find_spec(backend) is None:
        pytest.skip(f"{backend} is not installed")
    env = {**os.environ, "KERAS_BACKEND": backend}
    done = subprocess.run([sys.executable, "-c", FIT, str(tmp_path)], capture_output=True,
                          text=True, timeout=300, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["backend"] == backend and report["tf"] is False
    history = report["history"]
    obs = observe(tmp_path)
    assert sorted(obs) == ["train", "validation"]
    train, val = obs["train"], obs["validation"]
    for metric in ("loss", "accuracy"):
        assert train[f"epoch_{metric}"].steps == [0, 1, 2]
        assert train[f"epoch_{metric}"].values == pytest.approx(history[metric], rel=1e-6)
    assert train["epoch_learning_rate"].values == pytest.approx([0.05] * 3)
    for metric in ("loss", "accuracy"):
        assert val[f"epoch_{metric}"].values == pytest.approx(history["val_" + metric],
                                                              rel=1e-6)
    # 48 training samples / batch 8 = 6 batches per epoch; update_freq=2: every 2nd.
    assert train["batch_loss"].steps == list(range(2, 19, 2))
    assert train["batch_steps_per_second"].steps == train["batch_loss"].steps
    assert train["epoch_steps_per_second"].steps == [0, 1, 2]
    assert val["evaluation_loss_vs_iterations"].steps == [6, 12, 18]
    for path in report["weights"]:
        name = path.replace(":", "_")
        assert train[f"{name}/histogram"].steps == [0, 1, 2]
        assert train[f"{name}/image"].plugin == "images"
    assert train["keras"].plugin == "graph_keras_model"
    assert json.loads(train["keras"].values[0].item())["class_name"] == "Sequential"
    if backend == "torch":
        assert "__graph__" in train  # the op graph, captured from the torch module
    with TensorBoardServer(tmp_path) as tb:
        info = tb.poll(lambda: tb.get_json("/data/plugin/graphs/info"),
                       lambda i: "train" in i)
        tags = tb.get_json("/data/plugin/scalars/tags")
    assert info["train"]["tags"]["keras"]["conceptual_graph"] is True
    assert "epoch_loss" in tags["train"] and "epoch_loss" in tags["validation"]


def test_embeddings_and_arguments(tmp_path: Path) -> None:
    script = '''
import sys, warnings
warnings.simplefilter("ignore")
import numpy as np
import keras
from summarylib.integrations.keras import TensorBoard
keras.utils.set_random_seed(0)
model = keras.Sequential([keras.Input((3,), dtype="int32"),
                          keras.layers.Embedding(10, 4, name="tokens"),
                          keras.layers.GlobalAveragePooling1D(), keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
open(sys.argv[2], "w").write("\\n".join(f"word{i}" for i in range(10)))
model.fit(np.arange(30).reshape(10, 3) % 10, np.ones(10), epochs=2, verbose=0,
          callbacks=[TensorBoard(sys.argv[1], embeddings_freq=1, write_graph=False,
                                 embeddings_metadata={"tokens": sys.argv[2]})])
try:
    TensorBoard(sys.argv[1], update_freq="sometimes")
except ValueError as e:
    print("error:", e)
'''
    env = {**os.environ, "KERAS_BACKEND": "jax"}
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "logs"),
                           str(tmp_path / "labels.tsv")], capture_output=True, text=True,
                          timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "error: TensorBoard: 'update_freq' must be 'epoch', 'batch' or an int" in done.stdout
    from google.protobuf import text_format

    from summarylib.proto import projector_config_pb2

    config = text_format.Parse((tmp_path / "logs" / "projector_config.pbtxt").read_text(),
                               projector_config_pb2.ProjectorConfig())
    assert [e.tensor_name for e in config.embeddings] == ["tokens:00000", "tokens:00001"]
    labels = (tmp_path / "logs" / config.embeddings[1].metadata_path).read_text()
    assert labels.splitlines()[3] == "word3"


VARIABLES = '''
import json, sys, warnings
warnings.simplefilter("ignore")
import numpy as np
import keras
import summarylib as sl
from summarylib.reader import read_scalars

class LogLR(keras.callbacks.Callback):
    # A user's own callback: TensorFlow's idiom, the optimizer's variables as they are.
    def on_train_batch_end(self, batch, logs=None):
        opt = self.model.optimizer
        sl.scalar("lr", opt.learning_rate, step=opt.iterations)
        sl.histogram("w", self.model.weights[0], step=opt.iterations)

keras.utils.set_random_seed(0)
x = np.random.default_rng(0).normal(size=(32, 4)).astype("float32")
y = x.sum(axis=1, keepdims=True)
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
model.compile(optimizer=keras.optimizers.SGD(0.25), loss="mse")
with sl.create_file_writer(sys.argv[1]).as_default():
    model.fit(x, y, epochs=1, batch_size=8, verbose=0, callbacks=[LogLR()])
    try:
        sl.scalar("bad", 1.0, step=keras.Variable(1.5))
        refused = ""
    except TypeError as e:
        refused = str(e)
runs = read_scalars(sys.argv[1])
print(json.dumps({"lr": [(s, v) for s, _, v in runs["."]["lr"]], "refused": refused}))
'''


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_keras_variables_are_steps_and_values(tmp_path: Path, backend: str) -> None:
    # step=optimizer.iterations (a Keras variable: no __index__) was refused ("'step' must
    # be an integer, got Variable"); it is read as the integer it holds.
    if importlib.util.find_spec(backend) is None:
        pytest.skip(f"{backend} is not installed")
    env = {**os.environ, "KERAS_BACKEND": backend}
    done = subprocess.run([sys.executable, "-c", VARIABLES, str(tmp_path)],
                          capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["lr"] == [[s, 0.25] for s in range(1, 5)]  # iterations after each batch
    assert "'step' must be an integer" in report["refused"]
