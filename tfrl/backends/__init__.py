"""Optional execution backends for tfrl.

Each subpackage wraps one optional library and imports it when it is imported itself;
`import tfrl` imports no backend. `tfrl.backends.ray` runs sub-environments (and, later,
rollout workers) as Ray actors; install it with `pip install 'tfrl[ray]'`.
"""
