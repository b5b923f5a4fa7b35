"""Progress display of `tfrl train`: one line per iteration, or one refreshed line on a TTY.

Each line shows the iteration, env steps, episodes, the mean episode return, env
steps per second (of this run), the elapsed time and the ETA against the stop criteria
(`timesteps_total`, `training_iteration` or `time_total_s`, whichever comes first).

Example:
    >>> import io
    >>> out = io.StringIO()
    >>> progress = Progress(stop={"timesteps_total": 1000}, stream=out, is_tty=False,
    ...                     clock=iter([0.0, 2.0]).__next__)
    >>> progress.update({"training_iteration": 1, "timesteps_total": 200,
    ...                  "episodes_total": 9, "episode_reward_mean": 21.5})
    >>> print(out.getvalue().strip())
    iter 1 | steps 200 | episodes 9 | reward_mean 21.50 | 100 steps/s | elapsed 0:00:02 | ETA 0:00:08
"""

import sys
import time
from typing import Any, Callable, Dict, Mapping, Optional, TextIO

# Defined in tfrl.utils (tfrl.utils.progress needs them too); re-exported here.
from tfrl.utils.stop_criteria import result_value, stop_reason  # noqa: F401


def format_duration(seconds: float) -> str:
    """`H:MM:SS`.

    Example:
        >>> format_duration(3725.4)
        '1:02:05'
    """
    seconds = int(round(max(seconds, 0.0)))
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


class Progress:
    """Prints training progress lines (see the module docstring).

    Args:
        stop: The stop criteria (for the ETA).
        stream: Where to print (default stdout).
        is_tty: Refresh one line with `\\r` instead of printing one per iteration
            (default: whether `stream` is a terminal).
        quiet: Print nothing per iteration (the summary still prints).
        clock: Time source (for tests).
    """

    def __init__(self, stop: Optional[Mapping[str, float]] = None,
                 stream: Optional[TextIO] = None, is_tty: Optional[bool] = None,
                 quiet: bool = False, clock: Callable[[], float] = time.monotonic):
        self.stop = dict(stop or {})
        self.stream = stream or sys.stdout
        self.is_tty = (bool(getattr(self.stream, "isatty", lambda: False)())
                       if is_tty is None else is_tty)
        self.quiet = quiet
        self.clock = clock
        self.start = clock()
        self.start_steps = 0
        self.start_iteration = 0
        self.line_open = False
        self.last: Dict[str, Any] = {}

    def begin(self, steps: int = 0, iteration: int = 0) -> None:
        """Marks the start of the run; `steps`/`iteration` are the counters it starts
        from (non-zero after a restore)."""
        self.start = self.clock()
        self.start_steps, self.start_iteration = int(steps), int(iteration)

    def eta(self, result: Mapping[str, Any], elapsed: float) -> Optional[float]:
        """Seconds until the earliest stop criterion with a predictable rate, or None."""
        steps = int(result.get("timesteps_total", 0) or 0)
        iteration = int(result.get("training_iteration", 0) or 0)
        done_steps = steps - self.start_steps
        done_iters = iteration - self.start_iteration
        etas = []
        if "timesteps_total" in self.stop and done_steps > 0 and elapsed > 0:
            etas.append((self.stop["timesteps_total"] - steps) * elapsed / done_steps)
        if "training_iteration" in self.stop and done_iters > 0:
            etas.append((self.stop["training_iteration"] - iteration) * elapsed / done_iters)
        if "time_total_s" in self.stop and "time_total_s" in result:
            etas.append(self.stop["time_total_s"] - float(result["time_total_s"]))
        return max(min(etas), 0.0) if etas else None

    def line(self, result: Mapping[str, Any]) -> str:
        """The progress line for `result`."""
        elapsed = self.clock() - self.start
        steps = int(result.get("timesteps_total", 0) or 0)
        rate = (steps - self.start_steps) / elapsed if elapsed > 0 else 0.0
        reward = result.get("episode_reward_mean", float("nan"))
        parts = [f"iter {result.get('training_iteration', 0)}", f"steps {steps}",
                 f"episodes {result.get('episodes_total', 0)}",
                 f"reward_mean {float(reward):.2f}", f"{rate:.0f} steps/s",
                 f"elapsed {format_duration(elapsed)}"]
        eta = self.eta(result, elapsed)
        if eta is not None:
            parts.append(f"ETA {format_duration(eta)}")
        return " | ".join(parts)

    def update(self, result: Mapping[str, Any]) -> None:
        """Shows the progress after one `train()` result."""
        self.last = dict(result)
        text = self.line(result)
        if self.quiet:
            return
        if self.is_tty:
            self.stream.write("\r\033[K" + text)
            self.line_open = True
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def summary(self, reason: str, checkpoint: Optional[str] = None) -> None:
        """Prints the final summary (and the checkpoint path)."""
        if self.line_open:
            self.stream.write("\n")
            self.line_open = False
        result = self.last
        elapsed = self.clock() - self.start
        reward = float(result.get("episode_reward_mean", float("nan")))
        self.stream.write(
            f"Finished ({reason}): {result.get('training_iteration', 0)} iterations, "
            f"{result.get('timesteps_total', 0)} env steps, "
            f"{result.get('episodes_total', 0)} episodes, episode_reward_mean {reward:.2f}, "
            f"in {format_duration(elapsed)}\n")
        if checkpoint:
            self.stream.write(f"Checkpoint: {checkpoint}\n")
        self.stream.flush()
