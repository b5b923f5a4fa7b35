"""Type aliases used in tfrl's signatures (RLlib's `ray.rllib.utils.typing`)."""

from typing import TYPE_CHECKING, Any, Dict, Hashable, List, Tuple, Union

import numpy as np

if TYPE_CHECKING:
    from tfrl.data.sample_batch import MultiAgentBatch
    from tfrl.data.sample_batch import SampleBatch

AgentID = Hashable
PolicyID = str
EnvID = Union[int, str]
MultiAgentDict = Dict[AgentID, Any]
MultiEnvDict = Dict[EnvID, MultiAgentDict]
EnvType = Any
EnvObsType = Any
EnvActionType = Any
EnvInfoDict = dict
EnvConfigDict = dict
ModelConfigDict = dict
PartialAlgorithmConfigDict = dict
PartialTrainerConfigDict = dict
ResultDict = dict
TensorType = Any  # np.ndarray or tf.Tensor
TensorStructType = Union[TensorType, dict, tuple]
ModelWeights = Dict[str, np.ndarray]
ModelGradients = Union[List[Tuple[TensorType, TensorType]], List[TensorType]]
SampleBatchType = Union["SampleBatch", "MultiAgentBatch"]
