"""Fingerprints of the replay-based plan, to compare two trees bit for bit (issue 15).

Runs a few `train()` iterations of each off-policy case (DQN prioritized n-step, the tuned
DQN CartPole file, SAC's tuned Pendulum file, SAC with `rounds_per_phase > 1`, TD3's tuned
Pendulum file, discrete SAC, CQL and discrete CQL from files written by a short run) and
writes, per case and iteration, the `train()` result counters, the learner stats and a
SHA-256 of every policy weight array (and the exact arrays, in an .npz), so that
`--compare A B` can say whether two runs (e.g. main vs a branch) are identical.

    PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=<tree> python compare_offpolicy_plan.py --out DIR
    python compare_offpolicy_plan.py --compare DIR_A DIR_B

`main_reference/` holds the JSON records of main at 25fc856 (the weights by SHA-256; the
.npz arrays are compared too when both directories have them). The CQL cases read data
written by a short SAC/DQN run into `DIR/data` (identical on both trees).
"""

import argparse
import hashlib
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TUNED = os.path.join(HERE, "..", "..", "examples", "tuned")
RESULT_KEYS = ("timesteps_total", "num_env_steps_sampled", "num_env_steps_trained",
               "num_agent_steps_sampled", "num_agent_steps_trained", "num_steps_trained",
               "num_target_updates", "last_target_update_ts", "episodes_total",
               "episodes_this_iter", "episode_reward_mean", "training_iteration")


def tuned(name, **overrides):
    import yaml
    with open(os.path.join(TUNED, name)) as f:
        spec = yaml.safe_load(f)
    return spec["algo"], {**spec["config"], "env": spec["env"], **overrides}


def cases(data_dir):
    dqn_small = {"env": "CartPole-v1", "seed": 1, "num_workers": 0,
                 "rollout_fragment_length": 4, "train_batch_size": 32,
                 "timesteps_per_iteration": 200, "num_steps_sampled_before_learning_starts": 100,
                 "target_network_update_freq": 50, "n_step": 3, "double_q": True,
                 "dueling": True, "model": {"fcnet_hiddens": [32, 32]},
                 "replay_buffer_config": {"type": "MultiAgentPrioritizedReplayBuffer",
                                          "capacity": 1000,
                                          "final_prioritized_replay_beta": 1.0,
                                          "prioritized_replay_beta_annealing_timesteps": 800}}
    sac_small = {"env": "Pendulum-v1", "seed": 2, "num_workers": 0,
                 "rollout_fragment_length": 8, "train_batch_size": 32,
                 "training_intensity": 1, "timesteps_per_iteration": 100, "min_iter_time_s": 0,
                 "num_steps_sampled_before_learning_starts": 64,
                 "q_model_config": {"fcnet_hiddens": [16, 16]},
                 "policy_model_config": {"fcnet_hiddens": [16, 16]}}
    return [
        ("dqn_prioritized_nstep", "DQN", dqn_small, 5),
        ("dqn_prioritized_nstep_intensity", "DQN",
         {**dqn_small, "training_intensity": 2, "target_network_update_freq": 30}, 4),
        ("dqn_cartpole_tuned", *tuned("dqn_cartpole.yaml"), 3),
        ("sac_pendulum_tuned", *tuned("sac_pendulum.yaml"), 2),
        ("sac_rounds_per_phase_4", "SAC", sac_small, 4),
        ("sac_rounds_per_phase_4_prioritized", "SAC",
         {**sac_small, "target_network_update_freq": 20, "replay_buffer_config": {
             "type": "MultiAgentPrioritizedReplayBuffer", "capacity": 1000}}, 3),
        ("td3_pendulum_tuned", *tuned("td3_pendulum.yaml", min_iter_time_s=0), 2),
        ("sac_discrete_cartpole_tuned", *tuned("sac_cartpole.yaml"), 2),
        ("cql_pendulum_files", "CQL",
         {**tuned("cql_pendulum.yaml")[1], "input": os.path.join(data_dir, "pendulum"),
          "num_steps_sampled_before_learning_starts": 500, "timesteps_per_iteration": 500,
          "rollout_fragment_length": 250, "training_intensity": 2.56,
          "q_model_config": {"fcnet_hiddens": [16, 16]},
          "policy_model_config": {"fcnet_hiddens": [16, 16]}, "seed": 3}, 3),
        ("cql_dqn_cartpole_files", "CQL",
         {"env": "CartPole-v1", "input": os.path.join(data_dir, "cartpole"), "seed": 4,
          "num_workers": 0, "rollout_fragment_length": 100, "train_batch_size": 32,
          "num_steps_sampled_before_learning_starts": 200, "timesteps_per_iteration": 200,
          "target_network_update_freq": 100, "model": {"fcnet_hiddens": [16]}}, 3),
    ]


