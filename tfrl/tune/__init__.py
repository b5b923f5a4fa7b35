"""The few `ray.tune` names RLlib users import for env registration."""
