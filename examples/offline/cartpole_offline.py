"""Offline RL on CartPole-v1 with data tfrl makes itself (no downloads).

1. PPO (examples/tuned/ppo_cartpole.yaml) trains to a mean return of 450;
2. it writes an expert dataset (`<out>/expert`) and a mixed-quality one (`<out>/mixed`:
   some expert episodes, many short episodes of the opposite policy) as JSON lines;
3. BC learns from the expert data, BC and MARWIL from the mixed data
   (examples/tuned/bc_cartpole.yaml, marwil_cartpole.yaml);
4. each learnt policy is evaluated by real rollouts (`evaluate()`) and, from the mixed
   data, by the off-policy estimators (IS, WIS, DR).

    python examples/offline/cartpole_offline.py --out=/tmp/tfrl-offline/cartpole
"""

import os

from absl import app, flags

from tfrl.algorithms.registry import get_algorithm_class
from tfrl.cli.experiment import build_config, resolve_experiment
from tfrl.data.sample_batch import concat_samples
from tfrl.examples.offline_data import make_cartpole_datasets
from tfrl.offline.estimators import estimator_class
from tfrl.offline.json_reader import JsonReader

FLAGS = flags.DEFINE_string("out", "/tmp/tfrl-offline/cartpole", "Where the data go.")
ITERS = flags.DEFINE_integer("iterations", 15, "Training iterations per algorithm.")
SEED = flags.DEFINE_integer("seed", 0, "Seed of the expert and the learners.")

TUNED = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tuned")


def train(algo_name: str, data: str, iterations: int, seed: int):
    """The algorithm trained on `data`; returns it and its evaluation return."""
    yaml = os.path.join(TUNED, f"{algo_name.lower()}_cartpole.yaml")
    config = build_config(resolve_experiment(yaml, overrides=[f"input={data}",
                                                              f"seed={seed}"]))
    algo = get_algorithm_class(algo_name)(config=config)
    for _ in range(iterations):
        algo.train()
    return algo, algo.evaluate()["evaluation"]["episode_reward_mean"]


def main(argv):
    del argv
    out = FLAGS.value
    if not os.path.isdir(os.path.join(out, "mixed")):
        for part, info in make_cartpole_datasets(out, seed=SEED.value).items():
            print(f"{part:12s} {info['episodes']:6d} episodes {info['steps']:7d} steps "
                  f"mean return {info['mean_return']:.1f}")
    mixed = concat_samples(list(JsonReader(os.path.join(out, "mixed")).read_all_files()))
    for algo_name, data in (("BC", "expert"), ("BC", "mixed"), ("MARWIL", "mixed")):
        algo, rollout_return = train(algo_name, os.path.join(out, data), ITERS.value,
                                     SEED.value)
        policy = algo.get_policy()
        estimates = {}
        for name in ("is", "wis", "dr"):
            kwargs = {"q_model_config": {"n_iters": 20, "minibatch_size": 1024, "seed": 0}} \
                if name == "dr" else {}
            estimator = estimator_class(name)(policy, 0.99, **kwargs)
            estimator.train(mixed)
            estimates[name] = estimator.estimate(mixed)["v_target"]
        algo.stop()
        print(f"{algo_name:6s} on {data:6s}: rollouts {rollout_return:6.1f}; estimated "
              "discounted value from the mixed data: "
              + ", ".join(f"{k} {v:.1f}" for k, v in estimates.items()))


if __name__ == "__main__":
    app.run(main)
