from .importer import import_csv
from .inventory import Inventory, InsufficientStock
from .report import top_value

__all__ = ["Inventory", "InsufficientStock", "import_csv", "top_value"]
