"""Per-call cost of each framework integration beside the framework's own TensorBoard hook.

    python bench/integrations.py          # ~1 min

Each row times the hook method a framework calls per logging step, with the same inputs, on
a warm writer, in alternating batches (medians, microseconds per call):

* Lightning ``log_metrics`` (4 metrics): ours vs ``lightning.pytorch.loggers.TensorBoardLogger``
  (torch's writer). Target: ours <= 0.2x.
* transformers ``on_log`` (5 logs): ours vs ``transformers.integrations.TensorBoardCallback``
  (torch's writer, a flush per call). Target: ours <= 0.2x.
* clu ``write_scalars`` (4 metrics): ours vs what clu's torch writer does (``add_scalar`` per
  key on torch's writer); clu's TensorFlow writer cannot run without TensorFlow.
* Keras ``on_train_batch_end`` with ``update_freq=1``: ours alone (Keras's callback imports
  TensorFlow), beside the time of one ``train_on_batch`` of the same tiny model.
* ``watch`` on steps that log nothing: a training step with and without the hooks.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable

os.environ.setdefault("KERAS_BACKEND", "jax")
warnings.simplefilter("ignore")


def per_call(fn: Callable[[int], object], n: int) -> float:
    t0 = time.perf_counter()
    for i in range(n):
        fn(i)
    return (time.perf_counter() - t0) / n * 1e6


def paired(ours: Callable[[int], object], theirs: Callable[[int], object], n: int,
           reps: int = 7) -> tuple[float, float, float]:
    ours(0)
    theirs(0)
    a, b, r = [], [], []
    for _ in range(reps):
        x, y = per_call(ours, n), per_call(theirs, n)
        a.append(x)
        b.append(y)
        r.append(x / y)
    return statistics.median(a), statistics.median(b), statistics.median(r)


def main() -> None:
    rows: list[tuple[str, str, float, float, float]] = []
    tmp = tempfile.mkdtemp()

    try:
        from lightning.pytorch.loggers import TensorBoardLogger as TheirLogger

        from summarylib.integrations.lightning import TensorBoardLogger

        ours_l, theirs_l = TensorBoardLogger(f"{tmp}/l_ours"), TheirLogger(f"{tmp}/l_theirs")
        metrics = {"loss": 0.5, "acc": 0.9, "lr": 0.01, "epoch": 1.0}
        rows.append(("Lightning log_metrics (4)", "Lightning's logger",
                     *paired(lambda i: ours_l.log_metrics(metrics, i),
                             lambda i: theirs_l.log_metrics(metrics, i), 500)))
        ours_l.finalize("success")
        theirs_l.finalize("success")
    except ImportError as e:
        print("Lightning row skipped:", e)

    try:
        from transformers import TrainerControl, TrainerState, TrainingArguments
        from transformers.integrations import TensorBoardCallback as TheirCallback

        from summarylib.integrations.transformers import TensorBoardCallback

        args = TrainingArguments(output_dir=f"{tmp}/hf", report_to="none", use_cpu=True)
        state, control = TrainerState(), TrainerControl()
        logs = {"loss": 0.5, "learning_rate": 1e-4, "grad_norm": 1.2, "epoch": 0.5,
                "eval_loss": 0.4}
        os.environ["TENSORBOARD_LOGGING_DIR"] = f"{tmp}/hf_ours"
        ours_c = TensorBoardCallback()
        os.environ["TENSORBOARD_LOGGING_DIR"] = f"{tmp}/hf_theirs"
        theirs_c = TheirCallback()

        def ours_on_log(i: int) -> None:
            state.global_step = i
            ours_c.on_log(args, state, control, logs=logs)

        def theirs_on_log(i: int) -> None:
            state.global_step = i
            theirs_c.on_log(args, state, control, logs=logs)

        rows.append(("transformers on_log (5)", "transformers' callback",
                     *paired(ours_on_log, theirs_on_log, 300)))
        ours_c.on_train_end(args, state, control)
        theirs_c.on_train_end(args, state, control)
    except ImportError as e:
        print("transformers row skipped:", e)

    try:
        from torch.utils.tensorboard import SummaryWriter as TorchWriter

        from summarylib.integrations.clu import MetricWriter

        clu_ours = MetricWriter(f"{tmp}/clu_ours")
        torch_w = TorchWriter(f"{tmp}/clu_torch")
        values = {"loss": 0.5, "acc": 0.9, "lr": 0.01, "norm": 3.0}

        def torch_write_scalars(i: int) -> None:
            for k, v in values.items():
                torch_w.add_scalar(k, v, global_step=i)

        rows.append(("clu write_scalars (4)", "clu's torch writer",
                     *paired(lambda i: clu_ours.write_scalars(i, values), torch_write_scalars,
                             500)))
        clu_ours.close()
        torch_w.close()
    except ImportError as e:
        print("clu row skipped:", e)

    try:
        import keras
        import numpy as np

        from summarylib.integrations.keras import TensorBoard

        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8),
                                  keras.layers.Dense(1)])
        model.compile(optimizer="sgd", loss="mse")
        x, y = np.zeros((8, 4), "float32"), np.zeros((8, 1), "float32")
        cb = TensorBoard(f"{tmp}/keras", update_freq=1, write_graph=False)
        cb.set_model(model)
        cb.on_train_begin()
        batch_logs = {"loss": 0.5, "mae": 0.3}

        def on_batch(i: int) -> None:
            cb.on_train_batch_begin(i)
            cb.on_train_batch_end(i, batch_logs)

        step = lambda i: model.train_on_batch(x, y)  # noqa: E731
        ours_us, step_us, ratio = paired(on_batch, step, 300)
        rows.append((f"Keras on_train_batch ({keras.backend.backend()})",
                     "one train_on_batch", ours_us, step_us, ratio))
        cb.on_train_end()
    except ImportError as e:
        print("Keras row skipped:", e)

    try:
        import torch

        import summarylib as sl
        from summarylib.integrations.torch import unwatch, watch

        net = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(),
                                  torch.nn.Linear(64, 1))
        data = torch.randn(16, 32)

        def train_step(i: int) -> None:
            net.zero_grad()
            net(data).sum().backward()

        plain = statistics.median(per_call(train_step, 300) for _ in range(5))
        writer = sl.create_file_writer(f"{tmp}/watch")
        watch(net, log="all", log_freq=10**9, writer=writer)
        train_step(0)  # step 0 logs; the rest count only
        watched = statistics.median(per_call(train_step, 300) for _ in range(5))
        unwatch(net)
        writer.close()
        rows.append(("watch, a step that logs nothing", "the same step unwatched",
                     watched, plain, watched / plain))
    except ImportError as e:
        print("watch row skipped:", e)

    print(f"{'call':38} {'beside':26} {'ours us':>9} {'theirs us':>10} {'ratio':>7}")
    for name, beside, a, b, r in rows:
        print(f"{name:38} {beside:26} {a:9.1f} {b:10.1f} {r:7.3f}")
    print("(medians of alternating batches; ratio = ours / the other column)", file=sys.stderr)


if __name__ == "__main__":
    main()
