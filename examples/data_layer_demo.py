"""The tfrl data layer end to end, on CartPole with a random policy.

Collects episodes with `SingleAgentEpisode` (cut into fixed-length chunks, as a
sampler does), turns the chunks into `SampleBatch`es, splits them by episode,
computes discounted returns with `compute_advantages`, concatenates everything,
compresses and decompresses the observations, and finally feeds seeded, shuffled,
fixed-shape minibatches through `tf.data` for several epochs, as `learn_on_batch`
will.

    python examples/data_layer_demo.py --episodes=40 --fragment_length=64
"""

import time

import numpy as np
from absl import app, flags

FLAGS = flags.DEFINE_integer("episodes", 40, "Episodes to collect.", lower_bound=1)
_FRAGMENT = flags.DEFINE_integer("fragment_length", 64, "Env steps per chunk.", lower_bound=1)
_BATCH = flags.DEFINE_integer("minibatch_size", 128, "Rows per minibatch.", lower_bound=1)
_EPOCHS = flags.DEFINE_integer("epochs", 3, "Passes over the data.", lower_bound=1)
_GAMMA = flags.DEFINE_float("gamma", 0.99, "Discount factor.")
_SEED = flags.DEFINE_integer("seed", 0, "Seed of env, policy and shuffling.")


def collect_chunks(num_episodes: int, fragment_length: int, seed: int):
    """Runs a random policy and returns finalized episode chunks of <= fragment_length."""
    import gymnasium as gym

    from tfrl.env.single_agent_episode import SingleAgentEpisode

    env = gym.make("CartPole-v1")
    env.action_space.seed(seed)
    logp = np.float32(np.log(0.5))  # the random policy's log-probability of any action
    chunks, finished, episode_return = [], 0, 0.0
    obs, info = env.reset(seed=seed)
    episode = SingleAgentEpisode(observation_space=env.observation_space,
                                 action_space=env.action_space)
    episode.add_env_reset(obs, info)
    while finished < num_episodes:
        action = env.action_space.sample()
        obs, reward, terminated, truncated, info = env.step(action)
        episode.add_env_step(obs, action, reward, info, terminated=terminated,
                             truncated=truncated, extra_model_outputs={"action_logp": logp})
        episode_return += reward
        if episode.is_done:
            chunks.append(episode.finalize())
            finished += 1
            print(f"  episode {finished:3d}/{num_episodes}: return {episode_return:5.1f}, "
                  f"{'truncated' if truncated else 'terminated'}, {len(chunks)} chunks so far",
                  flush=True)
            episode_return = 0.0
            obs, info = env.reset()
            episode = SingleAgentEpisode(observation_space=env.observation_space,
                                         action_space=env.action_space)
            episode.add_env_reset(obs, info)
        elif len(episode) == fragment_length:
            successor = episode.cut()
            chunks.append(episode.finalize())
            episode = successor
    return chunks


def main(argv):
    del argv
    from tfrl.evaluation.postprocessing import compute_advantages
    from tfrl.policy.dataset import to_dataset
    from tfrl.policy.sample_batch import concat_samples

    start = time.perf_counter()
    print(f"Collecting {FLAGS.value} CartPole episodes with a random policy "
          f"(chunks of {_FRAGMENT.value} steps) ...")
    chunks = collect_chunks(FLAGS.value, _FRAGMENT.value, _SEED.value)
    batch = concat_samples([c.get_sample_batch() for c in chunks])
    print(f"{len(chunks)} chunks -> one SampleBatch of {len(batch)} rows: {batch}")

    episodes = batch.split_by_episode()
    processed = []
    for ep in episodes:
        # Terminated: nothing follows. Truncated: a critic would bootstrap here; the
        # random policy has none, so returns are plain discounted sums.
        processed.append(compute_advantages(ep.copy(), last_r=0.0, gamma=_GAMMA.value,
                                            use_gae=False, use_critic=False))
    train_batch = concat_samples(processed)
    adv = train_batch["advantages"]
    train_batch["advantages"] = (adv - adv.mean()) / max(adv.std(), 1e-8)
    returns = [float(np.sum(ep["rewards"])) for ep in episodes]
    print(f"split_by_episode: {len(episodes)} episodes, mean return {np.mean(returns):.1f} "
          f"(min {min(returns):.0f}, max {max(returns):.0f}); advantages standardized")

    obs = train_batch["obs"].copy()
    raw = obs.nbytes + train_batch["new_obs"].nbytes
    train_batch.compress(bulk=True)
    packed = len(train_batch["obs"]) + len(train_batch["new_obs"])
    train_batch.decompress_if_needed()
    if not np.array_equal(train_batch["obs"], obs):
        raise RuntimeError("compress/decompress did not round-trip the observations")
    print(f"compress/decompress obs+new_obs: {raw} -> {packed} bytes and back, exact")

    ds = to_dataset(train_batch, _BATCH.value, num_epochs=_EPOCHS.value, seed=_SEED.value)
    print(f"tf.data minibatches: {ds.element_spec['obs']} x {_EPOCHS.value} epochs")
    seen = 0
    for i, minibatch in enumerate(ds):
        seen += int(minibatch["obs"].shape[0])
        if i % 10 == 0:
            print(f"  minibatch {i:3d}: mean advantage {float(np.mean(minibatch['advantages'])):+.3f}",
                  flush=True)
    print(f"Done: {seen} rows fed over {_EPOCHS.value} epochs in "
          f"{time.perf_counter() - start:.1f}s.")


if __name__ == "__main__":
    app.run(main)
