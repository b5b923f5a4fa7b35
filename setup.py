"""tfrl: reinforcement learning on TensorFlow 2 and Keras 3, with RLlib's classic API."""

import re

from setuptools import find_packages, setup

VERSION = re.search(
    r'__version__ = "([^"]+)"', open("tfrl/__init__.py", encoding="utf-8").read()
).group(1)

INSTALL_REQUIRES = [
    "tensorflow==2.21.*",
    "keras>=3.15,<4",
    "gymnasium==1.4.*",
    "numpy>=1.26",
    "dm-tree>=0.1.8",
    "absl-py>=2.1",
    # TF 2.21 no longer pulls in tensorboard.
    "tensorboard==2.21.*",
    # Config files of the command line (`tfrl train --config=file.yaml`).
    "pyyaml>=6",
]

# tensorflow-probability: `dist.to_tfp()` of the action distributions (which compute
# their own math) and the tests' oracle. TFP 0.25 will not import without tf-keras;
# tfrl itself uses Keras 3 (`import keras`).
TFP_REQUIRES = ["tensorflow-probability==0.25.*", "tf-keras==2.21.*"]

# PettingZoo's Parallel and AEC envs through tfrl.env.wrappers.pettingzoo_env; mpe2 is
# the Multi Particle Environments' home (examples/pettingzoo_mpe.py); 1.27 has pettingzoo.make.
PETTINGZOO_REQUIRES = ["pettingzoo>=1.27,<2", "mpe2>=1.1"]
# Atari (tfrl.env.wrappers.atari): ale-py ships the games (ROMs included) and its C++
# vector env; gymnasium's AtariPreprocessing resizes frames with OpenCV. MinAtar's
# 10x10 games (MinAtar/Breakout-v1, ...) register themselves with gymnasium.
ATARI_REQUIRES = ["ale-py>=0.10", "opencv-python-headless>=4.8"]
MINATAR_REQUIRES = ["minatar>=1.0.15"]
# MuJoCo's control tasks (HalfCheetah-v5, Hopper-v5, ...: tfrl/tuned/ppo_halfcheetah.yaml,
# ppo_hopper.yaml) through gymnasium's own extra (mujoco's wheels; no OpenGL needed).
MUJOCO_REQUIRES = ["gymnasium[mujoco]==1.4.*"]

# lz4: offline files' compressed columns in RLlib's encoding (base64 of LZ4 of a pickle),
# so that RLlib reads what tfrl writes (without it: tfrl's zlib encoding, which RLlib
# cannot read). ray[rllib] itself is in no extra: ray[rllib] 2.60 pins gymnasium==1.2.2
# against tfrl's 1.4 (tests/test_offline_rllib_interop.py runs in a venv of its own).
OFFLINE_REQUIRES = ["lz4>=4"]
# Videos of episodes (`tfrl evaluate --record=DIR`, the `record_env` config key): gymnasium's
# RecordVideo writes them with moviepy.
VIDEO_REQUIRES = ["moviepy>=1.0.3"]
# Sweeps (`tfrl tune`, tfrl.tune): Ray Tune runs the trials; Optuna is the search
# algorithm `search: optuna` uses (through Ray Tune's own integration).
TUNE_REQUIRES = ["ray[tune]>=2.60,<3", "optuna>=3.0"]
# Export for runtimes without TensorFlow (`tfrl export --format=tflite|onnx`,
# `policy.export_tflite`, `export_model(onnx=opset)`): tf2onnx converts to ONNX;
# onnxruntime and ai-edge-litert (TFLite's interpreter) run the files in the tests.
EXPORT_REQUIRES = ["tf2onnx>=1.16", "onnxruntime>=1.17", "ai-edge-litert>=1.2"]
# TensorFlow Serving's request protos (PredictRequest/PredictResponse), for clients of a
# served policy; the tests build requests with them against the exported signatures.
SERVING_REQUIRES = ["tensorflow-serving-api==2.21.*"]
# Experiment tracking (tfrl.algorithms.tracking's fit() callbacks, tfrl tune's
# `callbacks: [mlflow, wandb]` through Ray Tune's logger callbacks). Not in the test extra:
# mlflow pulls ~70 packages (Flask, scikit-learn, pyarrow, ...) and takes ~3 s to import;
# their tests skip without it, and CI (.ci/run) installs it to run them.
TRACKING_REQUIRES = ["mlflow>=3.0", "wandb>=0.19"]

