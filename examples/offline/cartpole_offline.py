"""Offline RL on CartPole-v1 with data tfrl makes itself (no downloads).

1. PPO (tfrl/tuned/ppo_cartpole.yaml) trains to a mean return of 450;
2. it writes an expert dataset (`<out>/expert`) and a mixed-quality one (`<out>/mixed`:
   some expert episodes, many short episodes of the opposite policy) as JSON lines;
3. BC learns from the expert data, BC and MARWIL from the mixed data
   (tfrl/tuned/bc_cartpole.yaml, marwil_cartpole.yaml);
4. each learnt policy is evaluated by real rollouts (`evaluate()`) and, from the mixed
   data, by the off-policy estimators (IS, WIS, DR);
5. discrete CQL (CQL on a Discrete action space: CQLDQN) learns from the mixed data
   (tfrl/tuned/cql_cartpole.yaml), evaluated by real rollouts.

    python examples/offline/cartpole_offline.py --out=data/offline/cartpole

`--smoke`: an untrained PPO policy writes 2k + 2k steps, each learner trains one
iteration (checks the pipeline, learns nothing).
"""

import os
import sys
import tempfile

from tfrl.utils.progress import quiet_tensorflow, script_parser

PARSER = script_parser(__doc__, "an untrained data policy, 1 iteration per learner")
PARSER.add_argument("--out", default="data/offline/cartpole", help="where the data go")
PARSER.add_argument("--iterations", type=int, default=None,
                    help="training iterations per algorithm (default: the tuned file's)")
PARSER.add_argument("--seed", type=int, default=0, help="seed of the expert and learners")
ARGS = PARSER.parse_args()
quiet_tensorflow(ARGS.verbose)  # before anything imports TensorFlow

import gymnasium as gym  # noqa: E402

from tfrl.algorithms.ppo import PPOTFPolicy  # noqa: E402
from tfrl.algorithms.registry import get_algorithm_class  # noqa: E402
from tfrl.cli.experiment import build_config, resolve_experiment  # noqa: E402
from tfrl.data.sample_batch import concat_samples  # noqa: E402
from tfrl.tuned import TUNED_DIR  # noqa: E402
from tfrl.examples.offline_data import make_cartpole_datasets  # noqa: E402
from tfrl.offline.estimators import estimator_class  # noqa: E402
from tfrl.offline.json_reader import JsonReader  # noqa: E402

TUNED = TUNED_DIR


def train(algo_name: str, data: str, iterations, seed: int, smoke: bool, tuned=None):
    """The algorithm trained on `data` (`tuned`: the tuned file's name, default
    `<algo>_cartpole.yaml`); returns it and its evaluation return."""
    yaml = os.path.join(TUNED, tuned or f"{algo_name.lower()}_cartpole.yaml")
    overrides = [f"input={data}", f"seed={seed}"]
    if smoke and algo_name == "CQL_DQN":
        overrides += ["num_steps_sampled_before_learning_starts=500",
                      "timesteps_per_iteration=1000", "evaluation_duration=2"]
    elif smoke:
        overrides += ["train_batch_size=200", "sgd_minibatch_size=100", "evaluation_duration=2"]
    exp = resolve_experiment(yaml, overrides=overrides)
    algo = get_algorithm_class(algo_name)(config=build_config(exp))
    for _ in range(iterations or int(exp.stop["training_iteration"])):
        algo.train()
    return algo, algo.evaluate()["evaluation"]["episode_reward_mean"]


def main() -> int:
    out, smoke, seed = ARGS.out, ARGS.smoke, ARGS.seed
    if smoke:
        out = tempfile.mkdtemp(prefix="cartpole_offline_smoke_")
    if not os.path.isdir(os.path.join(out, "mixed")):
        kwargs = {}
        if smoke:
            env = gym.make("CartPole-v1")
            kwargs = {"policy": PPOTFPolicy(env.observation_space, env.action_space,
                                            {"seed": 0}),
                      "expert_steps": 2000, "mixed_steps": 2000}
        for part, info in make_cartpole_datasets(out, seed=seed, **kwargs).items():
            print(f"{part:12s} {info['episodes']:6d} episodes {info['steps']:7d} steps "
                  f"mean return {info['mean_return']:.1f}")
    mixed = concat_samples(list(JsonReader(os.path.join(out, "mixed")).read_all_files()))
    for algo_name, data in (("BC", "expert"), ("BC", "mixed"), ("MARWIL", "mixed")):
        algo, rollout_return = train(algo_name, os.path.join(out, data),
                                     1 if smoke else ARGS.iterations, seed, smoke)
        policy = algo.get_policy()
        estimates = {}
        for name in ("is", "wis", "dr"):
            kwargs = {"q_model_config": {"n_iters": 2 if smoke else 20,
                                         "minibatch_size": 1024, "seed": 0}} \
                if name == "dr" else {}
            estimator = estimator_class(name)(policy, 0.99, **kwargs)
            estimator.train(mixed)
            estimates[name] = estimator.estimate(mixed)["v_target"]
        algo.stop()
        print(f"{algo_name:6s} on {data:6s}: rollouts {rollout_return:6.1f}; estimated "
              "discounted value from the mixed data: "
              + ", ".join(f"{k} {v:.1f}" for k, v in estimates.items()), flush=True)
    algo, rollout_return = train("CQL_DQN", os.path.join(out, "mixed"),
                                 1 if smoke else ARGS.iterations, seed, smoke,
                                 tuned="cql_cartpole.yaml")
    steps = int(algo.get_policy().num_grad_updates.numpy())
    algo.stop()
    print(f"CQL    on mixed : rollouts {rollout_return:6.1f} after {steps} gradient steps "
          "(discrete CQL on DQN)", flush=True)
    print(f"done: data in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
