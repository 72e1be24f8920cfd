"""A tensorboardX user's script runs with summarylib when only its import changes.

The script is tensorboardX's demo (its README example) without torchvision: the same
calls, default ``runs/...`` log directory, ``export_scalars_to_json`` at the end. It runs in
a subprocess twice, unchanged with tensorboardX and with the import line replaced; both
logs are then compared through TensorBoard's loader. The one documented layout
difference: tensorboardX puts ``add_scalars`` values in ``<main_tag>/<key>`` sub-runs,
torch and summarylib in ``<main_tag>_<key>`` (with ``/`` in the main tag made ``_``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.observe import assert_same_observations, observe

pytest.importorskip("tensorboardX")
pytest.importorskip("torch")

SCRIPT = '''
import numpy as np
import torch
from tensorboardX import SummaryWriter

torch.manual_seed(0)
np.random.seed(0)
model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                            torch.nn.Linear(4 * 6 * 6, 10))
writer = SummaryWriter()
sample_rate = 8000
freqs = [262, 294, 330, 349, 392]
for n_iter in range(50):
    s1 = torch.rand(1)
    writer.add_scalar("data/scalar_systemtime", s1[0], n_iter)
    writer.add_scalar("data/scalar_customtime", s1[0], n_iter, walltime=n_iter)
    writer.add_scalars("data/scalar_group", {"xsinx": n_iter * np.sin(n_iter),
                                             "xcosx": n_iter * np.cos(n_iter),
                                             "arctanx": np.arctan(n_iter)}, n_iter)
    if n_iter % 10 == 0:
        writer.add_image("Image", torch.rand(3, 16, 24), n_iter)
        writer.add_images("Batch", torch.rand(4, 3, 8, 8), n_iter)
        x = torch.zeros(sample_rate // 4)
        for i in range(x.size(0)):
            x[i] = np.cos(freqs[n_iter // 10] * np.pi * float(i) / float(sample_rate))
        writer.add_audio("myAudio", x, n_iter, sample_rate=sample_rate)
        writer.add_text("Text", "text logged at step:" + str(n_iter), n_iter)
        writer.add_text("markdown Text", """a|b\\n-|-\\nc|d""", n_iter)
        for name, param in model.named_parameters():
            writer.add_histogram(name, param.clone().cpu().data.numpy(), n_iter)
        writer.add_pr_curve("xoxo", np.random.randint(2, size=100), np.random.rand(100),
                            n_iter)
writer.add_hparams({"lr": 0.1, "bsize": 4}, {"hparam/accuracy": 0.5}, name="trial")
writer.export_scalars_to_json("./all_scalars.json")
writer.close()
print("logdir", writer.logdir if hasattr(writer, "logdir") else writer.get_logdir())
'''


def run(script: str, cwd: Path) -> Path:
    cwd.mkdir()
    done = subprocess.run([sys.executable, "-c", script], cwd=cwd, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    (runs,) = (cwd / "runs").iterdir()
    return runs


def test_tensorboardx_demo_runs_with_only_the_import_changed(tmp_path: Path) -> None:
    ours_script = SCRIPT.replace("from tensorboardX import SummaryWriter",
                                 "from summarylib import SummaryWriter")
    assert ours_script.count("\n") == SCRIPT.count("\n") and ours_script != SCRIPT
    theirs = observe(run(SCRIPT, tmp_path / "tbx"))
    ours = observe(run(ours_script, tmp_path / "ours"))
    # add_scalars sub-runs: tensorboardX nests them, we use torch's names.
    renamed = {("." if r == "." else r.replace("data/scalar_group/", "data_scalar_group_")
                .replace("trial", "trial")): tags for r, tags in theirs.items()}
    hparams_tags = frozenset({"_hparams_/experiment", "_hparams_/session_start_info",
                              "_hparams_/session_end_info"})
    assert_same_observations(ours, renamed, skip_tags=hparams_tags | {"myAudio"})
    for (rate, mine), (their_rate, theirs_clip) in zip(
        [c[0] for c in ours["."]["myAudio"].values],
        [c[0] for c in renamed["."]["myAudio"].values], strict=True
    ):
        assert rate == their_rate == 8000
        assert np.abs(mine.astype(int) - theirs_clip.astype(int)).max() <= 2
    assert set(ours["trial"]) >= hparams_tags
    exported = json.loads((tmp_path / "ours" / "all_scalars.json").read_text())
    assert sorted(Path(k).name for k in exported) == sorted(
        f"data_scalar_group_{k}" for k in ("xsinx", "xcosx", "arctanx"))
    assert all(len(v) == 50 for v in exported.values())
