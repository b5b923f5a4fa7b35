"""The sampling loops a rollout worker's sampler runs (`tfrl.evaluation.sampler`).

* `loop`: `SamplingLoop`, the generic loop over any BaseEnv (multi-agent, external,
  vectorized);
* `vector_loop`: `VectorSamplingLoop`, the array-based loop for a single-agent vectorized
  env and one feed-forward policy (same batches, a constant number of numpy calls a step);
* `loop_core`: `LoopCore`, what both loops share;
* `vector_chunks`: the array-based loop's time-major buffers;
* `collectors`: turning recorded steps into postprocessed batches;
* `ops`: small vectorized operations (action unsquashing, reward clipping, checks, timing).
"""
