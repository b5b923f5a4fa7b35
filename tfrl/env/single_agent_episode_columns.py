"""EpisodeColumns: the column getters and setters of `SingleAgentEpisode`.

Every column (observations, infos, actions, rewards, each extra model output) is an
`InfiniteLookbackBuffer` attribute of the episode; these methods read and overwrite
it by the buffer's index rules (in-episode indices, `neg_index_as_lookback`, `fill`,
`one_hot_discrete`). Also the temporary per-timestep data a sampler may keep on an
episode until `finalize()`.
"""

from typing import Any, Dict, List, Optional

from tfrl.env import single_agent_episode_ops as _ops
from tfrl.env.utils.infinite_lookback_buffer import Indices, InfiniteLookbackBuffer


class EpisodeColumns:
    """Column access of an episode; `SingleAgentEpisode` sets the buffers it reads.

    Attributes the subclass provides: `observations`, `infos`, `actions`, `rewards`
    (`InfiniteLookbackBuffer`s), `extra_model_outputs` (key -> buffer),
    `_temporary_timestep_data` (key -> list) and `_is_finalized`.
    """

    observations: InfiniteLookbackBuffer
    infos: InfiniteLookbackBuffer
    actions: InfiniteLookbackBuffer
    rewards: InfiniteLookbackBuffer
    extra_model_outputs: Dict[str, InfiniteLookbackBuffer]
    _temporary_timestep_data: Dict[str, List[Any]]
    _is_finalized: bool

    # ---- Getters (index rules: see InfiniteLookbackBuffer) -----------------------

    def get_observations(self, indices: Indices = None, **options: Any) -> Any:
        """Returns one observation (int index) or a batch of them.

        The observations buffer's `InfiniteLookbackBuffer.get(indices, **options)`.

        Args:
            indices: None (all in-episode observations), an int, a list of ints or a
                slice. Negative ints count from the end, see `neg_index_as_lookback`.
            **options: The keyword-only `neg_index_as_lookback` (negative indices
                count back from ts=0 into the lookback: -1 is the observation just
                before ts=0), `fill` (value for positions outside the stored data;
                every leaf of nested observations gets it) and `one_hot_discrete`
                (one-hot encode Discrete/MultiDiscrete (sub-)spaces; filled positions
                become vectors full of `fill`, "zero-hot" for 0).

        Returns:
            One item for an int index, else a batch (list before `finalize()`, numpy
            after; numpy struct whenever `one_hot_discrete=True`).
        """
        return self.observations.get(indices, **options)

    def get_infos(
        self, indices: Indices = None, *, neg_index_as_lookback: bool = False, fill: Any = None
    ) -> Any:
        """Returns one info dict (int index) or a list of them.

        Args:
            indices: As in `get_observations`.
            neg_index_as_lookback: As in `get_observations`.
            fill: An item (e.g. a dict) returned for positions outside the data.

        Returns:
            One info dict, or a list of info dicts (also after `finalize()`).
        """
        return self.infos.get(indices, neg_index_as_lookback=neg_index_as_lookback, fill=fill)

    def get_actions(self, indices: Indices = None, **options: Any) -> Any:
        """Returns one action (int index) or a batch of them.

        Args:
            indices: As in `get_observations`.
            **options: As in `get_observations` (`one_hot_discrete` needs the
                episode's `action_space`).

        Returns:
            One action for an int index, else a batch.
        """
        return self.actions.get(indices, **options)

    def get_rewards(
        self,
        indices: Indices = None,
        *,
        neg_index_as_lookback: bool = False,
        fill: Optional[float] = None,
    ) -> Any:
        """Returns one reward (int index) or a batch of them (float32 once finalized).

        Args:
            indices: As in `get_observations`.
            neg_index_as_lookback: As in `get_observations`.
            fill: Float for positions outside the stored data.

        Returns:
            One reward for an int index, else a batch.
        """
        return self.rewards.get(indices, neg_index_as_lookback=neg_index_as_lookback, fill=fill)

    def get_extra_model_outputs(
        self,
        key: str,
        indices: Indices = None,
        *,
        neg_index_as_lookback: bool = False,
        fill: Any = None,
    ) -> Any:
        """Returns extra model outputs stored under `key` (one item or a batch).

        Args:
            key: The extra model output, e.g. "action_logp".
            indices: As in `get_observations`.
            neg_index_as_lookback: As in `get_observations`.
            fill: As in `get_observations`; the shape is taken from the stored data.

        Returns:
            One item for an int index, else a batch.

        Raises:
            KeyError: If the episode has no outputs under `key`.
        """
        return self._extra_buffer(key).get(
            indices, neg_index_as_lookback=neg_index_as_lookback, fill=fill
        )

    # ---- Setters ------------------------------------------------------------------

    def set_observations(
        self, *, new_data: Any, at_indices: Indices = None, neg_index_as_lookback: bool = False
    ) -> None:
        """Overwrites observations (all in-episode ones, or those at `at_indices`).

        Args:
            new_data: One observation for an int index; else a list of observations
                (before `finalize()`) or a batch struct with one row per position.
            at_indices: None, an int, a list of ints or a slice (as in the getters).
            neg_index_as_lookback: As in the getters.

        Raises:
            IndexError: If an index is out of range or `new_data` has the wrong size.
        """
        self.observations.set(
            new_data, at_indices=at_indices, neg_index_as_lookback=neg_index_as_lookback
        )

    def set_actions(
        self, *, new_data: Any, at_indices: Indices = None, neg_index_as_lookback: bool = False
    ) -> None:
        """Overwrites actions; arguments and errors as in `set_observations`."""
        self.actions.set(
            new_data, at_indices=at_indices, neg_index_as_lookback=neg_index_as_lookback
        )

    def set_rewards(
        self, *, new_data: Any, at_indices: Indices = None, neg_index_as_lookback: bool = False
    ) -> None:
        """Overwrites rewards; arguments and errors as in `set_observations`."""
        self.rewards.set(
            new_data, at_indices=at_indices, neg_index_as_lookback=neg_index_as_lookback
        )

    def set_extra_model_outputs(
        self,
        *,
        key: str,
        new_data: Any,
        at_indices: Indices = None,
        neg_index_as_lookback: bool = False,
    ) -> None:
        """Overwrites extra model outputs under `key`, or inserts `key` as a new column.

        Args:
            key: The extra model output. A new key needs `at_indices=None` and one
                item per in-episode step.
            new_data: As in `set_observations`.
            at_indices: As in `set_observations`.
            neg_index_as_lookback: As in `set_observations`.

        Raises:
            ValueError: If a new key is given `at_indices`.
            IndexError: If an index is out of range or `new_data` has the wrong size.
        """
        if key in self.extra_model_outputs:
            self.extra_model_outputs[key].set(
                new_data, at_indices=at_indices, neg_index_as_lookback=neg_index_as_lookback
            )
            return
        self.extra_model_outputs[key] = _ops.new_extra_buffer(self, key, new_data, at_indices)

    # ---- Temporary timestep data -------------------------------------------------

    def add_temporary_timestep_data(self, key: str, data: Any) -> None:
        """Appends one item to the temporary list under `key` (cleared by finalize()).

        Raises:
            RuntimeError: If the episode is finalized.
        """
        if self._is_finalized:
            raise RuntimeError(
                "Temporary timestep data can only be added before finalize(). Received: "
                f"add_temporary_timestep_data(key={key!r}) on a finalized episode."
            )
        self._temporary_timestep_data.setdefault(key, []).append(data)

    def get_temporary_timestep_data(self, key: str) -> List[Any]:
        """Returns the list of temporary items under `key`.

        Raises:
            KeyError: If nothing was added under `key` (or finalize() cleared it).
        """
        if key not in self._temporary_timestep_data:
            raise KeyError(
                f"No temporary timestep data under key={key!r}. Available keys: "
                f"{sorted(self._temporary_timestep_data)}. Add data with "
                "add_temporary_timestep_data() first (finalize() clears it)."
            )
        return self._temporary_timestep_data[key]

    def _extra_buffer(self, key: str) -> InfiniteLookbackBuffer:
        if key not in self.extra_model_outputs:
            raise KeyError(
                f"No extra model outputs under key={key!r}. Available keys: "
                f"{sorted(self.extra_model_outputs)}. Pass the key to add_env_step("
                "extra_model_outputs=...) or set_extra_model_outputs()."
            )
        return self.extra_model_outputs[key]
