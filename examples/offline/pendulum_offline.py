"""Offline RL on Pendulum-v1 with data tfrl makes itself (no downloads).

1. SAC (tfrl/tuned/sac_pendulum.yaml) trains for 3,000 env steps: partly trained;
2. its stochastic policy writes 10k steps of Pendulum episodes (`<out>`, JSON lines;
   mean return about -675 with seed 0; the env gets the actions as the samplers send them);
3. CQL (tfrl/tuned/cql_pendulum.yaml) and, for comparison, BC learn from the data;
4. each learnt policy is evaluated greedily by real rollouts (10 episodes).

    python examples/offline/pendulum_offline.py --out=data/offline/pendulum

`--smoke`: an untrained SAC policy writes 1k steps, each learner trains one short
iteration (checks the pipeline, learns nothing).
"""

import os
import sys
import tempfile

from tfrl.utils.progress import quiet_tensorflow, script_parser

PARSER = script_parser(__doc__, "an untrained data policy, 1 short iteration per learner")
PARSER.add_argument("--out", default="data/offline/pendulum", help="where the data go")
PARSER.add_argument("--seed", type=int, default=0, help="seed of the data and learners")
ARGS = PARSER.parse_args()
quiet_tensorflow(ARGS.verbose)  # before anything imports TensorFlow

import gymnasium as gym  # noqa: E402

from tfrl.algorithms.bc import BC, BCConfig  # noqa: E402
from tfrl.algorithms.cql import CQL  # noqa: E402
from tfrl.algorithms.sac import SACTFPolicy  # noqa: E402
from tfrl.cli.experiment import build_config, resolve_experiment  # noqa: E402
from tfrl.tuned import TUNED_DIR  # noqa: E402
from tfrl.examples.offline_data import make_pendulum_dataset  # noqa: E402

TUNED = TUNED_DIR
SMOKE_CQL = ["num_steps_sampled_before_learning_starts=1000", "timesteps_per_iteration=1000",
             "replay_buffer_config.capacity=1000", "evaluation_duration=2",
             "evaluation_interval=1"]


def train_cql(data: str, seed: int, smoke: bool):
    exp = resolve_experiment(os.path.join(TUNED, "cql_pendulum.yaml"),
                             overrides=[f"input={data}", f"seed={seed}"]
                             + (SMOKE_CQL if smoke else []))
    algo = CQL(config=build_config(exp))
    for _ in range(1 if smoke else int(exp.stop["training_iteration"])):
        result = algo.train()
    algo.stop()
    stats = result["info"]["learner"]["default_policy"]["learner_stats"]
    return result["evaluation"]["episode_reward_mean"], stats["num_grad_updates"]


def train_bc(data: str, seed: int, smoke: bool):
    """BC on the same data: clones the data policy, good and bad episodes alike."""
    config = BCConfig.from_dict({
        "env": "Pendulum-v1", "input": data, "seed": seed, "lr": 1e-3,
        "train_batch_size": 1000 if smoke else 2000, "sgd_minibatch_size": 250,
        "num_sgd_iter": 4, "model": {"fcnet_hiddens": [64, 64]},
        "evaluation_interval": 1 if smoke else 15,
        "evaluation_duration": 2 if smoke else 10,
        "evaluation_config": {"input": "sampler", "explore": False}})
    algo = BC(config=config)
    for _ in range(1 if smoke else 15):
        result = algo.train()
    algo.stop()
    return result["evaluation"]["episode_reward_mean"]


def main() -> int:
    out, smoke, seed = ARGS.out, ARGS.smoke, ARGS.seed
    if smoke:
        out = tempfile.mkdtemp(prefix="pendulum_offline_smoke_")
    if not os.path.isdir(out) or not os.listdir(out):
        kwargs = {}
        if smoke:
            env = gym.make("Pendulum-v1")
            kwargs = {"policy": SACTFPolicy(env.observation_space, env.action_space,
                                            {"seed": 0}), "num_steps": 1000}
        info = make_pendulum_dataset(out, seed=seed, **kwargs)
        print(f"data {info['episodes']:6d} episodes {info['steps']:7d} steps "
              f"mean return {info['mean_return']:.1f}", flush=True)
    cql_return, steps = train_cql(out, seed, smoke)
    print(f"CQL: rollouts {cql_return:.1f} after {int(steps)} gradient steps", flush=True)
    print(f"BC : rollouts {train_bc(out, seed, smoke):.1f}", flush=True)
    print(f"done: data in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
