"""Example components shipped with tfrl (policies, envs) for tests, demos and serving."""
