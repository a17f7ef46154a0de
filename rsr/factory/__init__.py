"""The RSR data factory: discover -> compress -> plan (+critique) -> execute -> filter -> export.

One module per stage; `pipeline` runs them resumably over the Inspect logs in `ledger`.
"""

from rsr.factory.config import FactoryConfig, load_config
from rsr.factory.critique import deterministic_checks, model_review
from rsr.factory.pipeline import run, status

__all__ = ["FactoryConfig", "deterministic_checks", "load_config", "model_review", "run",
           "status"]
