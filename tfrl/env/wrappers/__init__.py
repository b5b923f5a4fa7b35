"""Adapters from other environment libraries to tfrl's env types (RLlib's
`ray.rllib.env.wrappers`): PettingZoo, Atari (ale-py)."""
