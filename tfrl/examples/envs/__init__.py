"""Example environments; importing the package registers their gymnasium ids."""

from tfrl.examples.envs import stateless_cartpole  # noqa: F401 - registers StatelessCartPole-v1
