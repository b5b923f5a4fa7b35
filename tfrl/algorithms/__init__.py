"""Algorithms (RLlib's `ray.rllib.algorithms`) and the callbacks they share."""
