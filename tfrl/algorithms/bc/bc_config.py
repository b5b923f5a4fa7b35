"""BCConfig: behavior cloning's config, MARWIL's with `beta = 0`.

Example:
    >>> BCConfig().beta
    0.0
"""

import dataclasses

from tfrl.algorithms.marwil.marwil_config import MARWILConfig


@dataclasses.dataclass(frozen=True)
class BCConfig(MARWILConfig):
    """MARWILConfig with `beta = 0.0` (no advantage weighting, no value loss).

    Raises:
        ValueError: (on construction) if `beta` is not 0.
    """

    beta: float = 0.0

    def validate(self) -> None:
        super().validate()
        if self.beta != 0.0:
            raise ValueError(f"BCConfig: behavior cloning has beta=0.0; received beta="
                             f"{self.beta}. Use MARWILConfig for beta > 0.")
