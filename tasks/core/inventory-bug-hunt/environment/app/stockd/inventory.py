import functools

from .lots import Stock
from .models import Item


class InsufficientStock(Exception):
    pass


class Inventory:
    def __init__(self):
        self._items = {}
        self._stock = {}

    def add_item(self, sku, name, tags=None):
        if sku in self._items:
            raise ValueError(f"duplicate sku {sku}")
        self._items[sku] = Item(sku, name, *([list(tags)] if tags else []))
        self._stock[sku] = Stock()
        return self._items[sku]

    def item(self, sku):
        return self._items[sku]

    def skus(self):
        return sorted(self._items)

    def receive(self, sku, qty, unit_cost):
        if qty <= 0:
            raise ValueError("qty must be positive")
        self._stock[sku].receive(qty, unit_cost)

    def issue(self, sku, qty):
        if qty > self.level(sku):
            raise InsufficientStock(f"{sku}: {qty} requested, {self.level(sku)} on hand")
        return self._stock[sku].issue(qty)

    @functools.lru_cache(maxsize=1024)
    def level(self, sku):
        # Summing lots is the hot path of every report; cache it.
        return self._stock[sku].on_hand()

    def value(self, sku):
        return self._stock[sku].value()
