"""Single-timestep model input dicts built from a trajectory batch."""

from typing import Any, Dict, Union

import numpy as np
import tree

from tfrl.core.columns import Columns
from tfrl.data import batch_ops


def single_step_input_dict(
    batch: Any, view_requirements: Dict[str, Any], index: Union[str, int] = "last"
) -> Dict[str, Any]:
    """The columns of a one-row model input at row `index` of `batch`.

    See `SampleBatch.get_single_step_input_dict`.
    """
    last_mappings = {
        Columns.OBS: Columns.NEXT_OBS,
        Columns.PREV_ACTIONS: Columns.ACTIONS,
        Columns.PREV_REWARDS: Columns.REWARDS,
    }
    input_dict = {}
    for view_col, view_req in view_requirements.items():
        if view_req.used_for_compute_actions is False:
            continue
        data_col = view_req.data_col or view_col
        if index == "last":
            data_col = last_mappings.get(data_col, data_col)
            if view_req.shift_from is not None and view_req.shift_from != view_req.shift_to:
                # A range of frames ending at the step after the trajectory; the
                # first observation comes from `obs`, zeros before the start.
                series = np.asarray(batch[data_col])
                if data_col == Columns.NEXT_OBS and Columns.OBS in batch:
                    series = np.concatenate([np.asarray(batch[Columns.OBS])[:1], series])
                last = len(series) - 1
                start = last + view_req.shift_from
                stop = last + view_req.shift_to + 1
                frames = batch_ops.left_zero_pad(series[max(start, 0):stop], max(-start, 0))
                input_dict[view_col] = frames[None]
            else:
                input_dict[view_col] = tree.map_structure(lambda v: v[-1:], batch[data_col])
        else:
            stop = index + 1 if index != -1 else None
            input_dict[view_col] = tree.map_structure(lambda v: v[index:stop], batch[data_col])
    return input_dict
