"""`tfrl evaluate --record=DIR` with the real moviepy (the `video` extra): the videos are
MP4 files that ffmpeg decodes, one per episode gymnasium's schedule records, 600x400,
with as many frames as their episodes had observations (the lengths' mean is the one
`evaluate` prints).

Skipped without moviepy: it is not in the test extra (it pins Pillow below 12), so the
README's test command runs `test_cli_mistakes.py`'s checks without it (the one-line error
naming the extra, and the recording schedule with a stand-in clip) and CI (`.ci/run`)
installs `.[video]` afterwards and runs this file, failing if it skips.
"""

import os
import re
import subprocess
import sys

import pytest

from cli_helpers import run_tfrl

pytest.importorskip("moviepy")
imageio_ffmpeg = pytest.importorskip("imageio_ffmpeg")

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY = ["--notuned", "--seed=0", "--tf_threads=1", "--config_override=train_batch_size=64",
        "--config_override=rollout_fragment_length=8", "--config_override=sgd_minibatch_size=32",
        "--config_override=num_sgd_iter=1", "--config_override=model.fcnet_hiddens=[8]"]
EVALUATE = ("import sys; from tfrl.cli.main import run; sys.argv[0] = 'tfrl'; run()")


def _frames(path):
    """(width, height) and the number of frames ffmpeg decodes from `path`."""
    reader = imageio_ffmpeg.read_frames(path)
    meta = next(reader)
    return tuple(meta["size"]), sum(1 for _ in reader)


@pytest.mark.slow  # trains one tiny iteration, evaluates in a fresh process
def test_record_writes_mp4_videos_that_ffmpeg_decodes(tmp_path):
    logdir = tmp_path / "run"
    run_tfrl("train", "--algo=PPO", "--env=CartPole-v1", *TINY, "--quiet",
             "--stop=training_iteration=1", f"--logdir={logdir}")
    videos = tmp_path / "videos"
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    env["PYTHONPATH"] = os.pathsep.join(
        [REPO_ROOT] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    proc = subprocess.run(
        [sys.executable, "-c", EVALUATE, "evaluate", f"--checkpoint={logdir}/checkpoint_000001",
         "--episodes=2", f"--record={videos}"],
        capture_output=True, text=True, timeout=300, env=env, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert lines[-1] == f"Videos: 2 in {videos}", lines
    length_mean = float(re.search(r"length mean ([0-9.]+)", lines[-2]).group(1))
    names = sorted(n for n in os.listdir(videos) if n.endswith(".mp4"))
    # gymnasium's schedule records episodes 0 and 1 (then 8, 27, ...): both of the two
    assert names == ["rl-video-episode-0.mp4", "rl-video-episode-1.mp4"], os.listdir(videos)
    lengths = []
    for name in names:
        size, frames = _frames(str(videos / name))
        assert size == (600, 400), (name, size)
        assert frames >= 9, (name, frames)  # a CartPole episode has 8 steps or more
        lengths.append(frames - 1)  # one frame per observation: the reset's, each step's
    assert sum(lengths) / 2 == pytest.approx(length_mean, abs=0.051), (lengths, length_mean)