EXTRAS_REQUIRE = {
    # Ray (with Tune and Optuna) is in the test extra so that CI exercises the Ray backends
    # and sweeps too; TFP is the action distributions' test oracle. import-linter (and grimp, its graph library)
    # check the layers and that no module circle exists (tests/test_architecture.py);
    # mypy type-checks tfrl.core, tfrl.execution and tfrl.algorithms
    # (tests/test_typing.py); hypothesis drives the policy server's fuzz suite and the
    # distribution checks; pytest-xdist runs the suite in two processes (the README's
    # test command). The PettingZoo, Atari, MinAtar and MuJoCo extras are in it so
    # that CI runs their tests (which skip without them).
    "test": ["pytest>=8", "pytest-xdist>=3.5", "hypothesis>=6.100", "ray>=2.60,<3",
             "import-linter>=2.1", "grimp>=3.5", "mypy>=1.10"] + TFP_REQUIRES + PETTINGZOO_REQUIRES
            + TUNE_REQUIRES + EXPORT_REQUIRES + SERVING_REQUIRES
            + ATARI_REQUIRES + MINATAR_REQUIRES + MUJOCO_REQUIRES + OFFLINE_REQUIRES,
    "offline": OFFLINE_REQUIRES,
    "video": VIDEO_REQUIRES,
    "tfp": TFP_REQUIRES,
    "atari": ATARI_REQUIRES,
    "minatar": MINATAR_REQUIRES,
    "mujoco": MUJOCO_REQUIRES,
    "ray": ["ray[default]>=2.60,<3"],
    "tune": TUNE_REQUIRES,
    "export": EXPORT_REQUIRES,
    "serving": SERVING_REQUIRES,
    "tracking": TRACKING_REQUIRES,
    "pettingzoo": PETTINGZOO_REQUIRES,
    # Reference implementations for bench/bench_ppo_cartpole.py and bench_atari.py (SB3's
    # PPO; bench_atari.py also needs the atari extra), bench/bench_recurrent.py
    # (sb3-contrib's RecurrentPPO) and bench/bench_qrdqn.py (sb3-contrib's QRDQN; its
    # MinAtar section also needs the minatar extra). pip's own configuration chooses the index: point it at
    # one that serves torch's CPU wheel to avoid the CUDA build's download.
    "bench": ["stable-baselines3>=2.3", "sb3-contrib>=2.3", "torch==2.13.0"],
    # The documentation site (mkdocs.yml, docs/): `mkdocs build --strict`, the plots of
    # bench/RESULTS.md (matplotlib) and tools/docs_check.py, which drives a Chromium
    # (Debian's `chromium` package; Playwright's own browser download is not used).
    "docs": ["mkdocs>=1.6,<2", "mkdocs-material>=9.5,<10", "mkdocstrings[python]>=0.26",
             "matplotlib>=3.8", "playwright>=1.45"],
}

setup(
    name="tfrl",
    version=VERSION,
    description=(
        "Reinforcement learning on TensorFlow 2 and Keras 3 with RLlib's classic "
        "programming model (SampleBatch, RolloutWorker, Policy.learn_on_batch)."
    ),
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.10",
    packages=find_packages(include=["tfrl", "tfrl.*"]),
    # The tuned experiment files (`tfrl train --config=ppo_cartpole`, `tfrl list`).
    package_data={"tfrl.tuned": ["*.yaml", "README.md"]},
    install_requires=INSTALL_REQUIRES,
    extras_require=EXTRAS_REQUIRE,
    entry_points={"console_scripts": ["tfrl=tfrl.cli.main:run"]},
    license="Apache-2.0",
)
