"""Experiment tracking of `Algorithm.fit()` (issue 31), offline: `MLflowCallback` into a
local MLflow file store, `WandbCallback` into a W&B offline run directory. Each holds the
config, every iteration's metrics and the final checkpoint.

Tune's loggers (`tfrl tune` with `callbacks:`) are tested in tests/test_tune.py.
"""

import os

import numpy as np
import pytest

mlflow = pytest.importorskip("mlflow")
wandb = pytest.importorskip("wandb")

from tfrl.algorithms.ppo import PPO  # noqa: E402
from tfrl.algorithms.tracking import MLflowCallback, WandbCallback, flat_config  # noqa: E402
from tracking_helpers import checkpoint_files, wandb_offline_run  # noqa: E402

TINY = dict(env="CartPole-v1", train_batch_size=64, rollout_fragment_length=8,
            num_envs_per_worker=2, sgd_minibatch_size=32, num_sgd_iter=1,
            model={"fcnet_hiddens": [8]}, seed=0, num_workers=0, lr=0.002)
ITERATIONS = 2


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """One tiny PPO fit with both callbacks; the history, the final checkpoint's files
    and where each tool wrote."""
    root = tmp_path_factory.mktemp("tracking")
    os.environ.setdefault("WANDB_SILENT", "true")
    # MLflow 3 keeps its file store behind this switch (a database is its new default).
    os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    mlflow_cb = MLflowCallback(tracking_uri=f"file:{root / 'mlruns'}",
                               experiment_name="tiny-ppo", tags={"suite": "tfrl"})
    wandb_cb = WandbCallback(project="tfrl-tests", mode="offline", dir=str(root / "wandb"))
    algo = PPO(config=TINY)
    history = algo.fit(iterations=ITERATIONS, callbacks=[mlflow_cb, wandb_cb], verbose=0)
    reference = checkpoint_files(algo.save(str(root / "reference")))
    weights = algo.get_weights()["default_policy"]
    algo.stop()
    return {"weights": weights, "root": root, "history": history.history, "mlflow": mlflow_cb,
            "wandb": wandb_cb, "checkpoint_files": reference}


def test_mlflow_file_store_holds_config_metrics_and_checkpoint(fitted):
    client = mlflow.MlflowClient(tracking_uri=fitted["mlflow"].tracking_uri)
    run = client.get_run(fitted["mlflow"].run_id)
    assert run.info.status == "FINISHED" and run.data.tags["suite"] == "tfrl"
    assert client.get_experiment(run.info.experiment_id).name == "tiny-ppo"
    assert run.data.params["lr"] == "0.002"
    assert run.data.params["model/fcnet_hiddens"] == "[8]"
    rewards = client.get_metric_history(run.info.run_id, "episode_reward_mean")
    assert [m.step for m in rewards] == [64, 128]  # stepped by timesteps_total
    assert [m.value for m in rewards] == pytest.approx(
        fitted["history"]["episode_reward_mean"])
    assert len(client.get_metric_history(
        run.info.run_id, "info/learner/default_policy/learner_stats/total_loss")) == ITERATIONS
    logged = client.list_artifacts(run.info.run_id, "checkpoint")
    assert sorted(os.path.basename(a.path) for a in logged) == fitted["checkpoint_files"]
    local = client.download_artifacts(run.info.run_id, "checkpoint",
                                       str(fitted["root"] / "download"))
    restored = PPO(config=TINY)
    restored.restore(local)  # the final checkpoint: the fitted weights and iteration
    assert restored.iteration == ITERATIONS
    for got, want in zip(restored.get_weights()["default_policy"],
                         fitted["weights"], strict=True):
        np.testing.assert_array_equal(got, want)
    restored.stop()


def test_wandb_offline_run_holds_config_metrics_and_checkpoint(fitted):
    run = wandb_offline_run(str(fitted["root"] / "wandb"))
    assert run["config"]["lr"] == "0.002"
    rows = [row for row in run["history"] if "episode_reward_mean" in row]
    assert [row["_step"] for row in rows] == [1, 2]  # stepped by training_iteration
    assert [row["episode_reward_mean"] for row in rows] == pytest.approx(
        fitted["history"]["episode_reward_mean"])
    assert all("timers/learn_time_ms" in row for row in rows)
    (name, files), = run["artifacts"].items()
    assert name == f"checkpoint_{fitted['wandb'].run.id}"
    assert [os.path.basename(f) for f in files] == fitted["checkpoint_files"]


def test_flat_config_is_text_with_slashed_keys():
    flat = flat_config({"model": {"fcnet_hiddens": [8], "custom_model_config": {}},
                        "env_config": {"a": {"b": 1}}, "gamma": 0.9, "name": "x" * 600})
    assert flat == {"model/fcnet_hiddens": "[8]", "model/custom_model_config": "{}",
                    "env_config/a/b": "1", "gamma": "0.9", "name": "x" * 500}