def write_data(data_dir):
    """Small offline data sets (a short SAC and DQN run's `output`), written once."""
    from tfrl.algorithms.registry import get_algorithm_class
    for name, algo_name, env, n in (("pendulum", "SAC", "Pendulum-v1", 2),
                                    ("cartpole", "DQN", "CartPole-v1", 2)):
        path = os.path.join(data_dir, name)
        if os.path.isdir(path):
            continue
        algo = get_algorithm_class(algo_name)(config={
            "env": env, "seed": 0, "num_workers": 0, "output": path,
            "timesteps_per_iteration": 500, "num_steps_sampled_before_learning_starts": 10**6})
        for _ in range(n):
            algo.train()
        algo.stop()


def flat_stats(info, prefix=""):
    out = {}
    for key, value in sorted(info.items()):
        if isinstance(value, dict):
            out.update(flat_stats(value, f"{prefix}{key}/"))
        elif isinstance(value, (int, float, np.integer, np.floating, np.ndarray, list)):
            arr = np.asarray(value)
            if arr.dtype.kind in "biuf":
                out[prefix + key] = arr.tolist()
    return out


def run(out_dir, only):
    from tfrl.algorithms.registry import get_algorithm_class
    data_dir = os.path.join(out_dir, "data")
    os.makedirs(data_dir, exist_ok=True)
    write_data(data_dir)
    for name, algo_name, config, iters in cases(data_dir):
        if only and name not in only:
            continue
        algo = get_algorithm_class(algo_name)(config=config)
        record, arrays = [], {}
        for it in range(iters):
            result = algo.train()
            info = result.get("info", {})
            counters = {k: result.get(k, info.get(k)) for k in RESULT_KEYS}
            counters.update({f"counter/{k}": v for k, v in
                             sorted(algo.train_exec_impl.shared_metrics.counters.items())}
                            if hasattr(algo, "train_exec_impl") else {})
            weights = algo.get_policy().get_weights()
            flat = weights if isinstance(weights, list) else list(weights.values())
            for j, w in enumerate(flat):
                arrays[f"it{it}_w{j}"] = np.asarray(w)
            record.append({
                "counters": {k: (v.item() if hasattr(v, "item") else v)
                             for k, v in counters.items()},
                "learner": flat_stats(info.get("learner", {})),
                "weights_sha256": [hashlib.sha256(np.ascontiguousarray(w).tobytes()).hexdigest()
                                   for w in map(np.asarray, flat)]})
            print(name, it, record[-1]["counters"]["timesteps_total"],
                  record[-1]["counters"]["num_env_steps_trained"], flush=True)
        algo.stop()
        with open(os.path.join(out_dir, f"{name}.json"), "w") as f:
            json.dump(record, f, indent=1, sort_keys=True, default=str)
        np.savez(os.path.join(out_dir, f"{name}.npz"), **arrays)


def compare(dir_a, dir_b):
    names = sorted(f[:-5] for f in os.listdir(dir_a) if f.endswith(".json"))
    ok = True
    for name in names:
        path_b = os.path.join(dir_b, name + ".json")
        if not os.path.exists(path_b):
            print(f"{name}: MISSING in {dir_b}")
            ok = False
            continue
        with open(os.path.join(dir_a, name + ".json")) as f:
            a = json.load(f)
        with open(path_b) as f:
            b = json.load(f)
        same_w = [x["weights_sha256"] for x in a] == [x["weights_sha256"] for x in b]
        npz_a, npz_b = (os.path.join(d, name + ".npz") for d in (dir_a, dir_b))
        if same_w and os.path.exists(npz_a) and os.path.exists(npz_b):
            wa, wb = np.load(npz_a), np.load(npz_b)
            same_w = (sorted(wa.files) == sorted(wb.files)
                      and all(np.array_equal(wa[k], wb[k]) for k in wa.files))
        same_c = [x["counters"] for x in a] == [x["counters"] for x in b]
        same_l = [x["learner"] for x in a] == [x["learner"] for x in b]
        ok &= same_w and same_c and same_l
        print(f"{name}: iterations {len(a)}/{len(b)} weights {'EQUAL' if same_w else 'DIFFER'}"
              f" counters {'EQUAL' if same_c else 'DIFFER'} learner stats "
              f"{'EQUAL' if same_l else 'DIFFER'}; last timesteps_total "
              f"{a[-1]['counters']['timesteps_total']}, num_env_steps_trained "
              f"{a[-1]['counters']['num_env_steps_trained']}, target updates "
              f"{a[-1]['counters']['num_target_updates']}")
        if not same_c:
            for i, (x, y) in enumerate(zip(a, b)):
                diff = {k: (x["counters"].get(k), y["counters"].get(k))
                        for k in set(x["counters"]) | set(y["counters"])
                        if x["counters"].get(k) != y["counters"].get(k)}
                if diff:
                    print(f"  iteration {i}: {diff}")
    print("ALL EQUAL" if ok else "SOME DIFFER")
    return ok


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out")
    parser.add_argument("--only", nargs="*")
    parser.add_argument("--compare", nargs=2)
    args = parser.parse_args()
    if args.compare:
        sys.exit(0 if compare(*args.compare) else 1)
    run(args.out, args.only)
